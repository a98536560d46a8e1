/* The GPU worker's supervising half: start the child, hand it jobs, watch it, replace it. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tuner/wire.h"
#include "tuner/worker.h"

#define WORKER_TAG             "tuner-worker"
#define WORKER_CHILD_FD        3     /* the child's end of the socket */
#define WORKER_HELLO_TIMEOUT   120.0 /* seconds to load the driver and create a context */
#define WORKER_DEFAULT_TIMEOUT 60.0
#define WORKER_EXIT_GRACE      5.0 /* seconds a child gets to exit before SIGKILL */

/* ========================================================= orchestrator */

/* The most reference kernels a tool run leaves uninstrumented. */
#define TOOL_MAX_EXCLUDES 8

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
	/* a worker under compute-sanitizer: the tool's path, its --tool and its log file */
	const char *tool_path, *tool, *tool_log;
	const char *exclude[TOOL_MAX_EXCLUDES]; /* kernels the tool leaves alone: the reference's */
	size_t nexclude;
	char exe[4096]; /* this binary, which the tool starts */
};

static void describe_status(int status, char *buf, size_t len)
{
	if (WIFSIGNALED(status))
		snprintf(buf, len, "signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
	else if (WIFEXITED(status))
		snprintf(buf, len, "exit status %d", WEXITSTATUS(status));
	else
		snprintf(buf, len, "status 0x%x", (unsigned)status);
}

/* Between fork and exec: async-signal-safe calls only. */
static _Noreturn void exec_child(int fd, pid_t parent, const char *path, char *const argv[])
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
	proc_close_from(WORKER_CHILD_FD + 1); /* none of the orchestrator's files */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN; /* Ctrl-C is the orchestrator's to handle; it finishes the job */
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = SIG_DFL;
	sigaction(SIGPIPE, &sa, NULL);
	execv(path, argv);
	_exit(127);
}

static int decode_hello(struct worker *w, char *why, size_t whylen)
{
	struct wire_iter it;
	const char *type = NULL;
	char *key, *val;
	int ok = 0, r;

	if (wire_begin(w->msg.buf, w->msg.len, &it, &type) < 0 || strcmp(type, "hello")) {
		snprintf(why, whylen, "the GPU worker did not say hello");
		return -1;
	}
	snprintf(why, whylen, "the GPU worker failed without a reason");
	while ((r = wire_next(&it, &key, &val)) > 0) {
		long long v = 0;

		if (!strcmp(key, "ok"))
			ok = !strcmp(val, "1");
		else if (!strcmp(key, "reason"))
			snprintf(why, whylen, "%s", val);
		else if (!strcmp(key, "name"))
			snprintf(w->name, sizeof(w->name), "%s", val);
		else if (!strcmp(key, "driver"))
			snprintf(w->driver, sizeof(w->driver), "%s", val);
		else if (wire_parse_ll(key, val, &v) < 0)
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
	/*
	 * Under the tool: it starts this binary itself, and checks only the
	 * candidate's kernels: not the support kernels (tuner_*), nor the
	 * reference, which runs at full speed (a naive reference under memcheck
	 * would cost more than everything else).
	 */
	char *targv[16 + 2 * TOOL_MAX_EXCLUDES];
	char excl[TOOL_MAX_EXCLUDES][80];
	size_t nt = 0, k;
	pid_t parent = getpid(), pid;
	int sv[2], r, status;

	snprintf(fdarg, sizeof(fdarg), "--fd=%d", WORKER_CHILD_FD);
	snprintf(devarg, sizeof(devarg), "--device=%d", w->device);
	if (w->tool) {
		targv[nt++] = "compute-sanitizer";
		targv[nt++] = "--tool";
		targv[nt++] = (char *)w->tool;
		targv[nt++] = "--log-file";
		targv[nt++] = (char *)w->tool_log;
		targv[nt++] = "--print-limit";
		targv[nt++] = "10";
		targv[nt++] = "--kernel-name-exclude";
		targv[nt++] = "kns=tuner_";
		for (k = 0; k < w->nexclude && k < TOOL_MAX_EXCLUDES; k++) {
			snprintf(excl[k], sizeof(excl[k]), "kne=%s", w->exclude[k]);
			targv[nt++] = "--kernel-name-exclude";
			targv[nt++] = excl[k];
		}
		targv[nt++] = w->exe;
		targv[nt++] = "__worker";
		targv[nt++] = fdarg;
		targv[nt++] = devarg;
		targv[nt] = NULL;
	}
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
		exec_child(sv[1], parent, w->tool ? w->tool_path : "/proc/self/exe",
		           w->tool ? targv : argv);
	close(sv[1]);
	w->pid = pid;
	w->fd = sv[0];
	r = wire_recv(w->fd, WORKER_TAG, WORKER_PROTOCOL_VERSION, &w->msg,
	              now_seconds() + WORKER_HELLO_TIMEOUT);
	if (r == 1) {
		if (decode_hello(w, why, whylen) == 0)
			return 0;
		proc_reap(&w->pid, &w->fd, WORKER_EXIT_GRACE);
		return -1;
	}
	status = proc_reap(&w->pid, &w->fd, r == 0 ? WORKER_EXIT_GRACE : 0);
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

/*
 * The one-off worker under compute-sanitizer, on device: its log is read by
 * worker_tool_report. 0, or -1 with why.
 */
static int tool_start(struct worker **out, int device, const char *path, const char *tool,
                      const char *log, const struct worker_job *job, char *why, size_t whylen)
{
	struct worker *w = xcalloc(1, sizeof(*w));
	ssize_t n = readlink("/proc/self/exe", w->exe, sizeof(w->exe) - 1);
	size_t s, c, k;

	/* the reference's kernels, each named once */
	for (s = 0; s < job->nshapes; s++)
		for (c = 0; c < job->shapes[s].nref; c++) {
			const char *name = job->shapes[s].ref[c].kernel;

			for (k = 0; k < w->nexclude && strcmp(w->exclude[k], name); k++)
				;
			if (k == w->nexclude && k < ARRAY_SIZE(w->exclude))
				w->exclude[w->nexclude++] = name;
		}

	*out = NULL;
	w->fd = -1;
	w->device = device;
	w->tool_path = path;
	w->tool = tool;
	w->tool_log = log;
	if (n <= 0) {
		snprintf(why, whylen, "cannot find this binary: %s", strerror(errno));
		free(w);
		return -1;
	}
	w->exe[n] = '\0';
	if (worker_spawn(w, why, whylen) < 0) {
		sb_release(&w->msg);
		free(w);
		return -1;
	}
	*out = w;
	return 0;
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

int worker_ordinal(const struct worker *w)
{
	return w ? w->device : -1;
}

int worker_cc(const struct worker *w)
{
	return w ? w->cc : 0;
}

/* Send the job, restarting a child that died between jobs once. */
static int send_job(struct worker *w, const struct strbuf *body)
{
	char why[256];
	int attempt;

	for (attempt = 0; attempt < 2; attempt++) {
		if (!w->pid && worker_spawn(w, why, sizeof(why)) < 0)
			return error("cannot restart the GPU worker: %s", why);
		if (wire_send(w->fd, WORKER_TAG, WORKER_PROTOCOL_VERSION, body) == 0)
			return 0;
		proc_reap(&w->pid, &w->fd, 0);
	}
	return error("cannot send a job to the GPU worker: %s", strerror(errno));
}

int worker_eval(struct worker *w, const struct worker_job *job, struct worker_result *res)
{
	double timeout = job->timeout_s > 0 ? job->timeout_s : WORKER_DEFAULT_TIMEOUT;
	struct strbuf body = STRBUF_INIT;
	struct wire_iter it;
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
	snprintf(w->phase, sizeof(w->phase), "loading '%s'",
	         job->nshapes && job->shapes[0].ncalls ? job->shapes[0].calls[0].kernel : "?");
	for (;;) {
		/* The watchdog: each phase the child announces gets timeout seconds. */
		r = wire_recv(w->fd, WORKER_TAG, WORKER_PROTOCOL_VERSION, &w->msg,
		              now_seconds() + timeout);
		if (r == -2) {
			proc_reap(&w->pid, &w->fd, 0);
			res->outcome = REJECT_TIMEOUT;
			snprintf(res->reason, sizeof(res->reason), "timed out after %.1f s in %s",
			         timeout, w->phase);
			return 0;
		}
		if (r == 0) {
			describe_status(proc_reap(&w->pid, &w->fd, WORKER_EXIT_GRACE), st,
			                sizeof(st));
			res->outcome = REJECT_RUNTIME_FAULT;
			res->died = 1;
			snprintf(res->reason, sizeof(res->reason), "worker died: %s in %s", st,
			         w->phase);
			return 0;
		}
		if (r < 0) {
			proc_reap(&w->pid, &w->fd, 0);
			return error("the GPU worker broke the protocol in %s", w->phase);
		}
		if (wire_is(&w->msg, "tick")) {
			if (wire_begin(w->msg.buf, w->msg.len, &it, &type) == 0 &&
			    wire_next(&it, &key, &val) == 1 && !strcmp(key, "phase"))
				snprintf(w->phase, sizeof(w->phase), "%s", val);
			continue;
		}
		if (worker_result_decode(w->msg.buf, w->msg.len, res, &flags) < 0) {
			proc_reap(&w->pid, &w->fd, 0);
			return error("the GPU worker sent a malformed result in %s", w->phase);
		}
		if (flags & WORKER_RESULT_FATAL)
			proc_reap(&w->pid, &w->fd,
			          0); /* its context is gone; a fresh child serves the next job */
		if (flags & WORKER_RESULT_ERROR)
			return error("GPU evaluation of '%s' failed: %s", job->cubin_path,
			             res->reason);
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
		wire_send(w->fd, WORKER_TAG, WORKER_PROTOCOL_VERSION, &quit);
		sb_release(&quit);
		proc_reap(&w->pid, &w->fd, WORKER_EXIT_GRACE);
	}
	sb_release(&w->msg);
	free(w);
}

/* ------------------------------------------------------ compute-sanitizer */

int worker_tool_path(char *out, size_t len)
{
	const char *env = getenv("TUNER_COMPUTE_SANITIZER"), *path = getenv("PATH");
	char buf[4096];

	if (env && *env) {
		snprintf(out, len, "%s", env);
		return access(out, X_OK) == 0 ? 0 : -1;
	}
	snprintf(out, len, "%s/bin/compute-sanitizer", TUNER_CUDA_HOME);
	if (access(out, X_OK) == 0)
		return 0;
	while (path && *path) {
		size_t n = strcspn(path, ":");

		snprintf(buf, sizeof(buf), "%.*s/compute-sanitizer", (int)n, path);
		if (n && access(buf, X_OK) == 0) {
			snprintf(out, len, "%s", buf);
			return 0;
		}
		path += n + (path[n] == ':');
	}
	return -1;
}

/*
 * The first problem compute-sanitizer reported in its log: the line after
 * its banner that is neither a detail (indented) nor a summary, with the
 * detail that names where. 1 found, 0 a clean log, -1 unreadable.
 */
static int tool_first_error(const char *log, char *out, size_t len)
{
	char *text, *line, *save = NULL;
	int found = 0;

	if (read_own_file(log, &text, NULL) < 0)
		return -1;
	*out = '\0';
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *t;

		if (strncmp(line, "========= ", 10))
			continue;
		t = line + 10;
		if (found) {
			if (*t == ' ' && strstr(t, " in ")) { /* "    at 0x70 in oob" */
				size_t used = strlen(out);

				snprintf(out + used, len - used, "; %s", t + strspn(t, " "));
				break;
			}
			continue;
		}
		if (*t == ' ' || !strncmp(t, "COMPUTE-SANITIZER", 17) || strstr(t, "SUMMARY:") ||
		    !strncmp(t, "Target application", 18))
			continue;
		snprintf(out, len, "%s", t);
		found = 1;
	}
	free(text);
	return found;
}

int worker_tool_check(int device, const char *path, const char *tool, const struct worker_job *job,
                      char *report, size_t len, char *why, size_t whylen)
{
	char log[4200], text[400];
	struct worker *w = NULL;
	struct worker_result res;
	int fd, r;

	const char *tmp = getenv("TMPDIR");

	snprintf(log, sizeof(log), "%s/tuner-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", tool);
	fd = mkstemp(log);
	if (fd < 0) {
		snprintf(why, whylen, "cannot make compute-sanitizer's log: %s", strerror(errno));
		return -1;
	}
	close(fd);
	*report = '\0';
	/* a tool that cannot start, or loses its worker, gives no verdict either way */
	if (tool_start(&w, device, path, tool, log, job, text, sizeof(text)) < 0) {
		snprintf(report, len, "compute-sanitizer %s could not run: %s", tool, text);
		unlink(log);
		return 2;
	}
	memset(&res, 0, sizeof(res));
	r = worker_eval(w, job, &res);
	if (r < 0) {
		snprintf(report, len, "the check under compute-sanitizer %s failed", tool);
		r = 2;
	}
	worker_stop(w); /* the tool writes its summary as the worker exits */
	if (r == 0) {
		int found = tool_first_error(log, text, sizeof(text));

		if (found < 0) {
			/* no verdict either way: the variant stays unchecked, the run goes on */
			snprintf(report, len, "cannot read compute-sanitizer %s's log '%s': %s",
			         tool, log, strerror(errno));
			r = 2;
		} else if (found) {
			snprintf(report, len, "compute-sanitizer %s: %s", tool, text);
			r = 1;
		} else if (res.outcome == REJECT_TIMEOUT || res.died) {
			/* slow under the tool, or the tool itself failed: no verdict either way */
			snprintf(report, len, "compute-sanitizer %s did not finish: %s", tool,
			         res.reason);
			r = 2;
		} else if (res.outcome != VARIANT_OK) {
			/* the kernel failed its check under the tool, which reported nothing */
			snprintf(report, len, "under compute-sanitizer %s: %s", tool, res.reason);
			r = 1;
		}
	}
	worker_result_release(&res);
	unlink(log);
	return r;
}
