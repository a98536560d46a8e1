/* A tuning job's run as a library call: opened from a config and options, then stepped. */
#ifndef TUNER_RUN_H
#define TUNER_RUN_H

#include <signal.h>
#include <stddef.h>

struct config;
struct db;
struct member;
struct pipeline;
struct roots;
struct search;
struct worker;

/* What a run is asked for: tuner run's options, or a queued job's. */
struct run_request {
	const char *config_path;
	int generations, population; /* > 0: instead of the config's budget */
	unsigned long long seed;
	int seed_given;
	const char *strategy; /* NULL: the config's */
	const char *replay;   /* answer from this recording instead of the GPU, or NULL */
	int no_gpu;           /* gate and compile only */
	int jobs;             /* parallel compiles, 0: the config's */
	/*
	 * A queued job's budget (submit --time, --evals), 0: none. run_open() keeps
	 * neither: tuner serve enforces them (see DESIGN.md, "The daemon").
	 */
	double time_s;
	long long evals;
	const char *cache_dir;
	const char *command; /* recorded with a new run */
	/*
	 * A daemon's confinement (NULL: none): the config and the recording must
	 * lie in these directories, and so must the family's include directory.
	 */
	const struct roots *roots;
	/* When set, the config must still read exactly this (what the job was submitted with). */
	const char *config_text;
};

/* Run options as a job stores them: a JSON object of what differs from the config. */
char *run_request_json(const struct run_request *rq);
/*
 * Fill rq (config_path excepted) from run_request_json()'s text; strings point
 * into *doc, which the caller frees with run_request_json_free(). 0, or error().
 */
int run_request_from_json(const char *json, struct run_request *rq, void **doc);
void run_request_json_free(void *doc);

/*
 * Everything run_open() checks before it writes (tuner submit): the config
 * (and rq->roots), the strategy, the recording and its match. 0 with the
 * config's text in *config_text (caller frees), or an exit code after error().
 */
int run_check(const struct run_request *rq, char **config_text);

struct run;

/*
 * Open a run on db: a new one (run_id 0), or run_id as it was started (its
 * seed, population, strategy and recording; the config must read as it did).
 * Measurements come from the recording, from w (not owned; its device must be
 * the run's), or from nowhere (w NULL: gate and compile only). Returns 0, or an
 * exit code after error(): EX_CONFIG (config, roots), EX_NOINPUT, EX_DATAERR
 * (the recording, the run), EX_UNAVAILABLE (the run measures on another GPU),
 * EX_SOFTWARE.
 */
int run_open(struct db *db, const struct run_request *rq, long long run_id, struct worker *w,
             struct run **out);
void run_close(struct run *r);

long long run_id(const struct run *r);
/* Where its measurements come from: a GPU's name, the recording's device, "none". */
const char *run_device(const struct run *r);
int run_generations(const struct run *r);
/* Whether it needs a GPU: not a replay, not --no-gpu. */
int run_needs_gpu(const struct run_request *rq);

/*
 * Sharing a run's generations with other GPUs and hosts: a step claims a
 * batch of the generation's candidates for (server, gpu) and evaluates them,
 * or, once every candidate has its verdict, observes the whole generation in
 * candidate order from the database (so that the search does not depend on
 * who evaluated what) and stores its elite.
 */
struct run_claimer {
	long long server_id;
	int gpu;      /* recorded with each claim; -1: none */
	size_t batch; /* candidates per claim, at least 1 */
};

enum run_state {
	RUN_MORE,    /* it went on: step again */
	RUN_WAIT,    /* nothing to claim now: others hold the rest of the generation */
	RUN_DONE,    /* every generation observed (or the space exhausted), the final gate run */
	RUN_STOPPED, /* *stop: the variant in flight was finished; claims not done returned */
};

/* What the last step did, for a progress line. */
struct run_progress {
	int observed; /* a generation was observed: generation is its number */
	int generation;
	size_t candidates, passed, evaluated; /* evaluated: by this step, not answered */
	double best;                          /* the elite's best fitness, NAN: none */
};

/*
 * One step: claimer NULL evaluates the next generation alone, as tuner run does;
 * else a batch of claims or an observation. A run stopped in the middle of an
 * observation cannot step again (close and open it). enum run_state, or -1
 * after error(): the run cannot go on.
 */
int run_step(struct run *r, const struct run_claimer *c, stop_flag *stop, struct run_progress *out);

/*
 * This process runs the run (tuner run, the server that owns a job): its
 * liveness is recorded (pid, host, a heartbeat), so that a reader tells it
 * from a run whose process died. run_heartbeat() at most every 10 s unless
 * forced; run_end() records how it ended ("done", "stopped", "failed") and
 * the seconds it was active. 0 or error() (a heartbeat's failure is a warning).
 */
int run_begin(struct run *r);
void run_heartbeat(struct run *r, int force);
int run_end(struct run *r, const char *status);

/*
 * Stop a shared run whose budget is spent as tuner run stops alone: observe
 * every generation that has all its verdicts in the database, then the
 * generation in hand's candidates that have theirs, in candidate order up to
 * the first without one, and store that elite. Nothing is evaluated; the run
 * cannot step again (close it). 0, or -1 after error().
 */
int run_settle(struct run *r);

/* ------------------------------------------------- pieces tuner run shares */

/* The config's shapes as the runs table holds them: [{"name": ..., DIM: value, ...}]; caller frees.
 */
char *run_shapes_json(const struct config *cfg);
/*
 * Open the recording at path read-only and find in it a GPU run of cfg's template
 * and arch on these shapes; its device into device. 0, or an EX_* code after error().
 */
int run_open_replay(const char *path, const struct config *cfg, const char *shapes, struct db **out,
                    char *device, size_t len);
/*
 * Store m[0..n-1], an elite best first, as generation gen's elite of the run,
 * in report order (evolve_report_order with the search's margin: m is
 * reordered in place). db_elite_store's result.
 */
int run_elite_store(struct db *db, long long run_id, int gen, const struct member **m, size_t n,
                    double margin);
/*
 * The final elite through compute-sanitizer's gate (pipeline_tools_gate): the
 * search's final candidates, the best k side by side, then as many more as were
 * rejected, until k pass, none is left or *stop is set. Each rejection is recorded
 * as an evaluation of generation gen - 1, counted in *rejected and, with told,
 * told; the verified elite is stored as generation gen. 0, 1 when *stop ended it
 * (nothing stored), -1.
 */
struct evaluation;
int run_final_elite(struct db *db, long long run_id, int gen, struct pipeline *p,
                    const struct search *s, size_t k, const stop_flag *stop,
                    void (*told)(void *ctx, const struct evaluation *ev), void *ctx,
                    size_t *checked, size_t *rejected);

#endif
