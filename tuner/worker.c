/* The GPU worker: a disposable child process per GPU that checks and times one variant a job. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tuner/attention_gpu.h"
#include "tuner/common.h"
#include "tuner/cuda.h"
#include "tuner/worker.h"

#include "../kernels/include/tuner_sanitize.h"

#define WIRE_HDR_LEN           24 /* "tuner-worker/1 0000002a\n" */
#define WIRE_MAX_BODY          (64u << 20)
#define WORKER_CHILD_FD        3     /* the child's end of the socket */
#define WORKER_HELLO_TIMEOUT   120.0 /* seconds to load the driver and create a context */
#define WORKER_DEFAULT_TIMEOUT 60.0
#define WORKER_EXIT_GRACE      5.0 /* seconds a child gets to exit before SIGKILL */

/* ============================================================== protocol */

/* key=value with '\' and newline escaped; NULL values are left out. */
static void kv_str(struct strbuf *sb, const char *key, const char *val)
{
	size_t n;

	if (!val)
		return;
	sb_adds(sb, key);
	sb_add(sb, "=", 1);
	while (*val) {
		n = strcspn(val, "\\\n");
		sb_add(sb, val, n);
		val += n;
		if (*val == '\\')
			sb_add(sb, "\\\\", 2);
		else if (*val == '\n')
			sb_add(sb, "\\n", 2);
		if (*val)
			val++;
	}
	sb_add(sb, "\n", 1);
}

struct kv_iter {
	char *p, *end;
};

/* The next "key=value" line, unescaped in place: 1, 0 at the end, -1 on a malformed line. */
static int kv_next(struct kv_iter *it, char **key, char **val)
{
	char *nl, *eq, *r, *w;

	if (it->p >= it->end)
		return 0;
	nl = memchr(it->p, '\n', (size_t)(it->end - it->p));
	if (!nl)
		return error("worker protocol: unterminated line");
	*nl = '\0';
	eq = strchr(it->p, '=');
	if (!eq)
		return error("worker protocol: no '=' in '%s'", it->p);
	*eq = '\0';
	*key = it->p;
	*val = eq + 1;
	for (r = w = eq + 1; *r; r++) {
		if (*r == '\\' && r[1]) {
			r++;
			*w++ = *r == 'n' ? '\n' : *r;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
	it->p = nl + 1;
	return 1;
}

/* Start reading a message body; its first line must be type=... */
static int msg_begin(char *msg, size_t len, struct kv_iter *it, const char **type)
{
	char *key, *val;

	it->p = msg;
	it->end = msg + len;
	if (kv_next(it, &key, &val) != 1 || strcmp(key, "type"))
		return error("worker protocol: message without a type");
	*type = val;
	return 0;
}

/* Whether a message is of a type, without touching it (decoding works in place). */
static int msg_is(const struct strbuf *m, const char *type)
{
	size_t n = strlen(type);

	return m->len > 5 + n && !memcmp(m->buf, "type=", 5) && !memcmp(m->buf + 5, type, n) &&
	       m->buf[5 + n] == '\n';
}

static int parse_ll(const char *key, const char *s, long long *out)
{
	char *end;

	errno = 0;
	*out = strtoll(s, &end, 10);
	if (errno || end == s || *end)
		return error("worker protocol: bad integer '%s' for '%s'", s, key);
	return 0;
}

static int parse_int(const char *key, const char *s, int *out)
{
	long long v;

	if (parse_ll(key, s, &v) < 0)
		return -1;
	if (v < INT_MIN || v > INT_MAX)
		return error("worker protocol: '%s' out of range: %s", key, s);
	*out = (int)v;
	return 0;
}

static int parse_ull(const char *key, const char *s, unsigned long long *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-')
		return error("worker protocol: bad integer '%s' for '%s'", s, key);
	return 0;
}

static int parse_dbl(const char *key, const char *s, double *out)
{
	char *end;

	*out = strtod(s, &end);
	if (end == s || *end)
		return error("worker protocol: bad number '%s' for '%s'", s, key);
	return 0;
}

/* Exactly n space-separated unsigned integers. */
static int parse_uints(const char *key, const char *s, unsigned *out, size_t n)
{
	char *end;
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned long v;

		errno = 0;
		v = strtoul(s, &end, 10);
		if (errno || end == s || v > UINT_MAX || *s == '-')
			return error("worker protocol: bad list '%s' for '%s'", s, key);
		out[i] = (unsigned)v;
		s = end;
	}
	if (*s)
		return error("worker protocol: trailing '%s' in '%s'", s, key);
	return 0;
}

/* "shape.N.field": N and field; 0 when key is not a shape key, -1 when N is bad. */
static int shape_key(const char *key, size_t *idx, const char **field)
{
	char *end;
	unsigned long v;

	if (strncmp(key, "shape.", 6))
		return 0;
	errno = 0;
	v = strtoul(key + 6, &end, 10);
	if (errno || end == key + 6 || *end != '.' || v >= WORKER_MAX_SHAPES)
		return error("worker protocol: bad shape key '%s'", key);
	*idx = v;
	*field = end + 1;
	return 1;
}

/* ------------------------------------------------------------- jobs */

void worker_job_encode(const struct worker_job *job, struct strbuf *out)
{
	size_t n = job->nshapes < WORKER_MAX_SHAPES ? job->nshapes : WORKER_MAX_SHAPES;
	char key[64];
	size_t i;
	int d;

	sb_reset(out);
	sb_adds(out, "type=job\n");
	kv_str(out, "cubin", job->cubin_path);
	kv_str(out, "kernel", job->kernel);
	kv_str(out, "problem", job->problem);
	kv_str(out, "ref_cubin", job->ref_cubin_path);
	kv_str(out, "ref_kernel", job->ref_kernel);
	sb_addf(out, "rel_l2=%.17g\nmax_abs=%.17g\ncheck_seeds=%d\nseed=%llu\n", job->rel_l2,
	        job->max_abs, job->check_seeds, job->seed);
	sb_addf(out, "warmup=%d\nrepeats=%d\nlaunches=%d\nl2_hot=%d\ntimeout=%.17g\n", job->warmup,
	        job->repeats, job->launches, job->l2_hot, job->timeout_s);
	sb_addf(out, "sanitize=%d\ntime_it=%d\nnshapes=%zu\n", job->sanitize, job->time_it, n);
	for (i = 0; i < n; i++) {
		const struct worker_shape_job *s = &job->shapes[i];

		snprintf(key, sizeof(key), "shape.%zu.name", i);
		kv_str(out, key, s->name);
		sb_addf(out, "shape.%zu.dims=", i);
		for (d = 0; d < WORKER_MAX_DIMS; d++)
			sb_addf(out, d ? " %lld" : "%lld", s->dims[d]);
		sb_addf(out,
		        "\nshape.%zu.grid=%u %u %u\nshape.%zu.block=%u %u %u\nshape.%zu.smem=%u\n",
		        i, s->grid[0], s->grid[1], s->grid[2], i, s->block[0], s->block[1],
		        s->block[2], i, s->smem);
	}
}

static int decode_dims(const char *key, char *s, long long *dims)
{
	char *end;
	int d;

	for (d = 0; d < WORKER_MAX_DIMS; d++) {
		errno = 0;
		dims[d] = strtoll(s, &end, 10);
		if (errno || end == s)
			return error("worker protocol: bad dims '%s' for '%s'", s, key);
		s = end;
	}
	if (*s)
		return error("worker protocol: trailing '%s' in '%s'", s, key);
	return 0;
}

static int decode_job_shape(struct worker_shape_job *s, const char *field, const char *key,
                            char *val)
{
	if (!strcmp(field, "name")) {
		if (strlen(val) >= sizeof(s->name))
			return error("worker protocol: shape name '%s' too long", val);
		strcpy(s->name, val);
		return 0;
	}
	if (!strcmp(field, "dims"))
		return decode_dims(key, val, s->dims);
	if (!strcmp(field, "grid"))
		return parse_uints(key, val, s->grid, 3);
	if (!strcmp(field, "block"))
		return parse_uints(key, val, s->block, 3);
	if (!strcmp(field, "smem"))
		return parse_uints(key, val, &s->smem, 1);
	return error("worker protocol: unknown key '%s'", key);
}

int worker_job_decode(char *msg, size_t len, struct worker_job *job)
{
	unsigned long long n = 0;
	struct kv_iter it;
	const char *type = NULL, *field = NULL;
	char *key, *val;
	size_t idx = 0;
	int r, k;

	memset(job, 0, sizeof(*job));
	if (msg_begin(msg, len, &it, &type) < 0)
		return -1;
	if (strcmp(type, "job"))
		return error("worker protocol: expected a job, got '%s'", type);
	while ((r = kv_next(&it, &key, &val)) > 0) {
		k = shape_key(key, &idx, &field);
		if (k < 0)
			return -1;
		if (k) {
			if (decode_job_shape(&job->shapes[idx], field, key, val) < 0)
				return -1;
			continue;
		}
		if (!strcmp(key, "cubin"))
			job->cubin_path = val;
		else if (!strcmp(key, "kernel"))
			job->kernel = val;
		else if (!strcmp(key, "problem"))
			job->problem = val;
		else if (!strcmp(key, "ref_cubin"))
			job->ref_cubin_path = val;
		else if (!strcmp(key, "ref_kernel"))
			job->ref_kernel = val;
		else if (!strcmp(key, "rel_l2"))
			r = parse_dbl(key, val, &job->rel_l2);
		else if (!strcmp(key, "max_abs"))
			r = parse_dbl(key, val, &job->max_abs);
		else if (!strcmp(key, "check_seeds"))
			r = parse_int(key, val, &job->check_seeds);
		else if (!strcmp(key, "seed"))
			r = parse_ull(key, val, &job->seed);
		else if (!strcmp(key, "warmup"))
			r = parse_int(key, val, &job->warmup);
		else if (!strcmp(key, "repeats"))
			r = parse_int(key, val, &job->repeats);
		else if (!strcmp(key, "launches"))
			r = parse_int(key, val, &job->launches);
		else if (!strcmp(key, "l2_hot"))
			r = parse_int(key, val, &job->l2_hot);
		else if (!strcmp(key, "timeout"))
			r = parse_dbl(key, val, &job->timeout_s);
		else if (!strcmp(key, "sanitize"))
			r = parse_int(key, val, &job->sanitize);
		else if (!strcmp(key, "time_it"))
			r = parse_int(key, val, &job->time_it);
		else if (!strcmp(key, "nshapes"))
			r = parse_ull(key, val, &n);
		else
			return error("worker protocol: unknown key '%s'", key);
		if (r < 0)
			return -1;
	}
	if (r < 0)
		return -1;
	if (n > WORKER_MAX_SHAPES)
		return error("worker protocol: %llu shapes, at most %d", n, WORKER_MAX_SHAPES);
	job->nshapes = (size_t)n;
	return 0;
}

/* ---------------------------------------------------------- results */

void worker_result_encode(const struct worker_result *res, unsigned flags, struct strbuf *out)
{
	size_t n = res->nshapes < WORKER_MAX_SHAPES ? res->nshapes : WORKER_MAX_SHAPES;
	char key[64];
	size_t i, j;

	sb_reset(out);
	sb_addf(out, "type=result\nflags=%u\n", flags);
	kv_str(out, "outcome", outcome_name(res->outcome));
	kv_str(out, "reason", res->reason);
	sb_addf(out, "nshapes=%zu\n", n);
	for (i = 0; i < n; i++) {
		const struct worker_shape_result *s = &res->shapes[i];

		snprintf(key, sizeof(key), "shape.%zu.outcome", i);
		kv_str(out, key, outcome_name(s->outcome));
		snprintf(key, sizeof(key), "shape.%zu.reason", i);
		kv_str(out, key, s->reason);
		sb_addf(out,
		        "shape.%zu.rel_l2=%.17g\nshape.%zu.max_abs=%.17g\nshape.%zu.samples=", i,
		        s->rel_l2, i, s->max_abs, i);
		for (j = 0; j < s->nsamples; j++)
			sb_addf(out, j ? " %.17g" : "%.17g", s->samples_us[j]);
		sb_add(out, "\n", 1);
	}
}

static int decode_outcome(const char *key, const char *val, int *out)
{
	int o = outcome_parse(val);

	if (o < 0)
		return error("worker protocol: unknown outcome '%s' for '%s'", val, key);
	*out = o;
	return 0;
}

static int decode_samples(const char *key, const char *s, struct worker_shape_result *r)
{
	size_t n = 0, alloc = 0;
	double *v = NULL;
	char *end;

	free(r->samples_us);
	r->samples_us = NULL;
	r->nsamples = 0;
	while (*s) {
		ALLOC_GROW(v, n + 1, alloc);
		v[n] = strtod(s, &end);
		if (end == s || (*end && *end != ' ')) {
			free(v);
			return error("worker protocol: bad samples for '%s'", key);
		}
		n++;
		s = *end ? end + 1 : end;
	}
	r->samples_us = v;
	r->nsamples = n;
	return 0;
}

static int decode_result_shape(struct worker_shape_result *s, const char *field, const char *key,
                               const char *val)
{
	if (!strcmp(field, "outcome"))
		return decode_outcome(key, val, &s->outcome);
	if (!strcmp(field, "reason")) {
		snprintf(s->reason, sizeof(s->reason), "%s", val);
		return 0;
	}
	if (!strcmp(field, "rel_l2"))
		return parse_dbl(key, val, &s->rel_l2);
	if (!strcmp(field, "max_abs"))
		return parse_dbl(key, val, &s->max_abs);
	if (!strcmp(field, "samples"))
		return decode_samples(key, val, s);
	return error("worker protocol: unknown key '%s'", key);
}

int worker_result_decode(char *msg, size_t len, struct worker_result *res, unsigned *flags)
{
	unsigned long long n = 0, fl = 0;
	struct kv_iter it;
	const char *type = NULL, *field = NULL;
	char *key, *val;
	size_t idx = 0;
	int r, k = 0;

	memset(res, 0, sizeof(*res));
	*flags = 0;
	if (msg_begin(msg, len, &it, &type) < 0)
		return -1;
	if (strcmp(type, "result"))
		return error("worker protocol: expected a result, got '%s'", type);
	while ((r = kv_next(&it, &key, &val)) > 0) {
		k = shape_key(key, &idx, &field);
		if (k < 0)
			break;
		if (k) {
			r = decode_result_shape(&res->shapes[idx], field, key, val);
		} else if (!strcmp(key, "flags")) {
			r = parse_ull(key, val, &fl);
		} else if (!strcmp(key, "outcome")) {
			r = decode_outcome(key, val, &res->outcome);
		} else if (!strcmp(key, "reason")) {
			snprintf(res->reason, sizeof(res->reason), "%s", val);
		} else if (!strcmp(key, "nshapes")) {
			r = parse_ull(key, val, &n);
		} else {
			r = error("worker protocol: unknown key '%s'", key);
		}
		if (r < 0)
			break;
	}
	if (r >= 0 && k >= 0 && n > WORKER_MAX_SHAPES)
		r = error("worker protocol: %llu shapes, at most %d", n, WORKER_MAX_SHAPES);
	if (r < 0 || k < 0) {
		worker_result_release(res);
		return -1;
	}
	res->nshapes = (size_t)n;
	*flags = (unsigned)fl;
	return 0;
}

void worker_result_release(struct worker_result *res)
{
	size_t i;

	for (i = 0; i < WORKER_MAX_SHAPES; i++) {
		free(res->shapes[i].samples_us);
		res->shapes[i].samples_us = NULL;
		res->shapes[i].nsamples = 0;
	}
}

/* -------------------------------------------------------------- framing */

static int send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Send one message; -1 with errno set when the peer is gone. */
static int wire_send(int fd, const struct strbuf *body)
{
	char hdr[WIRE_HDR_LEN + 1];

	snprintf(hdr, sizeof(hdr), "tuner-worker/%d %08zx\n", WORKER_PROTOCOL_VERSION, body->len);
	if (send_all(fd, hdr, WIRE_HDR_LEN) < 0)
		return -1;
	return send_all(fd, body->buf ? body->buf : "", body->len);
}

/* n bytes before deadline (monotonic seconds, 0: none): 1, 0 on end of file, -1 error, -2 late. */
static int read_full(int fd, char *buf, size_t n, double deadline)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r;

		if (deadline > 0) {
			struct pollfd pfd = {.fd = fd, .events = POLLIN};
			double left = deadline - now_seconds();
			int pr;

			if (left <= 0)
				return -2;
			pr = poll(&pfd, 1, left > 1e6 ? 1000000000 : (int)(left * 1000) + 1);
			if (pr < 0 && errno != EINTR)
				return -1;
			if (pr <= 0)
				continue;
		}
		r = read(fd, buf + got, n - got);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return errno == ECONNRESET ? 0 : -1;
		}
		if (r == 0)
			return 0;
		got += (size_t)r;
	}
	return 1;
}

/* One message into body: 1, 0 when the peer is gone, -1 on a protocol error, -2 past deadline. */
static int wire_recv(int fd, struct strbuf *body, double deadline)
{
	char hdr[WIRE_HDR_LEN + 1], *end;
	unsigned long len;
	long version;
	int r;

	r = read_full(fd, hdr, WIRE_HDR_LEN, deadline);
	if (r != 1)
		return r;
	hdr[WIRE_HDR_LEN] = '\0';
	if (memcmp(hdr, "tuner-worker/", 13) || hdr[WIRE_HDR_LEN - 1] != '\n')
		return error("worker protocol: bad header");
	version = strtol(hdr + 13, &end, 10);
	if (*end != ' ' || version != WORKER_PROTOCOL_VERSION)
		return error("worker protocol: version %.*s, expected %d",
		             (int)strcspn(hdr + 13, " \n"), hdr + 13, WORKER_PROTOCOL_VERSION);
	len = strtoul(end + 1, &end, 16);
	if (end != hdr + WIRE_HDR_LEN - 1 || len > WIRE_MAX_BODY)
		return error("worker protocol: bad length in header");
	sb_reset(body);
	sb_grow(body, len);
	r = read_full(fd, body->buf, len, deadline);
	if (r != 1)
		return r;
	body->len = len;
	body->buf[len] = '\0';
	return 1;
}

/* ========================================================= orchestrator */

struct worker {
	pid_t pid; /* 0: no child */
	int fd;
	int device;
	char name[128];
	char driver[32];
	int sm_count;
	int cc;
	long long smem_optin;
	long long l2_bytes;
	struct strbuf msg;
	char phase[200]; /* what the child said it was doing last */
};

/* snprintf for reasons, which are cut to their field's size on purpose. */
static void TUNER_PRINTF(3, 4) set_text(char *dst, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(dst, len, fmt, ap);
	va_end(ap);
}

static void describe_status(int status, char *buf, size_t len)
{
	if (WIFSIGNALED(status))
		snprintf(buf, len, "signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
	else if (WIFEXITED(status))
		snprintf(buf, len, "exit status %d", WEXITSTATUS(status));
	else
		snprintf(buf, len, "status 0x%x", (unsigned)status);
}

/* Close the socket and wait for the child, killing it at once (grace 0) or after grace seconds. */
static int reap(struct worker *w, double grace)
{
	double until = now_seconds() + grace;
	int status = 0;
	pid_t r;

	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	if (!w->pid)
		return 0;
	if (grace <= 0)
		kill(w->pid, SIGKILL);
	for (;;) {
		r = waitpid(w->pid, &status, grace > 0 ? WNOHANG : 0);
		if (r == w->pid || (r < 0 && errno != EINTR))
			break;
		if (r == 0) {
			if (now_seconds() >= until) {
				kill(w->pid, SIGKILL);
				grace = 0;
			} else {
				struct timespec ts = {0, 10 * 1000 * 1000};

				nanosleep(&ts, NULL);
			}
		}
	}
	w->pid = 0;
	return status;
}

/* Close every descriptor from lo up: the child must not hold the orchestrator's files. */
static void close_from(int lo)
{
	int fd;

#ifdef SYS_close_range
	if (syscall(SYS_close_range, (unsigned)lo, ~0U, 0) == 0)
		return;
#endif
	for (fd = lo; fd < 4096; fd++)
		close(fd);
}

/* Between fork and exec: async-signal-safe calls only. */
static _Noreturn void exec_child(int fd, pid_t parent, char *const argv[])
{
	struct sigaction sa;
	sigset_t none;
	int null;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	if (fd == WORKER_CHILD_FD)
		fcntl(fd, F_SETFD, 0);
	else if (dup2(fd, WORKER_CHILD_FD) < 0)
		_exit(127);
	null = open("/dev/null", O_RDONLY);
	if (null > 0) {
		dup2(null, 0);
		close(null);
	}
	dup2(2, 1); /* device printf goes to stdout: keep it off the orchestrator's output */
	close_from(WORKER_CHILD_FD + 1);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN; /* Ctrl-C is the orchestrator's to handle; it finishes the job */
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = SIG_DFL;
	sigaction(SIGPIPE, &sa, NULL);
	execv("/proc/self/exe", argv);
	_exit(127);
}

static int decode_hello(struct worker *w, char *why, size_t whylen)
{
	struct kv_iter it;
	const char *type = NULL;
	char *key, *val;
	int ok = 0, r;

	if (msg_begin(w->msg.buf, w->msg.len, &it, &type) < 0 || strcmp(type, "hello")) {
		snprintf(why, whylen, "the GPU worker did not say hello");
		return -1;
	}
	snprintf(why, whylen, "the GPU worker failed without a reason");
	while ((r = kv_next(&it, &key, &val)) > 0) {
		long long v = 0;

		if (!strcmp(key, "ok"))
			ok = !strcmp(val, "1");
		else if (!strcmp(key, "reason"))
			snprintf(why, whylen, "%s", val);
		else if (!strcmp(key, "name"))
			snprintf(w->name, sizeof(w->name), "%s", val);
		else if (!strcmp(key, "driver"))
			snprintf(w->driver, sizeof(w->driver), "%s", val);
		else if (parse_ll(key, val, &v) < 0)
			r = -1;
		else if (!strcmp(key, "sm_count"))
			w->sm_count = (int)v;
		else if (!strcmp(key, "cc"))
			w->cc = (int)v;
		else if (!strcmp(key, "smem_optin"))
			w->smem_optin = v;
		else if (!strcmp(key, "l2_bytes"))
			w->l2_bytes = v;
		if (r < 0)
			break;
	}
	if (r < 0) {
		snprintf(why, whylen, "the GPU worker sent a malformed hello");
		return -1;
	}
	return ok ? 0 : -1;
}

static int worker_spawn(struct worker *w, char *why, size_t whylen)
{
	char fdarg[32], devarg[32], st[64];
	char *argv[] = {"tuner", "__worker", fdarg, devarg, NULL};
	pid_t parent = getpid(), pid;
	int sv[2], r, status;

	snprintf(fdarg, sizeof(fdarg), "--fd=%d", WORKER_CHILD_FD);
	snprintf(devarg, sizeof(devarg), "--device=%d", w->device);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		snprintf(why, whylen, "cannot create the GPU worker's socket: %s", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(why, whylen, "cannot start the GPU worker: %s", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (pid == 0)
		exec_child(sv[1], parent, argv);
	close(sv[1]);
	w->pid = pid;
	w->fd = sv[0];
	r = wire_recv(w->fd, &w->msg, now_seconds() + WORKER_HELLO_TIMEOUT);
	if (r == 1) {
		if (decode_hello(w, why, whylen) == 0)
			return 0;
		reap(w, WORKER_EXIT_GRACE);
		return -1;
	}
	status = reap(w, r == 0 ? WORKER_EXIT_GRACE : 0);
	describe_status(status, st, sizeof(st));
	if (r == 0)
		snprintf(why, whylen, "the GPU worker exited before it said hello (%s)", st);
	else if (r == -2)
		snprintf(why, whylen, "the GPU worker did not start within %.0f s",
		         WORKER_HELLO_TIMEOUT);
	else
		snprintf(why, whylen, "the GPU worker spoke an unknown protocol");
	return -1;
}

int worker_start_on(struct worker **out, int device, char *why, size_t whylen)
{
	struct worker *w = xcalloc(1, sizeof(*w));

	*out = NULL;
	w->fd = -1;
	w->device = device;
	if (worker_spawn(w, why, whylen) < 0) {
		sb_release(&w->msg);
		free(w);
		return -1;
	}
	*out = w;
	return 0;
}

int worker_start(struct worker **out, char *why, size_t whylen)
{
	return worker_start_on(out, 0, why, whylen);
}

int worker_device(struct worker *w, char *name, size_t namelen, char *driver, size_t driverlen,
                  int *sm_count, long long *smem_optin)
{
	if (!w)
		return error("no GPU worker");
	if (name && namelen)
		snprintf(name, namelen, "%s", w->name);
	if (driver && driverlen)
		snprintf(driver, driverlen, "%s", w->driver);
	if (sm_count)
		*sm_count = w->sm_count;
	if (smem_optin)
		*smem_optin = w->smem_optin;
	return 0;
}

long worker_pid(const struct worker *w)
{
	return w ? (long)w->pid : 0;
}

/* Send the job, restarting a child that died between jobs once. */
static int send_job(struct worker *w, const struct strbuf *body)
{
	char why[256];
	int attempt;

	for (attempt = 0; attempt < 2; attempt++) {
		if (!w->pid && worker_spawn(w, why, sizeof(why)) < 0)
			return error("cannot restart the GPU worker: %s", why);
		if (wire_send(w->fd, body) == 0)
			return 0;
		reap(w, 0);
	}
	return error("cannot send a job to the GPU worker: %s", strerror(errno));
}

int worker_eval(struct worker *w, const struct worker_job *job, struct worker_result *res)
{
	double timeout = job->timeout_s > 0 ? job->timeout_s : WORKER_DEFAULT_TIMEOUT;
	struct strbuf body = STRBUF_INIT;
	struct kv_iter it;
	const char *type = NULL;
	char *key, *val, st[64];
	unsigned flags;
	int r;

	memset(res, 0, sizeof(*res));
	worker_job_encode(job, &body);
	r = send_job(w, &body);
	sb_release(&body);
	if (r < 0)
		return -1;
	snprintf(w->phase, sizeof(w->phase), "loading '%s'", job->kernel ? job->kernel : "?");
	for (;;) {
		/* The watchdog: each phase the child announces gets timeout seconds. */
		r = wire_recv(w->fd, &w->msg, now_seconds() + timeout);
		if (r == -2) {
			reap(w, 0);
			res->outcome = REJECT_TIMEOUT;
			snprintf(res->reason, sizeof(res->reason), "timed out after %.1f s in %s",
			         timeout, w->phase);
			return 0;
		}
		if (r == 0) {
			describe_status(reap(w, WORKER_EXIT_GRACE), st, sizeof(st));
			res->outcome = REJECT_RUNTIME_FAULT;
			snprintf(res->reason, sizeof(res->reason), "worker died: %s in %s", st,
			         w->phase);
			return 0;
		}
		if (r < 0) {
			reap(w, 0);
			return error("the GPU worker broke the protocol in %s", w->phase);
		}
		if (msg_is(&w->msg, "tick")) {
			if (msg_begin(w->msg.buf, w->msg.len, &it, &type) == 0 &&
			    kv_next(&it, &key, &val) == 1 && !strcmp(key, "phase"))
				snprintf(w->phase, sizeof(w->phase), "%s", val);
			continue;
		}
		if (worker_result_decode(w->msg.buf, w->msg.len, res, &flags) < 0) {
			reap(w, 0);
			return error("the GPU worker sent a malformed result in %s", w->phase);
		}
		if (flags & WORKER_RESULT_FATAL)
			reap(w, 0); /* its context is gone; a fresh child serves the next job */
		if (flags & WORKER_RESULT_ERROR)
			return error("GPU evaluation of '%s' failed: %s",
			             job->kernel ? job->kernel : "?", res->reason);
		return 0;
	}
}

void worker_stop(struct worker *w)
{
	struct strbuf quit = STRBUF_INIT;

	if (!w)
		return;
	if (w->pid) {
		sb_adds(&quit, "type=quit\n");
		wire_send(w->fd, &quit);
		sb_release(&quit);
		reap(w, WORKER_EXIT_GRACE);
	}
	sb_release(&w->msg);
	free(w);
}

/* =============================================================== child */

struct dev_buf {
	CUdeviceptr p;
	size_t cap;
};

/* Inputs and reference output of one (shape, seed), kept on the device across jobs. */
struct ref_entry {
	char key[HASH_HEX_LEN];
	unsigned long long in[WORKER_MAX_INPUTS];
	size_t in_bytes[WORKER_MAX_INPUTS];
	unsigned long long ref;
	size_t ref_bytes;
	size_t bytes;
	unsigned long long used; /* LRU stamp */
};

struct child {
	int fd;
	int device;
	CUdevice dev;
	CUcontext ctx;
	CUstream stream;
	CUevent ev[2];
	int have_ctx, have_stream, nev;
	long long l2_bytes;
	size_t cache_budget;
	/* the reference module stays loaded while jobs name the same one */
	char *ref_path, *ref_kernel;
	CUmodule ref_mod;
	CUfunction ref_fn;
	struct ref_entry *cache;
	size_t ncache, cache_alloc, cache_bytes;
	unsigned long long clock;
	struct dev_buf out, arena, flush;
	void *host[3]; /* staging: inputs and run 1, run 2, the reference */
	size_t host_cap[3];
	/* the job in flight */
	const struct worker_problem *prob;
	CUmodule mod;
	CUfunction fn;
	CUdeviceptr san;
	CUgraph graph;
	CUgraphExec exec;
	struct worker_args *sets;
	int blame;       /* a failure now is the candidate's */
	char where[200]; /* the phase, as last announced */
};

static char child_err[512]; /* the last error() message, for results */

static void child_capture(const char *prefix, const char *msg)
{
	snprintf(child_err, sizeof(child_err), "%s", msg);
	if (getenv("TUNER_WORKER_VERBOSE"))
		fprintf(stderr, "worker: %s%s\n", prefix, msg);
}

static void child_send(int fd, const struct strbuf *body)
{
	/* A lost orchestrator ends us (PR_SET_PDEATHSIG); nothing to do about a failed send. */
	if (wire_send(fd, body) < 0 && getenv("TUNER_WORKER_VERBOSE"))
		fprintf(stderr, "worker: cannot answer: %s\n", strerror(errno));
}

/* Announce a phase: the orchestrator's watchdog restarts its clock, and names it on a timeout. */
static void TUNER_PRINTF(3, 4) tick(int fd, char *where, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(where, 200, fmt, ap);
	va_end(ap);
	sb_adds(&sb, "type=tick\n");
	kv_str(&sb, "phase", where);
	child_send(fd, &sb);
	sb_release(&sb);
}

static void send_hello(int fd, int ok, const char *reason, const char *name, const char *driver,
                       int sm_count, int cc, long long smem_optin, long long l2_bytes)
{
	struct strbuf sb = STRBUF_INIT;

	sb_addf(&sb, "type=hello\nok=%d\n", ok);
	kv_str(&sb, "reason", reason);
	kv_str(&sb, "name", name);
	kv_str(&sb, "driver", driver);
	sb_addf(&sb, "sm_count=%d\ncc=%d\nsmem_optin=%lld\nl2_bytes=%lld\n", sm_count, cc,
	        smem_optin, l2_bytes);
	child_send(fd, &sb);
	sb_release(&sb);
}

/* ----------------------------------------------------------- buffers */

static int dev_reserve(struct dev_buf *b, size_t bytes)
{
	if (b->cap >= bytes)
		return 0;
	if (b->p) {
		CU_CHECK(cuda.MemFree(b->p));
		b->p = 0;
		b->cap = 0;
	}
	CU_CHECK(cuda.MemAlloc(&b->p, bytes));
	b->cap = bytes;
	return 0;
}

static void dev_release(struct dev_buf *b)
{
	if (b->p)
		cuda.MemFree(b->p);
	b->p = 0;
	b->cap = 0;
}

static void *host_reserve(struct child *c, int i, size_t bytes)
{
	if (c->host_cap[i] < bytes) {
		free(c->host[i]);
		c->host[i] = xmalloc(bytes);
		c->host_cap[i] = bytes;
	}
	return c->host[i];
}

struct fill_task {
	const struct worker_problem *p;
	unsigned long long seed;
	size_t input, begin, end;
	void *host;
};

static void *fill_thread(void *arg)
{
	struct fill_task *t = arg;

	t->p->fill(t->seed, t->input, t->host, t->begin, t->end);
	return NULL;
}

/* Generating tens of millions of normals is the slow part of a new shape: use every core. */
static void fill_parallel(const struct worker_problem *p, unsigned long long seed, size_t input,
                          void *host, size_t n)
{
	struct fill_task t[16];
	pthread_t th[16];
	int started[16] = {0};
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	size_t nt = n < (1u << 20) || ncpu < 2 ? 1 : (size_t)(ncpu < 16 ? ncpu : 16), chunk, i;

	chunk = (n + nt - 1) / nt;
	for (i = 0; i < nt; i++) {
		t[i].p = p;
		t[i].seed = seed;
		t[i].input = input;
		t[i].host = host;
		t[i].begin = i * chunk < n ? i * chunk : n;
		t[i].end = (i + 1) * chunk < n ? (i + 1) * chunk : n;
		if (i > 0)
			started[i] = pthread_create(&th[i], NULL, fill_thread, &t[i]) == 0;
	}
	for (i = 0; i < nt; i++)
		if (!started[i])
			fill_thread(&t[i]);
	for (i = 1; i < nt; i++)
		if (started[i])
			pthread_join(th[i], NULL);
}

static int launch(struct child *c, CUfunction fn, const unsigned grid[3], const unsigned block[3],
                  unsigned smem, struct worker_args *a)
{
	CU_CHECK(cuda.LaunchKernel(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2],
	                           smem, c->stream, a->params, NULL));
	return 0;
}

/* ------------------------------------------------- the reference cache */

static void cache_drop(struct child *c, size_t i)
{
	struct ref_entry *e = &c->cache[i];
	size_t k;

	for (k = 0; k < WORKER_MAX_INPUTS; k++)
		if (e->in[k])
			cuda.MemFree(e->in[k]);
	if (e->ref)
		cuda.MemFree(e->ref);
	c->cache_bytes -= e->bytes;
	c->cache[i] = c->cache[--c->ncache];
}

static void cache_evict_lru(struct child *c)
{
	size_t i, lru = 0;

	for (i = 1; i < c->ncache; i++)
		if (c->cache[i].used < c->cache[lru].used)
			lru = i;
	cache_drop(c, lru);
}

static void cache_clear(struct child *c)
{
	while (c->ncache)
		cache_drop(c, c->ncache - 1);
}

static unsigned long long seed_of(const struct worker_job *job, int index)
{
	return job->seed + 0x9e3779b97f4a7c15ULL * (unsigned long long)(index + 1);
}

static int cache_alloc_entry(struct child *c, struct ref_entry *e, size_t ninputs)
{
	size_t k;

	for (k = 0; k < ninputs; k++)
		CU_CHECK(cuda.MemAlloc(&e->in[k], e->in_bytes[k]));
	CU_CHECK(cuda.MemAlloc(&e->ref, e->ref_bytes));
	return 0;
}

static void entry_free(struct ref_entry *e)
{
	size_t k;

	for (k = 0; k < WORKER_MAX_INPUTS; k++)
		if (e->in[k])
			cuda.MemFree(e->in[k]);
	if (e->ref)
		cuda.MemFree(e->ref);
	memset(e, 0, sizeof(*e));
}

/* Fill the inputs of a new entry and run the reference on them. */
static int entry_fill(struct child *c, struct ref_entry *e, const struct worker_shape_job *sh,
                      int index, unsigned long long seed, const size_t *in_elems)
{
	const struct worker_problem *p = c->prob;
	unsigned grid[3], block[3];
	struct worker_args a;
	size_t k;

	tick(c->fd, c->where, "shape '%s' seed %d: inputs", sh->name, index);
	for (k = 0; k < p->ninputs; k++) {
		void *host = host_reserve(c, 0, e->in_bytes[k]);

		fill_parallel(p, seed, k, host, in_elems[k]);
		CU_CHECK(cuda.MemcpyHtoD(e->in[k], host, e->in_bytes[k]));
	}
	tick(c->fd, c->where, "shape '%s' seed %d: reference", sh->name, index);
	p->ref_args(sh->dims, e->in, e->ref, &a, grid, block);
	CU_CHECK(cuda.MemsetD16(e->ref, p->out_poison, e->ref_bytes / 2));
	if (launch(c, c->ref_fn, grid, block, 0, &a) < 0)
		return -1;
	CU_CHECK(cuda.StreamSynchronize(c->stream));
	return 0;
}

/* The entry for (shape, seed index): made on first use (inputs filled, reference run), then reused.
 */
static struct ref_entry *cache_get(struct child *c, const struct worker_job *job,
                                   const struct worker_shape_job *sh, int index)
{
	const struct worker_problem *p = c->prob;
	unsigned long long seed = seed_of(job, index);
	size_t in_elems[WORKER_MAX_INPUTS], out_elems, k, i;
	struct ref_entry e;
	struct hasher *h = hasher_new();
	char why[256];

	hasher_adds(h, p->name);
	hasher_adds(h, c->ref_path);
	hasher_adds(h, c->ref_kernel);
	hasher_add(h, sh->dims, sizeof(sh->dims));
	hasher_add(h, &seed, sizeof(seed));
	memset(&e, 0, sizeof(e));
	hasher_final_hex(h, e.key);
	for (i = 0; i < c->ncache; i++) {
		if (!strcmp(c->cache[i].key, e.key)) {
			c->cache[i].used = ++c->clock;
			return &c->cache[i];
		}
	}
	if (p->elems(sh->dims, in_elems, &out_elems, why, sizeof(why)) < 0) {
		error("shape '%s': %s", sh->name, why);
		return NULL;
	}
	for (k = 0; k < p->ninputs; k++) {
		e.in_bytes[k] = in_elems[k] * p->in_size;
		e.bytes += e.in_bytes[k];
	}
	e.ref_bytes = out_elems * p->ref_size;
	e.bytes += e.ref_bytes;
	while (c->ncache && c->cache_bytes + e.bytes > c->cache_budget)
		cache_evict_lru(c);
	if (cache_alloc_entry(c, &e, p->ninputs) < 0) {
		entry_free(&e);
		if (cuda_last_error() != CUDA_ERROR_OUT_OF_MEMORY || !c->ncache)
			return NULL;
		/* the timing buffers hold the rest: start over with an empty cache */
		cache_clear(c);
		cuda_clear_error();
		if (cache_alloc_entry(c, &e, p->ninputs) < 0) {
			entry_free(&e);
			return NULL;
		}
	}
	if (entry_fill(c, &e, sh, index, seed, in_elems) < 0) {
		if (!cuda_error_is_sticky(cuda_last_error()))
			entry_free(&e);
		return NULL;
	}
	e.used = ++c->clock;
	ALLOC_GROW(c->cache, c->ncache + 1, c->cache_alloc);
	c->cache[c->ncache] = e;
	c->cache_bytes += e.bytes;
	return &c->cache[c->ncache++];
}

/* ----------------------------------------------------------- modules */

static int load_module(const char *path, CUmodule *mod)
{
	char *image;
	CUresult r;

	if (read_file(path, &image, NULL) < 0)
		return error("cannot read '%s': %s", path, strerror(errno));
	r = cuda.ModuleLoadData(mod, image);
	free(image);
	if (r != CUDA_SUCCESS)
		return cuda_check_failed(r, "cuModuleLoadData", __FILE__, __LINE__);
	return 0;
}

static int ref_load(struct child *c, const struct worker_job *job)
{
	if (!job->ref_cubin_path || !job->ref_kernel)
		return error("the job names no reference kernel");
	if (c->ref_mod && !strcmp(c->ref_path, job->ref_cubin_path) &&
	    !strcmp(c->ref_kernel, job->ref_kernel))
		return 0;
	cache_clear(c);
	if (c->ref_mod)
		cuda.ModuleUnload(c->ref_mod);
	c->ref_mod = NULL;
	free(c->ref_path);
	free(c->ref_kernel);
	c->ref_path = xstrdup(job->ref_cubin_path);
	c->ref_kernel = xstrdup(job->ref_kernel);
	if (load_module(c->ref_path, &c->ref_mod) < 0)
		return -1;
	CU_CHECK(cuda.ModuleGetFunction(&c->ref_fn, c->ref_mod, c->ref_kernel));
	return 0;
}

static int candidate_load(struct child *c, const struct worker_job *job)
{
	unsigned smem = 0;
	size_t i, bytes = 0;

	for (i = 0; i < job->nshapes; i++)
		if (job->shapes[i].smem > smem)
			smem = job->shapes[i].smem;
	/* an unreadable cubin is the orchestrator's error; one the driver refuses is the variant's
	 */
	if (access(job->cubin_path, R_OK) < 0)
		return error("cannot read '%s': %s", job->cubin_path, strerror(errno));
	c->blame = 1;
	if (load_module(job->cubin_path, &c->mod) < 0)
		return -1;
	CU_CHECK(cuda.ModuleGetFunction(&c->fn, c->mod, job->kernel));
	if (smem > 48 * 1024)
		CU_CHECK(cuda.FuncSetAttribute(
		    c->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)smem));
	if (job->sanitize) {
		if (cuda.ModuleGetGlobal(&c->san, &bytes, c->mod, "tuner_san_log") != CUDA_SUCCESS)
			return error(
			    "a sanitize job, but '%s' has no 'tuner_san_log' (built without "
			    "-DTUNER_SANITIZE?)",
			    job->cubin_path);
		if (bytes < sizeof(struct tuner_san_log))
			return error("'tuner_san_log' in '%s' is %zu bytes, expected %zu",
			             job->cubin_path, bytes, sizeof(struct tuner_san_log));
	}
	c->blame = 0;
	return 0;
}

/* --------------------------------------------------------- sanitizer */

static const char *san_what(unsigned kind, unsigned is_write, unsigned long n)
{
	static const char *const what[TUNER_SAN_KINDS][2][2] = {
	    [TUNER_SAN_CP_ASYNC] = {{"misaligned cp.async read", "misaligned cp.async reads"},
	                            {"misaligned cp.async write", "misaligned cp.async writes"}},
	    [TUNER_SAN_LDMATRIX] = {{"misaligned ldmatrix read", "misaligned ldmatrix reads"},
	                            {"misaligned ldmatrix read", "misaligned ldmatrix reads"}},
	    [TUNER_SAN_VEC_LOAD] = {{"misaligned vector load", "misaligned vector loads"},
	                            {"misaligned vector load", "misaligned vector loads"}},
	    [TUNER_SAN_VEC_STORE] = {{"misaligned vector store", "misaligned vector stores"},
	                             {"misaligned vector store", "misaligned vector stores"}},
	    [TUNER_SAN_BOUNDS] = {{"out-of-bounds shared read", "out-of-bounds shared reads"},
	                          {"out-of-bounds shared write", "out-of-bounds shared writes"}},
	};

	return what[kind][!!is_write][n != 1];
}

/* "12 misaligned cp.async writes; first: thread (1,0,0) block (0,0,0), shared address 0x82" */
static int san_report(const struct tuner_san_log *log, char *buf, size_t len)
{
	struct strbuf sb = STRBUF_INIT;
	unsigned k, i,
	    n = log->nrecords < TUNER_SAN_MAX_RECORDS ? log->nrecords : TUNER_SAN_MAX_RECORDS;
	int any = 0;

	for (k = 0; k < TUNER_SAN_KINDS; k++) {
		unsigned is_write = k == TUNER_SAN_CP_ASYNC || k == TUNER_SAN_VEC_STORE;

		if (!log->count[k])
			continue;
		for (i = 0; i < n; i++) /* the direction of the first record of this kind */
			if (log->first[i].kind == k) {
				is_write = log->first[i].is_write;
				break;
			}
		sb_addf(&sb, "%s%u %s", any ? ", " : "", log->count[k],
		        san_what(k, is_write, log->count[k]));
		any = 1;
	}
	if (any && n) {
		const struct tuner_san_record *r = &log->first[0];

		sb_addf(&sb, "; first: thread (%u,%u,%u) block (%u,%u,%u), %s address 0x%llx",
		        r->thread[0], r->thread[1], r->thread[2], r->block[0], r->block[1],
		        r->block[2], r->space == TUNER_SAN_SHARED ? "shared" : "global", r->addr);
	}
	snprintf(buf, len, "%s", sb.buf ? sb.buf : "");
	sb_release(&sb);
	return any;
}

/* ------------------------------------------------------------- check */

static size_t count_differences(const unsigned char *a, const unsigned char *b, size_t n,
                                size_t size, size_t *first)
{
	size_t i, diff = 0;

	for (i = 0; i < n; i++) {
		if (memcmp(a + i * size, b + i * size, size)) {
			if (!diff++)
				*first = i;
		}
	}
	return diff;
}

/*
 * Check the candidate on one shape: for each seed, fresh inputs, two runs on a
 * poisoned output (they must agree bit for bit), then the comparison with the
 * reference. 0 with a verdict in sr, -1 on an error (the caller decides whose).
 */
static int check_shape(struct child *c, const struct worker_job *job,
                       const struct worker_shape_job *sh, struct worker_shape_result *sr)
{
	const struct worker_problem *p = c->prob;
	int seeds = job->sanitize ? 1 : (job->check_seeds > 0 ? job->check_seeds : 1);
	int runs = job->sanitize ? 1 : 2, seed, run;
	size_t in_elems[WORKER_MAX_INPUTS], n, out_bytes, diff, first = 0;
	struct worker_compare cmp;
	struct tuner_san_log log;
	struct ref_entry *e;
	struct worker_args a;
	char why[256];

	if (p->elems(sh->dims, in_elems, &n, why, sizeof(why)) < 0)
		return error("shape '%s': %s", sh->name, why);
	out_bytes = n * p->out_size;
	if (dev_reserve(&c->out, out_bytes) < 0)
		return -1;
	for (seed = 0; seed < seeds; seed++) {
		if (!(e = cache_get(c, job, sh, seed)))
			return -1;
		p->args(sh->dims, e->in, c->out.p, &a);
		for (run = 0; run < runs; run++) {
			tick(c->fd, c->where, "shape '%s' seed %d: candidate run %d", sh->name,
			     seed, run + 1);
			host_reserve(c, run, out_bytes);
			CU_CHECK(cuda.MemsetD16(c->out.p, p->out_poison, out_bytes / 2));
			if (job->sanitize)
				CU_CHECK(cuda.MemsetD8(c->san, 0, sizeof(log)));
			c->blame = 1;
			if (launch(c, c->fn, sh->grid, sh->block, sh->smem, &a) < 0)
				return -1;
			CU_CHECK(cuda.StreamSynchronize(c->stream));
			if (job->sanitize) {
				CU_CHECK(cuda.MemcpyDtoH(&log, c->san, sizeof(log)));
				if (san_report(&log, why, sizeof(why))) {
					sr->outcome = REJECT_ALIGN;
					set_text(sr->reason, sizeof(sr->reason), "shape '%s': %s",
					         sh->name, why);
					c->blame = 0;
					return 0;
				}
			}
			c->blame = 0;
			CU_CHECK(cuda.MemcpyDtoH(c->host[run], c->out.p, out_bytes));
		}
		if (runs == 2 && memcmp(c->host[0], c->host[1], out_bytes)) {
			diff = count_differences(c->host[0], c->host[1], n, p->out_size, &first);
			sr->outcome = REJECT_RACE;
			set_text(sr->reason, sizeof(sr->reason),
			         "shape '%s' seed %d: two runs on the same inputs differ in %zu of "
			         "%zu outputs (first at %zu)",
			         sh->name, seed, diff, n, first);
			return 0;
		}
		host_reserve(c, 2, e->ref_bytes);
		CU_CHECK(cuda.MemcpyDtoH(c->host[2], e->ref, e->ref_bytes));
		p->compare(c->host[0], c->host[2], n, &cmp);
		if (cmp.rel_l2 > sr->rel_l2 || seed == 0)
			sr->rel_l2 = cmp.rel_l2;
		if (cmp.max_abs > sr->max_abs || seed == 0)
			sr->max_abs = cmp.max_abs;
		if (cmp.nonfinite) {
			sr->outcome = REJECT_WRONG;
			set_text(sr->reason, sizeof(sr->reason),
			         "shape '%s' seed %d: %zu of %zu outputs are NaN or Inf (first at "
			         "%zu); rel_l2 %.3g, max_abs %.3g over the rest",
			         sh->name, seed, cmp.nonfinite, n, cmp.first_nonfinite, cmp.rel_l2,
			         cmp.max_abs);
			return 0;
		}
		if (!(cmp.rel_l2 <= job->rel_l2) || !(cmp.max_abs <= job->max_abs)) {
			sr->outcome = REJECT_WRONG;
			set_text(sr->reason, sizeof(sr->reason),
			         "shape '%s' seed %d: rel_l2 %.3g (tolerance %.3g), max_abs %.3g "
			         "(tolerance %.3g) at %zu: %.6g, expected %.6g",
			         sh->name, seed, cmp.rel_l2, job->rel_l2, cmp.max_abs, job->max_abs,
			         cmp.worst, cmp.worst_out, cmp.worst_ref);
			return 0;
		}
	}
	sr->outcome = VARIANT_OK;
	return 0;
}

/* -------------------------------------------------------------- time */

static size_t round_up(size_t n, size_t to)
{
	return (n + to - 1) / to * to;
}

/*
 * Time the candidate on one shape: rotate through enough input sets that they
 * outgrow the L2 (unless l2_hot), capture `launches` launches in a graph,
 * flush the L2 before each sample, time each replay with events.
 */
static int time_shape(struct child *c, const struct worker_job *job,
                      const struct worker_shape_job *sh, struct worker_shape_result *sr)
{
	const struct worker_problem *p = c->prob;
	int launches = job->launches > 0 ? job->launches : 1;
	int repeats = job->repeats > 0 ? job->repeats : 1, i;
	size_t set_bytes = 0, out_bytes, nsets = 1, k, s, off;
	unsigned long long in[WORKER_MAX_INPUTS];
	struct ref_entry *e;
	float ms;

	if (!(e = cache_get(c, job, sh, 0)))
		return -1;
	out_bytes = e->ref_bytes / p->ref_size * p->out_size;
	for (k = 0; k < p->ninputs; k++)
		set_bytes += round_up(e->in_bytes[k], 256);
	set_bytes += round_up(out_bytes, 256);
	if (!job->l2_hot && c->l2_bytes > 0) {
		nsets =
		    (size_t)((2 * c->l2_bytes + (long long)set_bytes - 1) / (long long)set_bytes);
		nsets = nsets < 1 ? 1 : nsets > (size_t)launches ? (size_t)launches : nsets;
		if (dev_reserve(&c->flush, (size_t)c->l2_bytes * 2) < 0)
			return -1;
	}
	if (dev_reserve(&c->arena, (nsets - 1) * set_bytes) < 0)
		return -1;
	c->sets = xcalloc(nsets, sizeof(*c->sets));
	p->args(sh->dims, e->in, c->out.p, &c->sets[0]);
	for (s = 1; s < nsets; s++) {
		off = (s - 1) * set_bytes;
		for (k = 0; k < p->ninputs; k++) {
			in[k] = c->arena.p + off;
			CU_CHECK(cuda.MemcpyDtoD(in[k], e->in[k], e->in_bytes[k]));
			off += round_up(e->in_bytes[k], 256);
		}
		p->args(sh->dims, in, c->arena.p + off, &c->sets[s]);
	}
	tick(c->fd, c->where, "shape '%s': timing (%zu input sets)", sh->name, nsets);
	c->blame = 1;
	for (i = 0; i < job->warmup; i++)
		if (launch(c, c->fn, sh->grid, sh->block, sh->smem, &c->sets[i % nsets]) < 0)
			return -1;
	CU_CHECK(cuda.StreamSynchronize(c->stream));
	CU_CHECK(cuda.StreamBeginCapture(c->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
	for (i = 0; i < launches; i++) {
		if (launch(c, c->fn, sh->grid, sh->block, sh->smem, &c->sets[i % nsets]) < 0) {
			CUgraph g = NULL;

			if (cuda.StreamEndCapture(c->stream, &g) == CUDA_SUCCESS && g)
				cuda.GraphDestroy(g);
			return -1;
		}
	}
	CU_CHECK(cuda.StreamEndCapture(c->stream, &c->graph));
	CU_CHECK(cuda.GraphInstantiate(&c->exec, c->graph, 0));
	CU_CHECK(cuda.GraphLaunch(c->exec, c->stream)); /* the first replay uploads the graph */
	CU_CHECK(cuda.StreamSynchronize(c->stream));
	sr->samples_us = xmalloc((size_t)repeats * sizeof(double));
	for (i = 0; i < repeats; i++) {
		if (!job->l2_hot && c->flush.cap)
			CU_CHECK(cuda.MemsetD32Async(c->flush.p, (unsigned)i, c->flush.cap / 4,
			                             c->stream));
		CU_CHECK(cuda.EventRecord(c->ev[0], c->stream));
		CU_CHECK(cuda.GraphLaunch(c->exec, c->stream));
		CU_CHECK(cuda.EventRecord(c->ev[1], c->stream));
		CU_CHECK(cuda.EventSynchronize(c->ev[1]));
		CU_CHECK(cuda.EventElapsedTime(&ms, c->ev[0], c->ev[1]));
		sr->samples_us[i] = (double)ms * 1000.0 / launches;
		sr->nsamples = (size_t)i + 1;
	}
	c->blame = 0;
	return 0;
}

/* -------------------------------------------------------------- jobs */

/* Free what timing one shape made; broken: the context is gone, make no CUDA calls. */
static void timing_cleanup(struct child *c, int broken)
{
	if (!broken) {
		if (c->exec)
			cuda.GraphExecDestroy(c->exec);
		if (c->graph)
			cuda.GraphDestroy(c->graph);
	}
	c->exec = NULL;
	c->graph = NULL;
	free(c->sets);
	c->sets = NULL;
}

/* Free what one job made: modules are unloaded after every job. */
static void job_cleanup(struct child *c, int broken)
{
	timing_cleanup(c, broken);
	if (!broken && c->mod)
		cuda.ModuleUnload(c->mod);
	c->mod = NULL;
	c->fn = NULL;
	c->san = 0;
}

/* Turn the error that stopped a job into its result: the candidate's fault, or the evaluation's. */
static void job_failed(struct child *c, struct worker_result *res, struct worker_shape_result *sr,
                       unsigned *flags)
{
	CUresult e = cuda_last_error();

	if (e != CUDA_SUCCESS && cuda_error_is_sticky(e))
		*flags |= WORKER_RESULT_FATAL;
	else if (c->have_ctx && cuda.CtxSynchronize() != CUDA_SUCCESS)
		*flags |= WORKER_RESULT_FATAL; /* a "harmless" error that left the context broken */
	res->outcome = REJECT_RUNTIME_FAULT;
	if (!c->blame)
		*flags |= WORKER_RESULT_ERROR;
	if (c->blame && e != CUDA_SUCCESS)
		set_text(res->reason, sizeof(res->reason), "%s (%s) in %s", cuda_error_name(e),
		         cuda_error_string(e), c->where);
	else
		set_text(res->reason, sizeof(res->reason), "%s (in %s)", child_err, c->where);
	if (sr) {
		sr->outcome = res->outcome;
		set_text(sr->reason, sizeof(sr->reason), "%s", res->reason);
	}
}

static int job_validate(struct child *c, const struct worker_job *job)
{
	size_t i;

	if (!job->problem || !(c->prob = worker_problem_find(job->problem)))
		return error("unknown problem '%s'", job->problem ? job->problem : "");
	if (!job->cubin_path || !job->kernel)
		return error("the job names no candidate");
	if (!job->nshapes)
		return error("the job has no shapes");
	for (i = 0; i < job->nshapes; i++) {
		const struct worker_shape_job *s = &job->shapes[i];

		if (!s->grid[0] || !s->grid[1] || !s->grid[2] || !s->block[0] || !s->block[1] ||
		    !s->block[2])
			return error("shape '%s': empty launch geometry", s->name);
	}
	return 0;
}

static void child_job(struct child *c, const struct worker_job *job, struct worker_result *res,
                      unsigned *flags)
{
	struct worker_shape_result *sr = NULL;
	size_t i;

	memset(res, 0, sizeof(*res));
	*flags = 0;
	c->blame = 0;
	child_err[0] = '\0';
	cuda_clear_error();
	tick(c->fd, c->where, "loading '%s'", job->kernel ? job->kernel : "?");
	if (job_validate(c, job) < 0 || ref_load(c, job) < 0 || candidate_load(c, job) < 0)
		goto failed;
	for (i = 0; i < job->nshapes; i++) {
		sr = &res->shapes[i];
		res->nshapes = i + 1;
		if (check_shape(c, job, &job->shapes[i], sr) < 0)
			goto failed;
		if (sr->outcome != VARIANT_OK) {
			res->outcome = sr->outcome;
			set_text(res->reason, sizeof(res->reason), "%s", sr->reason);
			job_cleanup(c, 0);
			return;
		}
	}
	for (i = 0; job->time_it && !job->sanitize && i < job->nshapes; i++) {
		sr = &res->shapes[i];
		if (time_shape(c, job, &job->shapes[i], sr) < 0) {
			res->nshapes = i + 1;
			goto failed;
		}
		timing_cleanup(c, 0);
	}
	res->outcome = VARIANT_OK;
	job_cleanup(c, 0);
	return;
failed:
	job_failed(c, res, sr, flags);
	job_cleanup(c, (*flags & WORKER_RESULT_FATAL) != 0);
}

/* ---------------------------------------------------------- lifetime */

static int child_open(struct child *c, char *name, size_t namelen, char *driver, size_t driverlen,
                      int *sm_count, int *cc, long long *smem_optin)
{
	int v, major = 0, minor = 0, version = 0;
	size_t free_bytes = 0, total = 0;

	CU_CHECK(cuda.DeviceGet(&c->dev, c->device));
	CU_CHECK(cuda.DeviceGetName(name, (int)namelen, c->dev));
	CU_CHECK(cuda.DriverGetVersion(&version));
	snprintf(driver, driverlen, "%d.%d", version / 1000, version % 1000 / 10);
	CU_CHECK(
	    cuda.DeviceGetAttribute(sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, c->dev));
	CU_CHECK(
	    cuda.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, c->dev));
	CU_CHECK(
	    cuda.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, c->dev));
	*cc = major * 10 + minor;
	CU_CHECK(cuda.DeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
	                                 c->dev));
	*smem_optin = v;
	CU_CHECK(cuda.DeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, c->dev));
	c->l2_bytes = v;
	CU_CHECK(cuda.DevicePrimaryCtxRetain(&c->ctx, c->dev));
	c->have_ctx = 1;
	CU_CHECK(cuda.CtxSetCurrent(c->ctx));
	CU_CHECK(cuda.StreamCreate(&c->stream, CU_STREAM_DEFAULT));
	c->have_stream = 1;
	for (c->nev = 0; c->nev < 2; c->nev++)
		CU_CHECK(cuda.EventCreate(&c->ev[c->nev], CU_EVENT_DEFAULT));
	CU_CHECK(cuda.MemGetInfo(&free_bytes, &total));
	/* inputs and references of the shape suite stay resident up to a third of the free memory
	 */
	c->cache_budget = free_bytes / 3;
	return 0;
}

static void child_close(struct child *c, int broken)
{
	int i;

	job_cleanup(c, broken);
	if (!broken && c->have_ctx) {
		cache_clear(c);
		dev_release(&c->out);
		dev_release(&c->arena);
		dev_release(&c->flush);
		if (c->ref_mod)
			cuda.ModuleUnload(c->ref_mod);
		for (i = 0; i < c->nev; i++)
			cuda.EventDestroy(c->ev[i]);
		if (c->have_stream)
			cuda.StreamDestroy(c->stream);
	}
	if (!broken && c->have_ctx)
		cuda.DevicePrimaryCtxRelease(c->dev);
	free(c->cache);
	free(c->ref_path);
	free(c->ref_kernel);
	for (i = 0; i < 3; i++)
		free(c->host[i]);
}

static int child_main(int fd, int device)
{
	struct strbuf msg = STRBUF_INIT, out = STRBUF_INIT;
	char name[128] = "", driver[32] = "", why[256];
	int sm_count = 0, cc = 0, status = 0, r;
	long long smem_optin = 0;
	struct child c;

	memset(&c, 0, sizeof(c));
	c.fd = fd;
	c.device = device;
	set_error_routine(child_capture);
	if (cuda_load(why, sizeof(why)) < 0) {
		send_hello(fd, 0, why, NULL, NULL, 0, 0, 0, 0);
		return EX_UNAVAILABLE;
	}
	if (child_open(&c, name, sizeof(name), driver, sizeof(driver), &sm_count, &cc,
	               &smem_optin) < 0) {
		set_text(why, sizeof(why), "GPU %d: %s", device, child_err);
		send_hello(fd, 0, why, NULL, NULL, 0, 0, 0, 0);
		child_close(&c, 1);
		return EX_UNAVAILABLE;
	}
	send_hello(fd, 1, NULL, name, driver, sm_count, cc, smem_optin, c.l2_bytes);
	while ((r = wire_recv(fd, &msg, 0)) == 1) {
		struct worker_job job;
		struct worker_result res;
		unsigned flags = 0;

		if (msg_is(&msg, "quit"))
			break;
		if (worker_job_decode(msg.buf, msg.len, &job) < 0) {
			status = EX_PROTOCOL;
			break;
		}
		child_job(&c, &job, &res, &flags);
		worker_result_encode(&res, flags, &out);
		child_send(fd, &out);
		worker_result_release(&res);
		if (flags & WORKER_RESULT_FATAL) {
			child_close(&c, 1);
			sb_release(&msg);
			sb_release(&out);
			return 0;
		}
	}
	if (r < 0)
		status = EX_PROTOCOL;
	child_close(&c, 0);
	sb_release(&msg);
	sb_release(&out);
	return status;
}

/* --------------------------------------------------- test-only child */

/* "fds 0 1 2 3": the descriptors this process holds, for the O_CLOEXEC test. */
static void list_fds(char *buf, size_t len)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	size_t used;

	snprintf(buf, len, "fds");
	if (!d)
		return;
	while ((de = readdir(d))) {
		used = strlen(buf);
		if (de->d_name[0] != '.' && atoi(de->d_name) != dirfd(d) && used < len)
			snprintf(buf + used, len - used, " %s", de->d_name);
	}
	closedir(d);
}

/* TUNER_WORKER_FAKE: the protocol and the orchestrator's watchdog, exercised without a GPU. */
static int fake_main(int fd)
{
	struct strbuf msg = STRBUF_INIT, out = STRBUF_INIT;
	char where[200];

	send_hello(fd, 1, NULL, "fake GPU (TUNER_WORKER_FAKE)", "0.0", 1, 0, 49152, 0);
	while (wire_recv(fd, &msg, 0) == 1) {
		struct worker_job job;
		struct worker_result res;
		const char *kernel;
		unsigned flags = 0;
		size_t i, j;

		if (msg_is(&msg, "quit") || worker_job_decode(msg.buf, msg.len, &job) < 0)
			break;
		kernel = job.kernel ? job.kernel : "";
		tick(fd, where, "fake job '%s'", kernel);
		memset(&res, 0, sizeof(res));
		if (!strcmp(kernel, "hang"))
			for (;;)
				pause();
		if (!strcmp(kernel, "crash"))
			abort();
		if (!strcmp(kernel, "fault")) {
			res.outcome = REJECT_RUNTIME_FAULT;
			snprintf(res.reason, sizeof(res.reason),
			         "CUDA_ERROR_ILLEGAL_ADDRESS (fake) in %s", where);
			flags = WORKER_RESULT_FATAL;
		} else if (!strcmp(kernel, "fds")) {
			list_fds(res.reason, sizeof(res.reason));
		}
		res.nshapes = res.outcome == VARIANT_OK ? job.nshapes : 0;
		for (i = 0; i < res.nshapes && job.time_it; i++) {
			res.shapes[i].samples_us = xmalloc((size_t)job.repeats * sizeof(double));
			res.shapes[i].nsamples = (size_t)job.repeats;
			for (j = 0; j < (size_t)job.repeats; j++)
				res.shapes[i].samples_us[j] = (double)(i + 1);
		}
		worker_result_encode(&res, flags, &out);
		child_send(fd, &out);
		worker_result_release(&res);
		if (flags & WORKER_RESULT_FATAL)
			break;
	}
	sb_release(&msg);
	sb_release(&out);
	return 0;
}

int worker_main(int argc, char **argv)
{
	int fd = -1, device = 0, i;

	for (i = 1; i < argc; i++) {
		if (!strncmp(argv[i], "--fd=", 5))
			fd = atoi(argv[i] + 5);
		else if (!strncmp(argv[i], "--device=", 9))
			device = atoi(argv[i] + 9);
		else {
			error("__worker: unknown argument '%s'", argv[i]);
			return EX_USAGE;
		}
	}
	if (fd < 0) {
		error("__worker is tuner's GPU child process; tuner starts it itself");
		return EX_USAGE;
	}
	if (getenv("TUNER_WORKER_FAKE"))
		return fake_main(fd);
	return child_main(fd, device);
}

/* ========================================================== problems */

static const struct worker_problem *const worker_problems[] = {
    &attention_gpu_problem,
};

const struct worker_problem *worker_problem_find(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(worker_problems); i++)
		if (!strcmp(worker_problems[i]->name, name))
			return worker_problems[i];
	return NULL;
}

void worker_args_init(struct worker_args *a)
{
	memset(a, 0, sizeof(*a));
}

static union worker_arg *args_next(struct worker_args *a)
{
	if (a->n >= WORKER_MAX_ARGS)
		BUG("more than %d kernel arguments", WORKER_MAX_ARGS);
	a->params[a->n] = &a->v[a->n];
	return &a->v[a->n++];
}

void worker_args_ptr(struct worker_args *a, unsigned long long p)
{
	args_next(a)->ptr = p;
}

void worker_args_int(struct worker_args *a, int i)
{
	args_next(a)->i = i;
}

void worker_args_float(struct worker_args *a, float f)
{
	args_next(a)->f = f;
}
