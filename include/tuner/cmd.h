/* The subcommand table: one cmd-*.c per subcommand. */
#ifndef TUNER_CMD_H
#define TUNER_CMD_H

enum cmd_flags {
	NEED_CONFIG = 1 << 0, /* loads --config */
	NEED_DB = 1 << 1,     /* opens --db */
};

/* Global options, parsed in main before the subcommand. */
struct globals {
	const char *db_path;     /* --db, $TUNER_DB, "tuner.db" */
	const char *config_path; /* --config, "configs/default.yaml" */
	int config_given;        /* --config was on the command line */
};

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv, const struct globals *g);
	unsigned flags;
	const char *summary; /* one line for `tuner --help`; NULL: not listed */
	const char *usage;   /* the subcommand's --help text */
};

extern const struct cmd cmd_table[];
extern const unsigned cmd_count;
const struct cmd *cmd_find(const char *name);

int cmd_run(int argc, char **argv, const struct globals *g);
int cmd_check(int argc, char **argv, const struct globals *g);
int cmd_show(int argc, char **argv, const struct globals *g);
int cmd_sweep(int argc, char **argv, const struct globals *g);
int cmd_top(int argc, char **argv, const struct globals *g);
int cmd_export(int argc, char **argv, const struct globals *g);
int cmd_import(int argc, char **argv, const struct globals *g);
int cmd_worker(int argc, char **argv, const struct globals *g);

/* An option's integer value, at least min; 0, or error() naming the flag. */
int cmd_parse_int(const char *flag, const char *s, long long min, long long *out);

/* Flush what a command printed: 0, or EX_IOERR after saying why (a full disk, a closed pipe). */
int cmd_flush_stdout(void);

/* Where cubins are cached: $TUNER_CACHE, else tuner-cache/ beside the database. Caller frees. */
char *cmd_cache_dir(const struct globals *g);

#endif
