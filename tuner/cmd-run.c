/* tuner run: the search loop: propose, gate, compile, evaluate, record; stop and resume at any
 * moment. */
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tuner/cache.h"
#include "tuner/cmd.h"
#include "tuner/common.h"
#include "tuner/config.h"
#include "tuner/db.h"
#include "tuner/evolve.h"
#include "tuner/pipeline.h"
#include "tuner/run.h"
#include "tuner/template.h"
#include "tuner/worker.h"
#include <jansson.h>
#include <math.h>

/* What a run may ask for: beyond these a typo, not a job (and never an out-of-memory). */
#define GENERATIONS_MAX 100000
#define POPULATION_MAX  100000
/* Seconds between heartbeats: what tells a reader on another host that the run is alive. */
#define HEARTBEAT_SECONDS 10.0

#define RUN_OPTIONS                                                                                \
	"  --generations N   generations to run, 1 to 100000 (default: the config's\n"             \
	"                    budget; with --resume, the run's total)\n"                            \
	"  --population N    candidates per generation, 1 to 100000 (default: the\n"               \
	"                    config's budget)\n"                                                   \
	"  --seed N          RNG seed, 0 to 2^64-1 (default: the config's seed)\n"                 \
	"  --jobs N          parallel compiles, up to 4 per core (default: one per core)\n"        \
	"  --no-gpu          compile and gate only, even where a GPU is present\n"                 \
	"  --time D          stop once D of wall time is spent (90, 90s, 10m, 2h): the\n"          \
	"                    candidates in flight get their verdict, the run is\n"                 \
	"                    recorded as stopped and --resume continues it\n"                      \
	"  --evals N         stop the same way once N candidates have their verdict\n"             \
	"  --gpus LIST       measure on these GPUs, of one model: 0,1 or all (default 0)\n"        \
	"  --resume[=RUN]    continue a stopped, interrupted or failed run (default:\n"            \
	"                    the latest) without measuring again what it measured;\n"              \
	"                    it keeps its seed, population, strategy and timing, so\n"             \
	"                    giving another is an error\n"                                         \
	"  --replay OTHER.db answer from another database's measurements instead\n"                \
	"                    of the GPU (same template, arch and shapes); a variant\n"             \
	"                    it did not measure is reported as unmeasured\n"                       \
	"  -h, --help        print this help\n"                                                    \
	"\n"                                                                                       \
	"SIGINT (Ctrl-C), SIGTERM, SIGHUP or a closed output pipe finishes the\n"                  \
	"variant in flight, records the run as stopped and exits 128 + the\n"                      \
	"signal (130 for Ctrl-C); a second SIGINT or SIGTERM exits at once. A run\n"               \
	"killed outright reads as interrupted. Either way --resume continues it.\n"                \
	"The cubin cache is kept within its limit at start and end (see 'tuner\n"                  \
	"cache --help').\n"

const struct cmd cmd_run_entry = {
    .name = "run",
    .fn = cmd_run,
    .flags = NEED_CONFIG | NEED_DB | NEED_CACHE,
    .summary = "search the space: gate, compile, evaluate on the GPU, record",
    .usage = "usage: tuner run [--generations N] [--population N] [--seed N] [--strategy S]\n"
	     "                 [--jobs N] [--no-gpu] [--resume[=RUN]] [--replay OTHER.db]\n"
	     "\n"
	     "Search the configured kernel family's space: each generation is\n"
	     "proposed by the strategy, gated, compiled, checked and timed on the\n"
	     "GPU, and the elite (top K by geometric-mean speedup over the shape\n"
	     "suite) is kept in the database. Without a GPU (or with --no-gpu)\n"
	     "everything is gated and compiled but nothing is timed.\n"
	     "\n"
	     "  --strategy S      " SEARCH_STRATEGIES "\n"
	     "                    (default evolve; evolve2 and evolve1 are the earlier\n"
	     "                    defaults, kept to compare against)\n" RUN_OPTIONS,
};

const struct cmd cmd_sweep_entry = {
    .name = "sweep",
    .fn = cmd_sweep,
    .flags = NEED_CONFIG | NEED_DB | NEED_CACHE,
    .summary = "evaluate every point of the space (run --strategy exhaustive)",
    .usage = "usage: tuner sweep [--generations N] [--population N] [--seed N] [--jobs N]\n"
	     "                   [--no-gpu] [--resume[=RUN]] [--replay OTHER.db]\n"
	     "\n"
	     "Every point of the declared space, generation after generation, until\n"
	     "none is left: 'tuner run --strategy exhaustive' with as many\n"
	     "generations as the space needs (at most 100000: give a larger\n"
	     "--population for a larger space).\n"
	     "\n" RUN_OPTIONS,
};

/* ------------------------------------------------------------- signals */

static stop_flag stop_requested, stop_signal;
static volatile sig_atomic_t hard_signals;
/* the run's budget (--time, --evals) is spent: it stops as a signal would, resumable */
static const char *budget_spent;

static void on_signal(int sig)
{
	if (sig == SIGPIPE) {
		/* Nobody reads what we print: stop as asked, and let later writes just fail. */
		signal(SIGPIPE, SIG_IGN);
	} else if (hard_signals++) {
		/* A second signal: leave at once; SQLite's journal keeps the database whole. */
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	if (!stop_requested)
		stop_signal = sig;
	stop_requested = 1;
}

static void install_signals(void)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
	struct sigaction sa;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < ARRAY_SIZE(sigs); i++)
		sigaction(sigs[i], &sa, NULL);
}

static const char *signal_name(int sig)
{
	switch (sig) {
	case SIGINT:
		return "SIGINT";
	case SIGTERM:
		return "SIGTERM";
	case SIGHUP:
		return "SIGHUP";
	case SIGPIPE:
		return "SIGPIPE (the output was closed)";
	}
	return "a signal";
}

/* ------------------------------------------------------------ options */

struct run_opts {
	int generations, population, jobs, no_gpu;
	double time_s;    /* --time: the wall-clock budget, 0: none */
	long long evals;  /* --evals: the evaluations budget, 0: none */
	const char *gpus; /* --gpus: "0", "0,1", "all"; NULL: GPU 0 */
	unsigned long long seed;
	int seed_given;
	const char *strategy;
	const char *resume; /* run id, or "" for the latest */
	int resume_given;
	const char *replay; /* another database */
};

static int parse_run_opts(int argc, char **argv, struct run_opts *o)
{
	static const struct option opts[] = {
	    {"generations", required_argument, NULL, 'g'},
	    {"population", required_argument, NULL, 'p'},
	    {"seed", required_argument, NULL, 's'},
	    {"jobs", required_argument, NULL, 'j'},
	    {"strategy", required_argument, NULL, 'S'},
	    {"no-gpu", no_argument, NULL, 'n'},
	    {"resume", optional_argument, NULL, 'r'},
	    {"replay", required_argument, NULL, 'R'},
	    {"time", required_argument, NULL, 'T'},
	    {"evals", required_argument, NULL, 'E'},
	    {"gpus", required_argument, NULL, 'G'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	long long v;
	int c;

	memset(o, 0, sizeof(*o));
	o->generations = o->population = -1;
	while ((c = getopt_long(argc, argv, "hg:p:s:j:", opts, NULL)) != -1) {
		switch (c) {
		case 'g':
			if (cmd_parse_range("--generations", optarg, 1, GENERATIONS_MAX, &v) < 0)
				return -1;
			o->generations = (int)v;
			break;
		case 'p':
			if (cmd_parse_range("--population", optarg, 1, POPULATION_MAX, &v) < 0)
				return -1;
			o->population = (int)v;
			break;
		case 's':
			if (cmd_parse_u64("--seed", optarg, &o->seed) < 0)
				return -1;
			o->seed_given = 1;
			break;
		case 'j':
			if (cmd_parse_range("--jobs", optarg, 0, cmd_jobs_max(), &v) < 0)
				return -1;
			o->jobs = (int)v;
			break;
		case 'S':
			if (!search_strategy_known(optarg)) {
				error("unknown strategy '%s' (%s)", optarg, SEARCH_STRATEGIES);
				return -1;
			}
			o->strategy = optarg;
			break;
		case 'n':
			o->no_gpu = 1;
			break;
		case 'r':
			o->resume_given = 1;
			o->resume = optarg ? optarg : "";
			break;
		case 'R':
			o->replay = optarg;
			break;
		case 'T':
			if (cmd_parse_time(optarg, &o->time_s) < 0)
				return -1;
			break;
		case 'E':
			if (cmd_parse_evals(optarg, &o->evals) < 0)
				return -1;
			break;
		case 'G':
			o->gpus = optarg;
			break;
		case 'h':
			return 1;
		default:
			return -1;
		}
	}
	if (optind < argc) {
		/* `--resume 3` with a space: getopt leaves the id as an operand. */
		if (o->resume_given && !*o->resume && optind + 1 == argc) {
			o->resume = argv[optind];
			return 0;
		}
		error("unexpected argument '%s'", argv[optind]);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------ progress */

/*
 * Testing hook: TUNER_TEST_SIGNAL="N:SIG" raises signal SIG right after the
 * N-th verdict of this process is recorded (9: a kill in mid-generation).
 */
static long long test_signal_after = -1;
static int test_signal;

static void test_signal_init(void)
{
	const char *env = getenv("TUNER_TEST_SIGNAL");

	if (env && sscanf(env, "%lld:%d", &test_signal_after, &test_signal) != 2)
		test_signal_after = -1;
}

/* The run's clock: the seconds it ran before this process, and since. */
struct liveness {
	struct db *db;
	long long run_id;
	double before, start, last_beat;
};

static double active_seconds(const struct liveness *lv)
{
	return lv->before + (now_seconds() - lv->start);
}

/* A heartbeat, at most every HEARTBEAT_SECONDS unless forced; a failure is only a warning. */
static void heartbeat(struct liveness *lv, int force)
{
	double now = now_seconds();

	if (!lv->db || (!force && now - lv->last_beat < HEARTBEAT_SECONDS))
		return;
	lv->last_beat = now;
	if (db_run_heartbeat(lv->db, lv->run_id, active_seconds(lv)) < 0)
		warning("run %lld: cannot record its heartbeat", lv->run_id);
}

struct progress {
	int tty, verbosity;
	double start;
	double time_s; /* the budgets */
	long long evals;
	double last_busy; /* when the TTY line last moved */
	int generation, generations;
	size_t done, queued;
	double best;
	const struct pipeline *p;
	const struct config *cfg;
	struct liveness *lv;
};

/* "constraint 3, smem 2, compile 1": the run's rejections by outcome, so far. */
static void rejections(struct strbuf *sb, const struct pipeline_stats *st)
{
	int o;

	for (o = 0; o < OUTCOME_COUNT; o++)
		if (o != VARIANT_OK && st->outcomes[o])
			sb_addf(sb, "%s%s %lld", sb->len ? ", " : "", outcome_name((enum outcome)o),
			        st->outcomes[o]);
	if (!sb->len)
		sb_adds(sb, "none");
}

/* After each candidate's verdict: the heartbeat, --verbose's line, the TTY's status line. */
static void progress_tick(void *ctx, const struct evaluation *ev)
{
	struct progress *pr = ctx;
	const struct pipeline_stats *st = &pr->p->st;
	struct strbuf sb = STRBUF_INIT;
	long long left;
	double eta;

	pr->done++;
	if (st->evaluated == test_signal_after)
		raise(test_signal);
	if (!stop_requested && pr->evals && st->evaluated >= pr->evals) {
		budget_spent = "--evals";
		stop_requested = 1;
	}
	if (!stop_requested && pr->time_s && now_seconds() - pr->start >= pr->time_s) {
		budget_spent = "--time";
		stop_requested = 1;
	}
	if (ev->ranked && ev->m.fitness > pr->best)
		pr->best = ev->m.fitness;
	heartbeat(pr->lv, 0);
	if (pr->verbosity > 0) {
		char *params = space_format(&pr->cfg->fam, &ev->va);

		if (pr->tty)
			fprintf(stderr, "\r\033[K");
		printf("  %s: %s%s", params, outcome_name(ev->outcome),
		       ev->reused ? " (recorded)" : "");
		if (ev->ranked)
			printf(", x%.3f", ev->m.fitness);
		printf("%s%s\n", ev->outcome != VARIANT_OK && *ev->reason ? ": " : "",
		       ev->outcome != VARIANT_OK ? ev->reason : "");
		fflush(stdout);
		free(params);
	}
	if (!pr->tty || pr->verbosity < 0)
		return;
	/* what is left of this generation, and the generations after it at this one's size */
	left = (long long)(pr->queued - pr->done) +
	       (long long)(pr->generations - pr->generation - 1) * (long long)pr->queued;
	eta =
	    st->evaluated ? (now_seconds() - pr->start) / (double)st->evaluated * (double)left : 0;
	rejections(&sb, st);
	fprintf(stderr, "\r\033[Kgeneration %d/%d: %zu done, %zu queued; rejected: %s; best ",
	        pr->generation + 1, pr->generations, pr->done, pr->queued - pr->done, sb.buf);
	if (pr->best > 0)
		fprintf(stderr, "x%.3f", pr->best);
	else
		fprintf(stderr, "-");
	fprintf(stderr, "; eta %.0f s", eta);
	fflush(stderr);
	sb_release(&sb);
}

/* While the pool compiles or the GPU measures: the TTY line moves, and the time budget is kept. */
static void progress_busy(void *ctx, const char *what)
{
	struct progress *pr = ctx;
	double now = now_seconds();

	if (!stop_requested && pr->time_s && now - pr->start >= pr->time_s) {
		budget_spent = "--time";
		stop_requested = 1;
	}
	if (!pr->tty || pr->verbosity < 0 || now - pr->last_busy < 0.25)
		return;
	pr->last_busy = now;
	fprintf(stderr, "\r\033[Kgeneration %d/%d: %zu of %zu done, %s; %.0f s", pr->generation + 1,
	        pr->generations, pr->done, pr->queued, what, now - pr->start);
	if (pr->best > 0)
		fprintf(stderr, "; best x%.3f", pr->best);
	fflush(stderr);
}

/* After each generation: one plain line (the TTY line is cleared first). */
static void progress_generation(struct progress *pr, size_t n, size_t ok, double secs)
{
	const struct pipeline_stats *st = &pr->p->st;
	struct strbuf sb = STRBUF_INIT;

	if (pr->tty && pr->verbosity >= 0)
		fprintf(stderr, "\r\033[K");
	heartbeat(pr->lv, 1);
	if (pr->verbosity < 0)
		return;
	rejections(&sb, st);
	printf("generation %d/%d: %zu candidates, %zu passed; rejected so far: %s; ",
	       pr->generation + 1, pr->generations, n, ok, sb.buf);
	if (pr->best > 0)
		printf("best x%.3f; ", pr->best);
	printf("%.1f s\n", secs);
	fflush(stdout);
	sb_release(&sb);
}

/* ------------------------------------------------------------- the run */

static char *command_line(int argc, char **argv)
{
	struct strbuf sb = STRBUF_INIT;
	int i;

	sb_adds(&sb, "tuner");
	for (i = 0; i < argc; i++)
		sb_addf(&sb, " %s", argv[i]);
	return sb_detach(&sb);
}

/*
 * The recording: a GPU run in path of this config's template, arch and shapes,
 * whose device becomes this run's. 0, or an exit code after error().
 */
struct run_cmd {
	struct run_opts o;
	const struct globals *g;
	struct config cfg;
	struct db *db, *replay;
	struct worker *worker; /* the first of workers[] */
	struct worker *workers[PIPELINE_MAX_WORKERS];
	size_t nworkers;
	long long run_id;
	char device[128], driver[64], nvrtc[32];
	char *strategy;
	char *replay_path;
	unsigned long long seed;
	int generations, population;
	char *shapes;
	int forced; /* the strategy is the command's (sweep), not an option */
	int quiet;
	struct liveness lv;
};

/* Print to stdout unless --quiet. */
static void say(const struct run_cmd *rs, const char *fmt, ...) TUNER_PRINTF(2, 3);
static void say(const struct run_cmd *rs, const char *fmt, ...)
{
	va_list ap;

	if (rs->quiet)
		return;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
}

/* What --resume cannot honour, named: the run keeps what it was started with. */
static int resume_conflicts(const struct run_cmd *rs, const struct db_run *r)
{
	const struct run_opts *o = &rs->o;
	const char *strategy = rs->forced ? rs->strategy : o->strategy;

	if (o->seed_given && o->seed != r->seed)
		return error("--seed %llu: run %lld was started with seed %llu and resumes with it "
		             "(drop --seed, or start a new run)",
		             o->seed, r->id, r->seed);
	if (o->population > 0 && o->population != r->population)
		return error("--population %d: run %lld has %d candidates per generation and "
		             "resumes with them",
		             o->population, r->id, r->population);
	if (strategy && strcmp(strategy, r->strategy))
		return error("%s: run %lld searches with the %s strategy and resumes with it",
		             rs->forced ? "sweep" : "--strategy", r->id, r->strategy);
	if (o->replay && (!r->replay_of || strcmp(o->replay, r->replay_of)))
		return error("--replay '%s': run %lld %s%s%s", o->replay, r->id,
		             r->replay_of ? "replays '" : "was timed on the GPU, not replayed",
		             r->replay_of ? r->replay_of : "", r->replay_of ? "'" : "");
	if (o->no_gpu && (r->gpu || r->replay_of))
		return error("--no-gpu: run %lld %s; resumed without, it would time nothing", r->id,
		             r->replay_of ? "is a replay" : "was timed on a GPU");
	return 0;
}

/* --resume: the run and the settings it was started with. 0, -1 (nothing to do) or an exit code. */
static int find_resume(struct run_cmd *rs)
{
	struct db_run r;
	long long id;
	int rc = 0;

	if (*rs->o.resume) {
		if (cmd_parse_range("--resume", rs->o.resume, 1, LLONG_MAX, &id) < 0)
			return EX_USAGE;
	} else if (db_run_latest(rs->db, &id) < 0) {
		return EX_DATAERR;
	}
	if (db_run_get(rs->db, id, &r) < 0)
		return EX_DATAERR;
	if (!strcmp(r.status, "done")) {
		say(rs, "run %lld is done: nothing to resume (see 'tuner top --run %lld')\n", id,
		    id);
		rc = -1;
	} else if (r.alive) {
		error("run %lld is running (pid %lld on %s): stop it before resuming it", id, r.pid,
		      r.host ? r.host : "?");
		rc = EX_TEMPFAIL;
	} else if (resume_conflicts(rs, &r) < 0) {
		rc = EX_USAGE;
	} else if (!r.config_text || strcmp(r.config_text, rs->cfg.text) ||
	           strcmp(r.template_hash, rs->cfg.fam.source_hash) ||
	           strcmp(r.shapes, rs->shapes)) {
		error("run %lld was started with another config or template than '%s' holds now; "
		      "resume it with the same files",
		      id, rs->cfg.path);
		rc = EX_CONFIG;
	} else {
		rs->run_id = id;
		rs->seed = r.seed;
		rs->generations = rs->o.generations > 0 ? rs->o.generations : r.generations;
		rs->population = r.population;
		free(rs->strategy);
		rs->strategy = xstrdup(r.strategy);
		if (r.replay_of && !rs->replay_path)
			rs->replay_path = xstrdup(r.replay_of);
		say(rs, "resuming run %lld (%s), %d generations\n", id, r.status, rs->generations);
	}
	db_run_release(&r);
	return rc;
}

static int create_run(struct run_cmd *rs, int argc, char **argv)
{
	struct run_info ri;
	char *cmd = command_line(argc, argv);
	int rc;

	memset(&ri, 0, sizeof(ri));
	ri.config_path = rs->g->config_path;
	ri.config_text = rs->cfg.text;
	ri.template_name = rs->cfg.fam.name;
	ri.template_hash = rs->cfg.fam.source_hash;
	ri.arch = rs->cfg.arch.name;
	ri.device = rs->device;
	ri.driver = rs->driver;
	ri.nvrtc = rs->nvrtc;
	ri.strategy = rs->strategy;
	ri.shapes = rs->shapes;
	ri.command = cmd;
	ri.seed = rs->seed;
	ri.generations = rs->generations;
	ri.population = rs->population;
	ri.gpu = rs->nworkers || rs->replay;
	ri.replay_of = rs->replay_path;
	rc = db_run_create(rs->db, &ri, &rs->run_id);
	free(cmd);
	if (rc < 0)
		return EX_SOFTWARE;
	say(rs, "run %lld: %s on %s (%s), %zu shapes, strategy %s, seed %llu\n", rs->run_id,
	    rs->cfg.fam.name, rs->cfg.arch.name, rs->device, rs->cfg.nshapes, rs->strategy,
	    rs->seed);
	return 0;
}

/*
 * The GPU workers --gpus asks for ("0,2", "all"; GPU 0 without it), all of one
 * model: measurements from two kinds of GPU are not one landscape. 0, or -1
 * with why.
 */
static int start_workers(struct run_cmd *rs, char *why, size_t whylen)
{
	int ids[PIPELINE_MAX_WORKERS], n = 0, all = rs->o.gpus && !strcmp(rs->o.gpus, "all");
	const char *s = rs->o.gpus;
	char name[128], driver[64];
	int i;

	if (!s || all) {
		ids[n++] = 0;
	} else {
		while (*s) {
			char *end;
			long v = strtol(s, &end, 10);

			if (end == s || v < 0 || v > 1024 || (*end && *end != ',') ||
			    n == PIPELINE_MAX_WORKERS) {
				snprintf(why, whylen, "a list of GPU ordinals such as 0,1 or all");
				return -1;
			}
			ids[n++] = (int)v;
			s = *end ? end + 1 : end;
		}
	}
	for (i = 0; i < n || (all && i < PIPELINE_MAX_WORKERS); i++) {
		struct worker *w;

		if (i >= n)
			ids[n++] = i;
		if (worker_start_on(&w, ids[i], why, whylen) < 0) {
			if (all && i > 0)
				break; /* every GPU there is */
			while (rs->nworkers)
				worker_stop(rs->workers[--rs->nworkers]);
			return -1;
		}
		rs->workers[rs->nworkers++] = w;
		worker_device(w, name, sizeof(name), driver, sizeof(driver), NULL, NULL);
		if (rs->nworkers == 1) {
			snprintf(rs->device, sizeof(rs->device), "%s", name);
			snprintf(rs->driver, sizeof(rs->driver), "%s", driver);
		} else if (strcmp(name, rs->device)) {
			snprintf(why, whylen,
			         "GPU %d is a %s, GPU %d a %s: one job runs on one model", ids[0],
			         rs->device, ids[i], name);
			while (rs->nworkers)
				worker_stop(rs->workers[--rs->nworkers]);
			return -1;
		}
	}
	rs->worker = rs->workers[0];
	return 0;
}

/* Where measurements come from: the replay, the GPU, or nowhere (one line says why). */
static int open_device(struct run_cmd *rs)
{
	char why[512];
	int rc;

	snprintf(rs->device, sizeof(rs->device), "none");
	snprintf(rs->driver, sizeof(rs->driver), "none");
	if (!rs->replay_path && !rs->cfg.fam.source) {
		/* a landscape (tuner import): recorded measurements, no kernel to compile */
		error("%s is a recorded landscape with nothing to compile: search it with --replay",
		      rs->cfg.fam.name);
		return EX_USAGE;
	}
	if (rs->replay_path) {
		rc = run_open_replay(rs->replay_path, &rs->cfg, rs->shapes, &rs->replay, rs->device,
		                     sizeof(rs->device));
		if (rc)
			return rc;
		say(rs, "replaying the measurements of '%s' (%s): nothing runs on a GPU\n",
		    rs->replay_path, rs->device);
		return 0;
	}
	if (rs->o.no_gpu) {
		say(rs, "--no-gpu: gating and compiling only; nothing will be timed\n");
		return 0;
	}
	if (start_workers(rs, why, sizeof(why)) < 0) {
		if (rs->o.gpus) {
			error("--gpus %s: %s", rs->o.gpus, why);
			return EX_UNAVAILABLE;
		}
		say(rs, "no GPU (%s): gating and compiling only; nothing will be timed\n", why);
		return 0;
	}
	return 0;
}

/* The elite as the search holds it, in report order, stored for this generation. */
static int store_elite(struct run_cmd *rs, struct search *s, int gen)
{
	const struct member *el[64];
	size_t n = search_elite(s, el, ARRAY_SIZE(el));

	return run_elite_store(rs->db, rs->run_id, gen, el, n, search_margin(s));
}

/* Whether a ranked newcomer would enter the elite: the pipeline's question to the search. */
static int admits(void *ctx, const struct evaluation *ev)
{
	return search_admits(ctx, &ev->va, &ev->m);
}

/* Where a run stopped: generations complete, and how far the one it was in got. */
struct stop_point {
	int stopped;        /* by a signal */
	int generation;     /* the generation it was in (0-based) */
	long long verdicts; /* of that generation's candidates */
	size_t candidates;
};

static void summary(const struct run_cmd *rs, const struct pipeline *p, int gens,
                    const struct stop_point *sp, double secs)
{
	const struct pipeline_stats *st = &p->st;
	struct strbuf sb = STRBUF_INIT;

	if (rs->quiet)
		return;
	if (sp->stopped)
		printf("%lld candidates in %.1f s: %d generation%s complete, %lld of %zu in "
		       "generation %d (%lld answered from this run's records)\n",
		       st->evaluated, secs, gens, gens == 1 ? "" : "s", sp->verdicts,
		       sp->candidates, sp->generation + 1, st->reused);
	else
		printf("%lld candidates in %d generation%s, %.1f s (%lld answered from this run's "
		       "records)\n",
		       st->evaluated, gens, gens == 1 ? "" : "s", secs, st->reused);
	if (!rs->replay)
		printf(
		    "compiled %lld variants (%lld builds, %lld cached) in %.1f s: %.2f variants/s, "
		    "%.2f s of compiler time per fresh build\n",
		    st->compiled, st->builds, st->builds_cached, st->wall_compile,
		    st->wall_compile > 0 ? (double)st->compiled / st->wall_compile : 0.0,
		    st->builds > st->builds_cached
			? st->compile_seconds / (double)(st->builds - st->builds_cached)
			: 0.0);
	rejections(&sb, st);
	printf("rejected: %s\n", sb.buf);
	if (st->sanitized)
		printf("dynamic alignment gate: %lld variants, %.1f s (%.2f s each, its builds "
		       "included)\n",
		       st->sanitized, st->wall_sanitize, st->wall_sanitize / (double)st->sanitized);
	if (st->measured)
		printf("GPU: %lld variants checked and timed, %.2f s of GPU work each; the GPU%s "
		       "busy %.0f%% of the run's %.1f s\n",
		       st->measured, st->gpu_busy / (double)st->measured,
		       p->nworkers > 1 ? "s were" : " was",
		       secs > 0
		           ? 100.0 * st->gpu_busy / (secs * (double)(p->nworkers ? p->nworkers : 1))
		           : 0.0,
		       secs);
	if (st->measured)
		printf(
		    "GPU idle: %.1f s waiting for builds, %.1f s for the alignment gate's builds, "
		    "%.1f s for verdicts being recorded, %.1f s between generations\n",
		    st->idle_build, st->idle_sanitize_build, st->idle_commit, st->idle_between);
	if (st->prefetched || st->prefetch_used)
		printf(
		    "compiled ahead: %lld builds (%.1f s of compiler time), %lld of them used by "
		    "a later generation; %lld builds queued ahead were not needed\n",
		    st->prefetched, st->prefetch_seconds, st->prefetch_used, st->withdrawn);
	sb_release(&sb);
	if (!rs->worker && !rs->replay)
		printf("nothing was timed: %lld variants passed every gate but ran on no GPU\n",
		       st->outcomes[VARIANT_OK]);
	else
		printf("%s: %lld correct, %lld measured now, %lld shape results reused; see 'tuner "
		       "top "
		       "--run %lld'\n",
		       rs->replay ? "replayed" : rs->device, st->outcomes[VARIANT_OK], st->measured,
		       st->shapes_reused, rs->run_id);
}

/* The variant id of a candidate's parent, 0 for none. */
static long long parent_id(const struct member *const *pool, size_t npool, int idx)
{
	return idx >= 0 && (size_t)idx < npool ? pool[idx]->id : 0;
}

/*
 * compute-sanitizer on the final elite: the best of the run in order (the
 * elite, then the runners-up of the breeding pool) until K pass; those that
 * fail are rejected with what the tool found, and the elite stored once more
 * (a generation of its own) is the verified one. 0, or -1 after error().
 */
/* compute-sanitizer's rejection of a member of the final elite, told. */
static void final_rejected(void *ctx, const struct evaluation *ev)
{
	say(ctx, "compute-sanitizer rejects %s: %s\n", ev->hash, ev->reason);
}

static int verify_final(struct run_cmd *rs, struct pipeline *p, struct search *s, int gens)
{
	size_t checked, rejected;
	double t0 = now_seconds();
	int r = run_final_elite(rs->db, rs->run_id, gens, p, s, (size_t)rs->cfg.elite, &stop_signal,
	                        final_rejected, rs, &checked, &rejected);

	if (r < 0)
		return -1;
	if (r > 0) {
		say(rs,
		    "compute-sanitizer's check of the final elite stopped by %s: --resume "
		    "finishes it\n",
		    signal_name(stop_signal));
		return 0;
	}
	say(rs,
	    "compute-sanitizer (memcheck, racecheck, synccheck) on the final elite: %zu "
	    "checked, %zu rejected, %.1f s\n",
	    checked, rejected, now_seconds() - t0);
	return 0;
}

static int search_loop(struct run_cmd *rs, struct pipeline *p, int *gens_done,
                       struct stop_point *sp)
{
	struct search *s = search_new(&rs->cfg, rs->strategy, rs->seed);
	struct candidate *cands = xcalloc((size_t)rs->population, sizeof(*cands));
	struct evaluation *evs = xcalloc((size_t)rs->population, sizeof(*evs));
	struct progress pr;
	int gen, rc = 0;

	if (!s) {
		free(cands);
		free(evs);
		return EX_USAGE;
	}
	memset(&pr, 0, sizeof(pr));
	pr.tty = isatty(STDERR_FILENO);
	pr.verbosity = rs->g->verbosity;
	pr.start = now_seconds();
	pr.generations = rs->generations;
	pr.p = p;
	pr.cfg = &rs->cfg;
	pr.lv = &rs->lv;
	pr.time_s = rs->o.time_s;
	pr.evals = rs->o.evals;
	p->progress = progress_tick;
	p->progress_ctx = &pr; /* cppcheck-suppress autoVariables ; cleared before return */
	p->busy = progress_busy;
	p->busy_ctx = &pr; /* cppcheck-suppress autoVariables ; cleared before return */
	p->admits = admits;
	p->admits_ctx = s;
	*gens_done = 0;
	for (gen = 0; gen < rs->generations && !rc; gen++) {
		const struct member *pool[64];
		size_t n, neval, done, i, npool, ok = 0;
		long long before = p->st.evaluated;
		double t0 = now_seconds();

		/* parents are indices into the pool at proposal time */
		npool = search_pool(s, pool, ARRAY_SIZE(pool));
		n = search_propose(s, gen, cands, (size_t)rs->population, NULL, NULL);
		if (n == 0) {
			say(rs, "the space is exhausted: every configuration has been proposed\n");
			break;
		}
		pr.generation = gen;
		pr.done = 0;
		pr.queued = n;
		pipeline_race_set(p, search_race_bar(s));
		/*
		 * An evaluations budget takes the generation's first candidates, in the
		 * order proposed, as a served lane claims them: the same N candidates
		 * whatever order their verdicts come in (a gate's come first).
		 */
		neval = n;
		if (rs->o.evals > 0 && rs->o.evals > p->st.evaluated &&
		    rs->o.evals - p->st.evaluated < (long long)n)
			neval = (size_t)(rs->o.evals - p->st.evaluated);
		if (pipeline_evaluate(p, gen, cands, neval, evs, &done, &stop_requested) < 0) {
			rc = EX_SOFTWARE;
			break;
		}
		for (i = 0; i < done && !rc; i++) {
			struct evaluation *ev = &evs[i];

			if (db_population_record(rs->db, rs->run_id, gen, ev->variant_id,
			                         evolve_origin_name(cands[i].origin),
			                         parent_id(pool, npool, cands[i].parent_a),
			                         parent_id(pool, npool, cands[i].parent_b)) < 0) {
				rc = EX_SOFTWARE;
				break;
			}
			search_observe(s, &ev->va, ev->ranked ? &ev->m : NULL);
			ok += ev->outcome == VARIANT_OK;
		}
		if (!rc && store_elite(rs, s, gen) < 0)
			rc = EX_SOFTWARE;
		if (rc)
			break;
		if (done < n || stop_requested) {
			/* Every verdict reached is recorded, the static and compile ones included.
			 */
			sp->stopped = 1;
			sp->generation = gen;
			sp->verdicts = p->st.evaluated - before;
			sp->candidates = n;
			if (pr.tty && rs->g->verbosity >= 0)
				fprintf(stderr, "\r\033[K");
			if (budget_spent)
				say(rs,
				    "the budget of %s is spent in generation %d: %lld of its %zu "
				    "candidates have their verdict\n",
				    budget_spent, gen + 1, sp->verdicts, n);
			else
				say(rs,
				    "stopped by %s in generation %d: %lld of its %zu candidates "
				    "have "
				    "their verdict\n",
				    signal_name(stop_signal), gen + 1, sp->verdicts, n);
			rc = -1;
			break;
		}
		*gens_done = gen + 1;
		progress_generation(&pr, n, ok, now_seconds() - t0);
		if (gen == 0 && (rs->worker || rs->replay) && !p->have_baseline)
			warning("the baseline has no timing (%s): nothing can be ranked",
			        evs[0].outcome == VARIANT_OK ? "not measured" : evs[0].reason);
	}
	if (!rc && rs->cfg.tools == TOOLS_FINAL && rs->nworkers && *gens_done > 0 &&
	    verify_final(rs, p, s, *gens_done) < 0)
		rc = EX_SOFTWARE;
	p->progress = NULL;
	p->progress_ctx = NULL;
	p->busy = NULL;
	p->busy_ctx = NULL;
	p->admits = NULL;
	p->admits_ctx = NULL;
	search_free(s);
	free(cands);
	free(evs);
	return rc;
}

/* ---------------------------------------------------------- the cache */

/* Keep the cubin cache within its limit (a failure is only a warning: the run is not at stake). */
static void cache_keep(const struct run_cmd *rs, long long limit)
{
	struct cache_stats gone;
	char size[32];
	char **keys = NULL;
	size_t n = 0, i;

	/* The builds this run used are its most recently used, cached or not. */
	if (rs->run_id > 0 && rs->db && db_run_build_keys(rs->db, rs->run_id, &keys, &n) == 0)
		cache_touch(rs->g->cache_dir, keys, n);
	for (i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
	if (cache_prune(rs->g->cache_dir, limit, &gone) < 0) {
		warning("the cubin cache '%s' could not be pruned", rs->g->cache_dir);
		return;
	}
	cache_format_size(size, sizeof(size), gone.bytes);
	if (gone.entries && rs->g->verbosity > 0)
		printf("cache: evicted %lld least recently used entries (%s) from '%s'\n",
		       gone.entries, size, rs->g->cache_dir);
}

/* ------------------------------------------------------------ the command */

/*
 * The generations and population asked for must fit in memory before
 * anything is written: a run that cannot start leaves no trace.
 */
static int check_budget(const struct run_cmd *rs)
{
	double need = (double)rs->population *
	              (double)(sizeof(struct candidate) + sizeof(struct evaluation) + 64);
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	double have = pages > 0 && page > 0 ? (double)pages * (double)page : 0;

	if (rs->population < 1 || rs->population > POPULATION_MAX)
		return error("population %d: from 1 to %d", rs->population, POPULATION_MAX);
	if (rs->generations < 1 || rs->generations > GENERATIONS_MAX)
		return error("%d generations: from 1 to %d", rs->generations, GENERATIONS_MAX);
	if (have > 0 && need > have / 4)
		return error("a population of %d needs %.0f MiB for its candidates, more than a "
		             "quarter of this machine's memory",
		             rs->population, need / (1 << 20));
	return 0;
}

static int run_main(int argc, char **argv, const struct globals *g, const char *force_strategy)
{
	struct run_cmd rs;
	struct pipeline p;
	struct stop_point sp;
	long long limit, reaped;
	int rc, gens = 0;
	double t0 = now_seconds();
	const char *end;

	memset(&rs, 0, sizeof(rs));
	memset(&p, 0, sizeof(p));
	memset(&sp, 0, sizeof(sp));
	rs.g = g;
	rs.quiet = g->verbosity < 0;
	rc = parse_run_opts(argc, argv, &rs.o);
	if (rc)
		return cmd_usage(g, rc > 0 ? 0 : EX_USAGE);
	if (force_strategy && rs.o.strategy) {
		error("sweep is exhaustive: --strategy is run's option");
		return cmd_usage(g, EX_USAGE);
	}
	if (cache_limit(&limit) < 0)
		return EX_USAGE;
	rs.forced = force_strategy != NULL;
	if ((rc = cmd_load_config(g, &rs.cfg)) != 0)
		return rc;
	rs.seed = rs.o.seed_given ? rs.o.seed : rs.cfg.seed;
	rs.generations = rs.o.generations > 0 ? rs.o.generations : rs.cfg.generations;
	rs.population = rs.o.population > 0 ? rs.o.population : rs.cfg.population;
	rs.strategy = xstrdup(force_strategy  ? force_strategy
	                      : rs.o.strategy ? rs.o.strategy
	                                      : rs.cfg.strategy);
	if (force_strategy && rs.o.generations <= 0 && !rs.o.resume_given) {
		/* a sweep goes on until the space is exhausted */
		unsigned long long size = space_size(&rs.cfg.fam);
		unsigned long long pop = (unsigned long long)rs.population;
		unsigned long long need = size / pop + (size % pop != 0) + 1;

		if (need > GENERATIONS_MAX) {
			error("the space has %llu points: more than %d generations of %d; give a "
			      "larger --population",
			      size, GENERATIONS_MAX, rs.population);
			rc = EX_USAGE;
			goto out;
		}
		rs.generations = (int)need;
	}
	rs.shapes = run_shapes_json(&rs.cfg);
	rs.replay_path = rs.o.replay ? xstrdup(rs.o.replay) : NULL;
	if (compile_nvrtc_version(rs.nvrtc, sizeof(rs.nvrtc)) < 0)
		snprintf(rs.nvrtc, sizeof(rs.nvrtc), "unknown");
	if (check_budget(&rs) < 0) {
		rc = EX_USAGE;
		goto out;
	}

	/* A resume needs its database; anything else opens (and may create) it only once the
	 * job can start: a missing recording creates nothing. */
	if (rs.o.resume_given) {
		if (access(g->db_path, F_OK) < 0) {
			error("no database '%s' to resume from", g->db_path);
			rc = EX_NOINPUT;
			goto out;
		}
		if ((rc = cmd_open_db(g, &rs.db)) != 0)
			goto out;
		if (db_runs_reap(rs.db, &reaped) < 0) {
			rc = EX_SOFTWARE;
			goto out;
		}
		if ((rc = find_resume(&rs)) != 0) {
			if (rc < 0)
				rc = 0;
			goto out;
		}
		if (check_budget(&rs) < 0) {
			rc = EX_USAGE;
			goto out;
		}
	}
	if ((rc = open_device(&rs)) != 0)
		goto out;
	if (!rs.db) {
		if ((rc = cmd_open_db(g, &rs.db)) != 0)
			goto out;
		/* The next writer records what readers could only derive. */
		if (db_runs_reap(rs.db, &reaped) < 0) {
			rc = EX_SOFTWARE;
			goto out;
		}
		if (reaped && g->verbosity > 0)
			printf("%lld run%s whose process died recorded as interrupted\n", reaped,
			       reaped == 1 ? "" : "s");
	}
	cache_keep(&rs, limit);
	if (pipeline_init(&p, &rs.cfg, rs.db, rs.run_id, g->cache_dir, rs.o.jobs) < 0) {
		rc = EX_CANTCREAT;
		goto out;
	}
	p.verbose = g->verbosity > 0;
	if (rs.replay)
		pipeline_attach_replay(&p, rs.replay, rs.replay_path, rs.device);
	else if (rs.nworkers &&
	         pipeline_attach_workers(&p, rs.workers, rs.nworkers, rs.device) < 0) {
		rc = EX_SOFTWARE;
		goto out;
	}
	/* Only now, with everything in place, does the run exist. */
	if (!rs.o.resume_given && (rc = create_run(&rs, argc, argv)) != 0)
		goto out;
	p.run_id = rs.run_id;
	pipeline_prefetch_for(&p, rs.strategy);
	install_signals();
	test_signal_init();
	rs.lv.db = rs.db;
	rs.lv.run_id = rs.run_id;
	if (db_run_begin(rs.db, rs.run_id, &rs.lv.before) < 0) {
		rc = EX_SOFTWARE;
		goto fail;
	}
	rs.lv.start = rs.lv.last_beat = now_seconds();
	rc = search_loop(&rs, &p, &gens, &sp);
	if (rc > 0)
		goto fail;
	summary(&rs, &p, gens, &sp, now_seconds() - t0);
	end = rc < 0 ? "stopped" : "done";
	if (db_run_end(rs.db, rs.run_id, end, active_seconds(&rs.lv)) < 0) {
		rc = EX_SOFTWARE;
		goto out;
	}
	if (rc < 0) {
		/* To stderr as well when stdout is gone or quiet: this is how to go on. */
		FILE *to = rs.quiet || stop_signal == SIGPIPE ? stderr : stdout;

		fprintf(to, "run %lld stopped; continue it with: tuner%s%s%s%s %s --resume=%lld\n",
		        rs.run_id, g->db_given ? " --db " : "", g->db_given ? g->db_path : "",
		        g->config_given ? " --config " : "", g->config_given ? g->config_path : "",
		        force_strategy ? "sweep" : "run", rs.run_id);
		rc = budget_spent && !stop_signal ? 0 : 128 + stop_signal;
	}
	cache_keep(&rs, limit);
	goto out;
fail:
	if (rs.run_id > 0)
		db_run_end(rs.db, rs.run_id, "failed", active_seconds(&rs.lv));
	if (rc == 0)
		rc = EX_SOFTWARE;
out:
	pipeline_release(&p);
	for (size_t i = 0; i < rs.nworkers; i++)
		worker_stop(rs.workers[i]);
	if (rs.replay)
		db_close(rs.replay);
	if (rs.db)
		db_close(rs.db);
	free(rs.shapes);
	free(rs.strategy);
	free(rs.replay_path);
	config_release(&rs.cfg);
	return rc;
}

/* A run stopped by a signal dies of it once everything is recorded: its parent sees why. */
static int finish(int rc)
{
	if (rc > 128 && stop_signal) {
		fflush(stdout);
		fflush(stderr);
		signal(stop_signal, SIG_DFL);
		raise(stop_signal);
	}
	return rc;
}

int cmd_run(int argc, char **argv, const struct globals *g)
{
	return finish(run_main(argc, argv, g, NULL));
}

int cmd_sweep(int argc, char **argv, const struct globals *g)
{
	return finish(run_main(argc, argv, g, "exhaustive"));
}
