/* The evaluation pipeline: candidates through every gate, the compile pool and the GPU (or a
 * replay). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/measure.h"
#include "tuner/pipeline.h"
#include "tuner/template.h"
#include "tuner/worker.h"

#define BOOTSTRAP_RESAMPLES 2000

/* Where a candidate stands within one pipeline_evaluate call. */
enum stage { STAGE_DONE, STAGE_COMPILE, STAGE_GPU };

/* ------------------------------------------------------------- lifetime */

void pipeline_shape_dims(const struct config *cfg, const struct shape *sh, char *out, size_t len)
{
	const struct problem *pr = cfg->fam.problem;
	size_t i, at = 0;

	*out = '\0';
	for (i = 0; pr && i < pr->ndims && at < len; i++)
		at += (size_t)snprintf(out + at, len - at, "%s%s=%lld", i ? "," : "", pr->dims[i],
		                       sh->dims[i]);
}

static char *join_options(char **opts, size_t n)
{
	struct strbuf sb = STRBUF_INIT;
	size_t i;

	sb_adds(&sb, "");
	for (i = 0; i < n; i++) {
		/* the include path is where this checkout lives, not part of the variant */
		if (!strncmp(opts[i], "-I", 2))
			continue;
		sb_addf(&sb, "%s%s", sb.len ? " " : "", opts[i]);
	}
	return sb_detach(&sb);
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
	p->options = template_options(cfg, 0, &p->noptions);
	p->san_options = template_options(cfg, 1, &p->nsan_options);
	p->options_text = join_options(p->options, p->noptions);
	p->nspecs = space_specs(cfg, p->specs, p->shape_spec);
	for (i = 0; i < cfg->nshapes; i++)
		pipeline_shape_dims(cfg, &cfg->shapes[i], p->shape_dims[i],
		                    sizeof(p->shape_dims[i]));
	return 0;
}

void pipeline_release(struct pipeline *p)
{
	if (p->pool)
		compile_pool_free(p->pool);
	template_options_free(p->options, p->noptions);
	template_options_free(p->san_options, p->nsan_options);
	free(p->options_text);
	free(p->ref_cubin);
	free(p->ref_kernel);
	memset(p, 0, sizeof(*p));
}

/* Compile one unit synchronously through the pool; the caller releases job->result. */
static int compile_one(struct pipeline *p, struct compile_job *job)
{
	double t0 = now_seconds();

	compile_pool_submit(p->pool, job);
	if (compile_pool_next(p->pool) != job)
		BUG("compile pool returned another job");
	p->st.wall_compile += now_seconds() - t0;
	return 0;
}

int pipeline_attach_worker(struct pipeline *p, struct worker *w, const char *device)
{
	const struct problem *pr = p->cfg->fam.problem;
	char *dir, *kdir, *path, *src = NULL, *base, *dot;
	struct compile_job job;
	struct hasher *h;
	size_t len, i;

	dir = path_dirname(p->cfg->fam.path);
	kdir = path_join(dir, "..");
	path = path_join(kdir, pr->reference);
	free(dir);
	free(kdir);
	if (read_file(path, &src, &len) < 0) {
		error("cannot read the reference kernel '%s'", path);
		free(path);
		return -1;
	}
	base = strrchr(path, '/');
	base = xstrdup(base ? base + 1 : path);
	if ((dot = strrchr(base, '.')))
		*dot = '\0';
	memset(&job, 0, sizeof(job));
	h = hasher_new();
	hasher_adds(h, "reference");
	hasher_adds(h, src);
	for (i = 0; i < p->noptions; i++)
		if (strncmp(p->options[i], "-I", 2))
			hasher_adds(h, p->options[i]);
	hasher_final_hex(h, job.key);
	job.source = src;
	job.name = path;
	job.entry = base;
	job.options = p->options;
	job.noptions = p->noptions;
	compile_one(p, &job);
	if (job.result.outcome != VARIANT_OK) {
		error("the reference kernel '%s' does not compile:\n%s", path,
		      job.result.log ? job.result.log : "");
		build_release(&job.result);
		free(src);
		free(path);
		free(base);
		return -1;
	}
	p->ref_cubin = xstrdup(job.result.cubin_path);
	p->ref_kernel = base;
	build_release(&job.result);
	free(src);
	free(path);
	p->worker = w;
	snprintf(p->device, sizeof(p->device), "%s", device);
	return 0;
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

static double shape_flops(const struct config *cfg, size_t s)
{
	const struct problem *pr = cfg->fam.problem;

	return pr && pr->flops ? pr->flops(cfg->shapes[s].dims) : 0;
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
	ev->t[s].median_us = m->median_us;
	ev->t[s].ci_lo_us = m->ci_lo_us;
	ev->t[s].ci_hi_us = m->ci_hi_us;
	ev->t[s].tflops = m->tflops;
	return 0;
}

/* Store one shape's result from the worker (or the replay) and apply it. */
static int store_shape(struct pipeline *p, struct evaluation *ev, size_t s, enum outcome o,
                       const char *reason, double rel_l2, double max_abs, const double *samples,
                       size_t nsamples)
{
	struct db_measurement m;
	struct db_measured got;
	unsigned long long seed;

	memset(&m, 0, sizeof(m));
	memset(&got, 0, sizeof(got));
	m.device = p->device;
	m.shape = p->cfg->shapes[s].name;
	m.shape_dims = p->shape_dims[s];
	m.outcome = o;
	m.reason = reason;
	m.rel_l2 = rel_l2;
	m.max_abs = max_abs;
	m.median_us = m.ci_lo_us = m.ci_hi_us = m.tflops = NAN;
	m.samples = samples;
	m.nsamples = nsamples;
	if (o == VARIANT_OK && nsamples) {
		/* the interval's resampling is seeded by the variant and shape: reproducible */
		seed = strtoull(ev->hash + 16, NULL, 16) ^ (unsigned long long)(s + 1);
		m.median_us = measure_median(samples, nsamples);
		if (measure_bootstrap_ci(samples, nsamples, BOOTSTRAP_RESAMPLES, seed, &m.ci_lo_us,
		                         &m.ci_hi_us) < 0)
			return -1;
		m.tflops = shape_flops(p->cfg, s) / (m.median_us * 1e-6) / 1e12;
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

/* Fill a job's shape: dims, launch geometry and dynamic shared memory from the sidecar. */
static int job_shape(struct pipeline *p, const struct evaluation *ev, size_t s,
                     struct worker_shape_job *js)
{
	const struct config *cfg = p->cfg;
	const struct family *fam = &cfg->fam;
	const struct shape *sh = &cfg->shapes[s];
	struct space_scope sc;
	struct expr_err err;
	long long v;
	size_t d;

	memset(js, 0, sizeof(*js));
	snprintf(js->name, sizeof(js->name), "%s", sh->name);
	for (d = 0; d < TUNER_MAX_DIMS && d < WORKER_MAX_DIMS; d++)
		js->dims[d] = sh->dims[d];
	space_scope_init(&sc, cfg, &ev->va, sh);
	for (d = 0; d < 3; d++) {
		if (expr_eval(fam->grid[d], &sc.scope, &v, &err) < 0 || v <= 0)
			return error("%s: launch grid[%zu] '%s' on shape '%s': %s", fam->path, d,
			             expr_text(fam->grid[d]), sh->name,
			             v <= 0 ? "not positive" : err.msg);
		js->grid[d] = (unsigned)v;
		if (expr_eval(fam->block[d], &sc.scope, &v, &err) < 0 || v <= 0)
			return error("%s: launch block[%zu] '%s' on shape '%s': %s", fam->path, d,
			             expr_text(fam->block[d]), sh->name,
			             v <= 0 ? "not positive" : err.msg);
		js->block[d] = (unsigned)v;
	}
	if (expr_eval(fam->smem_bytes, &sc.scope, &v, &err) < 0)
		return error("%s: smem_bytes on shape '%s': %s", fam->path, sh->name, err.msg);
	js->smem = (unsigned)v;
	return 0;
}

static void job_init(struct pipeline *p, struct worker_job *job)
{
	const struct config *cfg = p->cfg;

	memset(job, 0, sizeof(*job));
	job->kernel = cfg->fam.kernel;
	job->problem = cfg->fam.problem->name;
	job->ref_cubin_path = p->ref_cubin;
	job->ref_kernel = p->ref_kernel;
	job->rel_l2 = cfg->rel_l2;
	job->max_abs = cfg->max_abs;
	job->check_seeds = cfg->check_seeds;
	job->seed = cfg->seed;
	job->warmup = cfg->warmup;
	job->repeats = cfg->repeats;
	job->launches = cfg->launches;
	job->l2_hot = cfg->l2 == L2_HOT;
	job->timeout_s = cfg->timeout_s;
	job->time_it = 1;
}

/* The TUNER_SANITIZE build of one spec, compiled (or found in the cache) and recorded. */
static int sanitize_build(struct pipeline *p, const struct evaluation *ev, size_t sp,
                          struct build *out)
{
	struct compile_job job;

	memset(&job, 0, sizeof(job));
	template_build_key(ev->hash, &p->specs[sp], 1, job.key);
	job.source = template_render(p->cfg, &ev->va, &p->specs[sp], 1);
	job.name = p->cfg->fam.source_path;
	job.entry = p->cfg->fam.kernel;
	job.options = p->san_options;
	job.noptions = p->nsan_options;
	compile_one(p, &job);
	free(job.source);
	*out = job.result;
	return db_build_record(p->db, ev->variant_id, job.key, p->specs[sp].key, 1, out);
}

/*
 * Check and time the shapes of one spec that the database has no result for,
 * with the cubin the compile stage built. Returns 0 (verdicts applied to ev),
 * or -1 when the evaluation failed.
 */
static int measure_spec(struct pipeline *p, struct evaluation *ev, size_t sp, const int *missing,
                        const char *cubin)
{
	struct worker_job job;
	struct worker_result res;
	size_t s, map[WORKER_MAX_SHAPES], i;
	int r = 0;

	job_init(p, &job);
	for (s = 0; s < p->cfg->nshapes; s++) {
		if (p->shape_spec[s] != sp || !missing[s])
			continue;
		if (job.nshapes == WORKER_MAX_SHAPES)
			BUG("more than %d shapes in one job", WORKER_MAX_SHAPES);
		if (job_shape(p, ev, s, &job.shapes[job.nshapes]) < 0)
			return -1;
		map[job.nshapes++] = s;
	}
	if (!job.nshapes)
		return 0;
	if (!cubin)
		BUG("variant %s reached the GPU without a cubin for '%s'", ev->hash,
		    p->specs[sp].key);
	job.cubin_path = cubin;
	memset(&res, 0, sizeof(res));
	if (worker_eval(p->worker, &job, &res) < 0) {
		worker_result_release(&res);
		return -1;
	}
	if (db_begin(p->db) < 0)
		r = -1;
	for (i = 0; !r && i < res.nshapes && i < job.nshapes; i++) {
		const struct worker_shape_result *sr = &res.shapes[i];

		r = store_shape(p, ev, map[i], (enum outcome)sr->outcome, sr->reason, sr->rel_l2,
		                sr->max_abs, sr->samples_us, sr->nsamples);
	}
	if (!r && res.outcome != VARIANT_OK && res.nshapes == 0)
		/* the whole job failed before any shape (a hang while loading, a dead worker) */
		r = store_shape(p, ev, map[0], (enum outcome)res.outcome, res.reason, NAN, NAN,
		                NULL, 0);
	if (!r)
		r = db_commit(p->db);
	if (r)
		db_rollback(p->db);
	worker_result_release(&res);
	return r;
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
	size_t s;
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
	for (s = 0; s < p->cfg->nshapes && ev->outcome == VARIANT_OK; s++) {
		struct db_measured m;

		r = db_measure_lookup(p->db, ev->variant_id, p->device, p->shape_dims[s], &m);
		if (r == 1) {
			p->st.shapes_reused++;
			apply_measured(ev, s, &m);
			db_measured_release(&m);
			continue;
		}
		if (r == 0)
			r = db_measure_lookup_params(p->replay, &key, p->device, p->shape_dims[s],
			                             &m);
		if (r == 0) {
			set_reason(ev, REJECT_UNMEASURED, GATE_CORRECT,
			           "shape '%s': not measured in the recording '%s'",
			           p->cfg->shapes[s].name, p->replay_path);
			break;
		}
		if (r == 1) {
			ev->remeasured++;
			r = replay_store(p, ev, s, &m);
			db_measured_release(&m);
		}
		if (r < 0) {
			db_rollback(p->db);
			goto fail;
		}
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

/*
 * Check and time one candidate on the GPU, shapes already measured answered
 * from the database; cubins[sp] is its build of spec sp.
 */
static int gpu_eval(struct pipeline *p, struct evaluation *ev, char *const *cubins)
{
	int missing[TUNER_MAX_SHAPES] = {0}, any = 0;
	size_t s, sp;
	double t0 = now_seconds();

	for (s = 0; s < p->cfg->nshapes && ev->outcome == VARIANT_OK; s++) {
		struct db_measured m;
		int r = lookup(p, ev, s, &m);

		if (r < 0)
			return -1;
		if (r == 0) {
			missing[s] = any = 1;
			continue;
		}
		p->st.shapes_reused++;
		ev->remeasured++;
		apply_measured(ev, s, &m);
		db_measured_release(&m);
	}
	if (ev->outcome != VARIANT_OK)
		return 0;
	if (any && p->cfg->sanitize == SANITIZE_EVERY) {
		if (pipeline_sanitize(p, -1, ev) < 0)
			return -1;
		if (ev->outcome != VARIANT_OK)
			return 0;
	}
	if (any)
		p->st.measured++;
	for (sp = 0; any && sp < p->nspecs && ev->outcome == VARIANT_OK; sp++)
		if (measure_spec(p, ev, sp, missing, cubins[sp]) < 0)
			return -1;
	p->st.wall_gpu += now_seconds() - t0;
	ev->timed = ev->outcome == VARIANT_OK;
	return 0;
}

/* ------------------------------------------------------------ the stages */

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
	if (ev->outcome == VARIANT_OK && (p->worker || p->replay)) {
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

/*
 * Compile every spec of every candidate at stage COMPILE in parallel; build
 * gates. The cubin of candidate i's spec sp goes to cubins[i * nspecs + sp].
 */
static int stage_compile(struct pipeline *p, int generation, size_t n, struct evaluation *out,
                         enum stage *stage, char **cubins)
{
	struct compile_job *jobs;
	struct verdicts *vs;
	size_t i, sp, njobs = 0, k;
	double t0 = now_seconds();
	int r = 0;

	jobs = xcalloc(n * p->nspecs + 1, sizeof(*jobs));
	vs = xcalloc(n + 1, sizeof(*vs));
	for (i = 0; i < n; i++) {
		if (stage[i] != STAGE_COMPILE)
			continue;
		for (sp = 0; sp < p->nspecs; sp++) {
			struct compile_job *j = &jobs[njobs++];

			template_build_key(out[i].hash, &p->specs[sp], 0, j->key);
			j->source = template_render(p->cfg, &out[i].va, &p->specs[sp], 0);
			j->name = p->cfg->fam.source_path;
			j->entry = p->cfg->fam.kernel;
			j->options = p->options;
			j->noptions = p->noptions;
			j->user = (void *)(i * TUNER_MAX_SHAPES + sp + 1);
			compile_pool_submit(p->pool, j);
		}
	}
	for (k = 0; k < njobs; k++) {
		struct compile_job *j = compile_pool_next(p->pool);
		size_t tag = (size_t)j->user - 1;

		i = tag / TUNER_MAX_SHAPES;
		sp = tag % TUNER_MAX_SHAPES;
		p->st.builds++;
		if (j->result.cached)
			p->st.builds_cached++;
		else
			p->st.compile_seconds += j->result.seconds;
		if (!r)
			r = db_build_record(p->db, out[i].variant_id, j->key, p->specs[sp].key, 0,
			                    &j->result);
		checks_build(p->cfg, &out[i].va, &p->specs[sp], &j->result, &vs[i]);
		cubins[i * p->nspecs + sp] = j->result.cubin_path; /* the GPU stage's now */
		j->result.cubin_path = NULL;
	}
	p->st.wall_compile += now_seconds() - t0;
	/* verdicts in candidate order, so the database reads the same whatever finished first */
	for (i = 0; !r && i < n; i++) {
		int compiled = 1;

		if (stage[i] != STAGE_COMPILE)
			continue;
		for (k = 0; k < vs[i].n; k++)
			if (vs[i].v[k].gate == GATE_COMPILE && vs[i].v[k].outcome != VARIANT_OK)
				compiled = 0;
		p->st.compiled += compiled;
		reject_from(&out[i], &vs[i], 0);
		r = db_begin(p->db);
		if (!r)
			r = record_verdicts(p, &out[i], &vs[i], 0);
		if (!r && out[i].outcome != VARIANT_OK)
			r = record_eval(p, generation, &out[i]);
		if (!r)
			r = db_commit(p->db);
		if (r) {
			db_rollback(p->db);
			break;
		}
		if (out[i].outcome != VARIANT_OK) {
			stage[i] = STAGE_DONE;
			count(p, &out[i]);
		} else {
			stage[i] = STAGE_GPU;
		}
	}
	for (k = 0; k < njobs; k++) {
		free(jobs[k].source);
		build_release(&jobs[k].result);
	}
	for (i = 0; i < n; i++)
		verdicts_release(&vs[i]);
	free(jobs);
	free(vs);
	return r;
}

/* One candidate past every static and build gate: replay, GPU, or nothing to time. */
static int stage_gpu(struct pipeline *p, int generation, struct evaluation *ev, char *const *cubins)
{
	int r = 0;

	if (p->replay)
		r = replay_eval(p, ev);
	else if (p->worker)
		r = gpu_eval(p, ev, cubins);
	else
		set_reason(ev, VARIANT_OK, GATE_CORRECT, "compiled; not timed (no GPU)");
	if (r < 0)
		return -1;
	if (ev->outcome != VARIANT_OK && (p->worker || p->replay) && !ev->remeasured &&
	    ev->outcome != REJECT_UNMEASURED) {
		/* the GPU's verdict is a gate row too, so 'show' can explain it */
		if (db_gate_record(p->db, p->run_id, ev->variant_id, gate_name(ev->gate), NULL,
		                   ev->outcome, ev->reason) < 0)
			return -1;
	}
	maybe_baseline(p, ev);
	rank(p, ev);
	return finish(p, generation, ev);
}

int pipeline_evaluate(struct pipeline *p, int generation, const struct candidate *cands, size_t n,
                      struct evaluation *out, size_t *done, volatile sig_atomic_t *stop)
{
	enum stage *stage = xcalloc(n + 1, sizeof(*stage));
	char **cubins = xcalloc(n * p->nspecs + 1, sizeof(*cubins));
	size_t i;
	int r = 0;

	*done = 0;
	for (i = 0; !r && i < n; i++)
		r = stage_static(p, generation, &cands[i], &out[i], &stage[i]);
	if (!r)
		r = stage_compile(p, generation, n, out, stage, cubins);
	for (i = 0; !r && i < n; i++) {
		if (stage[i] == STAGE_GPU) {
			if (*stop)
				break;
			r = stage_gpu(p, generation, &out[i], cubins + i * p->nspecs);
		}
		if (!r)
			*done = i + 1;
	}
	/* a reused variant can precede the baseline's evaluation in the generation: rank it now */
	for (i = 0; !r && i < *done; i++)
		if (out[i].reused && out[i].timed && !out[i].ranked)
			rank(p, &out[i]);
	for (i = 0; i < n * p->nspecs; i++)
		free(cubins[i]);
	free(cubins);
	free(stage);
	return r;
}

int pipeline_sanitize(struct pipeline *p, int generation, struct evaluation *ev)
{
	struct worker_job job;
	struct worker_result res;
	struct build b;
	size_t s, sp;
	int r = 0;

	double t0 = now_seconds();

	if (!p->worker)
		return 0;
	p->st.sanitized++;
	for (sp = 0; sp < p->nspecs && ev->outcome == VARIANT_OK; sp++) {
		job_init(p, &job);
		job.sanitize = 1;
		job.time_it = 0;
		for (s = 0; s < p->cfg->nshapes; s++)
			if (p->shape_spec[s] == sp &&
			    job_shape(p, ev, s, &job.shapes[job.nshapes++]) < 0)
				return -1;
		if (!job.nshapes)
			continue;
		if (sanitize_build(p, ev, sp, &b) < 0)
			return -1;
		if (b.outcome != VARIANT_OK) {
			/* the checked wrappers do not compile: the variant cannot be verified */
			set_reason(ev, REJECT_COMPILE, GATE_SANITIZE,
			           "the sanitize build failed to compile");
			build_release(&b);
			break;
		}
		job.cubin_path = b.cubin_path;
		memset(&res, 0, sizeof(res));
		r = worker_eval(p->worker, &job, &res);
		if (r == 0 && res.outcome != VARIANT_OK)
			set_reason(ev, (enum outcome)res.outcome,
			           res.outcome == REJECT_ALIGN ? GATE_SANITIZE : GATE_CORRECT, "%s",
			           res.reason);
		worker_result_release(&res);
		build_release(&b);
		if (r < 0)
			return -1;
	}
	p->st.wall_sanitize += now_seconds() - t0;
	if (db_gate_record(p->db, p->run_id, ev->variant_id, gate_name(GATE_SANITIZE), NULL,
	                   ev->outcome,
	                   ev->outcome == VARIANT_OK ? "no misaligned access" : ev->reason) < 0)
		return -1;
	if (ev->outcome != VARIANT_OK && generation >= 0) {
		/* counted as ok when it was timed: it is a rejection after all */
		p->st.outcomes[VARIANT_OK]--;
		p->st.outcomes[ev->outcome]++;
		p->st.gates[ev->gate]++;
		ev->timed = ev->ranked = 0;
		if (db_eval_record(p->db, p->run_id, ev->variant_id, generation, ev->outcome,
		                   ev->reason) < 0)
			return -1;
	}
	return 0;
}
