/* The store (SQLite or PostgreSQL): runs, variants, builds, gates, measurements, elite, jobs. */
#ifndef TUNER_DB_H
#define TUNER_DB_H

#include <stddef.h>

#include "tuner/compile.h"
#include "tuner/outcome.h"

struct db;

/*
 * Open (creating if missing) and migrate to the latest schema version in
 * db/schema.sql + db/migrations (compiled in). WAL mode, a busy timeout so two
 * tuner processes can share the file, foreign keys on. A path that is a
 * postgresql:// URL opens PostgreSQL instead (db/pg/, libpq loaded then):
 * created or migrated under an advisory lock. 0 or error().
 */
int db_open(const char *path, struct db **out);
void db_close(struct db *db);

/*
 * Open another tuner's database to read only (a replay's recording): nothing
 * is written, no -wal or -shm file is created, no migration is applied; a
 * schema newer than this tuner's is an error. Only db_exec_callback and the
 * lookups work on it.
 */
int db_open_readonly(const char *path, struct db **out);
int db_schema_version(struct db *db);

/*
 * Open an existing database for a command that only reads (show, top, export,
 * runs): never created, never migrated (a file of an older schema version is
 * read as it is), nothing written through the connection (query_only). Where
 * the file and its directory are writable it is opened as any SQLite reader
 * would; a read-only file, directory or mount is opened read-only, and where
 * even that cannot be (a WAL database whose -shm cannot be created), as an
 * immutable file. 0, or error().
 */
int db_open_read(const char *path, struct db **out);

/*
 * Everything db_open() does, with other SQL than the compiled-in db/: a fresh
 * file gets schema (the whole schema at version) and user_version = version;
 * an older one gets each migration above its version, in order, one
 * transaction each. migrations hold versions 2, 3, ... up to version and end
 * with a NULL sql. A database newer than version is an error. If path did not
 * exist and opening fails, the file is removed again.
 */
struct db_migration {
	int version;      /* the version this file takes a database to */
	const char *name; /* "0002-description.sql" */
	const char *sql;
};
int db_open_schema(const char *path, const char *schema, int version,
                   const struct db_migration *migrations, struct db **out);

/*
 * The compiled-in db/ (scripts/embed-sql), what db_open() uses: NULL-terminated
 * arrays of lines; db_sql_migrations ends with a NULL name.
 */
struct db_sql_file {
	int version;
	const char *name;
	const char *const *lines;
};
extern const int db_sql_version;
extern const char *const db_sql_schema[];
extern const struct db_sql_file db_sql_migrations[];
/* db/pg/: the same schema for PostgreSQL, and its migrations since PostgreSQL was supported. */
extern const char *const db_sql_pg_schema[];
extern const struct db_sql_file db_sql_pg_migrations[];

/* The path db_open() was given, for messages. */
const char *db_path(const struct db *db);

/* One transaction per state change. Nested begin is a BUG(). */
int db_begin(struct db *db);
int db_commit(struct db *db);
void db_rollback(struct db *db); /* no-op outside a transaction, so error paths may call it */

struct run_info {
	const char *config_path;
	const char *config_text;
	const char *template_name;
	const char *template_hash;
	const char *arch;
	const char *device; /* "NVIDIA H100 80GB HBM3" or "none" */
	const char *driver; /* "580.159.04" or "none" */
	const char *nvrtc;  /* "13.0" */
	const char *strategy;
	const char *shapes;  /* JSON array of {name, dims...} */
	const char *command; /* the command line */
	unsigned long long seed;
	int generations;
	int population;
	int gpu;               /* 1 if evaluated on a GPU */
	const char *replay_of; /* the database a replay answers from, or NULL */
};
int db_run_create(struct db *db, const struct run_info *ri, long long *run_id);
/* status: "running", "stopped", "done", "failed", "interrupted" */
int db_run_set_status(struct db *db, long long run_id, const char *status);

/* The newest run's id; an error if there is none. */
int db_run_latest(struct db *db, long long *run_id);

/*
 * The newest run whose status (as db_run_get() derives it) is status, or the
 * newest of all for NULL: 1 found, 0 none, -1 error().
 */
int db_run_latest_with(struct db *db, const char *status, long long *run_id);

/*
 * A run's row; strings are owned (NULL for SQL NULL), free them with db_run_release().
 * The status is derived when read: a run stored as running whose process is
 * gone reads as "interrupted". This host's processes are checked by pid (and
 * its start time, so a reused pid does not count); a run on another host is
 * interrupted after ten minutes without a heartbeat.
 */
struct db_run {
	long long id;
	char *started_at, *finished_at; /* UTC ISO 8601; finished_at NULL while running */
	char *status, *command, *config_path, *config_text, *template_name, *template_hash;
	char *arch, *device, *driver, *nvrtc, *strategy, *shapes, *replay_of;
	unsigned long long seed;
	int generations, population, gpu;
	char *host, *heartbeat_at; /* the process that runs it, its last sign of life (or NULL) */
	long long pid;             /* 0: not recorded */
	int alive;                 /* running, and its process is there */
	double wall_seconds;       /* the time it ran, dead time excluded; NAN: unknown */
	double age_seconds;        /* since it started */
};
/* 0, or error() when there is no such run. */
int db_run_get(struct db *db, long long run_id, struct db_run *out);
void db_run_release(struct db_run *r);

/*
 * This process runs the run from now on: status running, pid, host and a
 * heartbeat recorded; *active_before is the seconds it ran before (a resume).
 */
int db_run_begin(struct db *db, long long run_id, double *active_before);
/* A sign of life: the heartbeat is now, and the run has been active active_seconds in all. */
int db_run_heartbeat(struct db *db, long long run_id, double active_seconds);
/* The run ends (status "done", "stopped", "failed"), active active_seconds in all. */
int db_run_end(struct db *db, long long run_id, const char *status, double active_seconds);
/*
 * Store "interrupted" for every run stored as running whose process is gone,
 * finished at its last heartbeat; *reaped says how many. For writers: a
 * reader derives the same status without writing it.
 */
int db_runs_reap(struct db *db, long long *reaped);

/* Find a variant by hash or insert it; *created tells which. */
int db_variant_upsert(struct db *db, const char *hash, const char *template_name,
                      const char *template_hash, const char *arch, const char *params,
                      const char *options, long long *variant_id, int *created);

/* A variant's id by its full hash: 1 found, 0 not, -1 error(). */
int db_variant_find(struct db *db, const char *hash, long long *variant_id);

/*
 * What a user types for a variant: its id ("17") or a prefix of its hash of at
 * least 4 hex digits ("3fa9"). Matching no variant, or two (an id and another
 * variant's hash prefix count as two), is an error.
 */
int db_variant_find_prefix(struct db *db, const char *name, long long *variant_id);

struct db_variant {
	long long id;
	char *hash, *template_name, *template_hash, *arch, *params, *options, *created_at;
};
/* 0, or error() when there is no such variant; free with db_variant_release(). */
int db_variant_get(struct db *db, long long variant_id, struct db_variant *out);
void db_variant_release(struct db_variant *v);

int db_gate_record(struct db *db, long long run_id, long long variant_id, const char *gate,
                   const char *shape, enum outcome outcome, const char *reason);

/* Record one compile unit (spec like "N=128"); replaces an earlier row with the same key. */
int db_build_record(struct db *db, long long variant_id, const char *key, const char *spec,
                    int sanitize, const struct build *b);

/* The final outcome of a variant in a run (one row per run and variant). */
/* Recording it again replaces generation, outcome and reason; fitness stays only while ok. */
int db_eval_record(struct db *db, long long run_id, long long variant_id, int generation,
                   enum outcome outcome, const char *reason);

/*
 * The fitness of an evaluated variant (geo-mean speedup and its 95% interval;
 * NAN stores NULL). An error if db_eval_record() has not recorded it.
 */
int db_eval_set_fitness(struct db *db, long long run_id, long long variant_id, double fitness,
                        double fitness_lo, double fitness_hi);

/* An evaluation as stored; fitness fields are NAN when unset. */
struct db_eval {
	int generation;
	enum outcome outcome;
	char *reason;
	double fitness, fitness_lo, fitness_hi;
};
/* 1 found (free with db_eval_release()), 0 not, -1 error(). */
int db_eval_get(struct db *db, long long run_id, long long variant_id, struct db_eval *out);
void db_eval_release(struct db_eval *e);

/* Counts for summaries: number of eval rows in the run with each outcome. */
int db_run_outcome_counts(struct db *db, long long run_id, long long counts[OUTCOME_COUNT]);

/*
 * Check-then-time result of a variant on one shape on one device. A variant is
 * measured once per (device, shape_dims), by whichever run gets there first.
 * Doubles that are NAN are stored as NULL (not checked, not timed).
 */
struct db_measurement {
	const char *device;     /* as in run_info */
	const char *shape;      /* the shape's name */
	const char *shape_dims; /* "rows=4096,cols=4096" */
	enum outcome outcome;
	const char *reason; /* NULL: "" */
	double rel_l2, max_abs;
	double median_us, ci_lo_us, ci_hi_us, tflops;
	const double *samples; /* µs per launch */
	size_t nsamples;
	double gbps;                    /* the problem's bytes over the median; NAN: none */
	double sm_mhz, temp_c, power_w; /* while timed (NVML); NAN: not watched */
	double throttle, retaken;       /* the throttle mask seen, 1 if retaken; NAN: not watched */
};
/*
 * Store m; run_id <= 0 stores no run. When the variant was already measured on
 * that device and shape_dims the old row stays and *created (may be NULL) is 0.
 */
int db_measure_record(struct db *db, long long run_id, long long variant_id,
                      const struct db_measurement *m, int *created);

/* A stored measurement; strings and samples owned, free with db_measured_release(). */
struct db_measured {
	long long id, variant_id, run_id; /* run_id 0: none */
	char *device, *shape_dims;
	char *shape;
	enum outcome outcome;
	char *reason;
	double rel_l2, max_abs, median_us, ci_lo_us, ci_hi_us, tflops; /* NAN for NULL */
	double *samples;
	size_t nsamples;
};
/* The conditions a measurement was taken in (schema 3 and later; older: all NAN). */
struct db_conditions {
	double gbps, sm_mhz, temp_c, power_w, throttle, retaken; /* NAN for NULL */
};
/* 0 (out filled), or -1 after error(). */
int db_measure_conditions(struct db *db, long long measurement_id, struct db_conditions *out);

/* By variant id. 1 found, 0 not, -1 error(). */
int db_measure_lookup(struct db *db, long long variant_id, const char *device,
                      const char *shape_dims, struct db_measured *out);
void db_measured_release(struct db_measured *m);

/*
 * A configuration as another database recorded it (a replay's recording),
 * named by what stays the same across tuner versions, not by the variant hash
 * (which covers the compile options and the compiler): the recording run's
 * template hash, its arch and the canonical params "A=1,B=2".
 */
struct db_recorded_key {
	const char *template_hash, *arch, *params;
};
/* Its measurement on device and shape_dims (the newest, if several): 1 found, 0 not, -1 error(). */
int db_measure_lookup_params(struct db *db, const struct db_recorded_key *k, const char *device,
                             const char *shape_dims, struct db_measured *out);
/* A recorded gate rejection; strings owned, free with db_gate_found_release(). */
struct db_gate_found {
	char *gate; /* "constraint", "compile", "resources", "sanitize" */
	enum outcome outcome;
	char *reason;
};
/*
 * Its first recorded rejection by a gate that a replay cannot run again
 * (compile, resources, sanitize), or by restrictions the replaying config may
 * not have (constraint, as imported results record them): 1 found, 0 not,
 * -1 error().
 */
int db_gate_rejection_params(struct db *db, const struct db_recorded_key *k,
                             struct db_gate_found *out);
void db_gate_found_release(struct db_gate_found *g);

/*
 * The newest GPU run of this template, arch and shapes (JSON as stored) that
 * a replay can answer from: 1 with *run_id and device (its name, truncated to
 * len) set, 0 when there is none, -1 error().
 */
int db_recording_find(struct db *db, const char *template_hash, const char *arch,
                      const char *shapes, long long *run_id, char *device, size_t len);

/*
 * A candidate of a generation; origin is evolve_origin_name() text ("baseline",
 * "random", "mutation", "crossover", "sweep"); parents are variant ids, <= 0
 * for none. Recording the same candidate again replaces origin and parents.
 */
int db_population_record(struct db *db, long long run_id, int generation, long long variant_id,
                         const char *origin, long long parent_a, long long parent_b);

/* Replace the elite of a generation, best first (rank 1), in one transaction (or savepoint). */
int db_elite_store(struct db *db, long long run_id, int generation, const long long *variant_ids,
                   const double *fitness, size_t n);

/* ------------------------------------------------------------ reading out */

/* What show, top, export and runs print; arrays are the caller's, freed with the _free(). */

/* A variant's builds, plain ones first. */
struct db_build_row {
	char *spec, *outcome;
	int sanitize, regs, spill_stores, spill_loads, static_smem, stack_frame, cached;
	double seconds; /* compile wall time, 0 when cached */
	long long cubin_size;
};
int db_variant_builds(struct db *db, long long variant_id, struct db_build_row **out, size_t *n);
void db_build_rows_free(struct db_build_row *v, size_t n);

/* A variant's gate verdicts, every run. */
struct db_gate_row {
	long long run_id;
	char *gate, *shape, *outcome, *reason; /* shape NULL: shape-independent */
};
int db_variant_gates(struct db *db, long long variant_id, struct db_gate_row **out, size_t *n);
void db_gate_rows_free(struct db_gate_row *v, size_t n);

/* A variant's measurements, every device. */
int db_variant_measurements(struct db *db, long long variant_id, struct db_measured **out,
                            size_t *n);
void db_measured_free(struct db_measured *v, size_t n);

/* A variant's evaluation in each run, with its rank in that run's final elite (0: none). */
struct db_variant_eval {
	long long run_id;
	int generation, elite_rank;
	char *outcome, *reason;
	double fitness, fitness_lo, fitness_hi; /* NAN when unset */
};
int db_variant_evals(struct db *db, long long variant_id, struct db_variant_eval **out, size_t *n);
void db_variant_evals_free(struct db_variant_eval *v, size_t n);

/* The builds of the variants a run evaluated, recorded while it ran. */
struct db_compile_stats {
	long long distinct_ok; /* distinct variants with a build that compiled */
	long long builds, fresh, cached;
	double seconds; /* compile time of the fresh ones */
};
int db_run_compile_stats(struct db *db, long long run_id, struct db_compile_stats *out);

/* Generations with a candidate or a verdict recorded (0: none). */
int db_run_generations_done(struct db *db, long long run_id, int *n);
/* The generation of the run's last stored elite (-1: none) and its size. */
int db_elite_final(struct db *db, long long run_id, int *generation, long long *count);
/* How many variants the run evaluated, and the best fitness among the correct (NAN: none). */
int db_run_evals_summary(struct db *db, long long run_id, long long *evaluations, double *best);

/* A ranked variant; fitness fields NAN where unknown. */
struct db_ranked {
	long long variant_id;
	char *hash, *params;
	double fitness, fitness_lo, fitness_hi;
	int elite; /* from the run's final elite */
};
void db_ranked_release(struct db_ranked *r);
void db_ranked_free(struct db_ranked *v, size_t n);
/*
 * The best k variants of a run: its elite of the highest generation, best
 * first, then (while fewer than k) its other correct variants with a fitness,
 * by fitness.
 */
int db_run_ranked(struct db *db, long long run_id, size_t k, struct db_ranked **out, size_t *n);
/* The run's baseline (its first 'baseline' candidate): 1, 0 none, -1 error(). */
int db_run_baseline(struct db *db, long long run_id, struct db_ranked *out);
/* The variant correct in the run with the lowest median on one shape: 1, 0 none, -1 error(). */
int db_best_on_shape(struct db *db, long long run_id, const char *device, const char *shape_dims,
                     struct db_ranked *out);

/* Every evaluation of a run, in the order made. */
struct db_run_eval {
	long long variant_id;
	int generation;
	enum outcome outcome;
	char *params, *reason, *created_at;
	double fitness, fitness_lo, fitness_hi;
};
int db_run_evals(struct db *db, long long run_id, struct db_run_eval **out, size_t *n);
void db_run_evals_free(struct db_run_eval *v, size_t n);

/* Every run's id, oldest first. */
int db_run_ids(struct db *db, long long **ids, size_t *n);
/* The cubin cache keys of the builds a run recorded; free each and the array. */
int db_run_build_keys(struct db *db, long long run_id, char ***keys, size_t *n);

/*
 * Run one read-only query (for show, top, report): the text parameters after
 * ctx, ended by NULL, are bound to ?1, ?2, ...; fn gets each row as text
 * (NULL for SQL NULL). fn returns 0 to go on, > 0 to stop (the call returns 0),
 * < 0 after its own error() (the call returns -1). A statement that writes is
 * a BUG(): writes go through the functions above.
 */
typedef int (*db_row_fn)(void *ctx, int ncols, const char *const *values, const char *const *names);
#if defined(__GNUC__)
#define DB_SENTINEL __attribute__((sentinel))
#else
#define DB_SENTINEL
#endif
int db_exec_callback(struct db *db, const char *sql, db_row_fn fn, void *ctx, ...) DB_SENTINEL;

/* ---------------------------------------------------------- for report */

/* One evaluation of a run, as `tuner report` plots it. */
struct db_eval_point {
	long long variant_id;
	int generation;
	enum outcome outcome;
	double fitness; /* NAN: none (rejected, or not timed) */
	double seconds; /* from the run's start to the verdict */
};
/*
 * Every evaluation of a run in the order it was recorded: by generation, then
 * time of the verdict, then variant id. 0 (free *out), or error().
 */
int db_run_eval_points(struct db *db, long long run_id, struct db_eval_point **out, size_t *n);

/*
 * The newest other run with the given strategy over the same space as like
 * (template hash, arch, device and shape suite) that timed something (on a
 * GPU, or from a replay); with done_only, only a run that finished.
 * 1 found, 0 none, -1 error().
 */
int db_run_find_like(struct db *db, const struct db_run *like, const char *strategy, int done_only,
                     long long *run_id);

/* ============================================================= the job queue */
/*
 * What tuner serve, submit, jobs, cancel and wait share (tuner/serve.c,
 * tuner/run.c): servers, jobs, and the candidates each GPU claims. A server is
 * alive while its heartbeat is younger than its ttl on the database's clock,
 * or, on this host, while its process is there.
 */

/* A tuner serve process, registered while it serves. */
struct db_server_info {
	const char *gpus;   /* "0,1", "" for none */
	const char *device; /* their model, or "none" */
	const char *roots;  /* JSON array of the directories it reads jobs from */
	double ttl;         /* seconds without a heartbeat after which it counts as dead */
};
/* Register this process (host, pid) as a server. */
int db_server_register(struct db *db, const struct db_server_info *si, long long *server_id);
/* Say it is alive (a server taken for dead is alive again; what others took stays theirs). */
int db_server_heartbeat(struct db *db, long long server_id);
/*
 * It stops: its claims not done go back to the queue, its running jobs become
 * interrupted (resumable by any server). In one transaction.
 */
int db_server_stop(struct db *db, long long server_id);
/*
 * Stop the servers that died without a word (their process gone from this
 * host, or silent past their ttl), and cancel the jobs a cancel was asked of
 * while their owner died. *reaped: how many servers.
 */
int db_servers_reap(struct db *db, long long *reaped);

/* A server as stored; alive as db_servers_reap() judges it. */
struct db_server {
	long long id, pid;
	char *host, *gpus, *device, *roots, *started_at;
	double quiet; /* seconds since its last heartbeat */
	int alive;
};
/* Every server, or only the live ones, by id. Free each with db_server_release() and *out. */
int db_server_list(struct db *db, int live_only, struct db_server **out, size_t *n);
void db_server_release(struct db_server *s);

/* What tuner submit queues. */
struct db_job_info {
	const char *config_path; /* absolute */
	const char *config_text;
	const char *options; /* JSON object */
	const char *submitted_by;
	int priority;
	int gpu; /* it needs a GPU (not a replay, not --no-gpu) */
};
int db_job_submit(struct db *db, const struct db_job_info *ji, long long *job_id);

/* A job as stored, status derived (a running job whose owner died reads 'interrupted'). */
struct db_job {
	long long id, run_id, server_id; /* 0: none */
	int priority, gpu, cancel;
	int owner_alive; /* its owner (server_id) is alive */
	char *status, *submitted_at, *submitted_by, *config_path, *config_text, *options;
	char *started_at, *finished_at, *message;
	char *host; /* the owner's host, NULL */
	/* seconds since a server first started it, until it finished, on the store's clock; 0 */
	double elapsed;
};
/* 0, or error() when there is no such job. Free with db_job_release(). */
int db_job_get(struct db *db, long long job_id, struct db_job *out);
void db_job_release(struct db_job *j);
/* Every job by id; with active, only queued, running and interrupted ones. Free each and *out. */
int db_job_list(struct db *db, int active, struct db_job **out, size_t *n);

/* How a job's run is getting on, for tuner jobs and wait. */
struct db_job_progress {
	int generation;  /* generations observed (their population recorded) */
	int generations; /* of the run */
	long long evaluated;
	double best;  /* the best fitness so far, NAN: none */
	char *gpus;   /* "host:0,host:1": where its candidates are being evaluated now; owned */
	char *device; /* the run's device; owned */
};
/* 0 (free with db_job_progress_release), or error(). A job without a run reads zeros. */
int db_job_progress(struct db *db, const struct db_job *j, struct db_job_progress *out);
void db_job_progress_release(struct db_job_progress *p);

/*
 * Take a job for server_id: a queued one, an interrupted one, a running one
 * whose owner died. 1 taken (status running, owned), 0 another server has it
 * or it was cancelled, -1 error().
 */
int db_job_take(struct db *db, long long job_id, long long server_id);
int db_job_set_run(struct db *db, long long job_id, long long run_id);
/* Finish it: done, failed or cancelled, with why (NULL: none): 1, or 0 when already finished. */
int db_job_finish(struct db *db, long long job_id, const char *status, const char *message);
/*
 * tuner cancel: a job nobody runs is cancelled now (*now = 1); a running one
 * is asked to stop (*now = 0), which its owner does after the variant in
 * flight. A finished job is an error().
 */
int db_job_cancel(struct db *db, long long job_id, int *now);

/*
 * Offer the candidates of a generation (their hashes, seq 0..n-1) for claiming;
 * what is already there stays as it is (every server offers the same).
 */
int db_claims_offer(struct db *db, long long run_id, int generation, int first_seq,
                    const char *const *hashes, size_t n);
/*
 * Claim up to max of them, lowest seq first: those nobody holds and those
 * whose server died. PostgreSQL: SELECT ... FOR UPDATE SKIP LOCKED, so
 * claimers never wait on each other; SQLite: one UPDATE under its write lock.
 * seqs gets the claimed ones in order, *n how many.
 */
int db_claims_take(struct db *db, long long run_id, int generation, long long server_id, int gpu,
                   size_t max, int *seqs, size_t *n);
/* Their verdicts are recorded (done), or they go back to the queue (returned). */
int db_claims_done(struct db *db, long long run_id, int generation, const int *seqs, size_t n);
int db_claims_return(struct db *db, long long run_id, int generation, const int *seqs, size_t n);
/* Claim one of them, seq: 1 taken, 0 another live server holds it or it is done, -1 error(). */
int db_claim_take_seq(struct db *db, long long run_id, int generation, int seq, long long server_id,
                      int gpu);
/* Whether one has its verdict: 1 done, 0 not (or never offered), -1 error(). */
int db_claim_is_done(struct db *db, long long run_id, int generation, int seq);
/*
 * Return what one GPU of a server holds and has not done (a lane that lost its
 * connection in the middle of a batch: its server lives on, so nobody else
 * would take them).
 */
int db_claims_release(struct db *db, long long server_id, int gpu);
/* How a generation stands: offered, done, held by a live server and not done. */
int db_claims_state(struct db *db, long long run_id, int generation, long long *offered,
                    long long *done, long long *held);

#endif
