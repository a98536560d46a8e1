/* The cubin cache on disk, seen from outside the compiler: its size, LRU eviction, clearing. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tuner/cache.h"
#include "tuner/common.h"

/* A build key: 32 hex digits (template_build_key); shorter names are someone else's files. */
#define KEY_LEN 32
/* How deep under the cache directory entries are looked for (the compiler may shard). */
#define MAX_DEPTH 3

struct cache_file {
	char *path;
	char key[KEY_LEN + 1];
	long long bytes;
	double used; /* the later of its last read and last write */
	size_t entry;
	int meta; /* <key>.meta: marks the entry complete, so it goes first */
};

struct cache_entry {
	char key[KEY_LEN + 1];
	long long bytes;
	double used;
	size_t first, n; /* its files, contiguous after sorting */
};

struct listing {
	struct cache_file *f;
	size_t n, alloc;
	long long others;
};

static double stat_time(const struct timespec *ts)
{
	return (double)ts->tv_sec + (double)ts->tv_nsec * 1e-9;
}

/* The key a cache file is named after, or 0 for a file that is not the cache's. */
static int file_key(const char *name, char key[KEY_LEN + 1])
{
	size_t i;

	for (i = 0; i < KEY_LEN; i++)
		if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
			return 0;
	if (name[KEY_LEN] != '.')
		return 0;
	memcpy(key, name, KEY_LEN);
	key[KEY_LEN] = '\0';
	return 1;
}

static int list_dir(const char *dir, int depth, struct listing *l)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int rc = 0;

	if (!d) {
		if (errno == ENOENT && depth == 0)
			return 0;
		return error("cannot read the cache directory '%s': %s", dir, strerror(errno));
	}
	while (rc == 0 && (de = readdir(d))) {
		struct cache_file *f;
		struct stat st;
		char key[KEY_LEN + 1], *path;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		path = xasprintf("%s/%s", dir, de->d_name);
		if (lstat(path, &st) < 0) {
			free(path); /* gone since readdir: another process evicted it */
			continue;
		}
		if (S_ISDIR(st.st_mode) && depth + 1 < MAX_DEPTH) {
			rc = list_dir(path, depth + 1, l);
			free(path);
			continue;
		}
		if (!S_ISREG(st.st_mode) || !file_key(de->d_name, key)) {
			l->others += !S_ISDIR(st.st_mode);
			free(path);
			continue;
		}
		ALLOC_GROW(l->f, l->n + 1, l->alloc);
		f = &l->f[l->n++];
		memset(f, 0, sizeof(*f));
		f->path = path;
		memcpy(f->key, key, sizeof(key));
		f->bytes = (long long)st.st_size;
		f->used = stat_time(&st.st_atim) > stat_time(&st.st_mtim) ? stat_time(&st.st_atim)
		                                                          : stat_time(&st.st_mtim);
		f->meta = !strcmp(de->d_name + KEY_LEN, ".meta");
	}
	closedir(d);
	return rc;
}

static void listing_release(struct listing *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->f[i].path);
	free(l->f);
	memset(l, 0, sizeof(*l));
}

static int by_key(const void *a, const void *b)
{
	const struct cache_file *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	/* Within an entry the .meta file first: without it the rest is not an entry. */
	return c ? c : y->meta - x->meta;
}

static int by_use(const void *a, const void *b)
{
	const struct cache_entry *x = a, *y = b;

	if (x->used != y->used)
		return x->used < y->used ? -1 : 1;
	return strcmp(x->key, y->key);
}

/* Every entry of dir, least recently used first; free *out. 0, or error(). */
static int entries(const char *dir, struct listing *l, struct cache_entry **out, size_t *n)
{
	struct cache_entry *e = NULL;
	size_t i;

	*out = NULL;
	*n = 0;
	memset(l, 0, sizeof(*l));
	if (list_dir(dir, 0, l) < 0) {
		listing_release(l);
		return -1;
	}
	if (l->n)
		qsort(l->f, l->n, sizeof(*l->f), by_key);
	e = xcalloc(l->n + 1, sizeof(*e));
	for (i = 0; i < l->n; i++) {
		struct cache_entry *c = *n ? &e[*n - 1] : NULL;

		if (!c || strcmp(c->key, l->f[i].key)) {
			c = &e[(*n)++];
			memcpy(c->key, l->f[i].key, sizeof(c->key));
			c->first = i;
		}
		c->n++;
		c->bytes += l->f[i].bytes;
		if (l->f[i].used > c->used)
			c->used = l->f[i].used;
	}
	if (*n)
		qsort(e, *n, sizeof(*e), by_use);
	*out = e;
	return 0;
}

static void add_entry(struct cache_stats *st, const struct cache_entry *e)
{
	if (!st->entries || e->used < st->oldest)
		st->oldest = e->used;
	if (e->used > st->newest)
		st->newest = e->used;
	st->entries++;
	st->files += (long long)e->n;
	st->bytes += e->bytes;
}

/* Remove an entry's files, the .meta first. 0, or error(). */
static int remove_entry(const struct listing *l, const struct cache_entry *e)
{
	size_t i;

	for (i = e->first; i < e->first + e->n; i++)
		if (unlink(l->f[i].path) < 0 && errno != ENOENT)
			return error("cannot remove '%s' from the cache: %s", l->f[i].path,
			             strerror(errno));
	return 0;
}

/* ----------------------------------------------------------------- public */

int cache_parse_size(const char *s, long long *out)
{
	static const char units[] = "KMGT";
	const char *u;
	char *end;
	long long v;
	int shift = 0;

	errno = 0;
	if (*s < '0' || *s > '9')
		return error("a cache size is a number of bytes with K, M, G or T, got '%s'", s);
	v = strtoll(s, &end, 10);
	if (*end && (u = strchr(units, *end >= 'a' ? *end - 'a' + 'A' : *end)) && *u) {
		shift = 10 * (int)(u - units + 1);
		end++;
		if (*end == 'i' || *end == 'I')
			end++;
		if (*end == 'b' || *end == 'B')
			end++;
	}
	if (*end)
		return error("a cache size is a number of bytes with K, M, G or T, got '%s'", s);
	if (errno == ERANGE || (shift && v > (9223372036854775807LL >> shift)))
		return error("cache size '%s' is too large", s);
	*out = v << shift;
	return 0;
}

int cache_limit(long long *out)
{
	const char *env = getenv("TUNER_CACHE_MAX");

	*out = CACHE_DEFAULT_LIMIT;
	if (env && *env && cache_parse_size(env, out) < 0)
		return error("$TUNER_CACHE_MAX: not a size");
	return 0;
}

int cache_stat(const char *dir, struct cache_stats *out)
{
	struct listing l;
	struct cache_entry *e;
	size_t n, i;

	memset(out, 0, sizeof(*out));
	if (entries(dir, &l, &e, &n) < 0)
		return -1;
	for (i = 0; i < n; i++)
		add_entry(out, &e[i]);
	out->others = l.others;
	free(e);
	listing_release(&l);
	return 0;
}

int cache_touch(const char *dir, char *const *keys, size_t n)
{
	struct listing l;
	struct cache_entry *e;
	size_t ne, i, j, f;
	int rc = 0;

	if (!n)
		return 0;
	if (entries(dir, &l, &e, &ne) < 0)
		return -1;
	for (i = 0; i < ne; i++) {
		for (j = 0; j < n && strcmp(keys[j], e[i].key); j++)
			;
		if (j == n)
			continue;
		for (f = e[i].first; f < e[i].first + e[i].n; f++)
			/* NULL: both times now. A file evicted meanwhile is no error. */
			if (utimensat(AT_FDCWD, l.f[f].path, NULL, 0) < 0 && errno != ENOENT)
				rc = error("cannot touch '%s': %s", l.f[f].path, strerror(errno));
	}
	free(e);
	listing_release(&l);
	return rc;
}

int cache_prune(const char *dir, long long max_bytes, struct cache_stats *evicted)
{
	struct cache_stats total, gone;
	struct listing l;
	struct cache_entry *e;
	size_t n, i;
	int rc = 0;

	memset(&total, 0, sizeof(total));
	memset(&gone, 0, sizeof(gone));
	if (entries(dir, &l, &e, &n) < 0)
		return -1;
	for (i = 0; i < n; i++)
		add_entry(&total, &e[i]);
	for (i = 0; rc == 0 && i < n && total.bytes > max_bytes; i++) {
		rc = remove_entry(&l, &e[i]);
		total.bytes -= e[i].bytes;
		add_entry(&gone, &e[i]);
	}
	if (evicted)
		*evicted = gone;
	free(e);
	listing_release(&l);
	return rc;
}

int cache_clear(const char *dir, struct cache_stats *removed)
{
	return cache_prune(dir, -1, removed);
}

void cache_format_size(char *buf, size_t len, long long bytes)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
	double v = (double)bytes;
	int u = -1;

	while (v >= 1024 && u < 3) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%lld B", bytes);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
}
