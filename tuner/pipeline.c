/* The evaluation pipeline: candidates through every gate, the compile pool and the GPU (or a
 * replay). */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/job.h"
#include "tuner/measure.h"
#include "tuner/pipeline.h"
#include "tuner/template.h"
#include "tuner/worker.h"

#define BOOTSTRAP_RESAMPLES 2000

/* Where a candidate stands within one pipeline_evaluate call. */
enum stage { STAGE_DONE, STAGE_COMPILE, STAGE_GPU };

/* ------------------------------------------------------------- lifetime */

static void tools_add(struct pipeline *p, const struct shape *sh, size_t sp)
{
	const struct problem *pb = p->cfg->fam.problem;
	size_t i;

	for (i = 0; i < p->ntools; i++)
		if (!memcmp(p->tools_shape[i]->dims, sh->dims, pb->ndims * sizeof(sh->dims[0])))
			return;
	p->tools_shape[p->ntools] = sh;
	p->tools_spec[p->ntools++] = sp;
}

/* The shapes compute-sanitizer's gate runs on (pipeline.h). */
static void tools_shapes(struct pipeline *p)
{
	const struct config *cfg = p->cfg;
	size_t sp, s;

	for (sp = 0; sp < p->nspecs; sp++) {
		const struct shape *lo = NULL, *hi = NULL;
		double clo = 0, chi = 0;

		for (s = 0; s < cfg->nshapes; s++) {
			double c = job_shape_cost(cfg, &cfg->shapes[s]);

			if (p->shape_spec[s] != sp)
				continue;
			if (!lo || c < clo)
				lo = &cfg->shapes[s], clo = c;
			if (!hi || c > chi)
				hi = &cfg->shapes[s], chi = c;
		}
		if (!hi)
			continue;
		if (chi <= PIPELINE_TOOLS_BUDGET) {
			tools_add(p, hi, sp);
		} else if (job_shrink_shape(cfg, hi, PIPELINE_TOOLS_BUDGET,
		                            &p->tools_derived[p->ntools_derived]) == 0) {
			tools_add(p, &p->tools_derived[p->ntools_derived++], sp);
		}
		if (clo <= PIPELINE_TOOLS_BUDGET || !p->ntools ||
		    p->tools_spec[p->ntools - 1] != sp)
			tools_add(p, lo, sp);
	}
}

int pipeline_init(struct pipeline *p, const struct config *cfg, struct db *db, long long run_id,
                  const char *cache_dir, int jobs)
{
	size_t i;

	memset(p, 0, sizeof(*p));
	p->cfg = cfg;
	p->db = db;
	p->run_id = run_id;
	snprintf(p->device, sizeof(p->device), "none");
	p->pool = compile_pool_new(jobs ? jobs : cfg->jobs, cache_dir);
	if (!p->pool)
		return -1;
	compile_pool_set_timeout(p->pool, cfg->compile_timeout_s);
	p->options = template_options(cfg, 0, &p->noptions);
	p->san_options = template_options(cfg, 1, &p->nsan_options);
	p->options_text = template_options_text(p->options, p->noptions);
	p->nspecs = space_specs(cfg, p->specs, p->shape_spec);
	for (i = 0; i < cfg->nshapes; i++)
		p->shape[p->nshapes++] = &cfg->shapes[i];
	if (cfg->ragged) {
		size_t of[PIPELINE_MAX_SHAPES];

		p->nderived =
		    job_derive_ragged(cfg, p->derived, of, PIPELINE_MAX_SHAPES - cfg->nshapes);
		for (i = 0; i < p->nderived; i++) {
			p->shape_spec[p->nshapes] = p->shape_spec[of[i]];
			p->shape[p->nshapes++] = &p->derived[i];
		}
	}
	for (i = 0; i < p->nshapes; i++)
		job_shape_dims(cfg, p->shape[i], p->shape_dims[i], sizeof(p->shape_dims[i]));
	tools_shapes(p);
	pipeline_race_set(p, 0);
	return 0;
}

static void gen_jobs_release(struct pipeline *p);
static void retired_sweep(struct pipeline *p);
static void pool_wait(struct pipeline *p, struct pjob *want);

void pipeline_release(struct pipeline *p)
{
	gen_jobs_release(p);
	if (p->pool)
		pool_wait(p, NULL); /* what a compile thread still holds */
	retired_sweep(p);
	free(p->retired);
	free(p->pre_keys);
	if (p->pool)
		compile_pool_free(p->pool);
	template_options_free(p->options, p->noptions);
	template_options_free(p->san_options, p->nsan_options);
	free(p->options_text);
	free(p->ref_cubin);
	free(p->support_cubin);
	job_shapes_release(p->derived, p->nderived);
	job_shapes_release(p->tools_derived, p->ntools_derived);
	memset(p, 0, sizeof(*p));
}

/*
 * A compile unit of the pipeline: the pool hands back any finished job, so
 * each is wrapped with what it is for and whether it is done.
 */
enum pjob_kind { PJOB_AUX, PJOB_PLAIN, PJOB_SANITIZE, PJOB_PREFETCH };

struct pjob {
	struct compile_job job; /* first: the pool returns &job */
	enum pjob_kind kind;
	size_t cand, spec;
	int submitted, done, taken;
};

/* Units the pipeline no longer needs, kept until the pool has given back each one. */
struct pjob_batch {
	struct pjob *jobs;
	size_t n;
};

/* A unit the pool gave back: done, and counted. */
static void unit_done(struct pipeline *p, struct pjob *j)
{
	j->done = 1;
	if (j->kind == PJOB_PREFETCH) {
		if (!j->job.result.cached) {
			p->st.prefetched++;
			p->st.prefetch_seconds += j->job.result.seconds;
		}
	} else if (j->kind != PJOB_AUX) {
		p->st.builds++;
		if (j->job.result.cached)
			p->st.builds_cached++;
		else
			p->st.compile_seconds += j->job.result.seconds;
	}
}

/* Take the pool's finished jobs until want is done (want NULL: until none is outstanding). */
static void pool_wait(struct pipeline *p, struct pjob *want)
{
	double t0 = now_seconds();

	while (!want || !want->done) {
		struct pjob *j = (struct pjob *)compile_pool_next(p->pool);

		if (!j) {
			if (want)
				BUG("the compile pool has no job outstanding for '%s'",
				    want->job.name);
			break;
		}
		unit_done(p, j);
		if (p->busy)
			p->busy(p->busy_ctx, "compiling");
	}
	p->st.wall_compile += now_seconds() - t0;
}

/* Take the pool's finished jobs, without waiting for any. */
static void pool_drain(struct pipeline *p)
{
	struct compile_job *j;

	while ((j = compile_pool_poll(p->pool)))
		unit_done(p, (struct pjob *)j);
}

/* A unit queued as work ahead is needed now: ahead of the rest of that work. */
static void promote(struct pipeline *p, struct pjob *j)
{
	if (!j->job.background || !compile_pool_withdraw(p->pool, &j->job))
		return;
	j->job.background = 0;
	compile_pool_submit(p->pool, &j->job);
}

/* Compile one unit now (the pool may be busy with others); the caller releases job->result. */
static int compile_one(struct pipeline *p, struct compile_job *job)
{
	struct pjob pj;

	memset(&pj, 0, sizeof(pj));
	pj.job = *job;
	pj.kind = PJOB_AUX;
	compile_pool_submit(p->pool, &pj.job);
	pool_wait(p, &pj);
	*job = pj.job;
	return 0;
}

/*
 * Build a kernel the worker needs besides the candidate (the reference, the
 * support kernels) for the job's architecture, through the pool and its
 * cache; *cubin gets the cached cubin's path. 0 or error().
 */
static int build_aux(struct pipeline *p, const char *what, const char *name, const char *src,
                     const char *entry, char **extra, size_t nextra, char **cubin)
{
	struct compile_job job;
	char **opts = xcalloc(p->noptions + nextra + 1, sizeof(*opts));
	size_t i, n = 0;

	for (i = 0; i < p->noptions; i++)
		opts[n++] = p->options[i];
	for (i = 0; i < nextra; i++)
		opts[n++] = extra[i];
	memset(&job, 0, sizeof(job));
	compile_aux_key(what, src, opts, n, job.key);
	job.source = (char *)src;
	job.name = name;
	job.entry = entry;
	job.options = opts;
	job.noptions = n;
	compile_one(p, &job);
	free(opts);
	if (job.result.outcome != VARIANT_OK) {
		error("the %s '%s' does not compile for %s:\n%s", what, name, p->cfg->arch.name,
		      job.result.log ? job.result.log : "");
		build_release(&job.result);
		return -1;
	}
	*cubin = xstrdup(job.result.cubin_path);
	build_release(&job.result);
	return 0;
}

/* The embedded kernels/support/tuner_support.cu, as one string. */
static char *support_source(void)
{
	extern const char *const tuner_support_source[];
	struct strbuf sb = STRBUF_INIT;
	size_t i;

	for (i = 0; tuner_support_source[i]; i++)
		sb_adds(&sb, tuner_support_source[i]);
	return sb_detach(&sb);
}

/* The architecture a cubin is built for must be the GPU's. */
static int arch_check(const struct arch_limits *a, int cc, const char *device)
{
	if (!cc || arch_runs_on(a, cc))
		return 0;
	return error("the job is built for %s (compute capability %d.%d) but the GPU is %s "
	             "(compute capability %d.%d): its cubins cannot run there; set 'arch' to "
	             "sm_%d%s",
	             a->name, a->cc / 10, a->cc % 10, device, cc / 10, cc % 10, cc,
	             a->name[strlen(a->name) - 1] == 'a' ? "a" : "");
}

int pipeline_attach_workers(struct pipeline *p, struct worker **w, size_t n, const char *device)
{
	const struct problem *pr = p->cfg->fam.problem;
	char *src;
	size_t i;
	int r;

	if (n < 1 || n > PIPELINE_MAX_WORKERS)
		return error("%zu GPU workers: 1 to %d can be attached", n, PIPELINE_MAX_WORKERS);
	for (i = 0; i < n; i++)
		if (arch_check(&p->cfg->arch, worker_cc(w[i]), device) < 0)
			return -1;
	if (build_aux(p, "reference kernel", pr->ref.source_path, pr->ref.source,
	              pr->ref.launches[0].kernel, pr->ref.options, pr->ref.noptions,
	              &p->ref_cubin) < 0)
		return -1;
	src = support_source();
	r = build_aux(p, "worker's support kernels", "tuner_support.cu", src, NULL, NULL, 0,
	              &p->support_cubin);
	free(src);
	if (r < 0)
		return -1;
	for (i = 0; i < n; i++)
		p->workers[i] = w[i];
	p->nworkers = n;
	snprintf(p->device, sizeof(p->device), "%s", device);
	return 0;
}

int pipeline_attach_worker(struct pipeline *p, struct worker *w, const char *device)
{
	return pipeline_attach_workers(p, &w, 1, device);
}

void pipeline_attach_replay(struct pipeline *p, struct db *replay, const char *path,
                            const char *device)
{
	p->replay = replay;
	p->replay_path = path;
	snprintf(p->device, sizeof(p->device), "%s", device);
}

/* ------------------------------------------------------------ recording */

static void set_reason(struct evaluation *ev, enum outcome o, enum gate g, const char *fmt, ...)
    TUNER_PRINTF(4, 5);

static void set_reason(struct evaluation *ev, enum outcome o, enum gate g, const char *fmt, ...)
{
	va_list ap;

	ev->outcome = o;
	ev->gate = g;
	va_start(ap, fmt);
	vsnprintf(ev->reason, sizeof(ev->reason), fmt, ap);
	va_end(ap);
}

static int record_verdicts(struct pipeline *p, const struct evaluation *ev,
                           const struct verdicts *vs, size_t from)
{
	size_t i;

	for (i = from; i < vs->n; i++)
		if (db_gate_record(p->db, p->run_id, ev->variant_id, gate_name(vs->v[i].gate),
		                   vs->v[i].shape, vs->v[i].outcome, vs->v[i].reason) < 0)
			return -1;
	return 0;
}

/* The first rejecting verdict becomes the candidate's outcome, its reason prefixed with the shape.
 */
static void reject_from(struct evaluation *ev, const struct verdicts *vs, size_t from)
{
	size_t i;

	for (i = from; i < vs->n; i++) {
		const struct verdict *v = &vs->v[i];

		if (v->outcome == VARIANT_OK)
			continue;
		if (*v->shape)
			set_reason(ev, v->outcome, v->gate, "shape '%s': %s", v->shape, v->reason);
		else
			set_reason(ev, v->outcome, v->gate, "%s", v->reason);
		return;
	}
}

/* The verdict of one candidate, with its fitness when ranked; in the caller's transaction. */
static int record_eval(struct pipeline *p, int generation, struct evaluation *ev)
{
	if (db_eval_record(p->db, p->run_id, ev->variant_id, generation, ev->outcome, ev->reason) <
	    0)
		return -1;
	if (ev->ranked && db_eval_set_fitness(p->db, p->run_id, ev->variant_id, ev->m.fitness,
	                                      ev->m.fitness_lo, ev->m.fitness_hi) < 0)
		return -1;
	return 0;
}

static void count(struct pipeline *p, const struct evaluation *ev)
{
	p->st.evaluated++;
	p->st.outcomes[ev->outcome]++;
	if (ev->outcome != VARIANT_OK && ev->outcome != REJECT_UNMEASURED)
		p->st.gates[ev->gate]++;
	if (p->progress)
		p->progress(p->progress_ctx, ev);
}

/* Record the verdict in one transaction and count it. */
static int finish(struct pipeline *p, int generation, struct evaluation *ev)
{
	if (db_begin(p->db) < 0)
		return -1;
	if (record_eval(p, generation, ev) < 0 || db_commit(p->db) < 0) {
		db_rollback(p->db);
		return -1;
	}
	count(p, ev);
	return 0;
}

/* --------------------------------------------------------------- fitness */

/* A problem's expression (flops, bytes) on one shape; NaN when it has none. */
static double shape_number(const struct pipeline *p, const struct expr *e, size_t s)
{
	struct space_scope sc;
	struct variant va;
	double v;

	if (!e)
		return NAN;
	memset(&va, 0, sizeof(va));
	space_scope_init(&sc, p->cfg, &va, p->shape[s]);
	if (expr_eval_number(e, &sc.scope, &v, NULL, NULL, NULL) < 0)
		return NAN;
	return v;
}

static double shape_flops(const struct pipeline *p, size_t s)
{
	return shape_number(p, p->cfg->fam.problem->flops, s);
}

static double shape_bytes(const struct pipeline *p, size_t s)
{
	return shape_number(p, p->cfg->fam.problem->bytes, s);
}

/*
 * Speedups against the baseline and their geometric mean. A speedup's interval
 * is the ratio of the two medians' intervals taken at their far ends
 * (baseline lo / variant hi .. baseline hi / variant lo): conservative, so
 * that "faster beyond noise" is never claimed on overlapping measurements.
 */
static void rank(struct pipeline *p, struct evaluation *ev)
{
	const struct config *cfg = p->cfg;
	double s[TUNER_MAX_SHAPES], lo[TUNER_MAX_SHAPES], hi[TUNER_MAX_SHAPES];
	size_t i;

	ev->ranked = 0;
	if (!ev->timed || !p->have_baseline || ev->outcome != VARIANT_OK)
		return;
	memset(&ev->m, 0, sizeof(ev->m));
	ev->m.va = ev->va;
	ev->m.id = ev->variant_id;
	ev->m.nshapes = cfg->nshapes;
	for (i = 0; i < cfg->nshapes; i++) {
		s[i] = p->base[i].median_us / ev->t[i].median_us;
		lo[i] = p->base[i].ci_lo_us / ev->t[i].ci_hi_us;
		hi[i] = p->base[i].ci_hi_us / ev->t[i].ci_lo_us;
		ev->m.speedup[i] = s[i];
		ev->m.speedup_lo[i] = lo[i];
		ev->m.speedup_hi[i] = hi[i];
		if (hi[i] > p->best_hi[i])
			p->best_hi[i] = hi[i];
	}
	ev->m.fitness = measure_geomean(s, cfg->nshapes);
	ev->m.fitness_lo = measure_geomean(lo, cfg->nshapes);
	ev->m.fitness_hi = measure_geomean(hi, cfg->nshapes);
	ev->ranked = !isnan(ev->m.fitness);
}

static int is_baseline(const struct pipeline *p, const struct variant *va)
{
	struct variant b;

	space_baseline(&p->cfg->fam, &b);
	return space_equal(&p->cfg->fam, &b, va);
}

/* A timed baseline becomes the reference of every speedup. */
static void maybe_baseline(struct pipeline *p, struct evaluation *ev)
{
	if (p->have_baseline || !ev->timed || ev->outcome != VARIANT_OK || !is_baseline(p, &ev->va))
		return;
	memcpy(p->base, ev->t, sizeof(p->base));
	p->have_baseline = 1;
}

/* The best ranked variant so far: whose neighbours are compiled ahead. */
static void note_best(struct pipeline *p, const struct evaluation *ev)
{
	if (!ev->ranked || (p->have_best && !(ev->m.fitness > p->best_fit)))
		return;
	p->have_best = 1;
	p->best_fit = ev->m.fitness;
	p->best_va = ev->va;
	p->best_moves++;
}

/* ---------------------------------------------------------------- racing */

/* A shape not timed yet may give at most this much more than the best seen on it. */
#define RACE_CAP_MARGIN 1.5

static _Thread_local const struct pipeline *cost_p;

static int by_cost(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	double cx = cost_p->have_baseline ? cost_p->base[x].median_us : shape_flops(cost_p, x);
	double cy = cost_p->have_baseline ? cost_p->base[y].median_us : shape_flops(cost_p, y);

	if (isnan(cx) || isnan(cy) || cx == cy)
		return x < y ? -1 : x > y;
	return cx < cy ? -1 : 1;
}

void pipeline_race_set(struct pipeline *p, double bar)
{
	struct race *rc = &p->race;
	size_t s, n = p->cfg->nshapes;

	memset(rc, 0, sizeof(*rc));
	for (s = 0; s < n; s++)
		rc->order[s] = s;
	cost_p = p; /* qsort has no context argument: one pipeline per thread sorts at a time */
	qsort(rc->order, n, sizeof(rc->order[0]), by_cost);
	cost_p = NULL;
	if (bar <= 0 || !p->have_baseline)
		return;
	for (s = 0; s < n; s++) {
		if (!(p->best_hi[s] > 0) || isnan(p->base[s].ci_hi_us))
			return; /* nothing to bound a shape by: no racing yet */
		rc->cap[s] = p->best_hi[s] * RACE_CAP_MARGIN;
		rc->base_hi[s] = p->base[s].ci_hi_us;
	}
	rc->bar = bar;
}

/* -------------------------------------------------------- measurements */

/* What the database holds for (variant, device, shape): 1 found, 0 not, -1 error. */
static int lookup(struct pipeline *p, const struct evaluation *ev, size_t s,
                  struct db_measured *out)
{
	return db_measure_lookup(p->db, ev->variant_id, p->device, p->shape_dims[s], out);
}

/*
 * Apply one shape's stored result to ev: its timing when ok, else the
 * variant's rejection (the first failing shape wins). Returns 1 when the
 * shape failed.
 */
static int apply_measured(struct evaluation *ev, size_t s, const struct db_measured *m)
{
	if (m->outcome != VARIANT_OK) {
		if (ev->outcome == VARIANT_OK)
			set_reason(ev, m->outcome,
			           m->outcome == REJECT_ALIGN ? GATE_SANITIZE : GATE_CORRECT, "%s",
			           m->reason ? m->reason : "");
		return 1;
	}
	if (s >= TUNER_MAX_SHAPES)
		return 0; /* a ragged shape: checked, not timed */
	ev->t[s].median_us = m->median_us;
	ev->t[s].ci_lo_us = m->ci_lo_us;
	ev->t[s].ci_hi_us = m->ci_hi_us;
	ev->t[s].tflops = m->tflops;
	return 0;
}

/* Store one shape's result from the worker (or the replay) and apply it. */
static int store_shape(struct pipeline *p, struct evaluation *ev, size_t s, enum outcome o,
                       const char *reason, double rel_l2, double max_abs,
                       const struct worker_shape_result *sr)
{
	const double *samples = sr ? sr->samples_us : NULL;
	size_t nsamples = sr ? sr->nsamples : 0;
	struct db_measurement m;
	struct db_measured got;
	unsigned long long seed;

	memset(&m, 0, sizeof(m));
	memset(&got, 0, sizeof(got));
	m.device = p->device;
	m.shape = p->shape[s]->name;
	m.shape_dims = p->shape_dims[s];
	m.outcome = o;
	m.reason = reason;
	m.rel_l2 = rel_l2;
	m.max_abs = max_abs;
	m.median_us = m.ci_lo_us = m.ci_hi_us = m.tflops = NAN;
	m.samples = samples;
	m.nsamples = nsamples;
	m.gbps = m.sm_mhz = m.temp_c = m.power_w = m.throttle = m.retaken = NAN;
	if (sr && sr->sm_mhz > 0) {
		m.sm_mhz = sr->sm_mhz;
		m.temp_c = sr->temp_c;
		m.power_w = sr->power_w;
		m.throttle = (double)sr->throttle;
		m.retaken = sr->retaken;
	}
	if (o == VARIANT_OK && nsamples) {
		/* the interval's resampling is seeded by the variant and shape: reproducible */
		seed = strtoull(ev->hash + 16, NULL, 16) ^ (unsigned long long)(s + 1);
		m.median_us = measure_median(samples, nsamples);
		if (measure_bootstrap_ci(samples, nsamples, BOOTSTRAP_RESAMPLES, seed, &m.ci_lo_us,
		                         &m.ci_hi_us) < 0)
			return -1;
		m.tflops = shape_flops(p, s) / (m.median_us * 1e-6) / 1e12;
		m.gbps = shape_bytes(p, s) / (m.median_us * 1e-6) / 1e9;
	}
	if (db_measure_record(p->db, p->run_id, ev->variant_id, &m, NULL) < 0)
		return -1;
	got.outcome = m.outcome;
	got.reason = (char *)(m.reason ? m.reason : "");
	got.median_us = m.median_us;
	got.ci_lo_us = m.ci_lo_us;
	got.ci_hi_us = m.ci_hi_us;
	got.tflops = m.tflops;
	apply_measured(ev, s, &got);
	return 0;
}

static void job_init(struct pipeline *p, struct worker_job *job)
{
	const struct config *cfg = p->cfg;

	memset(job, 0, sizeof(*job));
	job->ref_cubin_path = p->ref_cubin;
	job->support_path = p->support_cubin;
	job->check_seeds = cfg->check_seeds;
	job->seed = cfg->seed;
	job->warmup = cfg->warmup;
	job->repeats = cfg->repeats;
	job->min_repeats = cfg->min_repeats;
	job->rel_ci = cfg->rel_ci;
	job->launches = cfg->launches;
	job->l2_hot = cfg->l2 == L2_HOT;
	job->timeout_s = cfg->timeout_s;
	job->check = 1;
	job->time_it = 1;
}

/* Add shape s to a job: 0, or -1 with why (the variant cannot be launched there). */
static int job_add_shape(const struct pipeline *p, const struct variant *va, struct worker_job *job,
                         const struct shape *sh, int check_only, char *why, size_t whylen)
{
	struct worker_shape_job *ws = worker_job_shape(job);

	if (job_resolve_shape(p->cfg, va, sh, ws, why, whylen) < 0)
		return -1;
	ws->check_only = check_only;
	return 0;
}

static int job_add(const struct pipeline *p, const struct variant *va, struct worker_job *job,
                   size_t s, char *why, size_t whylen)
{
	return job_add_shape(p, va, job, p->shape[s], s >= p->cfg->nshapes, why, whylen);
}

/* ------------------------------------------------------------- GPU tasks */

/*
 * One candidate's work on a GPU, done by a worker's thread: the dynamic
 * alignment gate when every variant gets it, the check of every shape the
 * database has no result for, then the timing of the suite's shapes, cheapest
 * first, until the candidate is known to lose (racing). Nothing here touches
 * the database: the main thread stores the results in candidate order.
 */
struct gpu_task {
	size_t cand;
	struct variant va;
	char hash[HASH_HEX_LEN];
	int missing[PIPELINE_MAX_SHAPES];
	struct shape_timing known[TUNER_MAX_SHAPES]; /* suite shapes answered before, else NaN */
	char *cubins[TUNER_MAX_SHAPES];              /* per spec; borrowed */
	char *san_cubins[TUNER_MAX_SHAPES];          /* per spec, with sanitize: every; borrowed */
	/* results */
	int state; /* 0 queued, 1 running, 2 done */
	int error; /* the evaluation itself failed: msg says why */
	char msg[512];
	enum outcome outcome; /* what the task decided beyond the shapes (cannot launch, race) */
	enum gate gate;
	char reason[512];
	int have[PIPELINE_MAX_SHAPES]; /* res[s] is a fresh result to store */
	struct worker_shape_result res[PIPELINE_MAX_SHAPES];
	struct worker_result whole; /* a job that failed before any shape */
	size_t whole_shape;
	int whole_failed;
	int sanitized;
	int sanitize_only; /* the dynamic alignment gate alone (an elite newcomer) */
	int sanitize_passed;
	int tools_only;             /* compute-sanitizer's gate alone */
	int sanitize_absent;        /* the sanitize build checks nothing: the gate did not apply */
	int tools_absent;           /* there is no compute-sanitizer: the gate did not run */
	char tools_unfinished[400]; /* a tool that did not finish (and found nothing): why */
	double busy;                /* seconds in worker_eval */
	double busy_time;           /* of which timing */
};

static void task_release(struct gpu_task *t)
{
	size_t s;

	for (s = 0; s < PIPELINE_MAX_SHAPES; s++)
		free(t->res[s].samples_us);
	memset(t->res, 0, sizeof(t->res));
}

static void TUNER_PRINTF(4, 5)
    task_reject(struct gpu_task *t, enum outcome o, enum gate g, const char *fmt, ...)
{
	va_list ap;

	t->outcome = o;
	t->gate = g;
	va_start(ap, fmt);
	vsnprintf(t->reason, sizeof(t->reason), fmt, ap);
	va_end(ap);
}

/* Run one job on w; its verdicts go into t (map[i]: the pipeline shape of the job's shape i). */
static int task_job(struct gpu_task *t, struct worker *w, struct worker_job *job, const size_t *map,
                    int keep_check)
{
	struct worker_result res;
	double t0 = now_seconds();
	size_t i;
	int r;

	memset(&res, 0, sizeof(res));
	r = worker_eval(w, job, &res);
	t->busy += now_seconds() - t0;
	if (job->time_it)
		t->busy_time += now_seconds() - t0;
	if (r < 0) {
		snprintf(t->msg, sizeof(t->msg), "%s", "the GPU evaluation failed");
		t->error = 1;
		worker_result_release(&res);
		return -1;
	}
	for (i = 0; i < res.nshapes && i < job->nshapes; i++) {
		struct worker_shape_result *dst = &t->res[map[i]], *src = &res.shapes[i];

		if (keep_check && t->have[map[i]]) {
			/* the timing of a checked shape: the check's errors stay */
			free(dst->samples_us);
			dst->samples_us = src->samples_us;
			dst->nsamples = src->nsamples;
			src->samples_us = NULL;
			dst->sm_mhz = src->sm_mhz;
			dst->temp_c = src->temp_c;
			dst->power_w = src->power_w;
			dst->throttle = src->throttle;
			dst->retaken = src->retaken;
			if (src->outcome != VARIANT_OK) {
				dst->outcome = src->outcome;
				memcpy(dst->reason, src->reason, sizeof(dst->reason));
			}
		} else {
			free(dst->samples_us);
			*dst = *src;
			src->samples_us = NULL;
		}
		t->have[map[i]] = 1;
	}
	if (res.outcome != VARIANT_OK && res.nshapes == 0 && job->nshapes) {
		t->whole_failed = 1;
		t->whole = res;
		t->whole_shape = map[0];
		memset(res.shapes, 0, sizeof(res.shapes));
	}
	worker_result_release(&res);
	return res.outcome == VARIANT_OK ? 0 : 1;
}

/*
 * The shapes the dynamic alignment gate runs spec sp's sanitize build on: the
 * spec's cheapest suite shape when it is within PIPELINE_TOOLS_BUDGET, then
 * compute-sanitizer's scaled-down shapes of the spec (tools_shapes: the
 * costliest suite shape halved to the budget in the dims the family does not
 * specialise, so that every address computed from a specialised dim is the
 * same), those the variant can launch on; the cheapest suite shape alone when
 * none is left. 0, or 1 with t rejected (it cannot launch there).
 */
static int sanitize_shapes(const struct pipeline *p, struct gpu_task *t, size_t sp,
                           struct worker_job *job)
{
	const struct shape *cheap = NULL;
	size_t k, nd = p->cfg->fam.problem->ndims;
	char why[400];

	for (k = 0; k < p->cfg->nshapes && !cheap; k++)
		if (p->shape_spec[p->race.order[k]] == sp)
			cheap = p->shape[p->race.order[k]];
	if (!cheap)
		return 0;
	if (job_shape_cost(p->cfg, cheap) <= PIPELINE_TOOLS_BUDGET &&
	    job_add_shape(p, &t->va, job, cheap, 1, why, sizeof(why)) < 0)
		goto refused;
	for (k = 0; k < p->ntools; k++)
		if (p->tools_spec[k] == sp &&
		    memcmp(p->tools_shape[k]->dims, cheap->dims, nd * sizeof(cheap->dims[0])) &&
		    job_add_shape(p, &t->va, job, p->tools_shape[k], 1, why, sizeof(why)) < 0)
			job->nshapes--; /* left out, as compute-sanitizer's gate does */
	if (!job->nshapes && job_add_shape(p, &t->va, job, cheap, 1, why, sizeof(why)) < 0)
		goto refused;
	return 0;
refused:
	task_reject(t, REJECT_CONSTRAINT, GATE_CONSTRAINT, "cannot launch: %s", why);
	return 1;
}

/* The dynamic alignment gate on t's sanitize builds (sanitize_shapes): 0 passed, 1 rejected, -1
 * error. */
static int task_sanitize(const struct pipeline *p, struct gpu_task *t, struct worker *w)
{
	struct worker_job job;
	struct worker_result res;
	double t0;
	size_t sp;
	int r = 0;

	t->sanitized = 1;
	for (sp = 0; sp < p->nspecs && !r; sp++) {
		job_init((struct pipeline *)p, &job);
		job.sanitize = 1;
		job.time_it = 0;
		r = sanitize_shapes(p, t, sp, &job);
		if (r || !job.nshapes) {
			worker_job_release(&job);
			continue;
		}
		if (!t->san_cubins[sp]) {
			task_reject(t, REJECT_COMPILE, GATE_SANITIZE,
			            "the sanitize build failed to compile");
			worker_job_release(&job);
			return 1;
		}
		job.cubin_path = t->san_cubins[sp];
		memset(&res, 0, sizeof(res));
		t0 = now_seconds();
		if (worker_eval(w, &job, &res) < 0) {
			snprintf(t->msg, sizeof(t->msg), "the dynamic alignment gate failed");
			t->error = 1;
			r = -1;
		} else if (res.outcome != VARIANT_OK) {
			task_reject(t, (enum outcome)res.outcome,
			            res.outcome == REJECT_ALIGN ? GATE_SANITIZE : GATE_CORRECT,
			            "%s", res.reason);
			r = 1;
		} else if (!strncmp(res.reason, WORKER_SAN_ABSENT, strlen(WORKER_SAN_ABSENT))) {
			t->sanitize_absent = 1;
		}
		t->busy += now_seconds() - t0;
		worker_result_release(&res);
		worker_job_release(&job);
	}
	t->sanitize_passed = r == 0;
	return r;
}

/* compute-sanitizer's tools, each a process of its own: what each finds, and the outcome it is. */
static const struct {
	const char *name;
	enum outcome outcome;
} gate_tools[] = {
    {"memcheck", REJECT_RUNTIME_FAULT}, /* out of bounds, misaligned, leaks of errors */
    {"racecheck", REJECT_RACE},         /* shared-memory hazards */
    {"synccheck", REJECT_RACE},         /* barriers misused */
};

/* The lowest a timing of samples can honestly be: its fastest sample. */
static double fastest(const double *v, size_t n)
{
	double m = INFINITY;
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i] < m)
			m = v[i];
	return m;
}

/* One compute-sanitizer tool on one spec's job, in a thread of its own. */
struct tool_run {
	const char *path;
	const struct worker_job *job;
	size_t tool;
	int device, r, threaded;
	char report[400], why[400];
	double seconds;
	const char *hash; /* to name the variant when verbose, else NULL */
	pthread_t thread;
};

static void *tool_run_main(void *arg)
{
	struct tool_run *tr = arg;
	double t0 = now_seconds();

	tr->r = worker_tool_check(tr->device, tr->path, gate_tools[tr->tool].name, tr->job,
	                          tr->report, sizeof(tr->report), tr->why, sizeof(tr->why));
	tr->seconds = now_seconds() - t0;
	if (tr->hash)
		fprintf(stderr,
		        "compute-sanitizer %s on %.12s, %zu shape%s from '%s': %s, %.1f s\n",
		        gate_tools[tr->tool].name, tr->hash, tr->job->nshapes,
		        tr->job->nshapes == 1 ? "" : "s", tr->job->shapes[0].name,
		        tr->r < 0 ? tr->why
		        : tr->r   ? tr->report
		                  : "clean",
		        tr->seconds);
	return NULL;
}

/*
 * compute-sanitizer's memcheck, racecheck and synccheck on t's plain builds,
 * each spec's tools shapes (pipeline.h) checked in one-off workers on the GPU device, the
 * tools and specs side by side (each is a process of its own, mostly waiting on
 * the tool's instrumentation): 0 clean (t->tools_absent when there is no
 * compute-sanitizer, t->tools_unfinished when a tool ran out of time or died
 * with nothing found: the variant stays, unchecked), 1 rejected, -1 error
 * (t->msg). The verdict is the first
 * spec's, tool by tool in gate_tools' order, whatever finished first.
 */
static int task_tools(const struct pipeline *p, struct gpu_task *t, int device)
{
	char path[4096], why[400];
	struct worker_job jobs[TUNER_MAX_SHAPES];
	struct tool_run *runs;
	size_t sp, k, i, n = 0, nt = ARRAY_SIZE(gate_tools);
	double t0;
	int r = 0;

	if (worker_tool_path(path, sizeof(path)) < 0) {
		t->tools_absent = 1;
		return 0;
	}
	for (sp = 0; sp < p->nspecs; sp++) {
		job_init((struct pipeline *)p, &jobs[sp]);
		jobs[sp].time_it = 0;
		jobs[sp].check_seeds = 1;
		jobs[sp].timeout_s = p->cfg->timeout_s * 30 > 120 ? p->cfg->timeout_s * 30 : 120;
		jobs[sp].cubin_path = t->cubins[sp];
		/* a scaled-down shape the variant cannot launch on is left out, not held against it
		 */
		for (k = 0; k < p->ntools; k++)
			if (p->tools_spec[k] == sp &&
			    job_add_shape(p, &t->va, &jobs[sp], p->tools_shape[k], 1, why,
			                  sizeof(why)) < 0)
				jobs[sp].nshapes--;
	}
	runs = xcalloc(p->nspecs * nt, sizeof(*runs));
	t0 = now_seconds();
	for (sp = 0; sp < p->nspecs && !r; sp++)
		for (i = 0; i < nt && jobs[sp].nshapes && t->cubins[sp]; i++) {
			struct tool_run *tr = &runs[n];

			tr->path = path;
			tr->job = &jobs[sp];
			tr->tool = i;
			tr->device = device;
			tr->hash = p->verbose ? t->hash : NULL;
			/* without a thread to spare, the check runs here */
			tr->threaded = !pthread_create(&tr->thread, NULL, tool_run_main, tr);
			if (!tr->threaded)
				tool_run_main(tr);
			n++;
		}
	for (i = 0; i < n; i++)
		if (runs[i].threaded)
			pthread_join(runs[i].thread, NULL);
	t->busy += now_seconds() - t0; /* the wall time: the runs overlap */
	for (i = 0; i < n && !r; i++)
		if (runs[i].r < 0) {
			snprintf(t->msg, sizeof(t->msg), "%s", runs[i].why);
			r = -1;
		}
	for (i = 0; i < n && !r; i++)
		if (runs[i].r == 1) {
			const struct worker_job *job = runs[i].job;
			char names[200];
			size_t used = 0, j;

			names[0] = '\0';
			for (j = 0; j < job->nshapes && used < sizeof(names); j++)
				used +=
				    (size_t)snprintf(names + used, sizeof(names) - used, "%s'%s'",
				                     j ? ", " : "", job->shapes[j].name);
			task_reject(t, gate_tools[runs[i].tool].outcome, GATE_SANITIZE,
			            "shape%s %s: %s", job->nshapes > 1 ? "s" : "", names,
			            runs[i].report);
			r = 1;
		}
	for (i = 0; i < n && !r; i++)
		if (runs[i].r == 2 && !t->tools_unfinished[0])
			snprintf(t->tools_unfinished, sizeof(t->tools_unfinished), "%s",
			         runs[i].report);
	free(runs);
	for (sp = 0; sp < p->nspecs; sp++)
		worker_job_release(&jobs[sp]);
	return r;
}

/*
 * The best fitness a candidate can still reach, given for each shape the
 * fastest it was seen to run there (NAN: not measured yet): each measured
 * shape at its most favourable (baseline's upper bound over that time), each
 * shape not yet measured at its cap (a margin over the best speedup seen on
 * it). The candidate is raced out when this falls short of the race's bar.
 */
static double race_bound(const struct pipeline *p, const double *lo)
{
	const struct race *rc = &p->race;
	double sp[TUNER_MAX_SHAPES];
	size_t s, n = p->cfg->nshapes;

	for (s = 0; s < n; s++)
		sp[s] = isnan(lo[s]) ? rc->cap[s] : rc->base_hi[s] / lo[s];
	return measure_geomean(sp, n);
}

/* Whether t, timed on some of the suite's shapes so far, can still reach the race's bar. */
static int raced_out(const struct pipeline *p, const struct gpu_task *t, const int *timed,
                     double *bound)
{
	double lo[TUNER_MAX_SHAPES];
	size_t s, n = p->cfg->nshapes;

	if (!p->race.bar)
		return 0;
	for (s = 0; s < n; s++) {
		if (timed[s])
			lo[s] = fastest(t->res[s].samples_us, t->res[s].nsamples);
		else if (!t->missing[s])
			lo[s] = t->known[s].ci_lo_us;
		else
			lo[s] = NAN;
	}
	*bound = race_bound(p, lo);
	return *bound < p->race.bar;
}

static int task_run(const struct pipeline *p, struct gpu_task *t, struct worker *w)
{
	struct worker_job job;
	size_t map[PIPELINE_MAX_SHAPES], s, sp, k;
	int timed[TUNER_MAX_SHAPES] = {0}, r;
	char why[400];
	double bound;

	if (t->sanitize_only)
		return task_sanitize(p, t, w) < 0 ? -1 : 0;
	if (t->tools_only)
		return task_tools(p, t, worker_ordinal(w)) < 0 ? -1 : 0;
	if (p->cfg->sanitize == SANITIZE_EVERY && (r = task_sanitize(p, t, w)) != 0)
		return r < 0 ? -1 : 0;
	/* every missing shape checked, spec by spec, before any is timed */
	for (sp = 0; sp < p->nspecs; sp++) {
		job_init((struct pipeline *)p, &job);
		job.time_it = 0;
		for (s = 0; s < p->nshapes; s++) {
			if (p->shape_spec[s] != sp || !t->missing[s])
				continue;
			if (job_add(p, &t->va, &job, s, why, sizeof(why)) < 0) {
				task_reject(t, REJECT_CONSTRAINT, GATE_CONSTRAINT,
				            "cannot launch: %s", why);
				worker_job_release(&job);
				return 0;
			}
			map[job.nshapes - 1] = s;
		}
		if (!job.nshapes) {
			worker_job_release(&job);
			continue;
		}
		job.cubin_path = t->cubins[sp];
		r = task_job(t, w, &job, map, 0);
		worker_job_release(&job);
		if (r)
			return r < 0 ? -1 : 0;
	}
	/* then the suite's shapes, cheapest first, one job each, racing after each */
	for (k = 0; k < p->cfg->nshapes; k++) {
		s = p->race.order[k];
		if (!t->missing[s])
			continue;
		if (raced_out(p, t, timed, &bound)) {
			task_reject(t, REJECT_SLOWER, GATE_RACE,
			            "raced out before shape '%s': at best x%.3f, the bar is x%.3f",
			            p->shape[s]->name, bound, p->race.bar);
			return 0;
		}
		job_init((struct pipeline *)p, &job);
		job.check = 0;
		if (job_add(p, &t->va, &job, s, why, sizeof(why)) < 0)
			BUG("shape '%s' resolved for the check but not for timing",
			    p->shape[s]->name);
		if (job.nshapes != 1) /* task_job reads map[0] alone */
			BUG("a timing job of %zu shapes", job.nshapes);
		job.cubin_path = t->cubins[p->shape_spec[s]];
		map[0] = s;
		r = task_job(t, w, &job, map, 1);
		worker_job_release(&job);
		if (r)
			return r < 0 ? -1 : 0;
		timed[s] = 1;
	}
	return 0;
}

/* What the main thread is doing, so that a GPU waiting for work knows what it waits on. */
enum hold { HOLD_BUILD, HOLD_SANITIZE_BUILD, HOLD_COMMIT, HOLD_END, HOLD_COUNT };

/* The threads that drive the workers: each takes the next queued task. */
struct gpu_stage {
	const struct pipeline *p;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct gpu_task **tasks;
	size_t ntasks, alloc, next; /* next: the first still queued */
	int closing;
	pthread_t threads[PIPELINE_MAX_WORKERS];
	size_t nthreads;
	/*
	 * hold: what the main thread is doing now; queued_hold: what it was doing
	 * until it queued the last task. A GPU's wait for a task is charged to the
	 * latter (the work that kept the task from it), its wait at the end to
	 * HOLD_END.
	 */
	enum hold hold, queued_hold;
	double idle[HOLD_COUNT];
};

struct gpu_thread_arg {
	struct gpu_stage *g;
	struct worker *w;
};

static void *gpu_thread(void *arg)
{
	struct gpu_thread_arg *a = arg;
	struct gpu_stage *g = a->g;
	double since = now_seconds(); /* waiting for a task since */

	pthread_mutex_lock(&g->lock);
	for (;;) {
		struct gpu_task *t;

		while (g->next == g->ntasks && !g->closing)
			pthread_cond_wait(&g->cond, &g->lock);
		if (g->next == g->ntasks) {
			g->idle[HOLD_END] += now_seconds() - since;
			break;
		}
		g->idle[g->queued_hold] += now_seconds() - since;
		t = g->tasks[g->next++];
		t->state = 1;
		pthread_mutex_unlock(&g->lock);
		if (task_run(g->p, t, a->w) < 0)
			t->error = 1;
		pthread_mutex_lock(&g->lock);
		t->state = 2;
		since = now_seconds();
		pthread_cond_broadcast(&g->cond);
	}
	pthread_mutex_unlock(&g->lock);
	free(a);
	return NULL;
}

static void stage_start(struct gpu_stage *g, struct pipeline *p)
{
	size_t i;

	memset(g, 0, sizeof(*g));
	g->p = p;
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	for (i = 0; i < p->nworkers; i++) {
		struct gpu_thread_arg *a = xmalloc(sizeof(*a));

		a->g = g;
		a->w = p->workers[i];
		if (pthread_create(&g->threads[g->nthreads], NULL, gpu_thread, a) == 0)
			g->nthreads++;
		else
			free(a);
	}
	if (p->nworkers && !g->nthreads)
		die(EX_OSERR, "cannot start a thread for the GPU workers");
}

/* The main thread says what it does next (what a GPU with nothing queued waits on). */
static void stage_hold(struct gpu_stage *g, enum hold h)
{
	pthread_mutex_lock(&g->lock);
	g->hold = h;
	pthread_mutex_unlock(&g->lock);
}

static void stage_queue(struct gpu_stage *g, struct gpu_task *t)
{
	pthread_mutex_lock(&g->lock);
	g->queued_hold = g->hold;
	ALLOC_GROW(g->tasks, g->ntasks + 1, g->alloc);
	g->tasks[g->ntasks++] = t;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
}

static void stage_wait(struct gpu_stage *g, struct gpu_task *t)
{
	pthread_mutex_lock(&g->lock);
	while (t->state != 2)
		pthread_cond_wait(&g->cond, &g->lock);
	pthread_mutex_unlock(&g->lock);
}

/*
 * Whether t is finished, read under the stage's lock: the GPU thread writes
 * the task's results before it marks it done under that lock, so this is
 * what makes them visible to the main thread (a plain read is a data race).
 */
static int stage_finished(struct gpu_stage *g, struct gpu_task *t)
{
	int done;

	pthread_mutex_lock(&g->lock);
	done = t->state == 2;
	pthread_mutex_unlock(&g->lock);
	return done;
}

/* Tasks queued and not yet taken are dropped (a stop); the running ones finish. */
static void stage_stop(struct pipeline *p, struct gpu_stage *g)
{
	size_t i;

	pthread_mutex_lock(&g->lock);
	g->ntasks = g->next;
	g->closing = 1;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
	for (i = 0; i < g->nthreads; i++)
		pthread_join(g->threads[i], NULL);
	p->st.idle_build += g->idle[HOLD_BUILD];
	p->st.idle_sanitize_build += g->idle[HOLD_SANITIZE_BUILD];
	p->st.idle_commit += g->idle[HOLD_COMMIT];
	p->st.idle_between += g->idle[HOLD_END];
	pthread_mutex_destroy(&g->lock);
	pthread_cond_destroy(&g->cond);
	free(g->tasks);
}

/*
 * Copy one shape's recorded result into this run's database as the recording
 * has it (its median and interval too, not recomputed from the samples, so a
 * replay reads what was recorded) and apply it to ev.
 */
static int replay_store(struct pipeline *p, struct evaluation *ev, size_t s,
                        const struct db_measured *rec)
{
	struct db_measurement m;

	memset(&m, 0, sizeof(m));
	m.device = p->device;
	m.shape = p->cfg->shapes[s].name;
	m.shape_dims = p->shape_dims[s];
	m.outcome = rec->outcome;
	m.reason = rec->reason;
	m.rel_l2 = rec->rel_l2;
	m.max_abs = rec->max_abs;
	m.median_us = rec->median_us;
	m.ci_lo_us = rec->ci_lo_us;
	m.ci_hi_us = rec->ci_hi_us;
	m.tflops = rec->tflops;
	m.samples = rec->samples;
	m.nsamples = rec->nsamples;
	m.gbps = m.sm_mhz = m.temp_c = m.power_w = m.throttle = m.retaken = NAN;
	if (db_measure_record(p->db, p->run_id, ev->variant_id, &m, NULL) < 0)
		return -1;
	if (rec->outcome == VARIANT_OK && isnan(rec->median_us)) {
		/* checked but never timed there: nothing to rank it by */
		set_reason(ev, REJECT_UNMEASURED, GATE_CORRECT,
		           "shape '%s': not timed in the recording '%s'", p->cfg->shapes[s].name,
		           p->replay_path);
		return 0;
	}
	apply_measured(ev, s, rec);
	return 0;
}

/* The fastest a recorded shape ran: its fastest sample, or its interval's low end. */
static double recorded_fastest(const struct db_measured *m)
{
	return m->nsamples ? fastest(m->samples, m->nsamples) : m->ci_lo_us;
}

/*
 * The shapes of one candidate from the recording, as a live run would have
 * them: when every shape is correct (a live run checks them all before it
 * times any), timed cheapest first and raced out as task_run does. The race
 * is decided on the recording's values alone, so that it is the same whether
 * or not this database already holds some of the shapes (another run's, which
 * are copies of the same recording); those it holds are answered from it, the
 * rest copied in. 0, or -1 on a database error.
 */
static int replay_shapes(struct pipeline *p, struct evaluation *ev,
                         const struct db_recorded_key *key)
{
	struct db_measured rec[TUNER_MAX_SHAPES], own[TUNER_MAX_SHAPES];
	double lo[TUNER_MAX_SHAPES], bound;
	int have_rec[TUNER_MAX_SHAPES] = {0}, have_own[TUNER_MAX_SHAPES] = {0}, all_ok = 1, r = 0;
	size_t s, k, n = p->cfg->nshapes;

	memset(rec, 0, sizeof(rec));
	memset(own, 0, sizeof(own));
	for (s = 0; s < TUNER_MAX_SHAPES; s++)
		lo[s] = NAN;
	for (s = 0; s < n && r >= 0; s++) {
		const struct db_measured *m;

		r = db_measure_lookup(p->db, ev->variant_id, p->device, p->shape_dims[s], &own[s]);
		if (r < 0)
			break;
		have_own[s] = r;
		r = db_measure_lookup_params(p->replay, key, p->device, p->shape_dims[s], &rec[s]);
		if (r < 0)
			break;
		have_rec[s] = r;
		if (!have_own[s] && !have_rec[s]) {
			set_reason(ev, REJECT_UNMEASURED, GATE_CORRECT,
			           "shape '%s': not measured in the recording '%s'",
			           p->cfg->shapes[s].name, p->replay_path);
			all_ok = 0;
			break;
		}
		m = have_rec[s] ? &rec[s] : &own[s];
		all_ok &= m->outcome == VARIANT_OK && !isnan(m->median_us);
	}
	for (k = 0; k < n && r >= 0 && ev->outcome == VARIANT_OK; k++) {
		s = all_ok ? p->race.order[k] : k;
		if (all_ok && p->race.bar && (bound = race_bound(p, lo)) < p->race.bar) {
			set_reason(ev, REJECT_SLOWER, GATE_RACE,
			           "raced out before shape '%s': at best x%.3f, the bar is x%.3f "
			           "(replayed)",
			           p->shape[s]->name, bound, p->race.bar);
			break;
		}
		if (have_own[s]) {
			p->st.shapes_reused++;
			apply_measured(ev, s, &own[s]);
		} else {
			ev->remeasured++;
			r = replay_store(p, ev, s, &rec[s]);
		}
		lo[s] = recorded_fastest(have_rec[s] ? &rec[s] : &own[s]);
	}
	for (s = 0; s < n; s++) {
		if (have_rec[s])
			db_measured_release(&rec[s]);
		if (have_own[s])
			db_measured_release(&own[s]);
	}
	return r < 0 ? -1 : 0;
}

/*
 * Answer one candidate from the recording, which knows it by its template
 * hash, arch and params (never by the variant hash: that covers the compile
 * options and the compiler, which may have changed since). 0, or -1 on a
 * database error.
 */
static int replay_eval(struct pipeline *p, struct evaluation *ev)
{
	struct db_recorded_key key;
	struct db_gate_found g;
	char *params = space_format(&p->cfg->fam, &ev->va);
	int r, gi;

	key.template_hash = p->cfg->fam.source_hash;
	key.arch = p->cfg->arch.name;
	key.params = params;
	r = db_gate_rejection_params(p->replay, &key, &g);
	if (r < 0)
		goto fail;
	if (r == 1) {
		enum gate gate = GATE_COMPILE;

		for (gi = 0; gi < GATE_COUNT; gi++)
			if (!strcmp(g.gate, gate_name((enum gate)gi)))
				gate = (enum gate)gi;
		set_reason(ev, g.outcome, gate, "%s (replayed)", g.reason ? g.reason : "");
		db_gate_found_release(&g);
		free(params);
		return 0;
	}
	if (db_begin(p->db) < 0)
		goto fail;
	r = replay_shapes(p, ev, &key);
	if (r < 0) {
		db_rollback(p->db);
		goto fail;
	}
	free(params);
	params = NULL;
	if (db_commit(p->db) < 0) {
		db_rollback(p->db);
		return -1;
	}
	ev->timed = ev->outcome == VARIANT_OK;
	return 0;
fail:
	free(params);
	return -1;
}

/* ------------------------------------------------------------ the stages */

/* The generation's compile units: plain builds, then (when a GPU will need them) sanitize ones. */
static struct pjob *gen_job(struct pipeline *p, size_t cand, size_t sp, int sanitize)
{
	return &p->gen_jobs[(cand * p->nspecs + sp) * 2 + (sanitize ? 1 : 0)];
}

/* Take back a unit queued and not started: it will not be compiled. */
static void withdraw(struct pipeline *p, struct pjob *j)
{
	if (!j->submitted || j->done || !compile_pool_withdraw(p->pool, &j->job))
		return;
	j->done = 1; /* with no result */
	p->st.withdrawn++;
}

static int batch_busy(const struct pjob_batch *b)
{
	size_t i;

	for (i = 0; i < b->n; i++)
		if (b->jobs[i].submitted && !b->jobs[i].done)
			return 1;
	return 0;
}

static void batch_free(struct pjob_batch *b)
{
	size_t i;

	for (i = 0; i < b->n; i++) {
		free(b->jobs[i].job.source);
		build_release(&b->jobs[i].job.result);
	}
	free(b->jobs);
}

/* Free the retired batches the pool has given back in full. */
static void retired_sweep(struct pipeline *p)
{
	size_t i, k = 0;

	for (i = 0; i < p->nretired; i++) {
		if (batch_busy(&p->retired[i]))
			p->retired[k++] = p->retired[i];
		else
			batch_free(&p->retired[i]);
	}
	p->nretired = k;
}

/*
 * Drop units the pipeline is done with: those not started are withdrawn (work
 * ahead nobody needs, or what a stop left), those being compiled finish in
 * the pool's own time (into the cache) instead of being waited for.
 */
static void retire(struct pipeline *p, struct pjob *jobs, size_t n)
{
	struct pjob_batch b;
	size_t i;

	if (!jobs)
		return;
	for (i = 0; i < n; i++)
		withdraw(p, &jobs[i]);
	b.jobs = jobs;
	b.n = n;
	if (!batch_busy(&b)) {
		batch_free(&b);
		return;
	}
	ALLOC_GROW(p->retired, p->nretired + 1, p->retired_alloc);
	p->retired[p->nretired++] = b;
}

static void gen_jobs_release(struct pipeline *p)
{
	retire(p, p->gen_jobs, p->ngen_jobs);
	retire(p, p->pre_jobs, p->npre_jobs);
	retired_sweep(p);
	p->gen_jobs = NULL;
	p->ngen_jobs = 0;
	p->pre_jobs = NULL;
	p->npre_jobs = 0;
	p->gen_evals = NULL;
	p->gen_n = 0;
}

/* A unit for candidate cand's build of spec sp (sanitize or plain), not yet submitted. */
static void unit_init(struct pipeline *p, struct pjob *j, const struct evaluation *ev, size_t cand,
                      size_t sp, int sanitize)
{
	memset(j, 0, sizeof(*j));
	j->kind = sanitize ? PJOB_SANITIZE : PJOB_PLAIN;
	j->cand = cand;
	j->spec = sp;
	template_build_key(ev->hash, &p->specs[sp], sanitize, j->job.key);
	j->job.source = template_render(p->cfg, &ev->va, &p->specs[sp], sanitize);
	j->job.name = p->cfg->fam.source_path;
	j->job.entry = p->cfg->fam.launches[0].kernel;
	j->job.options = sanitize ? p->san_options : p->options;
	j->job.noptions = sanitize ? p->nsan_options : p->noptions;
}

static void unit_submit(struct pipeline *p, struct pjob *j)
{
	compile_pool_submit(p->pool, &j->job);
	j->submitted = 1;
}

static void submit(struct pipeline *p, struct pjob *j, const struct evaluation *ev, size_t cand,
                   size_t sp, int sanitize, int background)
{
	unit_init(p, j, ev, cand, sp, sanitize);
	j->job.background = background;
	unit_submit(p, j);
}

/*
 * Every candidate at STAGE_COMPILE to the pool at once, plain builds first;
 * with a GPU and the dynamic alignment gate on, their sanitize builds after
 * them, as work ahead that yields to any build the GPU may be waiting for,
 * compiled while the GPU measures, ready when a candidate needs them. While
 * the elite has room, every correct candidate enters it and meets the gate:
 * that many candidates' sanitize builds follow their plain builds instead.
 */
static void stage_submit(struct pipeline *p, size_t n, struct evaluation *out,
                         const enum stage *stage)
{
	int san = p->nworkers && p->cfg->sanitize != SANITIZE_NEVER;
	int every = p->cfg->sanitize == SANITIZE_EVERY;
	size_t room = (size_t)p->cfg->elite > p->nranked ? (size_t)p->cfg->elite - p->nranked : 0;
	size_t i, sp;

	p->ngen_jobs = n * p->nspecs * 2;
	p->gen_jobs = xcalloc(p->ngen_jobs + 1, sizeof(*p->gen_jobs));
	p->gen_evals = out;
	p->gen_n = n;
	for (i = 0; i < n; i++) {
		for (sp = 0; stage[i] == STAGE_COMPILE && sp < p->nspecs; sp++)
			submit(p, gen_job(p, i, sp, 0), &out[i], i, sp, 0, 0);
		if (!san || every || !room || stage[i] != STAGE_COMPILE)
			continue;
		for (sp = 0; sp < p->nspecs; sp++)
			submit(p, gen_job(p, i, sp, 1), &out[i], i, sp, 1, 0);
		room--;
	}
	for (i = 0; san && i < n; i++)
		for (sp = 0; stage[i] == STAGE_COMPILE && sp < p->nspecs; sp++)
			if (!gen_job(p, i, sp, 1)->submitted)
				submit(p, gen_job(p, i, sp, 1), &out[i], i, sp, 1, !every);
}

/* Whether key was compiled ahead by a prefetch. */
static int pre_key_known(const struct pipeline *p, const char *key)
{
	size_t i;

	for (i = 0; i < p->npre_keys; i++)
		if (!strcmp(p->pre_keys[i], key))
			return 1;
	return 0;
}

/* Candidate i's plain builds, waited for, recorded and through the build gates. */
static int stage_builds(struct pipeline *p, int generation, size_t i, struct evaluation *ev,
                        enum stage *stage)
{
	struct verdicts vs = {0};
	int compiled = 1, r = 0;
	size_t sp, k;

	for (sp = 0; sp < p->nspecs; sp++) {
		struct pjob *j = gen_job(p, i, sp, 0);

		pool_wait(p, j);
		if (j->job.result.cached && pre_key_known(p, j->job.key))
			p->st.prefetch_used++;
		if (!r)
			r = db_build_record(p->db, ev->variant_id, j->job.key, p->specs[sp].key, 0,
			                    &j->job.result);
		checks_build(p->cfg, &ev->va, &p->specs[sp], &j->job.result, &vs);
	}
	for (k = 0; k < vs.n; k++)
		if (vs.v[k].gate == GATE_COMPILE && vs.v[k].outcome != VARIANT_OK)
			compiled = 0;
	p->st.compiled += compiled;
	reject_from(ev, &vs, 0);
	if (!r)
		r = db_begin(p->db);
	if (!r)
		r = record_verdicts(p, ev, &vs, 0);
	if (!r && ev->outcome != VARIANT_OK)
		r = record_eval(p, generation, ev);
	if (!r)
		r = db_commit(p->db);
	if (r)
		db_rollback(p->db);
	verdicts_release(&vs);
	if (r)
		return -1;
	if (ev->outcome != VARIANT_OK) {
		*stage = STAGE_DONE;
		count(p, ev);
	} else {
		*stage = STAGE_GPU;
	}
	return 0;
}

/* The cubin of candidate i's build of spec sp (sanitize or not), NULL if it failed. */
static char *gen_cubin(struct pipeline *p, size_t i, size_t sp, int sanitize)
{
	struct pjob *j = gen_job(p, i, sp, sanitize);

	if (!j->submitted)
		return NULL;
	pool_wait(p, j);
	return j->job.result.outcome == VARIANT_OK ? j->job.result.cubin_path : NULL;
}

/*
 * What the database knows of a candidate bound for the GPU: shapes measured
 * before (on this device) are applied, the rest are the task's. 1 when there
 * is GPU work to do, 0 when the database answered it all, -1 on an error.
 */
static int task_prepare(struct pipeline *p, size_t i, struct evaluation *ev, struct gpu_task *t)
{
	int any = 0;
	size_t s, sp;

	memset(t, 0, sizeof(*t));
	t->cand = i;
	t->va = ev->va;
	memcpy(t->hash, ev->hash, sizeof(t->hash));
	for (s = 0; s < TUNER_MAX_SHAPES; s++)
		t->known[s].median_us = t->known[s].ci_lo_us = t->known[s].ci_hi_us = NAN;
	for (s = 0; s < p->nshapes && ev->outcome == VARIANT_OK; s++) {
		struct db_measured m;
		int r = lookup(p, ev, s, &m);

		if (r < 0)
			return -1;
		if (r == 0) {
			t->missing[s] = any = 1;
			continue;
		}
		p->st.shapes_reused++;
		ev->remeasured++;
		apply_measured(ev, s, &m);
		if (s < TUNER_MAX_SHAPES)
			t->known[s] = ev->t[s];
		db_measured_release(&m);
	}
	if (ev->outcome != VARIANT_OK || !any)
		return 0;
	for (sp = 0; sp < p->nspecs; sp++) {
		t->cubins[sp] = gen_cubin(p, i, sp, 0);
		if (p->cfg->sanitize == SANITIZE_EVERY)
			t->san_cubins[sp] = gen_cubin(p, i, sp, 1);
	}
	return 1;
}

/* The dynamic alignment gate's row for a variant that passed it: what it checked, or that it could
 * not. */
static const char *sanitize_pass_reason(struct pipeline *p, const struct gpu_task *t)
{
	if (!t->sanitize_absent)
		return "no misaligned access";
	if (!p->san_absent_warned++)
		warning(
		    "%s does not include tuner_device.cuh: its accesses are not instrumented, and "
		    "the dynamic alignment gate does not apply (sanitize: never says so)",
		    p->cfg->fam.name);
	return "not checked: the kernel does not include tuner_device.cuh, whose accesses the gate "
	       "checks";
}

/* Store what a task found, in the main thread, in one transaction; then the verdict. */
static int task_commit(struct pipeline *p, int generation, struct evaluation *ev,
                       struct gpu_task *t)
{
	size_t s;
	int r = 0;

	p->st.gpu_busy += t->busy;
	p->st.gpu_timing += t->busy_time;
	if (t->error)
		return error("GPU evaluation of %s failed: %s", ev->hash, t->msg);
	if (t->sanitized)
		p->st.sanitized++;
	if (db_begin(p->db) < 0)
		return -1;
	/* a rejection is recorded with the verdict; a pass is a gate row of its own */
	if (t->sanitized && t->sanitize_passed)
		r = db_gate_record(p->db, p->run_id, ev->variant_id, gate_name(GATE_SANITIZE), NULL,
		                   VARIANT_OK, sanitize_pass_reason(p, t));
	for (s = 0; !r && s < p->nshapes; s++) {
		const struct worker_shape_result *sr = &t->res[s];

		if (t->have[s])
			r = store_shape(p, ev, s, (enum outcome)sr->outcome, sr->reason, sr->rel_l2,
			                sr->max_abs, sr);
	}
	if (!r && t->whole_failed)
		/* the whole job failed before any shape (a hang while loading, a dead worker) */
		r = store_shape(p, ev, t->whole_shape, (enum outcome)t->whole.outcome,
		                t->whole.reason, NAN, NAN, NULL);
	if (!r)
		r = db_commit(p->db);
	if (r) {
		db_rollback(p->db);
		return -1;
	}
	if (t->outcome != VARIANT_OK && ev->outcome == VARIANT_OK)
		set_reason(ev, t->outcome, t->gate, "%s", t->reason);
	return 0;
}

/* Everything this run already knows about a candidate (a resume): 1 answered, 0 not, -1 error. */
static int answer_from_run(struct pipeline *p, struct evaluation *ev)
{
	struct db_eval de;
	int r = db_eval_get(p->db, p->run_id, ev->variant_id, &de);
	size_t s;

	if (r <= 0)
		return r;
	ev->reused = 1;
	ev->outcome = de.outcome;
	ev->gate = GATE_CORRECT;
	snprintf(ev->reason, sizeof(ev->reason), "%s", de.reason ? de.reason : "");
	db_eval_release(&de);
	if (ev->outcome == VARIANT_OK && (p->nworkers || p->replay)) {
		for (s = 0; s < p->cfg->nshapes; s++) {
			struct db_measured m;

			r = lookup(p, ev, s, &m);
			if (r < 0)
				return -1;
			if (r == 0 || m.outcome != VARIANT_OK || isnan(m.median_us)) {
				if (r)
					db_measured_release(&m);
				return 0; /* not timed here (an earlier run without a GPU) */
			}
			apply_measured(ev, s, &m);
			db_measured_release(&m);
		}
		ev->timed = 1;
	}
	return 1;
}

/* Hash, store, static gates. Sets *stage. */
static int stage_static(struct pipeline *p, int generation, const struct candidate *c,
                        struct evaluation *ev, enum stage *stage)
{
	const struct config *cfg = p->cfg;
	struct verdicts vs = {0};
	char *params;
	int created, r;

	memset(ev, 0, sizeof(*ev));
	ev->va = c->va;
	ev->outcome = VARIANT_OK;
	*stage = STAGE_DONE;
	template_variant_hash(cfg, &c->va, ev->hash);
	params = space_format(&cfg->fam, &c->va);
	r = db_variant_upsert(p->db, ev->hash, cfg->fam.name, cfg->fam.source_hash, cfg->arch.name,
	                      params, p->options_text, &ev->variant_id, &created);
	free(params);
	if (r < 0)
		return -1;
	r = answer_from_run(p, ev);
	if (r < 0)
		return -1;
	if (r == 1) {
		maybe_baseline(p, ev);
		p->st.reused++;
		count(p, ev);
		return 0;
	}
	if (checks_static(cfg, &c->va, &vs) != VARIANT_OK) {
		reject_from(ev, &vs, 0);
		r = db_begin(p->db);
		if (!r)
			r = record_verdicts(p, ev, &vs, 0);
		if (!r)
			r = record_eval(p, generation, ev);
		if (!r)
			r = db_commit(p->db);
		if (r) {
			db_rollback(p->db);
		} else {
			count(p, ev);
		}
		verdicts_release(&vs);
		return r;
	}
	r = db_begin(p->db);
	if (!r)
		r = record_verdicts(p, ev, &vs, 0);
	if (!r)
		r = db_commit(p->db);
	if (r)
		db_rollback(p->db);
	verdicts_release(&vs);
	*stage = p->replay ? STAGE_GPU : STAGE_COMPILE;
	return r;
}

static int elite_sanitize(struct pipeline *p, struct gpu_stage *g, size_t i, struct evaluation *ev);

/* A tools task's verdict, recorded: a gate row, and ev rejected when the tool found something. */
static int tools_verdict(struct pipeline *p, struct evaluation *ev, const struct gpu_task *t)
{
	if (t->tools_absent) {
		if (!p->tools_warned++)
			warning("compute-sanitizer not found ($TUNER_COMPUTE_SANITIZER, the CUDA "
			        "toolkit's bin, PATH): its gate does not run");
		return db_gate_record(p->db, p->run_id, ev->variant_id, "tools", NULL, VARIANT_OK,
		                      "not run: compute-sanitizer not found");
	}
	if (t->outcome != VARIANT_OK) {
		set_reason(ev, t->outcome, t->gate, "%s", t->reason);
		ev->timed = ev->ranked = 0;
	} else if (t->tools_unfinished[0]) {
		warning("%.12s stays unchecked: %s", ev->hash, t->tools_unfinished);
		return db_gate_record(p->db, p->run_id, ev->variant_id, "tools", NULL, VARIANT_OK,
		                      t->tools_unfinished);
	}
	return db_gate_record(p->db, p->run_id, ev->variant_id, "tools", NULL, ev->outcome,
	                      ev->outcome == VARIANT_OK
	                          ? "memcheck, racecheck and synccheck found nothing"
	                          : ev->reason);
}

/* The gates an elite newcomer meets before it counts: alignment, then compute-sanitizer. */
static int elite_gates(struct pipeline *p, struct gpu_stage *g, size_t i, struct evaluation *ev)
{
	int is_new = p->admits && p->admits(p->admits_ctx, ev), r = 0;
	struct gpu_task *t;
	size_t sp;

	if (p->cfg->sanitize == SANITIZE_ELITE && is_new && elite_sanitize(p, g, i, ev) < 0)
		return -1;
	if (ev->outcome != VARIANT_OK ||
	    !(p->cfg->tools == TOOLS_EVERY || (p->cfg->tools == TOOLS_ELITE && is_new)))
		return 0;
	t = xcalloc(1, sizeof(*t));
	t->cand = i;
	t->va = ev->va;
	t->tools_only = 1;
	memcpy(t->hash, ev->hash, sizeof(t->hash));
	for (sp = 0; sp < p->nspecs; sp++)
		t->cubins[sp] = gen_cubin(p, i, sp, 0);
	stage_queue(g, t);
	stage_wait(g, t);
	p->st.gpu_busy += t->busy;
	if (t->error)
		r = error("compute-sanitizer's gate on %s failed: %s", ev->hash, t->msg);
	if (!r)
		r = tools_verdict(p, ev, t);
	free(t);
	return r;
}

/*
 * The dynamic alignment gate for candidate i, about to enter the elite: its
 * sanitize builds (compiled ahead) run once per shape on a worker, through
 * the GPU stage's queue. 0 (ev rejected or not), or -1 on an error.
 */
static int elite_sanitize(struct pipeline *p, struct gpu_stage *g, size_t i, struct evaluation *ev)
{
	struct gpu_task *t = xcalloc(1, sizeof(*t));
	double t0 = now_seconds();
	size_t sp;
	int r = 0;

	t->cand = i;
	t->va = ev->va;
	memcpy(t->hash, ev->hash, sizeof(t->hash));
	t->sanitize_only = 1;
	stage_hold(g, HOLD_SANITIZE_BUILD);
	for (sp = 0; sp < p->nspecs && !r; sp++) {
		struct pjob *j = gen_job(p, i, sp, 1);

		if (!j->submitted) /* no GPU when the generation was compiled: cannot happen */
			BUG("no sanitize build of %s", ev->hash);
		promote(p, j);
		pool_wait(p, j);
		r = db_build_record(p->db, ev->variant_id, j->job.key, p->specs[sp].key, 1,
		                    &j->job.result);
		t->san_cubins[sp] =
		    j->job.result.outcome == VARIANT_OK ? j->job.result.cubin_path : NULL;
	}
	p->st.wall_sanitize += now_seconds() - t0;
	if (!r) {
		stage_queue(g, t);
		stage_wait(g, t);
		stage_hold(g, HOLD_COMMIT);
		p->st.gpu_busy += t->busy;
		/* its own run, not the tasks queued ahead of it */
		p->st.wall_sanitize += t->busy;
		if (t->error)
			r = error("the dynamic alignment gate on %s failed: %s", ev->hash, t->msg);
	}
	if (!r) {
		p->st.sanitized++;
		if (t->outcome != VARIANT_OK) {
			set_reason(ev, t->outcome, t->gate, "%s", t->reason);
			ev->timed = ev->ranked = 0;
		}
		r = db_gate_record(
		    p->db, p->run_id, ev->variant_id, gate_name(GATE_SANITIZE), NULL, ev->outcome,
		    ev->outcome == VARIANT_OK ? sanitize_pass_reason(p, t) : ev->reason);
	}
	free(t);
	return r;
}

/* Whether ev meets the elite's gates (sanitize or tools: elite) as a newcomer to the elite. */
static int newcomer(struct pipeline *p, const struct evaluation *ev)
{
	return (p->cfg->sanitize == SANITIZE_ELITE || p->cfg->tools == TOOLS_ELITE) && p->admits &&
	       p->admits(p->admits_ctx, ev);
}

/*
 * Whether candidate i's verdict would wait on sanitize builds not yet done
 * (an elite newcomer's): they are moved ahead in the pool, and the caller
 * dispatches more to the GPU before it comes back, instead of leaving the GPU
 * waiting. Nothing is decided here: the verdict is stage_verdict's.
 */
static int sanitize_pending(struct pipeline *p, size_t i, struct evaluation *ev)
{
	int pending = 0;
	size_t sp;

	if (p->cfg->sanitize != SANITIZE_ELITE || !p->nworkers || ev->reused ||
	    ev->outcome != VARIANT_OK)
		return 0;
	ev->timed = 1;
	maybe_baseline(p, ev);
	rank(p, ev);
	if (!ev->ranked || !newcomer(p, ev))
		return 0;
	pool_drain(p);
	for (sp = 0; sp < p->nspecs; sp++) {
		struct pjob *j = gen_job(p, i, sp, 1);

		if (j->submitted && !j->done) {
			promote(p, j);
			pending = 1;
		}
	}
	return pending;
}

/* The GPU's verdict on a candidate past every static and build gate, and its fitness. */
static int stage_verdict(struct pipeline *p, struct gpu_stage *g, int generation, size_t i,
                         struct evaluation *ev)
{
	ev->timed = ev->outcome == VARIANT_OK && (p->nworkers || p->replay);
	if (ev->outcome != VARIANT_OK && (p->nworkers || p->replay) &&
	    (!ev->remeasured || ev->gate == GATE_RACE) && ev->outcome != REJECT_UNMEASURED) {
		/* the GPU's verdict is a gate row too, so 'show' can explain it */
		if (db_gate_record(p->db, p->run_id, ev->variant_id, gate_name(ev->gate), NULL,
		                   ev->outcome, ev->reason) < 0)
			return -1;
	}
	maybe_baseline(p, ev);
	rank(p, ev);
	/* decided once: an elite newcomer meets the dynamic alignment gate before it counts */
	if (p->nworkers && ev->ranked && !ev->reused &&
	    (p->cfg->tools == TOOLS_EVERY || newcomer(p, ev)) && elite_gates(p, g, i, ev) < 0)
		return -1;
	return finish(p, generation, ev);
}

/* ------------------------------------------------------------- prefetch */

/* va with param i moved d steps in its domain: 1, or 0 when that leaves the domain. */
static int step_param(const struct family *fam, struct variant *va, size_t i, int d)
{
	long long at = space_value_index(&fam->params[i], va->v[i]);

	if (at < 0)
		return 0;
	at += d;
	if (at < 0 || at >= (long long)fam->params[i].nvalues)
		return 0;
	va->v[i] = fam->params[i].values[at];
	return 1;
}

/*
 * The best variant's neighbours one domain step away (in one param), then
 * two (in one or two params): what evolve proposes first (the incumbent's
 * neighbourhood, nearest first) and evolve1 too (the pool's neighbours). At
 * most max, into out; returns how many.
 */
static size_t neighbours(const struct pipeline *p, struct variant *out, size_t max)
{
	const struct family *fam = &p->cfg->fam;
	static const int dir[2] = {-1, 1};
	size_t i, j, a, b, n = 0;
	struct variant v;

	for (i = 0; i < fam->nparams && n < max; i++)
		for (a = 0; a < 2 && n < max; a++) {
			v = p->best_va;
			if (step_param(fam, &v, i, dir[a]))
				out[n++] = v;
		}
	for (i = 0; i < fam->nparams && n < max; i++)
		for (a = 0; a < 2 && n < max; a++) {
			v = p->best_va;
			if (step_param(fam, &v, i, 2 * dir[a]))
				out[n++] = v;
			for (j = i + 1; j < fam->nparams && n < max; j++)
				for (b = 0; b < 2 && n < max; b++) {
					v = p->best_va;
					if (step_param(fam, &v, i, dir[a]) &&
					    step_param(fam, &v, j, dir[b]))
						out[n++] = v;
				}
		}
	return n;
}

void pipeline_prefetch_for(struct pipeline *p, const char *strategy)
{
	const char *env = getenv("TUNER_PREFETCH");

	p->prefetch = search_strategy_local(strategy) && !(env && !strcmp(env, "0"));
}

/* Whether a candidate of the generation in hand has this hash. */
static int in_generation(const struct pipeline *p, const char *hash)
{
	size_t i;

	for (i = 0; i < p->gen_n; i++)
		if (!strcmp(p->gen_evals[i].hash, hash))
			return 1;
	return 0;
}

/* Whether this run has judged the variant (it is not proposed again): 1, 0, or -1 on an error. */
static int run_judged(struct pipeline *p, const char *hash)
{
	struct db_eval de;
	long long vid;
	int r = db_variant_find(p->db, hash, &vid);

	if (r <= 0)
		return r;
	r = db_eval_get(p->db, p->run_id, vid, &de);
	if (r == 1)
		db_eval_release(&de);
	return r;
}

/*
 * Compile ahead, in the background (only while the pool has nothing the GPU
 * waits for), the plain builds of up to max unseen neighbours of the best
 * variant that pass the static gates, for the next generation to find in the
 * cache. The last round's units not started are withdrawn first (the best
 * has moved). Nothing here is recorded: a prefetch changes wall time only.
 */
static void prefetch(struct pipeline *p, size_t max)
{
	struct variant *nb;
	struct evaluation ev;
	struct verdicts vs;
	size_t n, i, sp, k = 0;

	if (!p->prefetch || !p->have_best || !p->nworkers || p->replay || !max)
		return;
	retire(p, p->pre_jobs, p->npre_jobs);
	nb = xcalloc(4 * max + 1, sizeof(*nb));
	n = neighbours(p, nb, 4 * max);
	p->pre_jobs = xcalloc(max * p->nspecs + 1, sizeof(*p->pre_jobs));
	p->npre_jobs = max * p->nspecs;
	for (i = 0; i < n && k < max; i++) {
		memset(&vs, 0, sizeof(vs));
		if (checks_static(p->cfg, &nb[i], &vs) != VARIANT_OK) {
			verdicts_release(&vs);
			continue;
		}
		verdicts_release(&vs);
		memset(&ev, 0, sizeof(ev));
		ev.va = nb[i];
		template_variant_hash(p->cfg, &nb[i], ev.hash);
		if (in_generation(p, ev.hash) || run_judged(p, ev.hash) != 0)
			continue;
		for (sp = 0; sp < p->nspecs; sp++) {
			struct pjob *j = &p->pre_jobs[k * p->nspecs + sp];

			unit_init(p, j, &ev, k, sp, 0);
			j->kind = PJOB_PREFETCH;
			j->job.background = 1;
			unit_submit(p, j);
			if (pre_key_known(p, j->job.key))
				continue;
			ALLOC_GROW(p->pre_keys, p->npre_keys + 1, p->pre_keys_alloc);
			memcpy(p->pre_keys[p->npre_keys++], j->job.key, HASH_HEX_LEN);
		}
		k++;
	}
	free(nb);
}

/*
 * Candidate i's verdict is committed: its sanitize builds not started are of
 * no more use, and it may be the new best.
 */
static void committed_one(struct pipeline *p, size_t i, const struct evaluation *ev)
{
	size_t sp;

	for (sp = 0; p->gen_jobs && sp < p->nspecs; sp++)
		withdraw(p, gen_job(p, i, sp, 1));
	p->nranked += ev->ranked;
	note_best(p, ev);
}

int pipeline_evaluate(struct pipeline *p, int generation, const struct candidate *cands, size_t n,
                      struct evaluation *out, size_t *done, stop_flag *stop)
{
	enum stage *stage = xcalloc(n + 1, sizeof(*stage));
	struct gpu_task **tasks = xcalloc(n + 1, sizeof(*tasks));
	unsigned char *stored = xcalloc(n + 1, 1); /* tasks[i]'s results are in the database */
	struct gpu_stage g;
	size_t i, committed = 0, dispatched = 0;
	double t0 = now_seconds();
	unsigned long prefetched_at = 0;
	int r = 0;

	*done = 0;
	/* the GPU had nothing since the last generation (the search, its observations) */
	if (p->eval_end > 0)
		p->st.idle_between += (t0 - p->eval_end) * (double)p->nworkers;
	gen_jobs_release(p);
	for (i = 0; !r && i < n; i++)
		r = stage_static(p, generation, &cands[i], &out[i], &stage[i]);
	if (!r)
		stage_submit(p, n, out, stage);
	p->st.idle_between += (now_seconds() - t0) * (double)p->nworkers;
	stage_start(&g, p);
	/*
	 * The pool compiles ahead, behind this generation's builds, what the next
	 * generation is likely to need; again whenever the best moves.
	 */
	if (!r)
		prefetch(p, n);
	prefetched_at = p->best_moves;
	/*
	 * Candidates in order: each waits for its own builds only, so the GPU
	 * starts on the first while the pool compiles the rest; verdicts are
	 * committed in candidate order whichever worker finished first.
	 */
	for (i = 0; !r && i < n && !*stop; i++) {
		stage_hold(&g, HOLD_BUILD);
		if (stage[i] == STAGE_COMPILE)
			r = stage_builds(p, generation, i, &out[i], &stage[i]);
		if (!r && stage[i] == STAGE_GPU) {
			if (p->replay) {
				r = replay_eval(p, &out[i]);
			} else if (p->nworkers) {
				struct gpu_task *t = xmalloc(sizeof(*t));

				r = task_prepare(p, i, &out[i], t);
				if (r > 0) {
					p->st.measured++;
					tasks[i] = t;
					stage_queue(&g, t);
					r = 0;
				} else {
					free(t);
				}
			} else {
				set_reason(&out[i], VARIANT_OK, GATE_CORRECT,
				           "compiled; not timed (no GPU)");
			}
		}
		dispatched = i + 1;
		stage_hold(&g, HOLD_COMMIT);
		if (!r && prefetched_at != p->best_moves) {
			prefetch(p, n);
			prefetched_at = p->best_moves;
		}
		/* commit what is finished, in order, while the pool and the GPU work on */
		while (!r && committed < dispatched &&
		       (!tasks[committed] || stage_finished(&g, tasks[committed]))) {
			if (tasks[committed] && !stored[committed]) {
				r = task_commit(p, generation, &out[committed], tasks[committed]);
				stored[committed] = 1;
			}
			/* the verdict waits on its sanitize builds: dispatch more first */
			if (!r && stage[committed] == STAGE_GPU && i + 1 < n &&
			    sanitize_pending(p, committed, &out[committed]))
				break;
			if (!r && stage[committed] == STAGE_GPU)
				r = stage_verdict(p, &g, generation, committed, &out[committed]);
			committed_one(p, committed, &out[committed]);
			committed++;
		}
	}
	while (!r && committed < dispatched) {
		if (!*stop && prefetched_at != p->best_moves) {
			prefetch(p, n);
			prefetched_at = p->best_moves;
		}
		if (tasks[committed] && !stored[committed]) {
			if (p->busy)
				p->busy(p->busy_ctx, "measuring");
			stage_wait(&g, tasks[committed]);
			r = task_commit(p, generation, &out[committed], tasks[committed]);
		}
		if (!r && stage[committed] == STAGE_GPU)
			r = stage_verdict(p, &g, generation, committed, &out[committed]);
		committed_one(p, committed, &out[committed]);
		committed++;
	}
	stage_stop(p, &g);
	*done = r ? 0 : committed;
	/* a reused variant can precede the baseline's evaluation in the generation: rank it now */
	for (i = 0; !r && i < *done; i++) {
		if (out[i].reused && out[i].timed && !out[i].ranked)
			rank(p, &out[i]);
		note_best(p, &out[i]);
	}
	for (i = 0; i < n; i++) {
		if (tasks[i]) {
			task_release(tasks[i]);
			free(tasks[i]);
		}
	}
	p->eval_end = now_seconds();
	p->st.wall_gpu += p->eval_end - t0;
	free(stored);
	free(tasks);
	free(stage);
	return r;
}

/* A final-gate task: t's builds (the cache's, normally). 0, or -1 after error(). */
static int tools_task_prepare(struct pipeline *p, struct evaluation *ev, struct gpu_task *t)
{
	size_t sp;

	t->va = ev->va;
	t->tools_only = 1;
	memcpy(t->hash, ev->hash, sizeof(t->hash));
	for (sp = 0; sp < p->nspecs; sp++) {
		struct compile_job one;
		int r = 0;

		memset(&one, 0, sizeof(one));
		template_build_key(ev->hash, &p->specs[sp], 0, one.key);
		one.source = template_render(p->cfg, &ev->va, &p->specs[sp], 0);
		one.name = p->cfg->fam.source_path;
		one.entry = p->cfg->fam.launches[0].kernel;
		one.options = p->options;
		one.noptions = p->noptions;
		compile_one(p, &one);
		free(one.source);
		if (one.result.outcome == VARIANT_OK)
			t->cubins[sp] = xstrdup(one.result.cubin_path);
		else
			r = error("%s no longer compiles: %s", ev->hash, one.result.log);
		build_release(&one.result);
		if (r < 0)
			return -1;
	}
	return 0;
}

struct tools_gate_run {
	const struct pipeline *p;
	struct gpu_task *t;
	int device, r, threaded;
	pthread_t thread;
};

static void *tools_gate_main(void *arg)
{
	struct tools_gate_run *gr = arg;

	gr->r = task_tools(gr->p, gr->t, gr->device);
	return NULL;
}

int pipeline_tools_gate(struct pipeline *p, struct evaluation *evs, size_t n)
{
	struct gpu_task *ts;
	struct tools_gate_run *runs;
	size_t i, sp, started = 0;
	double t0;
	int r = 0;

	if (!p->nworkers || !n)
		return 0;
	ts = xcalloc(n, sizeof(*ts));
	runs = xcalloc(n, sizeof(*runs));
	for (i = 0; i < n && !r; i++)
		r = tools_task_prepare(p, &evs[i], &ts[i]);
	t0 = now_seconds();
	for (i = 0; i < n && !r; i++, started++) {
		runs[i].p = p;
		runs[i].t = &ts[i];
		runs[i].device = worker_ordinal(p->workers[i % p->nworkers]);
		runs[i].threaded =
		    !pthread_create(&runs[i].thread, NULL, tools_gate_main, &runs[i]);
		if (!runs[i].threaded)
			tools_gate_main(&runs[i]);
	}
	for (i = 0; i < started; i++)
		if (runs[i].threaded)
			pthread_join(runs[i].thread, NULL);
	p->st.gpu_busy += started ? now_seconds() - t0 : 0;
	for (i = 0; i < started && !r; i++) {
		if (runs[i].r < 0)
			r = error("compute-sanitizer's gate on %s failed: %s", evs[i].hash,
			          ts[i].msg);
		else
			r = tools_verdict(p, &evs[i], &ts[i]);
	}
	for (i = 0; i < n; i++)
		for (sp = 0; sp < p->nspecs; sp++)
			free(ts[i].cubins[sp]);
	free(runs);
	free(ts);
	return r;
}
