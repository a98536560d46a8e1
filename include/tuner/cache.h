/* The cubin cache on disk, seen from outside the compiler: its size, LRU eviction, clearing. */
#ifndef TUNER_CACHE_H
#define TUNER_CACHE_H

#include <stddef.h>

/*
 * The compile stage (tuner/compile.c) writes each build as files named
 * <key>.<ext> (the key: 32 hex digits, template_build_key()). An entry is
 * every file of one key, wherever it lies under the cache directory; it was
 * last used when the newest of its files was last read or written, or
 * touched by cache_touch(). Files that are not named so are never counted,
 * evicted or removed.
 */

/* The limit when none is set: 2 GiB. */
#define CACHE_DEFAULT_LIMIT (2LL << 30)

struct cache_stats {
	long long entries, files, bytes;
	long long others;      /* files left alone: not named like a cache entry */
	double oldest, newest; /* last use of the least and most recently used entry (epoch) */
};

/* "512M", "2G", "1024", "0" (no cache kept): bytes, or error(). K, M, G, T are powers of 1024. */
int cache_parse_size(const char *s, long long *out);

/* The limit: $TUNER_CACHE_MAX when set (cache_parse_size), else CACHE_DEFAULT_LIMIT. */
int cache_limit(long long *out);

/* What the cache holds; a missing directory holds nothing. 0, or error(). */
int cache_stat(const char *dir, struct cache_stats *out);

/* Mark the entries of these keys used now (a run used them, cached or not). 0, or error(). */
int cache_touch(const char *dir, char *const *keys, size_t n);

/*
 * Evict least recently used entries, whole, until the cache holds at most
 * max_bytes; *evicted says what went (may be NULL). 0, or error().
 */
int cache_prune(const char *dir, long long max_bytes, struct cache_stats *evicted);

/* Remove every entry; *removed says what went (may be NULL). 0, or error(). */
int cache_clear(const char *dir, struct cache_stats *removed);

/* "1.5 GiB", "42.0 MiB", "512 B" */
void cache_format_size(char *buf, size_t len, long long bytes);

#endif
