/* The evaluation pipeline: candidates through every gate, the compile pool and the GPU (or a
 * replay). */
#ifndef TUNER_PIPELINE_H
#define TUNER_PIPELINE_H

#include <signal.h>
#include <stddef.h>

#include "tuner/checks.h"
#include "tuner/compile.h"
#include "tuner/config.h"
#include "tuner/db.h"
#include "tuner/evolve.h"
#include "tuner/outcome.h"
#include "tuner/space.h"

struct worker;
struct pjob;
struct pjob_batch;

#define PIPELINE_MAX_SHAPES 96 /* the suite and the ragged shapes derived from it */
/* The most a shape may cost (flops, else bytes, else elements) under compute-sanitizer. */
#define PIPELINE_TOOLS_BUDGET 1073741824.0 /* 2^30 */
#define PIPELINE_MAX_WORKERS  16           /* GPUs one pipeline measures on */

/*
 * Racing, fixed for a generation (so that it does not depend on which GPU
 * finished first): a candidate is timed on the suite's shapes cheapest first
 * and stopped, as REJECT_SLOWER, once even its most favourable fitness falls
 * below bar; a shape not timed yet counts at its cap.
 */
struct race {
	double bar;                       /* 0: no racing */
	double cap[TUNER_MAX_SHAPES];     /* the best speedup seen on the shape, with a margin */
	double base_hi[TUNER_MAX_SHAPES]; /* the baseline's upper bound there */
	size_t order[TUNER_MAX_SHAPES];   /* the suite's shapes, cheapest first */
};

/* Per-shape timing of one variant: what fitness is computed from. */
struct shape_timing {
	double median_us, ci_lo_us, ci_hi_us, tflops;
};

/* The result of one candidate. */
struct evaluation {
	struct variant va;
	long long variant_id;
	char hash[HASH_HEX_LEN];
	enum outcome outcome;
	enum gate gate; /* the gate that rejected it (when outcome != VARIANT_OK) */
	char reason[512];
	int reused;     /* this run had evaluated it already (a resume) */
	int remeasured; /* shapes answered from earlier measurements (or the replay) */
	int timed;      /* t[] holds every shape's timing */
	struct shape_timing t[TUNER_MAX_SHAPES];
	int ranked; /* m holds fitness and speedups (timed and the baseline known) */
	struct member m;
};

struct pipeline_stats {
	long long evaluated, reused;
	long long outcomes[OUTCOME_COUNT];
	long long gates[GATE_COUNT]; /* rejections per gate */
	long long compiled;          /* variants whose every spec compiled */
	long long builds, builds_cached;
	double compile_seconds;  /* summed compile time of fresh builds */
	double wall_compile;     /* wall time spent waiting on compiles */
	long long measured;      /* variants sent to the GPU */
	double gpu_busy;         /* seconds the workers spent on jobs, summed over workers */
	double gpu_timing;       /* of which timing jobs (the rest: checks, the alignment gate) */
	long long shapes_reused; /* per-shape results answered from the database */
	double wall_gpu;         /* wall time spent in GPU evaluation */
	long long sanitized;     /* variants through the dynamic alignment gate */
	double wall_sanitize;    /* its wall time, sanitize builds included */
	/*
	 * Seconds the GPU waited (summed over workers), by what held it up: a
	 * candidate's build, an elite newcomer's sanitize build, verdicts being
	 * recorded, and the time between generations (the end of one, the
	 * search, the static gates of the next).
	 */
	double idle_build, idle_sanitize_build, idle_commit, idle_between;
	long long prefetched;    /* builds compiled ahead for the next generation */
	long long prefetch_used; /* candidates' builds the prefetch had put in the cache */
	double prefetch_seconds; /* their compiler time */
	long long withdrawn;     /* builds queued ahead and dropped unstarted: not needed */
};

struct pipeline {
	const struct config *cfg;
	struct db *db;
	long long run_id;
	struct compile_pool *pool;
	struct worker *workers[PIPELINE_MAX_WORKERS]; /* not owned; none: nothing is timed */
	size_t nworkers;
	struct db *replay; /* not owned; answers instead of compiling and timing */
	const char *replay_path;
	char device[128]; /* where measurements come from: "NVIDIA H100 80GB HBM3", "none" */
	int verbose;    /* say each compute-sanitizer run on stderr: tool, shapes, verdict, time */
	char **options; /* template_options(cfg, 0) */
	size_t noptions;
	char *options_text; /* space separated, stored with each variant */
	char **san_options; /* template_options(cfg, 1) */
	size_t nsan_options;
	struct spec specs[TUNER_MAX_SHAPES];
	size_t nspecs;
	/*
	 * The shapes a variant is checked on: the suite (cfg->shapes, timed), then
	 * the ragged shapes derived from it (checked only).
	 */
	const struct shape *shape[PIPELINE_MAX_SHAPES];
	size_t nshapes;
	struct shape derived[PIPELINE_MAX_SHAPES];
	size_t nderived;
	size_t shape_spec[PIPELINE_MAX_SHAPES];
	/*
	 * What compute-sanitizer's gate runs, per spec: the spec's costliest suite
	 * shape scaled down to PIPELINE_TOOLS_BUDGET (job_shrink_shape), and its
	 * cheapest when that is within the budget too.
	 */
	struct shape tools_derived[TUNER_MAX_SHAPES];
	size_t ntools_derived;
	const struct shape *tools_shape[2 * TUNER_MAX_SHAPES];
	size_t tools_spec[2 * TUNER_MAX_SHAPES], ntools;
	char shape_dims[PIPELINE_MAX_SHAPES][128]; /* "rows=4096,cols=4096" */
	char *ref_cubin;     /* the problem's reference kernel, built when a worker is attached */
	char *support_cubin; /* the worker's own kernels (fill, compare, ...), likewise */
	int have_baseline;
	struct shape_timing base[TUNER_MAX_SHAPES];
	double best_hi[TUNER_MAX_SHAPES]; /* the best speedup's upper bound seen on each shape */
	struct race race;
	/* the generation's compile units, kept until the next (sanitize builds used after it) */
	struct pjob *gen_jobs;
	size_t ngen_jobs;
	/*
	 * Compiling ahead (prefetch): while the GPU finishes a generation, the
	 * pool, otherwise idle, builds the unseen neighbours of the best variant
	 * (those the search proposes next) into the cubin cache.
	 */
	int prefetch;
	struct pjob *pre_jobs; /* the latest round */
	size_t npre_jobs;
	char (*pre_keys)[HASH_HEX_LEN]; /* every build key prefetched */
	size_t npre_keys, pre_keys_alloc;
	int have_best;
	double best_fit;
	struct variant best_va;
	unsigned long best_moves; /* times the best changed: a prefetch follows it */
	size_t nranked;           /* variants ranked so far: the elite has room while few */
	/* units dropped by the pipeline that a compile thread still holds */
	struct pjob_batch *retired;
	size_t nretired, retired_alloc;
	double eval_end; /* when pipeline_evaluate last returned */
	const struct evaluation *gen_evals;
	size_t gen_n;
	struct pipeline_stats st;
	/* while waiting on the compiler or the GPU; may be NULL */
	void (*busy)(void *ctx, const char *what);
	void *busy_ctx;
	/*
	 * Whether a ranked newcomer would enter the elite (search_admits): with
	 * sanitize: elite, those meet the dynamic alignment gate before they
	 * count. NULL: none does.
	 */
	int (*admits)(void *ctx, const struct evaluation *ev);
	void *admits_ctx;
	int tools_warned;      /* compute-sanitizer's absence said */
	int san_absent_warned; /* an uninstrumented sanitize build said */
	/* called after each candidate's verdict; may be NULL */
	void (*progress)(void *ctx, const struct evaluation *ev);
	void *progress_ctx;
};

/* The compile pool and the suite's specialisations; 0 or error(). */
int pipeline_init(struct pipeline *p, const struct config *cfg, struct db *db, long long run_id,
                  const char *cache_dir, int jobs);
void pipeline_release(struct pipeline *p);

/*
 * Time on the GPU through n workers of one GPU model (device is its name):
 * builds the reference and the worker's support kernels and refuses a GPU
 * the job's arch cannot run on. A generation's candidates are measured on
 * the workers in parallel; verdicts are stored and observed in candidate
 * order, so the result does not depend on n. 0 or error().
 */
int pipeline_attach_workers(struct pipeline *p, struct worker **w, size_t n, const char *device);
int pipeline_attach_worker(struct pipeline *p, struct worker *w, const char *device);

/*
 * Racing for the next generation: candidates that cannot reach bar (a
 * fitness; 0: none) are stopped; the order and caps come from what the run
 * measured so far.
 */
void pipeline_race_set(struct pipeline *p, double bar);

/*
 * Compile ahead for a search by strategy: on for those that propose the best
 * variant's neighbours first (search_strategy_local), unless TUNER_PREFETCH=0.
 */
void pipeline_prefetch_for(struct pipeline *p, const char *strategy);

/*
 * compute-sanitizer's gate (memcheck, racecheck, synccheck) on n evaluated
 * variants, side by side, outside a generation (the final elite): a gate row
 * "tools" each, and an ev rejected (outcome, reason; not ranked) when a tool
 * found something. Without compute-sanitizer it says so once and records that
 * the gate did not run. 0, or error().
 */
int pipeline_tools_gate(struct pipeline *p, struct evaluation *evs, size_t n);
/*
 * Answer from another database instead: its measurements on device (what it
 * recorded as a run's device) and its compile, resource and sanitize verdicts.
 * A variant it never measured is REJECT_UNMEASURED.
 */
void pipeline_attach_replay(struct pipeline *p, struct db *replay, const char *path,
                            const char *device);

/*
 * Evaluate n candidates of one generation: static gates, compile all
 * survivors in parallel, build gates, then (with a worker or replay) check and
 * time each in turn. A variant this run evaluated already is answered from the
 * database (a resume), and a shape already measured on this device is never
 * measured again. Every state change is committed as it happens. stop is
 * polled between GPU evaluations: when it becomes non-zero the function returns
 * after the one in flight; *done is then the number of leading candidates that
 * have their verdict. 0, or error() when the evaluation itself failed (the
 * database, the worker): the run cannot go on.
 */
int pipeline_evaluate(struct pipeline *p, int generation, const struct candidate *cands, size_t n,
                      struct evaluation *out, size_t *done, stop_flag *stop);

#endif
