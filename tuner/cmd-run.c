/* tuner run: the search loop: propose, gate, compile, evaluate, record; stop and resume at any
 * moment. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tuner/cmd.h"
#include "tuner/common.h"
#include "tuner/config.h"
#include "tuner/db.h"
#include "tuner/evolve.h"
#include "tuner/pipeline.h"
#include "tuner/template.h"
#include "tuner/worker.h"
#include <jansson.h>
#include <math.h>

/* ------------------------------------------------------------- signals */

static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	if (stop_requested) {
		/* A second signal: leave at once; SQLite's journal keeps the database whole. */
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	stop_requested = 1;
	stop_signal = sig;
}

static void install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* ------------------------------------------------------------ options */

struct run_opts {
	int generations, population, jobs, no_gpu;
	long long seed;
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
			if (cmd_parse_int("--generations", optarg, 1, &v) < 0)
				return -1;
			o->generations = (int)v;
			break;
		case 'p':
			if (cmd_parse_int("--population", optarg, 1, &v) < 0)
				return -1;
			o->population = (int)v;
			break;
		case 's':
			if (cmd_parse_int("--seed", optarg, 0, &o->seed) < 0)
				return -1;
			o->seed_given = 1;
			break;
		case 'j':
			if (cmd_parse_int("--jobs", optarg, 0, &v) < 0)
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
		case 'h':
			fputs(cmd_find("run")->usage, stdout);
			exit(0);
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

struct progress {
	int tty;
	double start;
	int generation, generations;
	size_t done, queued;
	double best;
	const struct pipeline *p;
};

static void rejections(struct strbuf *sb, const struct pipeline_stats *st)
{
	int g;

	for (g = 0; g < GATE_COUNT; g++)
		if (st->gates[g])
			sb_addf(sb, "%s%s %lld", sb->len ? ", " : "", gate_name((enum gate)g),
			        st->gates[g]);
	if (st->outcomes[REJECT_UNMEASURED])
		sb_addf(sb, "%sunmeasured %lld", sb->len ? ", " : "",
		        st->outcomes[REJECT_UNMEASURED]);
	if (!sb->len)
		sb_adds(sb, "none");
}

/* On a TTY: one status line, redrawn after each candidate. */
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
	if (ev->ranked && ev->m.fitness > pr->best)
		pr->best = ev->m.fitness;
	if (!pr->tty)
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

/* After each generation: one plain line (the TTY line is cleared first). */
static void progress_generation(struct progress *pr, size_t n, size_t ok, double secs)
{
	const struct pipeline_stats *st = &pr->p->st;
	struct strbuf sb = STRBUF_INIT;

	rejections(&sb, st);
	if (pr->tty)
		fprintf(stderr, "\r\033[K");
	printf("generation %d/%d: %zu candidates, %zu passed; rejected so far: %s; ",
	       pr->generation + 1, pr->generations, n, ok, sb.buf);
	if (pr->best > 0)
		printf("best x%.3f; ", pr->best);
	printf("%.1f s\n", secs);
	fflush(stdout);
	sb_release(&sb);
}

/* ------------------------------------------------------------- the run */

static char *shapes_json(const struct config *cfg)
{
	const struct problem *pr = cfg->fam.problem;
	json_t *arr = json_array();
	size_t i, d;
	char *s;

	for (i = 0; i < cfg->nshapes; i++) {
		json_t *o = json_object();

		json_object_set_new(o, "name", json_string(cfg->shapes[i].name));
		for (d = 0; d < pr->ndims; d++)
			json_object_set_new(o, pr->dims[d], json_integer(cfg->shapes[i].dims[d]));
		json_array_append_new(arr, o);
	}
	s = json_dumps(arr, JSON_COMPACT);
	json_decref(arr);
	return s;
}

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
static int open_replay(const char *path, const struct config *cfg, const char *shapes,
                       struct db **out, char *device, size_t len)
{
	long long run_id;
	int r;

	if (access(path, R_OK) < 0) {
		error("cannot read the recording '%s': %s", path, strerror(errno));
		return EX_NOINPUT;
	}
	if (db_open_readonly(path, out) < 0)
		return EX_DATAERR;
	r = db_recording_find(*out, cfg->fam.source_hash, cfg->arch.name, shapes, &run_id, device,
	                      len);
	if (r < 0)
		return EX_DATAERR;
	if (!r) {
		error(
		    "'%s' holds no GPU run of %s (template %.12s) on %s with this config's shapes",
		    path, cfg->fam.name, cfg->fam.source_hash, cfg->arch.name);
		return EX_DATAERR;
	}
	return 0;
}

struct run_state {
	struct run_opts o;
	struct config cfg;
	int have_cfg;
	struct db *db, *replay;
	struct worker *worker;
	long long run_id;
	char device[128], driver[64], nvrtc[32];
	char *strategy;
	char *replay_path;
	unsigned long long seed;
	int generations, population;
	char *shapes;
};

/* --resume: the run and the settings it was started with. 0, -1 (nothing to do) or an exit code. */
static int find_resume(struct run_state *rs)
{
	struct db_run r;
	long long id;
	int rc = 0;

	if (*rs->o.resume) {
		char *end;

		id = strtoll(rs->o.resume, &end, 10);
		if (*end || id <= 0) {
			error("--resume needs a run id, got '%s'", rs->o.resume);
			return EX_USAGE;
		}
	} else if (db_run_latest(rs->db, &id) < 0) {
		return EX_DATAERR;
	}
	if (db_run_get(rs->db, id, &r) < 0)
		return EX_DATAERR;
	if (!strcmp(r.status, "done")) {
		printf("run %lld is done: nothing to resume (see 'tuner top --run %lld')\n", id,
		       id);
		rc = -1;
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
		printf("resuming run %lld (%s), %d generations\n", id, r.status, rs->generations);
	}
	db_run_release(&r);
	return rc;
}

static int create_run(struct run_state *rs, int argc, char **argv, const struct globals *g)
{
	struct run_info ri;
	char *cmd = command_line(argc, argv);
	int rc;

	memset(&ri, 0, sizeof(ri));
	ri.config_path = g->config_path;
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
	ri.gpu = rs->worker || rs->replay;
	ri.replay_of = rs->replay_path;
	rc = db_run_create(rs->db, &ri, &rs->run_id);
	free(cmd);
	if (rc < 0)
		return EX_SOFTWARE;
	printf("run %lld: %s on %s (%s), %zu shapes, strategy %s, seed %llu\n", rs->run_id,
	       rs->cfg.fam.name, rs->cfg.arch.name, rs->device, rs->cfg.nshapes, rs->strategy,
	       rs->seed);
	return 0;
}

/* Where measurements come from: the replay, the GPU, or nowhere (one line says why). */
static int open_device(struct run_state *rs)
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
		rc = open_replay(rs->replay_path, &rs->cfg, rs->shapes, &rs->replay, rs->device,
		                 sizeof(rs->device));
		if (rc)
			return rc;
		printf("replaying the measurements of '%s' (%s): nothing runs on a GPU\n",
		       rs->replay_path, rs->device);
		return 0;
	}
	if (rs->o.no_gpu) {
		printf("--no-gpu: gating and compiling only; nothing will be timed\n");
		return 0;
	}
	if (worker_start(&rs->worker, why, sizeof(why)) < 0) {
		rs->worker = NULL;
		printf("no GPU (%s): gating and compiling only; nothing will be timed\n", why);
		return 0;
	}
	worker_device(rs->worker, rs->device, sizeof(rs->device), rs->driver, sizeof(rs->driver),
	              NULL, NULL);
	return 0;
}

/* The elite as the search holds it, best first, stored for this generation. */
static int store_elite(struct run_state *rs, struct search *s, int gen)
{
	const struct member *el[64];
	long long ids[64];
	double fit[64];
	size_t n = search_elite(s, el, ARRAY_SIZE(el)), i;

	for (i = 0; i < n; i++) {
		ids[i] = el[i]->id;
		fit[i] = el[i]->fitness;
	}
	return db_elite_store(rs->db, rs->run_id, gen, ids, fit, n);
}

/* The dynamic alignment gate for a candidate about to enter the elite (sanitize: elite). */
static int sanitize_if_admitted(struct run_state *rs, struct pipeline *p, struct search *s, int gen,
                                struct evaluation *ev)
{
	if (!rs->worker || rs->cfg.sanitize != SANITIZE_ELITE || !ev->ranked || ev->reused ||
	    !search_admits(s, &ev->va, &ev->m))
		return 0;
	return pipeline_sanitize(p, gen, ev);
}

static void summary(const struct run_state *rs, const struct pipeline *p, int gens, double secs)
{
	const struct pipeline_stats *st = &p->st;
	struct strbuf sb = STRBUF_INIT;

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
		printf("GPU: %lld variants checked and timed in %.1f s (%.2f s each)\n",
		       st->measured, st->wall_gpu, st->wall_gpu / (double)st->measured);
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

static int search_loop(struct run_state *rs, struct pipeline *p, int *gens_done)
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
	pr.start = now_seconds();
	pr.generations = rs->generations;
	pr.p = p;
	p->progress = progress_tick;
	p->progress_ctx = &pr; /* cppcheck-suppress autoVariables ; cleared before return */
	*gens_done = 0;
	for (gen = 0; gen < rs->generations && !rc; gen++) {
		const struct member *pool[64];
		size_t n, done, i, npool, ok = 0;
		double t0 = now_seconds();

		/* parents are indices into the pool at proposal time */
		npool = search_pool(s, pool, ARRAY_SIZE(pool));
		n = search_propose(s, gen, cands, (size_t)rs->population, NULL, NULL);
		if (n == 0) {
			printf("the space is exhausted: every configuration has been proposed\n");
			break;
		}
		pr.generation = gen;
		pr.done = 0;
		pr.queued = n;
		if (pipeline_evaluate(p, gen, cands, n, evs, &done, &stop_requested) < 0) {
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
			if (sanitize_if_admitted(rs, p, s, gen, ev) < 0) {
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
			if (pr.tty)
				fprintf(stderr, "\r\033[K");
			printf("stopped by %s in generation %d after %zu of %zu candidates\n",
			       stop_signal == SIGTERM ? "SIGTERM" : "SIGINT", gen + 1, done, n);
			rc = -1;
			break;
		}
		*gens_done = gen + 1;
		progress_generation(&pr, n, ok, now_seconds() - t0);
		if (gen == 0 && (rs->worker || rs->replay) && !p->have_baseline)
			warning("the baseline has no timing (%s): nothing can be ranked",
			        evs[0].outcome == VARIANT_OK ? "not measured" : evs[0].reason);
	}
	p->progress = NULL;
	p->progress_ctx = NULL;
	search_free(s);
	free(cands);
	free(evs);
	return rc;
}

static int run_main(int argc, char **argv, const struct globals *g, const char *force_strategy)
{
	struct run_state rs;
	struct pipeline p;
	char *cache;
	int rc, gens = 0;
	double t0 = now_seconds();

	memset(&rs, 0, sizeof(rs));
	memset(&p, 0, sizeof(p));
	if (parse_run_opts(argc, argv, &rs.o) < 0) {
		fputs(cmd_find("run")->usage, stderr);
		return EX_USAGE;
	}
	if (force_strategy)
		rs.o.strategy = force_strategy;
	if (config_load(g->config_path, &rs.cfg) < 0) {
		config_release(&rs.cfg);
		return EX_CONFIG;
	}
	rs.seed = rs.o.seed_given ? (unsigned long long)rs.o.seed : rs.cfg.seed;
	rs.generations = rs.o.generations > 0 ? rs.o.generations : rs.cfg.generations;
	rs.population = rs.o.population > 0 ? rs.o.population : rs.cfg.population;
	rs.strategy = xstrdup(rs.o.strategy ? rs.o.strategy : rs.cfg.strategy);
	if (force_strategy && rs.o.generations <= 0) {
		/* a sweep goes on until the space is exhausted */
		unsigned long long size = space_size(&rs.cfg.fam);

		rs.generations = (int)((size + (unsigned long long)rs.population - 1) /
		                       (unsigned long long)rs.population) +
		                 1;
	}
	rs.shapes = shapes_json(&rs.cfg);
	rs.replay_path = rs.o.replay ? xstrdup(rs.o.replay) : NULL;
	if (compile_nvrtc_version(rs.nvrtc, sizeof(rs.nvrtc)) < 0)
		snprintf(rs.nvrtc, sizeof(rs.nvrtc), "unknown");
	if (rs.o.resume_given && access(g->db_path, F_OK) < 0) {
		error("no database '%s' to resume from", g->db_path);
		rc = EX_NOINPUT;
		goto out;
	}
	if (db_open(g->db_path, &rs.db) < 0) {
		rc = EX_CANTCREAT;
		goto out;
	}
	if (rs.o.resume_given && (rc = find_resume(&rs)) != 0) {
		if (rc < 0)
			rc = 0;
		goto out;
	}
	if ((rc = open_device(&rs)) != 0)
		goto out;
	if (!rs.o.resume_given && (rc = create_run(&rs, argc, argv, g)) != 0)
		goto out;
	cache = cmd_cache_dir(g);
	rc = pipeline_init(&p, &rs.cfg, rs.db, rs.run_id, cache, rs.o.jobs);
	free(cache);
	if (rc < 0) {
		rc = EX_SOFTWARE;
		goto fail;
	}
	if (rs.replay)
		pipeline_attach_replay(&p, rs.replay, rs.replay_path, rs.device);
	else if (rs.worker && pipeline_attach_worker(&p, rs.worker, rs.device) < 0) {
		rc = EX_SOFTWARE;
		goto fail;
	}
	install_signals();
	test_signal_init();
	db_run_set_status(rs.db, rs.run_id, "running");
	rc = search_loop(&rs, &p, &gens);
	if (rc > 0)
		goto fail;
	summary(&rs, &p, gens, now_seconds() - t0);
	if (rc < 0) {
		db_run_set_status(rs.db, rs.run_id, "stopped");
		printf("run %lld stopped; continue it with: tuner%s%s%s%s run --resume=%lld\n",
		       rs.run_id, strcmp(g->db_path, "tuner.db") ? " --db " : "",
		       strcmp(g->db_path, "tuner.db") ? g->db_path : "",
		       g->config_given ? " --config " : "", g->config_given ? g->config_path : "",
		       rs.run_id);
		rc = 0;
	} else {
		rc = db_run_set_status(rs.db, rs.run_id, "done") < 0 ? EX_SOFTWARE : 0;
	}
	goto out;
fail:
	if (rs.run_id > 0)
		db_run_set_status(rs.db, rs.run_id, "failed");
	if (rc == 0)
		rc = EX_SOFTWARE;
out:
	pipeline_release(&p);
	worker_stop(rs.worker);
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

int cmd_run(int argc, char **argv, const struct globals *g)
{
	return run_main(argc, argv, g, NULL);
}

int cmd_sweep(int argc, char **argv, const struct globals *g)
{
	return run_main(argc, argv, g, "exhaustive");
}
