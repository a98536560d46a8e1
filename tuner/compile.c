/* The NVRTC compile pool: compile processes with a time limit, a cubin cache, ptxas's report. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nvrtc.h>

#include "tuner/compile.h"

#ifndef TUNER_CUDA_HOME
#define TUNER_CUDA_HOME "/usr/local/cuda"
#endif

#define CHILD_FD          3            /* the compile process's end of its socket */
#define COMPILE_WIRE_MAX  (512u << 20) /* bytes in one message's body */
#define EXIT_GRACE        5.0          /* seconds a compile process gets to exit before SIGKILL */
#define COMPILE_CHILD_ENV "TUNER_COMPILE_CHILD"
#define COMPILE_CRASH_ENV "TUNER_TEST_COMPILE_CRASH"

void build_release(struct build *b)
{
	free(b->log);
	free(b->cubin_path);
	memset(b, 0, sizeof(*b));
}

/* ------------------------------------------------------------ ptxas -v */

/* The number just before `what` in line ("Used 10 registers" -> 10): 1 and *out set, or 0. */
static int number_before(const char *line, const char *end, const char *what, int *out)
{
	size_t wlen = strlen(what);
	const char *p, *q;
	long v = 0, scale = 1;

	for (p = line; p + wlen <= end; p++) {
		if (memcmp(p, what, wlen))
			continue;
		q = p;
		while (q > line && q[-1] == ' ')
			q--;
		if (q == line || q[-1] < '0' || q[-1] > '9')
			continue;
		while (q > line && q[-1] >= '0' && q[-1] <= '9' && scale < 1000000000L) {
			v += (q[-1] - '0') * scale;
			scale *= 10;
			q--;
		}
		*out = (int)v;
		return 1;
	}
	return 0;
}

/* Whether line contains `prefix` followed by the entry's name and then `close`. */
static int names_function(const char *line, const char *end, const char *prefix, const char *close,
                          const char *entry, int *is_entry)
{
	size_t plen = strlen(prefix), elen = strlen(entry);
	const char *p;

	for (p = line; p + plen <= end; p++) {
		if (memcmp(p, prefix, plen))
			continue;
		p += plen;
		*is_entry = (size_t)(end - p) >= elen && !memcmp(p, entry, elen) &&
		            (p + elen == end || strchr(close, p[elen]));
		return 1;
	}
	return 0;
}

int compile_parse_ptxas(const char *log, const char *entry, struct build *b)
{
	const char *line = log, *end;
	int in_entry = 0, in_props = 0, found = 0, is_entry;

	if (!log || !entry)
		return -1;
	for (; *line; line = *end ? end + 1 : end) {
		end = strchr(line, '\n');
		if (!end)
			end = line + strlen(line);
		if (names_function(line, end, "Compiling entry function '", "'", entry,
		                   &is_entry)) {
			in_entry = is_entry;
			in_props = 0;
			if (is_entry) {
				found = 1;
				b->regs = b->spill_stores = b->spill_loads = 0;
				b->static_smem = b->stack_frame = 0;
			}
			continue;
		}
		if (names_function(line, end, "Function properties for ", " \r\t", entry,
		                   &is_entry)) {
			in_props = is_entry;
			if (!is_entry)
				in_entry = 0;
			continue;
		}
		if (in_props && number_before(line, end, " bytes stack frame", &b->stack_frame)) {
			number_before(line, end, " bytes spill stores", &b->spill_stores);
			number_before(line, end, " bytes spill loads", &b->spill_loads);
			in_props = 0;
			continue;
		}
		if (in_entry && number_before(line, end, " registers", &b->regs)) {
			if (!number_before(line, end, " bytes smem", &b->static_smem))
				b->static_smem = 0;
			in_entry = 0;
		}
	}
	return found ? 0 : -1;
}

/*
 * The entries ptxas reported in a build's log, as "a, b", appended to sb; how many.
 */
static int ptxas_entries(const char *log, struct strbuf *sb)
{
	static const char prefix[] = "Compiling entry function '";
	const char *p = log, *q;
	int n = 0;

	while (p && (p = strstr(p, prefix))) {
		p += strlen(prefix);
		q = strchr(p, '\'');
		if (!q)
			break;
		sb_addf(sb, "%s%.*s", n++ ? ", " : "", (int)(q - p), p);
		p = q;
	}
	return n;
}

/*
 * A build that compiled but holds no kernel of the job's entry name is no use to the
 * launcher: a compile rejection that names the entries it has (from ptxas's report, so a
 * log without one, from an NVRTC that reports nothing, is left alone). Checked on cached
 * builds too, as the cache key does not cover the entry name.
 */
static void check_entry(struct compile_job *job)
{
	struct build *b = &job->result, tmp;
	struct strbuf sb = STRBUF_INIT;
	char *log, *mangled;
	int n;

	if (b->outcome != VARIANT_OK || !job->entry || !b->log ||
	    compile_parse_ptxas(b->log, job->entry, &tmp) == 0)
		return;
	n = ptxas_entries(b->log, &sb);
	/* the Itanium C++ name of a function called entry starts so */
	mangled = xasprintf("_Z%zu%s", strlen(job->entry), job->entry);
	if (n) {
		log = xasprintf("error: '%s' has no kernel named '%s'; its kernels: %s%s\n%s",
		                job->name ? job->name : job->key, job->entry, sb.buf,
		                strstr(sb.buf, mangled) ? " (a C++ name: declare the kernel "
		                                          "extern \"C\")"
		                                        : "",
		                b->log);
		free(b->log);
		b->log = log;
		b->outcome = REJECT_COMPILE;
		free(b->cubin_path);
		b->cubin_path = NULL;
		b->cubin_size = 0;
	}
	free(mangled);
	sb_release(&sb);
}

void compile_aux_key(const char *what, const char *src, char **opts, size_t nopts,
                     char key[HASH_HEX_LEN])
{
	struct hasher *h = hasher_new();
	size_t i;

	hasher_adds(h, what);
	hasher_adds(h, src);
	for (i = 0; i < nopts; i++)
		if (strncmp(opts[i], "-I", 2))
			hasher_adds(h, opts[i]);
	if (compile_nvrtc_version(key, HASH_HEX_LEN) == 0)
		hasher_adds(h, key);
	hasher_final_hex(h, key);
}

int compile_nvrtc_version(char *out, size_t len)
{
	int major, minor;
	nvrtcResult r = nvrtcVersion(&major, &minor);

	if (r != NVRTC_SUCCESS)
		return error("cannot query the NVRTC version: %s", nvrtcGetErrorString(r));
	snprintf(out, len, "%d.%d", major, minor);
	return 0;
}

/* ------------------------------------------------------------ the cache */

/*
 * <key>.meta is written last and marks an entry complete; <key>.log always
 * exists with it, <key>.cubin only for a successful build.
 */
static char *cache_path(const char *dir, const char *key, const char *ext)
{
	return xasprintf("%s/%s.%s", dir, key, ext);
}

static int cache_lookup(const char *dir, struct compile_job *job)
{
	struct build *b = &job->result;
	char *meta_path = cache_path(dir, job->key, "meta");
	char *log_path = cache_path(dir, job->key, "log");
	char *meta = NULL, *log = NULL, *line, *save = NULL;
	char outcome[32] = "";
	struct build got = {0};
	double seconds = 0;
	int ok = 0, fields = 0;

	if (read_file(meta_path, &meta, NULL) < 0 || read_file(log_path, &log, NULL) < 0)
		goto out;
	for (line = strtok_r(meta, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		fields += sscanf(line, "outcome %31s", outcome) == 1;
		fields += sscanf(line, "regs %d", &got.regs) == 1;
		fields += sscanf(line, "spill_stores %d", &got.spill_stores) == 1;
		fields += sscanf(line, "spill_loads %d", &got.spill_loads) == 1;
		fields += sscanf(line, "static_smem %d", &got.static_smem) == 1;
		fields += sscanf(line, "stack_frame %d", &got.stack_frame) == 1;
		fields += sscanf(line, "seconds %lf", &seconds) == 1;
	}
	if (fields != 7)
		goto out;
	if (!strcmp(outcome, "ok")) {
		struct stat st;

		got.cubin_path = cache_path(dir, job->key, "cubin");
		if (stat(got.cubin_path, &st) < 0 || st.st_size == 0) {
			free(got.cubin_path);
			goto out;
		}
		got.outcome = VARIANT_OK;
		got.cubin_size = (size_t)st.st_size;
	} else if (!strcmp(outcome, "compile")) {
		got.outcome = REJECT_COMPILE;
	} else {
		goto out;
	}
	got.log = log;
	log = NULL;
	got.cached = 1;
	got.seconds = 0;
	*b = got;
	ok = 1;
out:
	free(meta);
	free(log);
	free(meta_path);
	free(log_path);
	return ok;
}

static int cache_store(const char *dir, struct compile_job *job, const void *cubin, size_t size)
{
	const struct build *b = &job->result;
	struct strbuf meta = STRBUF_INIT;
	char *path;
	int ret = 0;

	if (b->outcome == VARIANT_OK) {
		path = cache_path(dir, job->key, "cubin");
		ret = write_file_atomic(path, cubin, size);
		free(path);
	}
	if (!ret) {
		path = cache_path(dir, job->key, "log");
		ret = write_file_atomic(path, b->log, strlen(b->log));
		free(path);
	}
	if (!ret) {
		sb_addf(&meta,
		        "outcome %s\nregs %d\nspill_stores %d\nspill_loads %d\nstatic_smem %d\n"
		        "stack_frame %d\nseconds %.6f\n",
		        b->outcome == VARIANT_OK ? "ok" : "compile", b->regs, b->spill_stores,
		        b->spill_loads, b->static_smem, b->stack_frame, b->seconds);
		path = cache_path(dir, job->key, "meta");
		ret = write_file_atomic(path, meta.buf, meta.len);
		free(path);
	}
	sb_release(&meta);
	return ret;
}

/* ------------------------------------------------------------- the wire */

/*
 * Parent and compile process speak in messages: a 4-byte tag ("CJOB" a job,
 * "CRES" its result), the body's length as a 4-byte integer in host order
 * (both ends are this binary on this machine), then the body: fields, each a
 * 4-byte length and its bytes. A job is name, source, options...; a result is
 * status ("ok", "compile", "api"), log, cubin.
 */
enum io { IO_OK = 1, IO_TIMEOUT = 0, IO_ERROR = -1, IO_EOF = -2 };

/* Wait until fd is ready for events: IO_OK, IO_TIMEOUT past deadline (0: none), IO_ERROR. */
static enum io wait_fd(int fd, short events, double deadline)
{
	struct pollfd pfd = {.fd = fd, .events = events};

	for (;;) {
		int ms = -1, r;

		if (deadline > 0) {
			double left = deadline - now_seconds();

			if (left <= 0)
				return IO_TIMEOUT;
			ms = left > 3600 ? 3600 * 1000 : (int)(left * 1000) + 1;
		}
		r = poll(&pfd, 1, ms);
		if (r > 0)
			return IO_OK;
		if (r < 0 && errno != EINTR)
			return IO_ERROR;
	}
}

static enum io write_full(int fd, const char *p, size_t len, double deadline)
{
	while (len) {
		enum io w = wait_fd(fd, POLLOUT, deadline);
		ssize_t n;

		if (w != IO_OK)
			return w;
		n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
				continue;
			return IO_ERROR;
		}
		p += n;
		len -= (size_t)n;
	}
	return IO_OK;
}

/* IO_EOF when the peer closed before the first byte; a close later on is IO_ERROR. */
static enum io read_full(int fd, char *p, size_t len, double deadline)
{
	size_t got = 0;

	while (got < len) {
		enum io w = wait_fd(fd, POLLIN, deadline);
		ssize_t n;

		if (w != IO_OK)
			return w;
		n = recv(fd, p + got, len - got, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
				continue;
			return IO_ERROR;
		}
		if (n == 0)
			return got ? IO_ERROR : IO_EOF;
		got += (size_t)n;
	}
	return IO_OK;
}

static void msg_start(struct strbuf *m, const char *tag)
{
	sb_reset(m);
	sb_add(m, tag, 4);
	sb_add(m, "\0\0\0\0", 4);
}

static void msg_field(struct strbuf *m, const void *p, size_t len)
{
	uint32_t n = (uint32_t)len;

	sb_add(m, (const char *)&n, sizeof(n));
	if (len)
		sb_add(m, p, len);
}

static enum io msg_send(int fd, struct strbuf *m, double deadline)
{
	uint32_t n = (uint32_t)(m->len - 8);

	if (m->len - 8 > COMPILE_WIRE_MAX)
		return IO_ERROR;
	memcpy(m->buf + 4, &n, sizeof(n));
	return write_full(fd, m->buf, m->len, deadline);
}

/* A message with this tag into m (its body only). */
static enum io msg_recv(int fd, const char *tag, struct strbuf *m, double deadline)
{
	char hdr[8];
	uint32_t n;
	enum io r = read_full(fd, hdr, sizeof(hdr), deadline);

	if (r != IO_OK)
		return r;
	memcpy(&n, hdr + 4, sizeof(n));
	if (memcmp(hdr, tag, 4) || n > COMPILE_WIRE_MAX)
		return IO_ERROR;
	sb_reset(m);
	sb_grow(m, n);
	r = read_full(fd, m->buf, n, deadline);
	if (r == IO_EOF)
		r = IO_ERROR;
	if (r != IO_OK)
		return r;
	m->len = n;
	m->buf[n] = '\0';
	return IO_OK;
}

struct msg_iter {
	const char *p, *end;
};

/* The next field: 1, 0 at the end, -1 when the body is malformed. */
static int msg_next(struct msg_iter *it, const char **p, size_t *len)
{
	uint32_t n;

	if (it->p == it->end)
		return 0;
	if ((size_t)(it->end - it->p) < sizeof(n))
		return -1;
	memcpy(&n, it->p, sizeof(n));
	it->p += sizeof(n);
	if ((size_t)(it->end - it->p) < n)
		return -1;
	*p = it->p;
	*len = n;
	it->p += n;
	return 1;
}

/* ------------------------------------------- the compile process: NVRTC */

enum status { ST_OK, ST_COMPILE, ST_API, ST_DIED };
static const char *const status_names[] = {"ok", "compile", "api"};

/* A failure of the NVRTC API itself (not of the source): never cached. */
static char *api_failure(const char *what, nvrtcResult r, const char *log)
{
	return xasprintf("error: %s failed: %s%s%s", what, nvrtcGetErrorString(r),
	                 log && *log ? "\n" : "", log ? log : "");
}

static char *program_log(nvrtcProgram prog)
{
	size_t n = 0;
	char *log;

	if (nvrtcGetProgramLogSize(prog, &n) != NVRTC_SUCCESS || n == 0)
		return xstrdup("");
	log = xcalloc(1, n + 1);
	if (nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS)
		log[0] = '\0';
	return log;
}

/* One NVRTC compile, in the compile process: the status, NVRTC's log, the cubin. */
static enum status nvrtc_compile(const char *name, const char *source, const char *const *opts,
                                 int nopts, char **log_out, char **cubin_out, size_t *size_out)
{
	nvrtcProgram prog;
	nvrtcResult r;
	enum status st = ST_OK;
	char *log, *cubin = NULL;
	size_t size = 0;

	*cubin_out = NULL;
	*size_out = 0;
	r = nvrtcCreateProgram(&prog, source, name, 0, NULL, NULL);
	if (r != NVRTC_SUCCESS) {
		*log_out = api_failure("nvrtcCreateProgram", r, NULL);
		return ST_API;
	}
	r = nvrtcCompileProgram(prog, nopts, opts);
	log = program_log(prog);
	if (r == NVRTC_SUCCESS) {
		r = nvrtcGetCUBINSize(prog, &size);
		if (r == NVRTC_SUCCESS && size > 0) {
			cubin = xmalloc(size);
			r = nvrtcGetCUBIN(prog, cubin);
		}
		if (r == NVRTC_SUCCESS && size == 0)
			r = NVRTC_ERROR_INVALID_INPUT; /* e.g. a compute_XX target: PTX, no cubin */
		if (r != NVRTC_SUCCESS) {
			*log_out = api_failure("nvrtcGetCUBIN", r, log);
			free(log);
			free(cubin);
			st = ST_API;
		}
	} else if (r == NVRTC_ERROR_COMPILATION) {
		st = ST_COMPILE;
	} else {
		*log_out = api_failure("nvrtcCompileProgram", r, log);
		free(log);
		st = ST_API;
	}
	nvrtcDestroyProgram(&prog);
	if (st == ST_OK) {
		*cubin_out = cubin;
		*size_out = size;
	}
	if (st != ST_API)
		*log_out = log;
	return st;
}

/* Answer one job message: decode it, compile, encode the result into out. */
static int serve_job(struct strbuf *in, struct strbuf *out)
{
	struct msg_iter it = {in->buf, in->buf + in->len};
	char *name = NULL, *source = NULL, **opts = NULL, *log = NULL, *cubin = NULL;
	size_t nopts = 0, alloc = 0, len, size = 0, i;
	const char *p, *hook;
	enum status st;
	int r;

	while ((r = msg_next(&it, &p, &len)) > 0) {
		char *s = xstrndup(p, len);

		if (!name) {
			name = s;
		} else if (!source) {
			source = s;
		} else {
			ALLOC_GROW(opts, nopts + 1, alloc);
			opts[nopts++] = s;
		}
	}
	if (r < 0 || !source || nopts > INT_MAX) {
		r = error("compile process: a malformed job");
		goto out;
	}
	/* The testing hook (compile.h): crash as NVRTC 13.0 does on some sm_90a code. */
	hook = getenv(COMPILE_CRASH_ENV);
	if (hook && *hook && strstr(source, hook))
		abort();
	st =
	    nvrtc_compile(name, source, (const char *const *)opts, (int)nopts, &log, &cubin, &size);
	msg_start(out, "CRES");
	msg_field(out, status_names[st], strlen(status_names[st]));
	msg_field(out, log, strlen(log));
	msg_field(out, cubin, size);
	r = 0;
out:
	for (i = 0; i < nopts; i++)
		free(opts[i]);
	free(opts);
	free(name);
	free(source);
	free(log);
	free(cubin);
	return r;
}

int compile_child_main(int argc, char **argv)
{
	static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
	struct strbuf in = STRBUF_INIT, out = STRBUF_INIT;
	struct sigaction sa;
	int fd = -1, ret = 0, i;
	enum io r;

	for (i = 1; i < argc; i++) {
		if (!strncmp(argv[i], "--fd=", 5)) {
			fd = atoi(argv[i] + 5);
		} else {
			error("__compile: unknown argument '%s'", argv[i]);
			return EX_USAGE;
		}
	}
	if (fd < 0 || !getenv(COMPILE_CHILD_ENV)) {
		error("__compile is tuner's compile process; tuner starts it itself");
		return EX_USAGE;
	}
	/* A crash is to end this process by its signal, which the pool names (sanitizers
	 * would turn it into an exit status). */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (i = 0; i < (int)ARRAY_SIZE(crash_signals); i++)
		sigaction(crash_signals[i], &sa, NULL);
	for (;;) {
		r = msg_recv(fd, "CJOB", &in, 0);
		if (r == IO_EOF)
			break;
		if (r != IO_OK) {
			ret = EX_PROTOCOL;
			error("compile process: cannot read a job from the pool");
			break;
		}
		if (serve_job(&in, &out) < 0) {
			ret = EX_PROTOCOL;
			break;
		}
		if (msg_send(fd, &out, 0) != IO_OK) {
			ret = EX_IOERR; /* the pool is gone: nothing to say it to */
			break;
		}
	}
	sb_release(&in);
	sb_release(&out);
	close(fd);
	return ret;
}

/* ---------------------------------------- the compile process: the pool's end */

/* One compile process, owned by one pool thread. */
struct slot {
	pid_t pid; /* 0: none running */
	int fd;
	struct strbuf msg;
};

/* Between fork and exec: async-signal-safe calls only. */
static _Noreturn void exec_child(int fd, pid_t parent, char *const argv[], char *const envp[])
{
	struct sigaction sa;
	sigset_t none;
	int null;

	/* The process dies with the thread that started it, which serves it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	if (fd == CHILD_FD)
		fcntl(fd, F_SETFD, 0);
	else if (dup2(fd, CHILD_FD) < 0)
		_exit(127);
	null = open("/dev/null", O_RDONLY);
	if (null > 0) {
		dup2(null, 0);
		close(null);
	}
	dup2(2, 1);                    /* keep whatever it prints off the parent's output */
	proc_close_from(CHILD_FD + 1); /* the child must not hold the parent's files */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN; /* Ctrl-C is the parent's to handle; it finishes the compile */
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = SIG_DFL;
	sigaction(SIGPIPE, &sa, NULL);
	execve("/proc/self/exe", argv, envp);
	_exit(127);
}

/*
 * The environment plus COMPILE_CHILD_ENV (a compile process never starts
 * another) and CUDA_CACHE_DISABLE=1: NVRTC (12.9 and later) answers a compile
 * it has seen from its own cache without running ptxas, and so without the
 * report the resource gate reads; measured on the H100, a second run on the
 * machine passed every spilling variant. tuner's cache keeps the report.
 */
static char **child_env(void)
{
	static const char nocache[] = "CUDA_CACHE_DISABLE=";
	size_t n = 0, i, k = 0;
	char **env;

	while (environ && environ[n])
		n++;
	env = xcalloc(n + 3, sizeof(*env));
	for (i = 0; i < n; i++)
		if (strncmp(environ[i], nocache, sizeof(nocache) - 1))
			env[k++] = environ[i];
	env[k++] = COMPILE_CHILD_ENV "=1";
	env[k] = "CUDA_CACHE_DISABLE=1";
	return env;
}

static int slot_spawn(struct slot *s, char *why, size_t whylen)
{
	char fdarg[32];
	char *argv[] = {"tuner", "__compile", fdarg, NULL};
	char **envp;
	pid_t parent = getpid(), pid;
	int sv[2];

	if (getenv(COMPILE_CHILD_ENV)) {
		snprintf(why, whylen, "this process is itself a compile process");
		return -1;
	}
	snprintf(fdarg, sizeof(fdarg), "--fd=%d", CHILD_FD);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		snprintf(why, whylen, "cannot create a socket: %s", strerror(errno));
		return -1;
	}
	envp = child_env();
	pid = fork();
	if (pid < 0) {
		snprintf(why, whylen, "cannot fork: %s", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		free(envp);
		return -1;
	}
	if (pid == 0)
		exec_child(sv[1], parent, argv, envp);
	free(envp);
	close(sv[1]);
	s->pid = pid;
	s->fd = sv[0];
	return 0;
}

static void describe_status(int status, char *buf, size_t len)
{
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		const char *abbrev = sigabbrev_np(sig), *descr = sigdescr_np(sig);

		snprintf(buf, len, "signal %d (SIG%s, %s)", sig, abbrev ? abbrev : "?",
		         descr ? descr : "unknown signal");
	} else if (WIFEXITED(status)) {
		snprintf(buf, len, "exit status %d", WEXITSTATUS(status));
	} else {
		snprintf(buf, len, "status 0x%x", (unsigned)status);
	}
}

/* What one compile process answered: its status, log and cubin (pointing into s->msg). */
struct answer {
	enum status status;
	char *log; /* malloc'd */
	const char *cubin;
	size_t size;
};

static int decode_answer(struct strbuf *m, struct answer *a)
{
	struct msg_iter it = {m->buf, m->buf + m->len};
	const char *st, *log, *extra;
	size_t stlen, loglen, extralen, i;

	if (msg_next(&it, &st, &stlen) != 1 || msg_next(&it, &log, &loglen) != 1 ||
	    msg_next(&it, &a->cubin, &a->size) != 1 || msg_next(&it, &extra, &extralen) != 0)
		return -1;
	for (i = 0; i < ARRAY_SIZE(status_names); i++)
		if (stlen == strlen(status_names[i]) && !memcmp(st, status_names[i], stlen))
			break;
	if (i == ARRAY_SIZE(status_names) || (i == ST_OK) != (a->size > 0))
		return -1;
	a->status = (enum status)i;
	a->log = xstrndup(log, loglen);
	return 0;
}

/*
 * Compile job in the slot's process (started first if there is none) within
 * timeout seconds. A process that crashes, hangs or talks nonsense is gone
 * afterwards: ST_DIED, and a log that says what happened to it.
 */
static void slot_compile(struct slot *s, const struct compile_job *job, const char *cuda_include,
                         double timeout, struct answer *a)
{
	const char *name = job->name ? job->name : "variant.cu";
	char why[256], st[96];
	double deadline;
	enum io r;
	size_t i;
	int status;

	memset(a, 0, sizeof(*a));
	a->status = ST_DIED;
	if (!s->pid && slot_spawn(s, why, sizeof(why)) < 0) {
		a->log = xasprintf("error: cannot start a compile process: %s", why);
		return;
	}
	msg_start(&s->msg, "CJOB");
	msg_field(&s->msg, name, strlen(name));
	msg_field(&s->msg, job->source, strlen(job->source));
	for (i = 0; i < job->noptions; i++)
		msg_field(&s->msg, job->options[i], strlen(job->options[i]));
	msg_field(&s->msg, cuda_include, strlen(cuda_include));
	if (s->msg.len - 8 > COMPILE_WIRE_MAX) {
		a->log = xasprintf("error: '%s' is too large to compile: %zu bytes of source and "
		                   "options, at most %u",
		                   name, s->msg.len - 8, COMPILE_WIRE_MAX);
		return;
	}
	deadline = now_seconds() + timeout;
	r = msg_send(s->fd, &s->msg, deadline);
	if (r == IO_OK)
		r = msg_recv(s->fd, "CRES", &s->msg, deadline);
	if (r == IO_OK && decode_answer(&s->msg, a) == 0)
		return;
	if (r == IO_TIMEOUT) {
		proc_reap(&s->pid, &s->fd, 0);
		a->log = xasprintf("error: the compile of '%s' timed out: no result within %g s, "
		                   "the compile process was killed",
		                   name, timeout);
		return;
	}
	if (r == IO_OK) {
		proc_reap(&s->pid, &s->fd, 0);
		a->log =
		    xasprintf("error: the compile process sent a malformed result for '%s'", name);
		return;
	}
	status = proc_reap(&s->pid, &s->fd, EXIT_GRACE);
	describe_status(status, st, sizeof(st));
	if (WIFSIGNALED(status))
		a->log = xasprintf("error: the compiler crashed on '%s': the compile process "
		                   "died of %s",
		                   name, st);
	else
		a->log = xasprintf("error: the compile process ended without a result for '%s' "
		                   "(%s)",
		                   name, st);
}

/* ------------------------------------------------------------- the pool */

struct compile_pool {
	pthread_mutex_t lock;
	pthread_cond_t work; /* a job was queued, a key was released, or stop */
	pthread_cond_t done; /* a job finished */
	struct compile_job **queue;
	size_t nqueue, queue_alloc;
	struct compile_job **finished;
	size_t nfinished, finished_alloc;
	struct compile_job **running; /* one slot per thread: keys being compiled */
	size_t outstanding;           /* submitted and not yet returned by compile_pool_next */
	int stop;
	double timeout; /* seconds per fresh compile */
	pthread_t *threads;
	struct slot *slots; /* each thread's compile process */
	int nthreads;
	char *cache_dir;
	char *cuda_include; /* -I<CUDA>/include */
};

/* A compile that is not in the cache: in the slot's process, then parsed and cached here. */
static void compile_fresh(struct compile_pool *pool, struct slot *s, struct compile_job *job,
                          double timeout)
{
	struct build *b = &job->result;
	double t0 = now_seconds();
	struct answer a;

	memset(b, 0, sizeof(*b));
	slot_compile(s, job, pool->cuda_include, timeout, &a);
	b->seconds = now_seconds() - t0;
	b->log = a.log;
	b->outcome = a.status == ST_OK ? VARIANT_OK : REJECT_COMPILE;
	if (a.status == ST_OK && job->entry && compile_parse_ptxas(b->log, job->entry, b) < 0 &&
	    !strstr(b->log ? b->log : "", "Compiling entry function '"))
		warning("no ptxas report for entry '%s' in the log of '%s'", job->entry,
		        job->name ? job->name : job->key);
	/*
	 * A compile error is a property of the source: cache it. An API failure, a crash
	 * or a timeout may not be (another NVRTC, a loaded machine): compile again next time.
	 */
	if (a.status != ST_OK && a.status != ST_COMPILE)
		return;
	if (cache_store(pool->cache_dir, job, a.cubin, a.size) == 0) {
		if (b->outcome == VARIANT_OK) {
			b->cubin_path = cache_path(pool->cache_dir, job->key, "cubin");
			b->cubin_size = a.size;
		}
	} else if (b->outcome == VARIANT_OK) {
		/* Nothing can load a cubin that was never written. */
		char *log = b->log;

		b->outcome = REJECT_COMPILE;
		b->log = xasprintf("error: cannot write build '%s' to the cache '%s'\n%s", job->key,
		                   pool->cache_dir, log);
		free(log);
	}
}

static int key_running(const struct compile_pool *pool, const char *key)
{
	int i;

	for (i = 0; i < pool->nthreads; i++)
		if (pool->running[i] && !strcmp(pool->running[i]->key, key))
			return 1;
	return 0;
}

/*
 * The first queued job whose key no other thread is compiling, a background
 * job only when no other can be taken; NULL if none.
 */
static struct compile_job *take_job(struct compile_pool *pool)
{
	size_t i;
	int pass;

	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < pool->nqueue; i++) {
			struct compile_job *job = pool->queue[i];

			if (job->background != pass || key_running(pool, job->key))
				continue;
			memmove(&pool->queue[i], &pool->queue[i + 1],
			        (pool->nqueue - i - 1) * sizeof(*pool->queue));
			pool->nqueue--;
			return job;
		}
	return NULL;
}

struct thread_arg {
	struct compile_pool *pool;
	int slot;
};

/* One pool thread: takes jobs, answers cache hits itself, and serves its compile process. */
static void *thread_main(void *arg)
{
	struct thread_arg *ta = arg;
	struct compile_pool *pool = ta->pool;
	int slot = ta->slot;
	struct slot *s = &pool->slots[slot];
	struct compile_job *job;
	double timeout;

	free(ta);
	pthread_mutex_lock(&pool->lock);
	for (;;) {
		job = NULL;
		while (!pool->stop && !(job = take_job(pool)))
			pthread_cond_wait(&pool->work, &pool->lock);
		if (!job)
			break;
		pool->running[slot] = job;
		timeout = pool->timeout;
		pthread_mutex_unlock(&pool->lock);

		if (!cache_lookup(pool->cache_dir, job))
			compile_fresh(pool, s, job, timeout);
		check_entry(job);

		pthread_mutex_lock(&pool->lock);
		pool->running[slot] = NULL;
		ALLOC_GROW(pool->finished, pool->nfinished + 1, pool->finished_alloc);
		pool->finished[pool->nfinished++] = job;
		pthread_cond_signal(&pool->done);
		/* A job with the same key may be waiting for this one. */
		pthread_cond_broadcast(&pool->work);
	}
	pthread_mutex_unlock(&pool->lock);
	/* The process reads the closed socket as the end and exits. */
	proc_reap(&s->pid, &s->fd, EXIT_GRACE);
	sb_release(&s->msg);
	return NULL;
}

struct compile_pool *compile_pool_new(int nthreads, const char *cache_dir)
{
	struct compile_pool *pool;
	const char *cuda = getenv("CUDA_HOME");
	int i;

	if (nthreads <= 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		nthreads = n > 0 ? (int)n : 1;
	}
	if (mkdir_p(cache_dir) < 0)
		return NULL;
	pool = xcalloc(1, sizeof(*pool));
	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->work, NULL);
	pthread_cond_init(&pool->done, NULL);
	pool->timeout = COMPILE_DEFAULT_TIMEOUT;
	pool->cache_dir = xstrdup(cache_dir);
	pool->cuda_include = xasprintf("-I%s/include", cuda && *cuda ? cuda : TUNER_CUDA_HOME);
	pool->running = xcalloc((size_t)nthreads, sizeof(*pool->running));
	pool->threads = xcalloc((size_t)nthreads, sizeof(*pool->threads));
	pool->slots = xcalloc((size_t)nthreads, sizeof(*pool->slots));
	for (i = 0; i < nthreads; i++) {
		struct thread_arg *ta = xmalloc(sizeof(*ta));
		int e;

		pool->slots[i].fd = -1;
		ta->pool = pool;
		ta->slot = i;
		e = pthread_create(&pool->threads[i], NULL, thread_main, ta);
		if (e) {
			free(ta);
			error("cannot start compile thread: %s", strerror(e));
			break;
		}
		pool->nthreads++;
	}
	if (pool->nthreads == 0) {
		compile_pool_free(pool);
		return NULL;
	}
	return pool;
}

void compile_pool_set_timeout(struct compile_pool *pool, double seconds)
{
	pthread_mutex_lock(&pool->lock);
	pool->timeout = seconds > 0 ? seconds : COMPILE_DEFAULT_TIMEOUT;
	pthread_mutex_unlock(&pool->lock);
}

void compile_pool_submit(struct compile_pool *pool, struct compile_job *job)
{
	memset(&job->result, 0, sizeof(job->result));
	pthread_mutex_lock(&pool->lock);
	ALLOC_GROW(pool->queue, pool->nqueue + 1, pool->queue_alloc);
	pool->queue[pool->nqueue++] = job;
	pool->outstanding++;
	pthread_cond_signal(&pool->work);
	pthread_mutex_unlock(&pool->lock);
}

int compile_pool_withdraw(struct compile_pool *pool, struct compile_job *job)
{
	size_t i;
	int found = 0;

	pthread_mutex_lock(&pool->lock);
	for (i = 0; i < pool->nqueue && !found; i++) {
		if (pool->queue[i] != job)
			continue;
		memmove(&pool->queue[i], &pool->queue[i + 1],
		        (pool->nqueue - i - 1) * sizeof(*pool->queue));
		pool->nqueue--;
		pool->outstanding--;
		found = 1;
	}
	pthread_mutex_unlock(&pool->lock);
	return found;
}

static struct compile_job *next_job(struct compile_pool *pool, int wait)
{
	struct compile_job *job = NULL;

	pthread_mutex_lock(&pool->lock);
	if (pool->outstanding > 0 && (wait || pool->nfinished)) {
		while (pool->nfinished == 0)
			pthread_cond_wait(&pool->done, &pool->lock);
		job = pool->finished[0];
		memmove(&pool->finished[0], &pool->finished[1],
		        (pool->nfinished - 1) * sizeof(*pool->finished));
		pool->nfinished--;
		pool->outstanding--;
	}
	pthread_mutex_unlock(&pool->lock);
	return job;
}

struct compile_job *compile_pool_next(struct compile_pool *pool)
{
	return next_job(pool, 1);
}

struct compile_job *compile_pool_poll(struct compile_pool *pool)
{
	return next_job(pool, 0);
}

void compile_pool_free(struct compile_pool *pool)
{
	int i;

	if (!pool)
		return;
	/* Jobs not started are dropped; jobs being compiled finish first (or time out). */
	pthread_mutex_lock(&pool->lock);
	pool->stop = 1;
	pthread_cond_broadcast(&pool->work);
	pthread_mutex_unlock(&pool->lock);
	for (i = 0; i < pool->nthreads; i++)
		pthread_join(pool->threads[i], NULL);
	pthread_cond_destroy(&pool->done);
	pthread_cond_destroy(&pool->work);
	pthread_mutex_destroy(&pool->lock);
	free(pool->queue);
	free(pool->finished);
	free(pool->running);
	free(pool->threads);
	free(pool->slots);
	free(pool->cache_dir);
	free(pool->cuda_include);
	free(pool);
}
