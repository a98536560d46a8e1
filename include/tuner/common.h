/* Shared helpers: error reporting, allocation, string buffers, files, hashing. */
#ifndef TUNER_COMMON_H
#define TUNER_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sysexits.h>
#include <sys/types.h>

#define TUNER_VERSION "0.1.0"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#if defined(__GNUC__)
#define TUNER_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define TUNER_PRINTF(f, a)
#endif

/*
 * error() prints "error: <msg>" to stderr (or hands it to the routine set with
 * set_error_routine) and returns -1, so library code can `return error(...)`.
 * Messages are lowercase, no full stop, and name file:line where input has one.
 */
int error(const char *fmt, ...) TUNER_PRINTF(1, 2);
void warning(const char *fmt, ...) TUNER_PRINTF(1, 2);
_Noreturn void die(int code, const char *fmt, ...) TUNER_PRINTF(2, 3);
_Noreturn void bug_fl(const char *file, int line, const char *fmt, ...) TUNER_PRINTF(3, 4);
#define BUG(...) bug_fl(__FILE__, __LINE__, __VA_ARGS__)

/*
 * A request to stop: set by a signal handler or by another thread, read by
 * the loop that stops. Lock-free, so a signal handler may store to it.
 */
typedef atomic_int stop_flag;
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "a stop flag is stored to from signal handlers");

/* Route error()/warning() text elsewhere (tests capture it); NULL restores stderr. */
typedef void (*report_fn)(const char *prefix, const char *msg);
void set_error_routine(report_fn fn);

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) TUNER_PRINTF(1, 2);

/* Grow an array to hold at least n elements: ALLOC_GROW(arr, n, alloc). */
#define ALLOC_GROW(x, nr, alloc)                                                                   \
	do {                                                                                       \
		if ((size_t)(nr) > (alloc)) {                                                      \
			(alloc) = ((size_t)(nr) + 16) * 3 / 2;                                     \
			(x) = xrealloc((x), (alloc) * sizeof(*(x)));                               \
		}                                                                                  \
	} while (0)

struct strbuf {
	char *buf; /* always NUL-terminated once initialised */
	size_t len;
	size_t alloc;
};
#define STRBUF_INIT                                                                                \
	{                                                                                          \
		NULL, 0, 0                                                                         \
	}
void sb_grow(struct strbuf *sb, size_t extra);
void sb_add(struct strbuf *sb, const char *s, size_t n);
void sb_adds(struct strbuf *sb, const char *s);
void sb_addf(struct strbuf *sb, const char *fmt, ...) TUNER_PRINTF(2, 3);
void sb_vaddf(struct strbuf *sb, const char *fmt, va_list ap) TUNER_PRINTF(2, 0);
void sb_reset(struct strbuf *sb);
char *sb_detach(struct strbuf *sb);
void sb_release(struct strbuf *sb);

/*
 * A check every read_file() passes first (tuner serve confines a job's reads
 * to its roots): 0 lets the read go on; -1 refuses it with errno set, after
 * the guard said why. NULL: none, the default.
 */
typedef int (*read_guard_fn)(const char *path);
void set_read_guard(read_guard_fn fn);

/* ------------------------------------------------------------ child processes */

/*
 * Close *fd (when >= 0, then -1) and wait for process *pid (when not 0, then 0),
 * killing it at once (grace <= 0) or after grace seconds; its wait status, 0 when
 * there was no process.
 */
int proc_reap(pid_t *pid, int *fd, double grace);
/* Close every descriptor from lo up; async-signal-safe (between fork and exec). */
void proc_close_from(int lo);

/* Read a whole file; returns 0 or -1 with errno set (no message printed but the guard's). */
int read_file(const char *path, char **out, size_t *len);
/* The same, failing with EFBIG past max bytes (0: no limit): /dev/zero is not a config. */
int read_file_limited(const char *path, size_t max, char **out, size_t *len);
/* A file tuner made itself (a tool's log in TMPDIR): read past the guard, which confines inputs. */
int read_own_file(const char *path, char **out, size_t *len);
/* Write a file atomically (temp file + rename); returns 0 or error(). */
int write_file_atomic(const char *path, const void *data, size_t len);
/* mkdir -p; returns 0 or error(). */
int mkdir_p(const char *path);
/* Directory part of path ("." if none); caller frees. */
char *path_dirname(const char *path);
/* Join dir and rel unless rel is absolute; caller frees. */
char *path_join(const char *dir, const char *rel);
/* "a/b/../c" as "a/c", lexically, when both name the same file; else a copy. Caller frees. */
char *path_tidy(const char *path);

/* 128-bit content hash (XXH3) as 32 lowercase hex digits plus NUL. */
#define HASH_HEX_LEN 33
struct hasher;
struct hasher *hasher_new(void);
void hasher_add(struct hasher *h, const void *data, size_t len);
void hasher_adds(struct hasher *h, const char *s); /* adds s and its terminating NUL */
void hasher_final_hex(struct hasher *h, char out[HASH_HEX_LEN]); /* frees h */
void hash_hex(const void *data, size_t len, char out[HASH_HEX_LEN]);

/* Levenshtein distance, for "did you mean" suggestions. */
int edit_distance(const char *a, const char *b);

/* Monotonic seconds. */
double now_seconds(void);
/* Seconds as a user writes a duration: "90s", "10m", "2h" (the largest unit that divides it). */
void format_duration(char *buf, size_t len, double secs);

#endif
