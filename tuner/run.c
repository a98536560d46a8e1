/* A run as a library call: open it from a config, step it alone or through claims shared by many.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "tuner/checks.h"
#include "tuner/common.h"
#include "tuner/compile.h"
#include "tuner/config.h"
#include "tuner/db.h"
#include "tuner/evolve.h"
#include "tuner/pipeline.h"
#include "tuner/roots.h"
#include "tuner/run.h"
#include "tuner/template.h"
#include "tuner/worker.h"

#define POOL_MAX  64
#define ELITE_MAX 64
/* Seconds between heartbeats: what tells a reader on another host that the run is alive. */
#define HEARTBEAT_SECONDS 10.0

struct run {
	struct db *db;
	struct config cfg;
	int have_cfg;
	struct db *replay;
	struct worker *worker; /* not owned */
	struct pipeline p;
	int have_pipeline;
	struct search *s;
	long long run_id;
	char device[128], driver[64], nvrtc[32];
	char *strategy, *replay_path, *shapes;
	unsigned long long seed;
	int generations, population;
	/* the generation in hand: proposed, being evaluated, not yet observed */
	int gen, proposed;
	size_t n;
	struct candidate *cands;
	struct evaluation *evs;
	long long *parent_a, *parent_b; /* variant ids at proposal time, 0: none */
	int baseline_known;             /* generation 0's first candidate has its verdict */
	int broken;                     /* an observation stopped half-way: the search is lost */
	int searched;                   /* every generation observed, or the space exhausted */
	int done;                       /* and the final elite's gates passed */
	/* liveness, while this process runs it (run_begin) */
	double began, last_beat, active_before;
};

/* ------------------------------------------------------------ options */

int run_needs_gpu(const struct run_request *rq)
{
	return !rq->replay && !rq->no_gpu;
}

char *run_request_json(const struct run_request *rq)
{
	json_t *o = json_object();
	char *s;

	if (rq->generations > 0)
		json_object_set_new(o, "generations", json_integer(rq->generations));
	if (rq->population > 0)
		json_object_set_new(o, "population", json_integer(rq->population));
	if (rq->seed_given) /* as text: JSON numbers stop short of 2^64 */
		json_object_set_new(o, "seed", json_sprintf("%llu", rq->seed));
	if (rq->strategy)
		json_object_set_new(o, "strategy", json_string(rq->strategy));
	if (rq->replay)
		json_object_set_new(o, "replay", json_string(rq->replay));
	if (rq->no_gpu)
		json_object_set_new(o, "no_gpu", json_true());
	if (rq->time_s > 0)
		json_object_set_new(o, "time", json_real(rq->time_s));
	if (rq->evals > 0)
		json_object_set_new(o, "evals", json_integer(rq->evals));
	s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return s;
}

int run_request_from_json(const char *json, struct run_request *rq, void **doc)
{
	json_error_t err;
	json_t *o = json_loads(json, 0, &err), *v;
	const char *key, *s;
	char *end;

	*doc = o;
	if (!o || !json_is_object(o))
		return error("job options are not a JSON object: %s", o ? "" : err.text);
	json_object_foreach(o, key, v)
	{
		if (!strcmp(key, "generations") && json_is_integer(v) && json_integer_value(v) > 0)
			rq->generations = (int)json_integer_value(v);
		else if (!strcmp(key, "population") && json_is_integer(v) &&
		         json_integer_value(v) > 0)
			rq->population = (int)json_integer_value(v);
		else if (!strcmp(key, "seed") && (s = json_string_value(v)) && *s) {
			errno = 0;
			rq->seed = strtoull(s, &end, 10);
			if (*end || errno)
				return error("job options: bad seed '%s'", s);
			rq->seed_given = 1;
		} else if (!strcmp(key, "strategy") && json_is_string(v))
			rq->strategy = json_string_value(v);
		else if (!strcmp(key, "replay") && json_is_string(v))
			rq->replay = json_string_value(v);
		else if (!strcmp(key, "no_gpu") && json_is_boolean(v))
			rq->no_gpu = json_is_true(v);
		else if (!strcmp(key, "time") && json_is_number(v) && json_number_value(v) > 0)
			rq->time_s = json_number_value(v);
		else if (!strcmp(key, "evals") && json_is_integer(v) && json_integer_value(v) > 0)
			rq->evals = json_integer_value(v);
		else
			return error("job options: unknown or malformed option '%s'", key);
	}
	return 0;
}

void run_request_json_free(void *doc)
{
	json_decref(doc);
}

/* ------------------------------------------------------------ opening */

char *run_shapes_json(const struct config *cfg)
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

int run_open_replay(const char *path, const struct config *cfg, const char *shapes, struct db **out,
                    char *device, size_t len)
{
	long long run_id;
	int f;

	if (access(path, R_OK) < 0) {
		error("cannot read the recording '%s': %s", path, strerror(errno));
		return EX_NOINPUT;
	}
	if (db_open_readonly(path, out) < 0)
		return EX_DATAERR;
	f = db_recording_find(*out, cfg->fam.source_hash, cfg->arch.name, shapes, &run_id, device,
	                      len);
	if (f < 0)
		return EX_DATAERR;
	if (!f) {
		error(
		    "'%s' holds no GPU run of %s (template %.12s) on %s with this config's shapes",
		    path, cfg->fam.name, cfg->fam.source_hash, cfg->arch.name);
		return EX_DATAERR;
	}
	return 0;
}

/* The recording and its device, read from the roots when confined. */
static int open_replay(struct run *r, const struct run_request *rq)
{
	if (rq->roots && roots_check(rq->roots, "recording", r->replay_path, NULL) < 0)
		return EX_CONFIG;
	return run_open_replay(r->replay_path, &r->cfg, r->shapes, &r->replay, r->device,
	                       sizeof(r->device));
}

/* The config, read from the roots when confined, and as the job was submitted when asked. */
static int load_config(struct run *r, const struct run_request *rq)
{
	char *inc;

	if (rq->roots && roots_check(rq->roots, "config", rq->config_path, NULL) < 0)
		return EX_CONFIG;
	if (config_load(rq->config_path, &r->cfg) < 0)
		return EX_CONFIG;
	r->have_cfg = 1;
	if (checks_exprs(&r->cfg) < 0)
		return EX_CONFIG;
	if (rq->config_text && strcmp(rq->config_text, r->cfg.text)) {
		error("config '%s' has changed since the job was submitted; submit it again",
		      rq->config_path);
		return EX_CONFIG;
	}
	if (!rq->roots)
		return 0;
	/* NVRTC reads the family's includes itself: they must lie in the roots too */
	inc = template_include_dir(&r->cfg.fam);
	if (inc && roots_check(rq->roots, "include directory", inc, NULL) < 0) {
		free(inc);
		return EX_CONFIG;
	}
	free(inc);
	return 0;
}

/* An existing run: its settings, once the config is the one it was started with. */
static int adopt_run(struct run *r, long long run_id)
{
	struct db_run dr;
	int rc = 0;

	if (db_run_get(r->db, run_id, &dr) < 0)
		return EX_DATAERR;
	if (!dr.config_text || strcmp(dr.config_text, r->cfg.text) ||
	    strcmp(dr.template_hash, r->cfg.fam.source_hash) || strcmp(dr.shapes, r->shapes)) {
		error("run %lld was started with another config or template than '%s' holds now",
		      run_id, r->cfg.path);
		rc = EX_CONFIG;
	} else {
		r->run_id = run_id;
		r->seed = dr.seed;
		r->generations = dr.generations;
		r->population = dr.population;
		free(r->strategy);
		r->strategy = xstrdup(dr.strategy);
		free(r->replay_path);
		r->replay_path = dr.replay_of ? xstrdup(dr.replay_of) : NULL;
		if (!dr.replay_of && dr.gpu && !r->worker) {
			error("run %lld measures on %s: it needs a GPU", run_id, dr.device);
			rc = EX_UNAVAILABLE;
		}
		snprintf(r->device, sizeof(r->device), "%s", dr.device);
	}
	db_run_release(&dr);
	return rc;
}

static int create_run(struct run *r, const struct run_request *rq)
{
	struct run_info ri;

	memset(&ri, 0, sizeof(ri));
	ri.config_path = rq->config_path;
	ri.config_text = r->cfg.text;
	ri.template_name = r->cfg.fam.name;
	ri.template_hash = r->cfg.fam.source_hash;
	ri.arch = r->cfg.arch.name;
	ri.device = r->device;
	ri.driver = r->driver;
	ri.nvrtc = r->nvrtc;
	ri.strategy = r->strategy;
	ri.shapes = r->shapes;
	ri.command = rq->command ? rq->command : "tuner";
	ri.seed = r->seed;
	ri.generations = r->generations;
	ri.population = r->population;
	ri.gpu = r->worker || r->replay;
	ri.replay_of = r->replay_path;
	return db_run_create(r->db, &ri, &r->run_id) < 0 ? EX_SOFTWARE : 0;
}

/* A landscape (tuner import) is recorded measurements, with no kernel to compile. */
static int landscape_refused(const struct run *r)
{
	error("%s is a recorded landscape with nothing to compile: search it with --replay",
	      r->cfg.fam.name);
	return EX_USAGE;
}

/*
 * Where measurements come from: the recording, the worker's GPU, or nowhere.
 * An adopted run keeps its device (r->device): the worker's must be the same.
 */
static int open_device(struct run *r, const struct run_request *rq, long long run_id)
{
	char wanted[sizeof(r->device)];

	snprintf(wanted, sizeof(wanted), "%s", run_id > 0 ? r->device : "");
	snprintf(r->device, sizeof(r->device), "none");
	snprintf(r->driver, sizeof(r->driver), "none");
	if (!r->replay_path && !r->cfg.fam.source)
		return landscape_refused(r);
	if (r->replay_path) {
		r->worker = NULL;
		return open_replay(r, rq);
	}
	if (!r->worker || (run_id > 0 ? !strcmp(wanted, "none") : rq->no_gpu)) {
		r->worker = NULL; /* a run that times nothing */
		return 0;
	}
	worker_device(r->worker, r->device, sizeof(r->device), r->driver, sizeof(r->driver), NULL,
	              NULL);
	if (run_id > 0 && strcmp(wanted, r->device)) {
		error("run %lld measures on %s, not on this %s", run_id, wanted, r->device);
		return EX_UNAVAILABLE;
	}
	return 0;
}

int run_check(const struct run_request *rq, char **config_text)
{
	struct run *r = xcalloc(1, sizeof(*r));
	struct search *s;
	int rc;

	*config_text = NULL;
	rc = load_config(r, rq);
	if (!rc) {
		r->shapes = run_shapes_json(&r->cfg);
		r->replay_path = rq->replay ? xstrdup(rq->replay) : NULL;
		if (r->replay_path)
			rc = open_replay(r, rq);
		else if (!r->cfg.fam.source)
			rc = landscape_refused(r);
	}
	if (!rc) {
		s = search_new(&r->cfg, rq->strategy ? rq->strategy : r->cfg.strategy, 0);
		if (!s)
			rc = EX_USAGE;
		search_free(s);
	}
	if (!rc)
		*config_text = xstrdup(r->cfg.text);
	run_close(r);
	return rc;
}

/* Whether a ranked newcomer would enter the elite, as the search stands before the generation. */
static int admits(void *ctx, const struct evaluation *ev)
{
	return search_admits(ctx, &ev->va, &ev->m);
}

int run_open(struct db *db, const struct run_request *rq, long long run_id, struct worker *w,
             struct run **out)
{
	struct run *r = xcalloc(1, sizeof(*r));
	int rc;

	*out = NULL;
	r->db = db;
	r->worker = w;
	if ((rc = load_config(r, rq)) != 0)
		goto fail;
	r->seed = rq->seed_given ? rq->seed : r->cfg.seed;
	r->generations = rq->generations > 0 ? rq->generations : r->cfg.generations;
	r->population = rq->population > 0 ? rq->population : r->cfg.population;
	r->strategy = xstrdup(rq->strategy ? rq->strategy : r->cfg.strategy);
	r->replay_path = rq->replay ? xstrdup(rq->replay) : NULL;
	r->shapes = run_shapes_json(&r->cfg);
	if (compile_nvrtc_version(r->nvrtc, sizeof(r->nvrtc)) < 0)
		snprintf(r->nvrtc, sizeof(r->nvrtc), "unknown");
	snprintf(r->device, sizeof(r->device), "none");
	if (run_id > 0 && (rc = adopt_run(r, run_id)) != 0)
		goto fail;
	if ((rc = open_device(r, rq, run_id)) != 0)
		goto fail;
	if (run_id <= 0 && (rc = create_run(r, rq)) != 0)
		goto fail;
	rc = pipeline_init(&r->p, &r->cfg, db, r->run_id, rq->cache_dir, rq->jobs);
	if (rc < 0) {
		rc = EX_SOFTWARE;
		goto fail;
	}
	r->have_pipeline = 1;
	if (r->replay)
		pipeline_attach_replay(&r->p, r->replay, r->replay_path, r->device);
	else if (r->worker && pipeline_attach_worker(&r->p, r->worker, r->device) < 0) {
		rc = EX_SOFTWARE;
		goto fail;
	}
	r->s = search_new(&r->cfg, r->strategy, r->seed);
	if (!r->s) {
		rc = EX_USAGE;
		goto fail;
	}
	r->p.admits = admits;
	r->p.admits_ctx = r->s;
	pipeline_prefetch_for(&r->p, r->strategy);
	r->cands = xcalloc((size_t)r->population, sizeof(*r->cands));
	r->evs = xcalloc((size_t)r->population, sizeof(*r->evs));
	r->parent_a = xcalloc((size_t)r->population, sizeof(*r->parent_a));
	r->parent_b = xcalloc((size_t)r->population, sizeof(*r->parent_b));
	*out = r;
	return 0;
fail:
	run_close(r);
	return rc ? rc : EX_SOFTWARE;
}

void run_close(struct run *r)
{
	if (!r)
		return;
	if (r->have_pipeline)
		pipeline_release(&r->p);
	search_free(r->s);
	if (r->replay)
		db_close(r->replay);
	if (r->have_cfg)
		config_release(&r->cfg);
	free(r->strategy);
	free(r->replay_path);
	free(r->shapes);
	free(r->cands);
	free(r->evs);
	free(r->parent_a);
	free(r->parent_b);
	free(r);
}

long long run_id(const struct run *r)
{
	return r->run_id;
}

const char *run_device(const struct run *r)
{
	return r->device;
}

int run_generations(const struct run *r)
{
	return r->generations;
}

int run_begin(struct run *r)
{
	r->began = now_seconds();
	r->last_beat = r->began;
	return db_run_begin(r->db, r->run_id, &r->active_before);
}

static double active_seconds(const struct run *r)
{
	return r->active_before + (r->began > 0 ? now_seconds() - r->began : 0);
}

void run_heartbeat(struct run *r, int force)
{
	double now = now_seconds();

	if (r->began <= 0 || (!force && now - r->last_beat < HEARTBEAT_SECONDS))
		return;
	r->last_beat = now;
	if (db_run_heartbeat(r->db, r->run_id, active_seconds(r)) < 0)
		warning("run %lld: cannot record its heartbeat", r->run_id);
}

int run_end(struct run *r, const char *status)
{
	if (r->began <= 0)
		return db_run_set_status(r->db, r->run_id, status);
	return db_run_end(r->db, r->run_id, status, active_seconds(r));
}

/* ------------------------------------------------------------ stepping */

static void race_set(struct run *r)
{
	pipeline_race_set(&r->p, search_race_bar(r->s));
}

/* Propose the generation in hand, with its candidates' parents as variant ids. */
static void propose(struct run *r)
{
	const struct member *pool[POOL_MAX];
	size_t npool = search_pool(r->s, pool, ARRAY_SIZE(pool)), i;

	r->n = search_propose(r->s, r->gen, r->cands, (size_t)r->population, NULL, NULL);
	for (i = 0; i < r->n; i++) {
		int a = r->cands[i].parent_a, b = r->cands[i].parent_b;

		r->parent_a[i] = a >= 0 && (size_t)a < npool ? pool[a]->id : 0;
		r->parent_b[i] = b >= 0 && (size_t)b < npool ? pool[b]->id : 0;
	}
	r->proposed = 1;
}

static int store_elite(struct run *r, double *best)
{
	const struct member *el[ELITE_MAX];
	size_t n = search_elite(r->s, el, ARRAY_SIZE(el));

	/* report order keeps the best measured first */
	*best = n ? el[0]->fitness : NAN;
	return run_elite_store(r->db, r->run_id, r->gen, el, n, search_margin(r->s));
}

/*
 * Observe the generation's verdicts in candidate order: what the search
 * learns, the population, the elite. Every candidate has its verdict in the
 * database (alone: this process just reached them). The dynamic alignment
 * gate was decided in the evaluation, against the search as it stood before
 * the generation (pipeline's admits), so it does not depend on who evaluated
 * what either. RUN_MORE, RUN_STOPPED or -1.
 */
static int observe(struct run *r, size_t done, struct run_progress *pg)
{
	size_t i, ok = 0;

	for (i = 0; i < done; i++) {
		struct evaluation *ev = &r->evs[i];

		if (db_population_record(r->db, r->run_id, r->gen, ev->variant_id,
		                         evolve_origin_name(r->cands[i].origin), r->parent_a[i],
		                         r->parent_b[i]) < 0)
			return -1;
		search_observe(r->s, &ev->va, ev->ranked ? &ev->m : NULL);
		ok += ev->outcome == VARIANT_OK;
	}
	if (store_elite(r, &pg->best) < 0)
		return -1;
	if (done < r->n) {
		r->broken = 1; /* observed in part: this search is no longer the run's */
		return RUN_STOPPED;
	}
	pg->observed = 1;
	pg->generation = r->gen;
	pg->candidates = r->n;
	pg->passed = ok;
	r->gen++;
	r->proposed = 0;
	return RUN_MORE;
}

/*
 * compute-sanitizer's gate on the final elite (tools: final), as tuner run
 * does it: each member in turn until the elite is full of verified ones, the
 * rejected recorded in the last generation, the verified elite stored as a
 * generation of its own.
 */
static int verify_final(struct run *r)
{
	size_t checked, rejected;

	return run_final_elite(r->db, r->run_id, r->gen, &r->p, r->s, (size_t)r->cfg.elite, NULL,
	                       NULL, NULL, &checked, &rejected) < 0
	           ? -1
	           : 0;
}

/*
 * After the search: the final elite's gates, once per run (claimed by one GPU,
 * as the generation after the last), then done.
 */
static int final_step(struct run *r, const struct run_claimer *c)
{
	static const char *const what[] = {"final elite"};
	int got;

	if (!r->worker || r->cfg.tools != TOOLS_FINAL || r->gen == 0) {
		r->done = 1;
		return RUN_DONE;
	}
	if (!c) {
		if (verify_final(r) < 0)
			return -1;
		r->done = 1;
		return RUN_DONE;
	}
	if (db_claims_offer(r->db, r->run_id, r->gen, 0, what, 1) < 0)
		return -1;
	got = db_claim_take_seq(r->db, r->run_id, r->gen, 0, c->server_id, c->gpu);
	if (got < 0)
		return -1;
	if (got) {
		int seq = 0;

		if (verify_final(r) < 0 || db_claims_done(r->db, r->run_id, r->gen, &seq, 1) < 0)
			return -1;
	} else {
		got = db_claim_is_done(r->db, r->run_id, r->gen, 0);
		if (got <= 0)
			return got < 0 ? -1 : RUN_WAIT;
	}
	r->done = 1;
	return RUN_DONE;
}

/* Alone: evaluate the whole generation, then observe what was reached. */
static int step_alone(struct run *r, stop_flag *stop, struct run_progress *pg)
{
	long long before = r->p.st.evaluated - r->p.st.reused;
	size_t done;

	if (pipeline_evaluate(&r->p, r->gen, r->cands, r->n, r->evs, &done, stop) < 0)
		return -1;
	pg->evaluated = (size_t)(r->p.st.evaluated - r->p.st.reused - before);
	return observe(r, done, pg);
}

/* Whether candidate i of the generation in hand has its verdict in this run: 1, 0, -1. */
static int judged(struct run *r, size_t i)
{
	struct db_eval de;
	char hash[HASH_HEX_LEN];
	long long vid;
	int f;

	template_variant_hash(&r->cfg, &r->cands[i].va, hash);
	f = db_variant_find(r->db, hash, &vid);
	if (f <= 0)
		return f;
	f = db_eval_get(r->db, r->run_id, vid, &de);
	if (f == 1)
		db_eval_release(&de);
	return f;
}

/* Whether generation 0's first candidate, the baseline, has its verdict in this run. */
static int baseline_judged(struct run *r)
{
	int f;

	if (r->baseline_known || r->gen > 0)
		return 1;
	f = judged(r, 0);
	if (f == 1)
		r->baseline_known = 1;
	return f;
}

/*
 * Evaluate the claimed candidates seqs[0..k) of the generation in hand: their
 * verdicts committed, their claims done (or returned when stopped).
 */
static int evaluate_claimed(struct run *r, const struct run_claimer *c, const int *seqs, size_t k,
                            stop_flag *stop, struct run_progress *pg)
{
	struct candidate *sub = xcalloc(k, sizeof(*sub));
	struct evaluation *evs = xcalloc(k, sizeof(*evs));
	long long before = r->p.st.evaluated - r->p.st.reused;
	size_t i, done = 0;
	int rc = 0;

	for (i = 0; i < k; i++)
		sub[i] = r->cands[seqs[i]];
	/* speedups need the baseline's timing: this GPU learns it from the database */
	if (r->gen == 0 && seqs[0] != 0 && !r->p.have_baseline)
		rc = pipeline_evaluate(&r->p, 0, &r->cands[0], 1, &r->evs[0], &done, stop);
	if (!rc)
		rc = pipeline_evaluate(&r->p, r->gen, sub, k, evs, &done, stop);
	if (!rc)
		pg->evaluated = (size_t)(r->p.st.evaluated - r->p.st.reused - before);
	if (!rc && db_claims_done(r->db, r->run_id, r->gen, seqs, done) < 0)
		rc = -1;
	if (db_claims_return(r->db, r->run_id, r->gen, seqs + done, k - done) < 0)
		rc = -1;
	free(sub);
	free(evs);
	if (rc < 0)
		return -1;
	return done < k ? RUN_STOPPED : RUN_MORE;
}

/* Shared: claim a batch and evaluate it, or observe the generation once all is judged. */
static int step_claimed(struct run *r, const struct run_claimer *c, stop_flag *stop,
                        struct run_progress *pg)
{
	long long offered, done, held;
	size_t i, k, max = c->batch ? c->batch : 1;
	int *seqs, b, rc;

	b = baseline_judged(r);
	if (b < 0)
		return -1;
	if (!b) {
		/* nothing is ranked before the baseline is timed: it goes first, alone */
		b = db_claim_take_seq(r->db, r->run_id, 0, 0, c->server_id, c->gpu);
		if (b < 0)
			return -1;
		if (!b)
			return RUN_WAIT;
		seqs = xcalloc(1, sizeof(*seqs));
		rc = evaluate_claimed(r, c, seqs, 1, stop, pg);
		free(seqs);
		return rc;
	}
	seqs = xcalloc(max, sizeof(*seqs));
	if (db_claims_take(r->db, r->run_id, r->gen, c->server_id, c->gpu, max, seqs, &k) < 0) {
		free(seqs);
		return -1;
	}
	for (i = 0; i < k; i++)
		if (seqs[i] < 0 || (size_t)seqs[i] >= r->n)
			BUG("claim %d of run %lld generation %d: the generation has %zu candidates",
			    seqs[i], r->run_id, r->gen, r->n);
	rc = k ? evaluate_claimed(r, c, seqs, k, stop, pg) : RUN_WAIT;
	free(seqs);
	if (k || rc < 0)
		return rc;
	if (db_claims_state(r->db, r->run_id, r->gen, &offered, &done, &held) < 0)
		return -1;
	if (done < offered)
		return RUN_WAIT;
	/* every verdict is in: observe them all, in order, answered from the database */
	if (pipeline_evaluate(&r->p, r->gen, r->cands, r->n, r->evs, &i, stop) < 0)
		return -1;
	return observe(r, i, pg);
}

int run_step(struct run *r, const struct run_claimer *c, stop_flag *stop, struct run_progress *pg)
{
	const char *const *hashes;
	char(*h)[HASH_HEX_LEN];
	size_t i;
	int rc;

	memset(pg, 0, sizeof(*pg));
	pg->best = NAN;
	if (r->broken)
		BUG("run %lld stepped after an observation stopped half-way", r->run_id);
	if (r->done)
		return RUN_DONE;
	if (r->gen >= r->generations)
		r->searched = 1;
	if (r->searched)
		return final_step(r, c);
	if (!r->proposed) {
		propose(r);
		if (r->n == 0) {
			r->searched = 1; /* the space is exhausted */
			return final_step(r, c);
		}
		/* racing is fixed for the generation, from what the run knows before it */
		race_set(r);
		if (c) {
			/* every server proposes the same: offering them again changes nothing */
			h = xcalloc(r->n, sizeof(*h));
			hashes = xcalloc(r->n, sizeof(*hashes));
			for (i = 0; i < r->n; i++) {
				template_variant_hash(&r->cfg, &r->cands[i].va, h[i]);
				((const char **)hashes)[i] = h[i];
			}
			rc = db_claims_offer(r->db, r->run_id, r->gen, 0, hashes, r->n);
			free((void *)hashes);
			free(h);
			if (rc < 0)
				return -1;
		}
	}
	return c ? step_claimed(r, c, stop, pg) : step_alone(r, stop, pg);
}

int run_settle(struct run *r)
{
	struct run_progress pg;
	stop_flag never = 0;
	size_t k;
	int f = 1, rc;

	if (r->broken)
		BUG("run %lld settled after an observation stopped half-way", r->run_id);
	while (!r->done && r->gen < r->generations) {
		if (!r->proposed) {
			propose(r);
			if (r->n == 0)
				return 0; /* the space is exhausted: every generation is observed */
			race_set(r);
		}
		for (k = 0; k < r->n && (f = judged(r, k)) == 1; k++)
			;
		if (k < r->n && f < 0)
			return -1;
		/* answered from the database, as a resume is: nothing is evaluated again */
		if (pipeline_evaluate(&r->p, r->gen, r->cands, k, r->evs, &k, &never) < 0)
			return -1;
		memset(&pg, 0, sizeof(pg));
		rc = observe(r, k, &pg);
		if (rc != RUN_MORE)
			return rc < 0 ? -1 : 0;
	}
	return 0;
}

/* ------------------------------------------------- pieces tuner run shares */

int run_final_elite(struct db *db, long long run_id, int gen, struct pipeline *p,
                    const struct search *s, size_t k, const stop_flag *stop,
                    void (*told)(void *ctx, const struct evaluation *ev), void *ctx,
                    size_t *checked, size_t *rejected)
{
	const struct member *pool[POOL_MAX], *keep[POOL_MAX];
	size_t n = search_final_candidates(s, pool, ARRAY_SIZE(pool)), next = 0, kept = 0, i;
	struct evaluation *evs = xcalloc(ARRAY_SIZE(pool), sizeof(*evs));
	int rc = 0;

	*checked = *rejected = 0;
	/* the best k side by side, then as many more as were rejected, until k pass */
	while (!rc && !(stop && *stop) && next < n && kept < k) {
		size_t batch = k - kept;

		if (batch > n - next)
			batch = n - next;
		memset(evs, 0, batch * sizeof(*evs));
		for (i = 0; i < batch && !rc; i++) {
			struct evaluation *ev = &evs[i];
			struct db_variant v;

			rc = db_variant_get(db, pool[next + i]->id, &v);
			if (rc)
				break;
			snprintf(ev->hash, sizeof(ev->hash), "%s", v.hash);
			db_variant_release(&v);
			ev->va = pool[next + i]->va;
			ev->variant_id = pool[next + i]->id;
			ev->outcome = VARIANT_OK;
			ev->ranked = ev->timed = 1;
		}
		if (!rc)
			rc = pipeline_tools_gate(p, evs, batch);
		for (i = 0; i < batch && !rc; i++) {
			++*checked;
			if (evs[i].outcome != VARIANT_OK) {
				++*rejected;
				if (told)
					told(ctx, &evs[i]);
				rc = db_eval_record(db, run_id, evs[i].variant_id, gen - 1,
				                    evs[i].outcome, evs[i].reason);
				continue;
			}
			keep[kept++] = pool[next + i];
		}
		next += batch;
	}
	free(evs);
	if (rc < 0)
		return -1;
	if (stop && *stop)
		return 1;
	return run_elite_store(db, run_id, gen, keep, kept, search_margin(s)) < 0 ? -1 : 0;
}

int run_elite_store(struct db *db, long long run_id, int gen, const struct member **m, size_t n,
                    double margin)
{
	long long *ids = xcalloc(n ? n : 1, sizeof(*ids));
	double *fit = xcalloc(n ? n : 1, sizeof(*fit));
	size_t i;
	int rc;

	evolve_report_order(m, n, margin);
	for (i = 0; i < n; i++) {
		ids[i] = m[i]->id;
		fit[i] = m[i]->fitness;
	}
	rc = db_elite_store(db, run_id, gen, ids, fit, n);
	free(ids);
	free(fit);
	return rc;
}
