/* The SQLite store: runs, variants, builds, gate results, measurements, populations, the elite. */
#ifndef TUNER_DB_H
#define TUNER_DB_H

#include <stddef.h>

#include "tuner/compile.h"
#include "tuner/outcome.h"

struct db;

/*
 * Open (creating if missing) and migrate to the latest schema version in
 * db/schema.sql + db/migrations (compiled in). WAL mode, a busy timeout so two
 * tuner processes can share the file, foreign keys on. 0 or error().
 */
int db_open(const char *path, struct db **out);
void db_close(struct db *db);
int db_schema_version(struct db *db);

/* One transaction per state change. Nested begin is a BUG(). */
int db_begin(struct db *db);
int db_commit(struct db *db);
void db_rollback(struct db *db);

struct run_info {
	const char *config_path;
	const char *config_text;
	const char *template_name;
	const char *template_hash;
	const char *arch;
	const char *device;     /* "NVIDIA H100 80GB HBM3" or "none" */
	const char *driver;     /* "580.159.04" or "none" */
	const char *nvrtc;      /* "13.0" */
	const char *strategy;
	const char *shapes;     /* JSON array of {name, dims...} */
	const char *command;    /* the command line */
	unsigned long long seed;
	int generations;
	int population;
	int gpu;                /* 1 if evaluated on a GPU */
};
int db_run_create(struct db *db, const struct run_info *ri, long long *run_id);
/* status: "running", "stopped", "done", "failed" */
int db_run_set_status(struct db *db, long long run_id, const char *status);

/* Find a variant by hash or insert it; *created tells which. */
int db_variant_upsert(struct db *db, const char *hash, const char *template_name,
		      const char *template_hash, const char *arch, const char *params,
		      const char *options, long long *variant_id, int *created);

int db_gate_record(struct db *db, long long run_id, long long variant_id, const char *gate,
		   const char *shape, enum outcome outcome, const char *reason);

/* Record one compile unit (spec like "D=64"); replaces an earlier row with the same key. */
int db_build_record(struct db *db, long long variant_id, const char *key, const char *spec,
		    int sanitize, const struct build *b);

/* The final outcome of a variant in a run (one row per run and variant). */
int db_eval_record(struct db *db, long long run_id, long long variant_id, int generation,
		   enum outcome outcome, const char *reason);

/* Counts for summaries: number of eval rows in the run with each outcome. */
int db_run_outcome_counts(struct db *db, long long run_id, long long counts[OUTCOME_COUNT]);

#endif
