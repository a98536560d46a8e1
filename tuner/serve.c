/* tuner serve: lanes (one per GPU) take jobs from the database's queue; a heartbeat; a drain. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "tuner/common.h"
#include "tuner/cuda.h"
#include "tuner/db.h"
#include "tuner/pq.h"
#include "tuner/roots.h"
#include "tuner/run.h"
#include "tuner/serve.h"
#include "tuner/worker.h"

/* How long an idle lane sleeps before it looks at the queue again, at most. */
#define IDLE_SECONDS 0.5
/* How long a lane leaves a job alone whose generation others are finishing. */
#define WAIT_SECONDS 0.2
/* How long a lane leaves a job alone that it could not open (another GPU model, ...). */
#define REFUSED_SECONDS 30.0

/* ------------------------------------------------------------- the state */

/* A job a lane has opened: its run, kept across steps. */
struct lane_run {
	long long job_id;
	struct run *run;
	double skip_until; /* leave it alone until then (waiting on others, refused) */
	int refused;
	double time_s; /* its budget (submit --time, --evals), 0: none */
	long long evals;
};

struct serve;

struct lane {
	struct serve *sv;
	int index, gpu; /* gpu: the ordinal, -1 for a lane without one */
	pthread_t thread;
	int has_thread;
	int started; /* 1 its worker is up (or it needs none), -1 it cannot be, 0 not yet */
	struct worker *worker;
	char device[128];
	stop_flag stop;   /* drain, or its job was cancelled */
	long long job_id; /* the job it works on (under sv->lock) */
	int exited;
	struct lane_run *runs;
	size_t nruns, runs_alloc;
};

struct serve {
	const struct serve_options *o;
	char *db_shown; /* the database as logs show it: no password */
	long long server_id;
	struct lane *lanes;
	size_t nlanes;
	pthread_mutex_t lock; /* lanes' job_id, stop and exited, the lane start */
	pthread_cond_t cond;
	int go; /* 1 once every lane's worker is up and agrees on the model; -1: give up */
	/* the generation last logged of each job, so that it is logged once, not per lane */
	long long *logged_job;
	int *logged_gen;
	size_t nlogged, logged_alloc;
	atomic_int draining; /* set by the main thread, read by the lanes */
	int jobs;            /* parallel compiles per lane */
};

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile sig_atomic_t signals_seen, hup_seen, term_signal;
static _Thread_local char last_error[512];
static double test_step_delay;

/* --------------------------------------------------------------- logging */

static void log_line(const char *prefix, const char *msg)
{
	char stamp[64];
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
	pthread_mutex_lock(&log_lock);
	fprintf(stderr, "%s.%03ldZ %s%s\n", stamp, ts.tv_nsec / 1000000, prefix, msg);
	fflush(stderr);
	pthread_mutex_unlock(&log_lock);
}

static void serve_log(const char *fmt, ...) TUNER_PRINTF(1, 2);
static void serve_log(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_line("", msg);
}

/* error() and warning() go to the log, stamped; each thread keeps its last error for a job. */
static void report(const char *prefix, const char *msg)
{
	if (!strcmp(prefix, "error: "))
		snprintf(last_error, sizeof(last_error), "%s", msg);
	log_line(prefix, msg);
}

/* --log FILE: stdout and stderr both go there, appended; SIGHUP opens it again (logrotate). */
static int open_log(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);

	if (fd < 0)
		return error("cannot open the log '%s': %s", path, strerror(errno));
	fflush(stdout);
	fflush(stderr);
	if (dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0) {
		close(fd);
		return error("cannot write the log '%s': %s", path, strerror(errno));
	}
	close(fd);
	return 0;
}

/* ---------------------------------------------------------------- signals */

static void on_signal(int sig)
{
	if (sig == SIGHUP) {
		hup_seen = 1;
		return;
	}
	if (signals_seen++) {
		/* a second one: leave now; every state change is a transaction */
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	term_signal = sig;
}

static void install_signals(void)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
	struct sigaction sa;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < ARRAY_SIZE(sigs); i++)
		sigaction(sigs[i], &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* Lanes leave the signals to the main thread, which acts on them between heartbeats. */
static void block_signals(int how)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(how, &set, NULL);
}

/* systemd's readiness protocol, without libsystemd: one datagram to $NOTIFY_SOCKET. */
static void sd_notify_text(const char *text)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa;
	size_t len;
	int fd;

	if (!path || (path[0] != '/' && path[0] != '@') || strlen(path) >= sizeof(sa.sun_path))
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, strlen(path));
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = '\0'; /* an abstract socket */
	len = offsetof(struct sockaddr_un, sun_path) + strlen(path);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (sendto(fd, text, strlen(text), MSG_NOSIGNAL, (struct sockaddr *)&sa, (socklen_t)len) <
	    0)
		warning("cannot notify systemd: %s", strerror(errno));
	close(fd);
}

/* ------------------------------------------------------------ the lanes */

/* Which job a lane takes next, best first: priority, then fewest of our lanes, then age. */
static int pick_better(const struct db_job *a, int a_lanes, const struct db_job *b, int b_lanes)
{
	if (a->priority != b->priority)
		return a->priority > b->priority;
	if (a_lanes != b_lanes)
		return a_lanes < b_lanes;
	return a->id < b->id;
}

static struct lane_run *lane_run_find(struct lane *ln, long long job_id)
{
	size_t i;

	for (i = 0; i < ln->nruns; i++)
		if (ln->runs[i].job_id == job_id)
			return &ln->runs[i];
	return NULL;
}

static struct lane_run *lane_run_add(struct lane *ln, long long job_id)
{
	struct lane_run *lr;

	ALLOC_GROW(ln->runs, ln->nruns + 1, ln->runs_alloc);
	lr = &ln->runs[ln->nruns++];
	memset(lr, 0, sizeof(*lr));
	lr->job_id = job_id;
	return lr;
}

static void lane_run_close(struct lane *ln, struct lane_run *lr)
{
	run_close(lr->run);
	*lr = ln->runs[--ln->nruns];
}

/* Close what this lane holds of jobs that are no longer active. */
static void lane_forget(struct lane *ln, const struct db_job *jobs, size_t n)
{
	size_t i, k;

	for (i = 0; i < ln->nruns;) {
		for (k = 0; k < n && jobs[k].id != ln->runs[i].job_id; k++)
			;
		if (k == n)
			lane_run_close(ln, &ln->runs[i]);
		else
			i++;
	}
}

/* The job this lane should work on now: 1 with *pick, 0 none, -1 error(). */
static int lane_pick(struct lane *ln, struct db *db, struct db_job *pick)
{
	struct serve *sv = ln->sv;
	struct db_job *jobs;
	size_t n, i, l, best = (size_t)-1;
	int best_lanes = 0, lanes;
	double now = now_seconds();

	if (db_job_list(db, 1, &jobs, &n) < 0)
		return -1;
	lane_forget(ln, jobs, n);
	pthread_mutex_lock(&sv->lock);
	for (i = 0; i < n; i++) {
		const struct db_job *j = &jobs[i];
		struct lane_run *lr = lane_run_find(ln, j->id);
		int takeable = !strcmp(j->status, "queued") || !strcmp(j->status, "interrupted");
		int joinable = !strcmp(j->status, "running") && j->run_id > 0;

		if (j->cancel || (j->gpu && !ln->worker) || (!takeable && !joinable))
			continue;
		if (lr && lr->skip_until > now)
			continue;
		for (l = 0, lanes = 0; l < sv->nlanes; l++)
			lanes += &sv->lanes[l] != ln && sv->lanes[l].job_id == j->id;
		if (best == (size_t)-1 || pick_better(j, lanes, &jobs[best], best_lanes)) {
			best = i;
			best_lanes = lanes;
		}
	}
	ln->job_id = best == (size_t)-1 ? 0 : jobs[best].id;
	if (ln->stop && !sv->draining)
		ln->stop = 0; /* a cancel of the job it left */
	pthread_mutex_unlock(&sv->lock);
	if (best != (size_t)-1) {
		*pick = jobs[best];
		memset(&jobs[best], 0, sizeof(jobs[best]));
	}
	for (i = 0; i < n; i++)
		db_job_release(&jobs[i]);
	free(jobs);
	return best != (size_t)-1;
}

/* The job's run request from what the job stores. */
static int job_request(struct lane *ln, const struct db_job *j, struct run_request *rq, void **doc)
{
	const struct serve_options *o = ln->sv->o;

	memset(rq, 0, sizeof(*rq));
	if (run_request_from_json(j->options, rq, doc) < 0)
		return -1;
	rq->config_path = j->config_path;
	rq->config_text = j->config_text;
	rq->roots = &o->roots;
	rq->cache_dir = o->cache_dir;
	rq->jobs = ln->sv->jobs;
	rq->command = "tuner serve";
	return 0;
}

/*
 * The lane's run of job j, opened when it has none: taking the job when nobody
 * runs it (a new run, or the job's run resumed), joining it when another lane
 * or server does. NULL when there is nothing to do with it now.
 */
static struct run *lane_open(struct lane *ln, struct db *db, const struct db_job *j)
{
	struct serve *sv = ln->sv;
	struct lane_run *lr = lane_run_find(ln, j->id);
	struct run_request rq;
	long long old_run = j->run_id;
	void *doc = NULL;
	int owner = 0, rc, t;

	if (lr && lr->run)
		return lr->run;
	if (!lr)
		lr = lane_run_add(ln, j->id);
	if (strcmp(j->status, "running")) {
		t = db_job_take(db, j->id, sv->server_id);
		if (t <= 0)
			return NULL; /* another server was quicker, or it was cancelled */
		owner = 1;
	}
	last_error[0] = '\0';
	rc = job_request(ln, j, &rq, &doc);
	if (!rc)
		rc = run_open(db, &rq, old_run, ln->worker, &lr->run);
	lr->time_s = rq.time_s;
	lr->evals = rq.evals;
	run_request_json_free(doc);
	if (rc) {
		lr->run = NULL;
		if (owner) {
			serve_log("job %lld failed to start: %s", j->id, last_error);
			db_job_finish(db, j->id, "failed",
			              *last_error ? last_error : "cannot start");
		} else {
			serve_log("lane %d (GPU %d): cannot join job %lld: %s", ln->index, ln->gpu,
			          j->id, last_error);
			lr->refused = 1;
			lr->skip_until = now_seconds() + REFUSED_SECONDS;
		}
		return NULL;
	}
	if (owner && old_run <= 0 && db_job_set_run(db, j->id, run_id(lr->run)) < 0) {
		lane_run_close(ln, lr);
		return NULL;
	}
	if (owner) {
		run_begin(lr->run);
		serve_log("job %lld: %s run %lld on lane %d (GPU %d, %s)", j->id,
		          old_run > 0 ? "resumes" : "starts", run_id(lr->run), ln->index, ln->gpu,
		          run_device(lr->run));
	}
	return lr->run;
}

/* The job ends as status says, its run as run_status does (NULL: none, "done", "stopped"). */
static void lane_finish(struct lane *ln, struct db *db, const struct db_job *j, struct run *run,
                        const char *run_status, const char *status, const char *message)
{
	struct db_job_progress pg;
	char best[32] = "-";

	/* several lanes may get here: the first one records it */
	if (db_job_finish(db, j->id, status, message) <= 0)
		return;
	if (run && run_status)
		run_end(run, run_status);
	if (db_job_progress(db, j, &pg) == 0) {
		if (!isnan(pg.best))
			snprintf(best, sizeof(best), "x%.3f", pg.best);
		db_job_progress_release(&pg);
	}
	serve_log("job %lld %s (lane %d): best %s%s%s", j->id, status, ln->index, best,
	          message ? ": " : "", message ? message : "");
}

/* Whether this lane is the first of the server to observe a job's generation. */
static int first_to_observe(struct serve *sv, long long job_id, int gen)
{
	size_t i;
	int first = 1;

	pthread_mutex_lock(&sv->lock);
	for (i = 0; i < sv->nlogged && sv->logged_job[i] != job_id; i++)
		;
	if (i == sv->nlogged) {
		ALLOC_GROW(sv->logged_job, sv->nlogged + 1, sv->logged_alloc);
		sv->logged_gen = xrealloc(sv->logged_gen, sv->logged_alloc * sizeof(int));
		sv->logged_job[sv->nlogged] = job_id;
		sv->logged_gen[sv->nlogged++] = gen;
	} else if (sv->logged_gen[i] >= gen) {
		first = 0;
	} else {
		sv->logged_gen[i] = gen;
	}
	pthread_mutex_unlock(&sv->lock);
	return first;
}

static void lane_nap(const struct lane *ln, double secs);

/*
 * Whether job j's budget is spent: its time counted from when a server first
 * started it (on the store's clock, whoever ran it since), its evaluations as
 * the verdicts its run holds. 1 with why, 0 not (or no budget), -1 error().
 * *left: the verdicts --evals leaves, -1 without one.
 */
static int budget_spent(struct db *db, const struct db_job *j, const struct lane_run *lr,
                        long long *left, char *why, size_t len)
{
	long long counts[OUTCOME_COUNT], n = 0;
	char d[32];
	int o;

	*left = -1;
	if (lr->time_s > 0 && j->elapsed >= lr->time_s) {
		format_duration(d, sizeof(d), lr->time_s);
		snprintf(why, len, "budget: %s of wall time spent", d);
		return 1;
	}
	if (lr->evals <= 0)
		return 0;
	if (db_run_outcome_counts(db, run_id(lr->run), counts) < 0)
		return -1;
	for (o = 0; o < OUTCOME_COUNT; o++)
		n += counts[o];
	*left = lr->evals - n;
	if (*left > 0)
		return 0;
	if (n == lr->evals)
		snprintf(why, len, "budget: %lld evaluations spent", n);
	else /* other lanes' batches were in flight */
		snprintf(why, len,
		         "budget: %lld evaluations spent, %lld with the batches in flight",
		         lr->evals, n);
	return 1;
}

/* One step on the lane's job; 0 to go on, -1 when the lane must connect to the store again. */
static int lane_step(struct lane *ln, struct db *db, const struct db_job *j)
{
	struct serve *sv = ln->sv;
	struct run_claimer c = {sv->server_id, ln->gpu, sv->o->batch};
	struct run_progress pg;
	struct lane_run *lr;
	struct run *run = lane_open(ln, db, j);
	char why[128];
	long long left;
	int st;

	if (!run)
		return 0;
	lr = lane_run_find(ln, j->id);
	last_error[0] = '\0';
	st = budget_spent(db, j, lr, &left, why, sizeof(why));
	if (st > 0 && run_settle(run) == 0) {
		/* as tuner run stops on its budget: the run stopped, resumable; the job done */
		lane_finish(ln, db, j, run, "stopped", "done", why);
		lane_run_close(ln, lr);
		return 0;
	}
	if (st != 0) {
		lane_run_close(ln, lr);
		if (db_schema_version(db) < 0)
			return -1;
		serve_log("job %lld failed on lane %d: %s", j->id, ln->index, last_error);
		lane_finish(ln, db, j, NULL, NULL, "failed", *last_error ? last_error : "failed");
		return 0;
	}
	/* no more claimed at once than --evals leaves */
	if (left > 0 && (size_t)left < c.batch)
		c.batch = (size_t)left;
	st = run_step(run, &c, &ln->stop, &pg);
	if (j->server_id == sv->server_id && st != RUN_DONE)
		run_heartbeat(run, pg.observed);
	if (test_step_delay > 0) /* testing hook: TUNER_TEST_STEP_DELAY seconds after each step */
		usleep((useconds_t)(test_step_delay * 1e6));
	if (pg.observed && first_to_observe(sv, j->id, pg.generation))
		serve_log("job %lld: generation %d/%d observed by lane %d: %zu candidates, %zu "
		          "passed, best %s%.3f",
		          j->id, pg.generation + 1, run_generations(run), ln->index, pg.candidates,
		          pg.passed, isnan(pg.best) ? "-" : "x", isnan(pg.best) ? 0.0 : pg.best);
	switch (st) {
	case RUN_MORE:
		break;
	case RUN_WAIT:
		lr->skip_until = now_seconds() + WAIT_SECONDS;
		break;
	case RUN_DONE:
		lane_finish(ln, db, j, run, "done", "done", NULL);
		lane_run_close(ln, lr);
		break;
	case RUN_STOPPED:
		if (!sv->draining) {
			struct db_job now;

			if (db_job_get(db, j->id, &now) == 0) {
				if (now.cancel && now.server_id == sv->server_id)
					lane_finish(ln, db, j, run, "stopped", "cancelled",
					            "cancelled");
				db_job_release(&now);
			}
		}
		lane_run_close(ln, lr);
		break;
	default:
		lane_run_close(ln, lr);
		/* the store may have gone (a restart, the network): that is no fault of the job */
		if (db_schema_version(db) < 0) {
			serve_log("lane %d: the database does not answer", ln->index);
			return -1;
		}
		serve_log("job %lld failed on lane %d: %s", j->id, ln->index, last_error);
		lane_finish(ln, db, j, NULL, NULL, "failed", *last_error ? last_error : "failed");
		break;
	}
	return 0;
}

/* Close what the lane holds on db and open it again, until it answers or the server drains. */
static void lane_reconnect(struct lane *ln, struct db **db)
{
	while (ln->nruns)
		lane_run_close(ln, &ln->runs[0]);
	db_close(*db);
	*db = NULL;
	while (!ln->sv->draining && db_open(ln->sv->o->db_path, db) < 0) {
		*db = NULL;
		lane_nap(ln, 5 * IDLE_SECONDS);
	}
	if (!*db)
		return;
	serve_log("lane %d: connected to the database again", ln->index);
	/* what it held when the connection went: nobody else takes claims of a live server */
	if (db_claims_release(*db, ln->sv->server_id, ln->gpu) < 0)
		warning("lane %d: its claims stay taken until this server stops", ln->index);
}

/* Sleep up to secs, waking early when the lane is told to stop. */
static void lane_nap(const struct lane *ln, double secs)
{
	double until = now_seconds() + secs;

	while (!ln->sv->draining && now_seconds() < until)
		usleep(20 * 1000);
}

static void *lane_main(void *arg)
{
	struct lane *ln = arg;
	struct serve *sv = ln->sv;
	struct db *db = NULL;
	char why[512];
	int go;

	/* the worker dies with the thread that started it: this one, which lasts */
	if (ln->gpu >= 0) {
		if (worker_start_on(&ln->worker, ln->gpu, why, sizeof(why)) < 0) {
			error("GPU %d: %s", ln->gpu, why);
			ln->worker = NULL;
		} else {
			worker_device(ln->worker, ln->device, sizeof(ln->device), NULL, 0, NULL,
			              NULL);
		}
	} else {
		snprintf(ln->device, sizeof(ln->device), "none");
	}
	pthread_mutex_lock(&sv->lock);
	ln->started = ln->gpu < 0 || ln->worker ? 1 : -1;
	pthread_cond_broadcast(&sv->cond);
	while (!sv->go)
		pthread_cond_wait(&sv->cond, &sv->lock);
	go = sv->go;
	pthread_mutex_unlock(&sv->lock);
	if (go > 0 && db_open(sv->o->db_path, &db) < 0)
		go = -1;
	while (go > 0 && !sv->draining) {
		struct db_job j;
		int r = lane_pick(ln, db, &j);

		if (r < 0) {
			lane_nap(ln, IDLE_SECONDS);
			if (db_schema_version(db) < 0)
				lane_reconnect(ln, &db);
			continue;
		}
		if (!r) {
			lane_nap(ln, IDLE_SECONDS);
			continue;
		}
		if (lane_step(ln, db, &j) < 0)
			lane_reconnect(ln, &db);
		db_job_release(&j);
	}
	while (ln->nruns)
		lane_run_close(ln, &ln->runs[0]);
	free(ln->runs);
	db_close(db);
	worker_stop(ln->worker);
	pthread_mutex_lock(&sv->lock);
	ln->job_id = 0;
	ln->exited = 1;
	pthread_mutex_unlock(&sv->lock);
	return NULL;
}

/* ------------------------------------------------------------ main thread */

/* The lanes: one per GPU asked for, or per visible GPU, or one without a GPU when none is. */
static void plan_lanes(struct serve *sv)
{
	const struct serve_options *o = sv->o;
	char why[256];
	int n, i;

	if (o->gpus) {
		sv->nlanes = o->ngpus;
		sv->lanes = xcalloc(sv->nlanes, sizeof(*sv->lanes));
		for (i = 0; i < (int)o->ngpus; i++)
			sv->lanes[i].gpu = o->gpus[i];
	} else {
		n = cuda_load(why, sizeof(why));
		if (n <= 0) {
			serve_log(
			    "no GPU (%s): one lane, for jobs that need none (replays, --no-gpu)",
			    why);
			n = 0;
		}
		sv->nlanes = n > 0 ? (size_t)n : 1;
		sv->lanes = xcalloc(sv->nlanes, sizeof(*sv->lanes));
		for (i = 0; i < (int)sv->nlanes; i++)
			sv->lanes[i].gpu = n > 0 ? i : -1;
	}
	for (i = 0; i < (int)sv->nlanes; i++) {
		sv->lanes[i].sv = sv;
		sv->lanes[i].index = i;
	}
}

/* Wait for every lane's worker; they must agree on the model. 0, or an exit code. */
static int lanes_ready(struct serve *sv, char *device, size_t len)
{
	size_t i, up;
	int rc = 0;

	pthread_mutex_lock(&sv->lock);
	for (;;) {
		for (i = 0, up = 0; i < sv->nlanes; i++)
			up += sv->lanes[i].started != 0;
		if (up == sv->nlanes)
			break;
		pthread_cond_wait(&sv->cond, &sv->lock);
	}
	pthread_mutex_unlock(&sv->lock);
	snprintf(device, len, "%s", sv->lanes[0].device);
	for (i = 0; i < sv->nlanes && !rc; i++) {
		if (sv->lanes[i].started < 0) {
			error("GPU %d cannot be used (see above)", sv->lanes[i].gpu);
			rc = EX_UNAVAILABLE;
		} else if (strcmp(sv->lanes[i].device, device)) {
			/* as Kernel Tuner: one model per set, or its measurements would mix */
			error(
			    "GPU %d is %s but GPU %d is %s: one tuner serve per GPU model (--gpus)",
			    sv->lanes[0].gpu, device, sv->lanes[i].gpu, sv->lanes[i].device);
			rc = EX_CONFIG;
		}
	}
	return rc;
}

static char *roots_json(const struct roots *r)
{
	json_t *a = json_array();
	size_t i;
	char *s;

	for (i = 0; i < r->n; i++)
		json_array_append_new(a, json_string(r->dir[i]));
	s = json_dumps(a, JSON_COMPACT);
	json_decref(a);
	return s;
}

static char *gpus_text(const struct serve *sv)
{
	struct strbuf sb = STRBUF_INIT;
	size_t i;

	sb_adds(&sb, "");
	for (i = 0; i < sv->nlanes; i++)
		if (sv->lanes[i].gpu >= 0)
			sb_addf(&sb, "%s%d", sb.len ? "," : "", sv->lanes[i].gpu);
	return sb_detach(&sb);
}

/* Stop the lanes working on a job whose cancel was asked; finish the owned ones nobody works on. */
static void act_on_cancels(struct serve *sv, struct db *db)
{
	struct db_job *jobs;
	size_t n, i, l;
	int busy;

	if (db_job_list(db, 1, &jobs, &n) < 0)
		return;
	for (i = 0; i < n; i++) {
		if (!jobs[i].cancel)
			continue;
		pthread_mutex_lock(&sv->lock);
		for (l = 0, busy = 0; l < sv->nlanes; l++)
			if (sv->lanes[l].job_id == jobs[i].id) {
				sv->lanes[l].stop = 1;
				busy = 1;
			}
		pthread_mutex_unlock(&sv->lock);
		if (!busy && jobs[i].server_id == sv->server_id) {
			db_job_finish(db, jobs[i].id, "cancelled", "cancelled");
			if (jobs[i].run_id > 0)
				db_run_set_status(db, jobs[i].run_id, "stopped");
			serve_log("job %lld cancelled", jobs[i].id);
		}
	}
	for (i = 0; i < n; i++)
		db_job_release(&jobs[i]);
	free(jobs);
}

static int lanes_exited(struct serve *sv)
{
	size_t i, n = 0;

	pthread_mutex_lock(&sv->lock);
	for (i = 0; i < sv->nlanes; i++)
		n += sv->lanes[i].exited;
	pthread_mutex_unlock(&sv->lock);
	return n == sv->nlanes;
}

static void start_draining(struct serve *sv, const char *why)
{
	size_t i;

	if (sv->draining)
		return;
	sv->draining = 1;
	for (i = 0; i < sv->nlanes; i++)
		sv->lanes[i].stop = 1;
	serve_log("%s: draining (each lane finishes its variant; jobs stay resumable)", why);
	sd_notify_text("STOPPING=1");
}

/* Between heartbeats: sleep, waking for signals (which only this thread takes). */
static void nap(double secs)
{
	struct timespec ts;

	ts.tv_sec = (time_t)secs;
	ts.tv_nsec = (long)((secs - (double)ts.tv_sec) * 1e9);
	nanosleep(&ts, NULL); /* EINTR: a signal, looked at by the caller */
}

static int serve_loop(struct serve *sv, struct db **dbp)
{
	double next_beat = 0, next_reap = 0;
	long long reaped;
	struct db *db = *dbp;

	while (!lanes_exited(sv)) {
		if (hup_seen) {
			hup_seen = 0;
			if (sv->o->log_path && open_log(sv->o->log_path) == 0)
				serve_log("SIGHUP: the log is open again");
		}
		if (term_signal)
			start_draining(sv, term_signal == SIGINT ? "SIGINT" : "SIGTERM");
		if (now_seconds() >= next_beat) {
			next_beat = now_seconds() + sv->o->heartbeat;
			if (db && db_server_heartbeat(db, sv->server_id) < 0 &&
			    db_schema_version(db) < 0) {
				/* the store went away: connect again, at the next beat if not now
				 */
				db_close(db);
				db = NULL;
			}
			if (!db && db_open(sv->o->db_path, &db) == 0) {
				serve_log("connected to the database again");
				db_server_heartbeat(db, sv->server_id);
			} else if (!db) {
				db = NULL;
				warning("cannot record the heartbeat: no database");
			}
			if (db)
				act_on_cancels(sv, db);
		}
		if (db && now_seconds() >= next_reap) {
			next_reap = now_seconds() + 5 * sv->o->heartbeat;
			if (db_servers_reap(db, &reaped) == 0 && reaped)
				serve_log("%lld dead server%s: their claims are back in the queue",
				          reaped, reaped == 1 ? "" : "s");
		}
		nap(fmin(0.1, sv->o->heartbeat));
	}
	*dbp = db;
	return 0;
}

int serve_main(const struct serve_options *o)
{
	struct serve sv;
	struct db_server_info si;
	struct db *db = NULL;
	char device[128], *roots = NULL, *gpus = NULL;
	const char *delay = getenv("TUNER_TEST_STEP_DELAY");
	long long reaped;
	size_t i;
	struct roots cache = {0};
	int rc = 0;

	memset(&sv, 0, sizeof(sv));
	sv.o = o;
	sv.db_shown = pq_redact(o->db_path);
	pthread_mutex_init(&sv.lock, NULL);
	pthread_cond_init(&sv.cond, NULL);
	if (o->log_path && open_log(o->log_path) < 0) {
		free(sv.db_shown);
		return EX_CANTCREAT;
	}
	set_error_routine(report);
	install_signals();
	if (delay)
		test_step_delay = atof(delay);
	/* a job's files are read in the roots or not at all; the cache is the daemon's own */
	if (o->cache_dir && (mkdir_p(o->cache_dir) < 0 || roots_add(&cache, o->cache_dir) < 0)) {
		rc = EX_CANTCREAT;
		goto out;
	}
	roots_confine(&o->roots, &cache);
	if (db_open(o->db_path, &db) < 0) {
		rc = EX_CANTCREAT;
		goto out;
	}
	if (db_servers_reap(db, &reaped) < 0) {
		rc = EX_SOFTWARE;
		goto out;
	}
	plan_lanes(&sv);
	sv.jobs = o->jobs;
	if (!sv.jobs) {
		/* the cores shared out between the lanes' compile pools */
		long cores = sysconf(_SC_NPROCESSORS_ONLN);

		sv.jobs = cores > (long)sv.nlanes ? (int)(cores / (long)sv.nlanes) : 1;
	}
	block_signals(SIG_BLOCK);
	for (i = 0; i < sv.nlanes; i++) {
		struct lane *ln = &sv.lanes[i];

		ln->has_thread = pthread_create(&ln->thread, NULL, lane_main, ln) == 0;
		if (!ln->has_thread) {
			ln->started = -1;
			ln->exited = 1;
		}
	}
	block_signals(SIG_UNBLOCK);
	rc = lanes_ready(&sv, device, sizeof(device));
	if (!rc) {
		memset(&si, 0, sizeof(si));
		roots = roots_json(&o->roots);
		gpus = gpus_text(&sv);
		si.gpus = gpus;
		si.device = device;
		si.roots = roots;
		si.ttl = 5 * o->heartbeat;
		if (db_server_register(db, &si, &sv.server_id) < 0)
			rc = EX_SOFTWARE;
	}
	if (!rc)
		serve_log("serving %s as server %lld (pid %ld): %zu lane%s on %s%s%s", sv.db_shown,
		          sv.server_id, (long)getpid(), sv.nlanes, sv.nlanes == 1 ? "" : "s",
		          device, *gpus ? ", GPUs " : "", gpus);
	pthread_mutex_lock(&sv.lock);
	sv.go = rc ? -1 : 1;
	pthread_cond_broadcast(&sv.cond);
	pthread_mutex_unlock(&sv.lock);
	if (!rc) {
		sd_notify_text("READY=1");
		serve_loop(&sv, &db);
	} else {
		sv.draining = 1;
	}
	for (i = 0; i < sv.nlanes; i++)
		if (sv.lanes[i].has_thread)
			pthread_join(sv.lanes[i].thread, NULL);
	if (sv.server_id > 0 && !db && db_open(o->db_path, &db) < 0)
		db = NULL;
	if (sv.server_id > 0) {
		if (!db || db_server_stop(db, sv.server_id) < 0)
			rc = EX_SOFTWARE;
		else
			serve_log("stopped: claims returned, running jobs left to resume");
	}
out:
	db_close(db);
	roots_confine(NULL, NULL);
	roots_release(&cache);
	set_error_routine(NULL);
	free(sv.lanes);
	free(sv.logged_job);
	free(sv.logged_gen);
	free(roots);
	free(gpus);
	free(sv.db_shown);
	pthread_cond_destroy(&sv.cond);
	pthread_mutex_destroy(&sv.lock);
	return rc;
}
