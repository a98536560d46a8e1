/* Shared helpers: error reporting, allocation, string buffers, files, hashing. */
#include "tuner/common.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

/* ---------------------------------------------------------------- errors */

static report_fn report_routine;

void set_error_routine(report_fn fn)
{
	report_routine = fn;
}

static void vreport(const char *prefix, const char *fmt, va_list ap)
{
	char msg[4096];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (report_routine) {
		report_routine(prefix, msg);
		return;
	}
	fprintf(stderr, "%s%s\n", prefix, msg);
}

int error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("error: ", fmt, ap);
	va_end(ap);
	return -1;
}

void warning(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("warning: ", fmt, ap);
	va_end(ap);
}

void die(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("fatal: ", fmt, ap);
	va_end(ap);
	exit(code);
}

void bug_fl(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "BUG: %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(EX_SOFTWARE);
}

/* ------------------------------------------------------------ allocation */

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		die(EX_OSERR, "out of memory allocating %zu bytes", n);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		die(EX_OSERR, "out of memory allocating %zu objects", n);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (!q)
		die(EX_OSERR, "out of memory allocating %zu bytes", n);
	return q;
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	sb_grow(&sb, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(sb.buf, (size_t)n + 1, fmt, ap);
	va_end(ap);
	sb.len = (size_t)n;
	return sb_detach(&sb);
}

/* ---------------------------------------------------------- string buffer */

void sb_grow(struct strbuf *sb, size_t extra)
{
	size_t need = sb->len + extra + 1;

	if (need > sb->alloc) {
		sb->alloc = need < 64 ? 64 : need * 3 / 2;
		sb->buf = xrealloc(sb->buf, sb->alloc);
	}
	sb->buf[sb->len] = '\0';
}

void sb_add(struct strbuf *sb, const char *s, size_t n)
{
	sb_grow(sb, n);
	memcpy(sb->buf + sb->len, s, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
}

void sb_adds(struct strbuf *sb, const char *s)
{
	sb_add(sb, s, strlen(s));
}

void sb_vaddf(struct strbuf *sb, const char *fmt, va_list ap)
{
	va_list again;
	int n;

	va_copy(again, ap);
	n = vsnprintf(NULL, 0, fmt, ap);
	if (n >= 0) {
		sb_grow(sb, (size_t)n);
		vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, again);
		sb->len += (size_t)n;
	}
	va_end(again);
}

void sb_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sb_vaddf(sb, fmt, ap);
	va_end(ap);
}

void sb_reset(struct strbuf *sb)
{
	sb->len = 0;
	if (sb->buf)
		sb->buf[0] = '\0';
}

char *sb_detach(struct strbuf *sb)
{
	char *p;

	sb_grow(sb, 0);
	p = sb->buf;
	sb->buf = NULL;
	sb->len = sb->alloc = 0;
	return p;
}

void sb_release(struct strbuf *sb)
{
	free(sb->buf);
	sb->buf = NULL;
	sb->len = sb->alloc = 0;
}

/* ----------------------------------------------------------------- files */

static read_guard_fn read_guard;

void set_read_guard(read_guard_fn fn)
{
	read_guard = fn;
}

static int read_whole(const char *path, size_t max, char **out, size_t *len);

int read_file(const char *path, char **out, size_t *len)
{
	return read_file_limited(path, 0, out, len);
}

int read_file_limited(const char *path, size_t max, char **out, size_t *len)
{
	if (read_guard && read_guard(path) < 0)
		return -1;
	return read_whole(path, max, out, len);
}

int read_own_file(const char *path, char **out, size_t *len)
{
	return read_whole(path, 0, out, len);
}

static int read_whole(const char *path, size_t max, char **out, size_t *len)
{
	struct strbuf sb = STRBUF_INIT;
	char chunk[65536];
	FILE *f;
	size_t n;

	f = fopen(path, "rb");
	if (!f)
		return -1;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (max && sb.len + n > max) {
			fclose(f);
			sb_release(&sb);
			errno = EFBIG;
			return -1;
		}
		sb_add(&sb, chunk, n);
	}
	if (ferror(f)) {
		int e = errno;

		fclose(f);
		sb_release(&sb);
		errno = e;
		return -1;
	}
	fclose(f);
	if (len)
		*len = sb.len;
	*out = sb_detach(&sb);
	return 0;
}

int write_file_atomic(const char *path, const void *data, size_t len)
{
	char *tmp = xasprintf("%s.tmp.%ld", path, (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	const char *p = data;

	if (fd < 0) {
		error("cannot create '%s': %s", tmp, strerror(errno));
		free(tmp);
		return -1;
	}
	while (len > 0) {
		ssize_t w = write(fd, p, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			error("cannot write '%s': %s", tmp, strerror(errno));
			close(fd);
			unlink(tmp);
			free(tmp);
			return -1;
		}
		p += w;
		len -= (size_t)w;
	}
	if (close(fd) < 0 || rename(tmp, path) < 0) {
		error("cannot write '%s': %s", path, strerror(errno));
		unlink(tmp);
		free(tmp);
		return -1;
	}
	free(tmp);
	return 0;
}

int mkdir_p(const char *path)
{
	char *p = xstrdup(path);
	char *s;

	for (s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST) {
			error("cannot create directory '%s': %s", p, strerror(errno));
			free(p);
			return -1;
		}
		*s = '/';
	}
	if (mkdir(p, 0755) < 0 && errno != EEXIST) {
		error("cannot create directory '%s': %s", p, strerror(errno));
		free(p);
		return -1;
	}
	free(p);
	return 0;
}

char *path_dirname(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return xstrdup(".");
	if (slash == path)
		return xstrdup("/");
	return xstrndup(path, (size_t)(slash - path));
}

char *path_join(const char *dir, const char *rel)
{
	if (rel[0] == '/' || !dir || !*dir || !strcmp(dir, "."))
		return xstrdup(rel);
	return xasprintf("%s/%s", dir, rel);
}

/* "a/b/../c" as "a/c", "./x" as "x": lexically, and only when both name the same file. */
char *path_tidy(const char *path)
{
	char *copy = xstrdup(path), *out = xmalloc(strlen(path) + 2), *seg, *save = NULL;
	size_t *starts = xcalloc(strlen(path) + 1, sizeof(*starts)), depth = 0, len = 0;
	struct stat a, b;
	int abs = path[0] == '/';

	if (abs)
		out[len++] = '/';
	for (seg = strtok_r(copy, "/", &save); seg; seg = strtok_r(NULL, "/", &save)) {
		if (!strcmp(seg, "."))
			continue;
		if (!strcmp(seg, "..") && depth && strncmp(out + starts[depth - 1], "../", 3) &&
		    strcmp(out + starts[depth - 1], "..")) {
			len = starts[--depth];
			out[len] = '\0';
			continue;
		}
		starts[depth++] = len;
		len += (size_t)sprintf(out + len, "%s/", seg);
	}
	if (len > (size_t)abs)
		len--; /* the last '/' */
	out[len] = '\0';
	if (!len)
		memcpy(out, ".", 2); /* out has strlen(path) + 2 bytes */
	free(copy);
	free(starts);
	if (stat(path, &a) < 0 || stat(out, &b) < 0 || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino) {
		free(out);
		return xstrdup(path);
	}
	return out;
}

/* ---------------------------------------------------------------- hashing */

struct hasher {
	XXH3_state_t *state;
};

struct hasher *hasher_new(void)
{
	struct hasher *h = xmalloc(sizeof(*h));

	h->state = XXH3_createState();
	if (!h->state)
		die(EX_OSERR, "out of memory creating a hash state");
	XXH3_128bits_reset(h->state);
	return h;
}

void hasher_add(struct hasher *h, const void *data, size_t len)
{
	XXH3_128bits_update(h->state, data, len);
}

void hasher_adds(struct hasher *h, const char *s)
{
	hasher_add(h, s, strlen(s) + 1);
}

static void hex128(XXH128_hash_t v, char out[HASH_HEX_LEN])
{
	snprintf(out, HASH_HEX_LEN, "%016llx%016llx", (unsigned long long)v.high64,
	         (unsigned long long)v.low64);
}

void hasher_final_hex(struct hasher *h, char out[HASH_HEX_LEN])
{
	hex128(XXH3_128bits_digest(h->state), out);
	XXH3_freeState(h->state);
	free(h);
}

void hash_hex(const void *data, size_t len, char out[HASH_HEX_LEN])
{
	hex128(XXH3_128bits(data, len), out);
}

/* ------------------------------------------------------------------ misc */

int edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j;
	int *row = xmalloc((lb + 1) * sizeof(*row));
	int d;

	for (j = 0; j <= lb; j++)
		row[j] = (int)j;
	for (i = 1; i <= la; i++) {
		int diag = row[0];

		row[0] = (int)i;
		for (j = 1; j <= lb; j++) {
			int up = row[j];
			int best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	d = row[lb];
	free(row);
	return d;
}

double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void format_duration(char *buf, size_t len, double secs)
{
	if (secs >= 3600 && secs == 3600 * floor(secs / 3600))
		snprintf(buf, len, "%gh", secs / 3600);
	else if (secs >= 60 && secs == 60 * floor(secs / 60))
		snprintf(buf, len, "%gm", secs / 60);
	else
		snprintf(buf, len, "%gs", secs);
}

/* ------------------------------------------------------------ child processes */

int proc_reap(pid_t *pid, int *fd, double grace)
{
	double until = now_seconds() + grace;
	int status = 0;
	pid_t r;

	if (*fd >= 0)
		close(*fd);
	*fd = -1;
	if (!*pid)
		return 0;
	if (grace <= 0)
		kill(*pid, SIGKILL);
	for (;;) {
		r = waitpid(*pid, &status, grace > 0 ? WNOHANG : 0);
		if (r == *pid || (r < 0 && errno != EINTR))
			break;
		if (r == 0) {
			if (now_seconds() >= until) {
				kill(*pid, SIGKILL);
				grace = 0;
			} else {
				struct timespec ts = {0, 5 * 1000 * 1000};

				nanosleep(&ts, NULL);
			}
		}
	}
	*pid = 0;
	return status;
}

void proc_close_from(int lo)
{
	int fd;

#ifdef SYS_close_range
	if (syscall(SYS_close_range, (unsigned)lo, ~0U, 0) == 0)
		return;
#endif
	for (fd = lo; fd < 4096; fd++)
		close(fd);
}
