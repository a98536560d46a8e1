/* The subcommand table: one cmd-*.c per subcommand, each owning its entry and its help. */
#ifndef TUNER_CMD_H
#define TUNER_CMD_H

#include <stddef.h>

struct db;
struct db_job;
struct config;

/* What a command needs; main acts on it in one place (paths, opening, stdout). */
enum cmd_flags {
	NEED_CONFIG = 1 << 0, /* reads the tuning job (--config) */
	NEED_DB = 1 << 1,     /* writes the database (--db), creating it */
	READ_DB = 1 << 2,     /* only reads an existing database: opened read-only */
	NEED_CACHE = 1 << 3,  /* uses the cubin cache */
};

/*
 * Global options, accepted before or after the command, and where things are.
 * Paths are resolved by main before the command runs (see cmd_setup()).
 */
struct globals {
	const char *db_path;     /* --db, $TUNER_DB, ./tuner.db in a project, else XDG data */
	const char *config_path; /* --config, $TUNER_CONFIG, ./configs, the data directory */
	const char *cache_dir;   /* $TUNER_CACHE, ./tuner-cache in a project, else XDG cache */
	const char *datadir;     /* what `make install` installed: configs/, kernels/ */
	int config_given;        /* --config on the command line */
	int db_given;            /* --db on the command line */
	int db_default;          /* the database is the XDG default: its directory is made */
	int verbosity;           /* -1 --quiet, 0, 1 --verbose */
	const struct cmd *cmd;   /* the command being run */
};

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv, const struct globals *g);
	unsigned flags;      /* enum cmd_flags */
	const char *summary; /* one line for `tuner --help`; NULL: not listed */
	const char *usage;   /* the command's --help text, kept beside the command */
};

/* Every command, in the order `tuner --help` lists them. */
extern const struct cmd *const cmd_table[];
extern const unsigned cmd_count;
const struct cmd *cmd_find(const char *name);

extern const struct cmd cmd_run_entry, cmd_sweep_entry, cmd_check_entry, cmd_show_entry,
    cmd_runs_entry, cmd_top_entry, cmd_export_entry, cmd_report_entry, cmd_cache_entry,
    cmd_import_entry, cmd_worker_entry, cmd_compile_entry, cmd_serve_entry, cmd_submit_entry,
    cmd_jobs_entry, cmd_cancel_entry, cmd_wait_entry;

int cmd_run(int argc, char **argv, const struct globals *g);
int cmd_sweep(int argc, char **argv, const struct globals *g);
int cmd_check(int argc, char **argv, const struct globals *g);
int cmd_show(int argc, char **argv, const struct globals *g);
int cmd_runs(int argc, char **argv, const struct globals *g);
int cmd_top(int argc, char **argv, const struct globals *g);
int cmd_export(int argc, char **argv, const struct globals *g);
int cmd_report(int argc, char **argv, const struct globals *g);
int cmd_cache(int argc, char **argv, const struct globals *g);
int cmd_import(int argc, char **argv, const struct globals *g);
int cmd_worker(int argc, char **argv, const struct globals *g);
int cmd_serve(int argc, char **argv, const struct globals *g);
int cmd_submit(int argc, char **argv, const struct globals *g);
int cmd_jobs(int argc, char **argv, const struct globals *g);
int cmd_cancel(int argc, char **argv, const struct globals *g);
int cmd_wait(int argc, char **argv, const struct globals *g);
int cmd_compile_child(int argc, char **argv, const struct globals *g);

/* The exit codes every command shares, for --help and the man page. */
extern const char cmd_exit_codes[];

/*
 * Resolve the paths g->cmd's flags ask for: the config (a search path, with
 * the data directory), the database and the cache (a project directory, else
 * XDG); the others stay NULL. Strings are owned by g's caller through *owned
 * (free each, then the array). 0, or an exit code after error().
 */
int cmd_setup(struct globals *g, char ***owned, size_t *nowned);

/*
 * The command's usage: to stdout for --help (returns 0), to stderr after a
 * usage error (returns EX_USAGE).
 */
int cmd_usage(const struct globals *g, int status);
/* An argument the command takes none of: said, then the usage; EX_USAGE. */
int cmd_extra_arg(const struct globals *g, const char *arg);

/*
 * The database as g->cmd's flags ask: READ_DB an existing file, read-only
 * (missing: EX_NOINPUT, and nothing is created); NEED_DB read-write, created
 * with its directory. 0, or an exit code after error().
 */
int cmd_open_db(const struct globals *g, struct db **out);

/*
 * The run a reading command is about: run_id > 0 that run; else the latest
 * completed one (completed) or the latest of any status. 0, or EX_DATAERR
 * after error() (naming the latest run when none is completed).
 */
int cmd_pick_run(struct db *db, long long run_id, int completed, long long *out);

/* The tuning job g names: 0, or EX_CONFIG after error(). */
int cmd_load_config(const struct globals *g, struct config *cfg);

/* An option's integer value in [min, max]: 0, or error() naming the flag and the range. */
int cmd_parse_range(const char *flag, const char *s, long long min, long long max, long long *out);
/* The same without an upper bound. */
int cmd_parse_int(const char *flag, const char *s, long long min, long long *out);
/* An unsigned 64-bit value (a seed): 0, or error(). */
int cmd_parse_u64(const char *flag, const char *s, unsigned long long *out);

/*
 * A search's budget, as run, sweep and submit take it: --time D, a duration
 * ("90", "90s", "10m", "1.5h") above 0 and at most a week, in seconds; --evals
 * N, verdicts from 1 to CMD_EVALS_MAX. 0, or error() naming the option.
 */
#define CMD_TIME_MAX  (7 * 86400.0)
#define CMD_EVALS_MAX 1000000000LL
int cmd_parse_time(const char *s, double *out);
int cmd_parse_evals(const char *s, long long *out);
/*
 * A job's budget as its options hold it (*time_s, *evals: 0 none), and as text:
 * "10m, 20 evaluations; 95 s spent" ("" without one), for tuner jobs and wait.
 */
void cmd_job_budget(const struct db_job *j, double *time_s, long long *evals, char *buf,
                    size_t len);

/* The most parallel compiles --jobs may ask for: 4 per online core, at most 1024. */
long long cmd_jobs_max(void);

/* Flush what a command printed: 0, or EX_IOERR after saying why (a full disk, a closed pipe). */
int cmd_flush_stdout(void);

#endif
