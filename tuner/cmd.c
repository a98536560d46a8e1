/* The subcommand table, and what every command shares: where things are, opening, parsing. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "tuner/checks.h"
#include "tuner/cmd.h"
#include "tuner/common.h"
#include "tuner/config.h"
#include "tuner/compile.h"
#include "tuner/db.h"
#include "tuner/pq.h"
#include "tuner/worker.h"

const struct cmd *const cmd_table[] = {
    &cmd_run_entry,    &cmd_sweep_entry,   &cmd_check_entry,  &cmd_runs_entry,   &cmd_show_entry,
    &cmd_top_entry,    &cmd_export_entry,  &cmd_report_entry, &cmd_cache_entry,  &cmd_import_entry,
    &cmd_serve_entry,  &cmd_submit_entry,  &cmd_jobs_entry,   &cmd_cancel_entry, &cmd_wait_entry,
    &cmd_worker_entry, &cmd_compile_entry,
};

const unsigned cmd_count = sizeof(cmd_table) / sizeof(cmd_table[0]);

const struct cmd *cmd_find(const char *name)
{
	unsigned i;

	for (i = 0; i < cmd_count; i++)
		if (!strcmp(cmd_table[i]->name, name))
			return cmd_table[i];
	return NULL;
}

/* The GPU child process; started by tuner itself, not listed. */
const struct cmd cmd_worker_entry = {
    .name = "__worker",
    .fn = cmd_worker,
    .flags = 0,
    .summary = NULL,
    .usage = "usage: tuner __worker --fd=N --device=N (started by tuner itself)\n",
};

int cmd_worker(int argc, char **argv, const struct globals *g)
{
	(void)g;
	return worker_main(argc, argv);
}

/* A compile process of the compile pool; started by tuner itself, not listed. */
const struct cmd cmd_compile_entry = {
    .name = "__compile",
    .fn = cmd_compile_child,
    .flags = 0,
    .summary = NULL,
    .usage = "usage: tuner __compile --fd=N (started by tuner itself)\n",
};

int cmd_compile_child(int argc, char **argv, const struct globals *g)
{
	(void)g;
	return compile_child_main(argc, argv);
}

const char cmd_exit_codes[] =
    "exit status:\n"
    "  0        success\n"
    "  1        check: a gate rejected the configuration\n"
    "  64       usage: a bad option, argument or number (EX_USAGE)\n"
    "  65       bad data: an unknown run or variant, nothing to rank (EX_DATAERR)\n"
    "  66       a missing input: the database, a recording (EX_NOINPUT)\n"
    "  70       an internal error (EX_SOFTWARE)\n"
    "  73       cannot create the database or an output file (EX_CANTCREAT)\n"
    "  74       cannot write the output (EX_IOERR)\n"
    "  75       the run is still running in another process (EX_TEMPFAIL)\n"
    "  78       a bad config (EX_CONFIG)\n"
    "  128+N    run or sweep stopped by signal N, its status recorded, resumable:\n"
    "           130 Ctrl-C (SIGINT), 143 SIGTERM, 129 SIGHUP, 141 a closed pipe\n";

int cmd_usage(const struct globals *g, int status)
{
	fputs(g->cmd->usage, status ? stderr : stdout);
	return status;
}

int cmd_extra_arg(const struct globals *g, const char *arg)
{
	error("unexpected argument '%s'", arg);
	return cmd_usage(g, EX_USAGE);
}

/* ------------------------------------------------------ where things are */

static int is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static const char *keep(char ***owned, size_t *n, char *s)
{
	*owned = xrealloc(*owned, (*n + 1) * sizeof(**owned));
	(*owned)[(*n)++] = s;
	return s;
}

/*
 * What `make install` installed: $TUNER_DATADIR; else ../share/tuner beside
 * the executable, so an installed tree works wherever it was copied; else the
 * PREFIX the binary was built for. NULL when none has a configs/ directory.
 */
static char *find_datadir(void)
{
	const char *env = getenv("TUNER_DATADIR");
	char exe[PATH_MAX], *bin, *dir, *configs;
	ssize_t n;

	if (env && *env)
		return xstrdup(env);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		bin = path_dirname(exe);
		dir = xasprintf("%s/../share/tuner", bin);
		free(bin);
		configs = xasprintf("%s/configs", dir);
		if (is_dir(configs)) {
			free(configs);
			return dir;
		}
		free(configs);
		free(dir);
	}
	configs = xasprintf("%s/configs", TUNER_DATADIR);
	dir = is_dir(configs) ? xstrdup(TUNER_DATADIR) : NULL;
	free(configs);
	return dir;
}

/*
 * The tuning job. A path that exists is used as given. A bare name (no '/')
 * is also looked for as configs/NAME and configs/NAME.yaml here, then in the
 * data directory. Nothing given: configs/default.yaml here, then in the data
 * directory. What is not found is left as given, for config_load's message.
 */
static char *find_config(const char *given, const char *datadir)
{
	const char *name = given ? given : "default.yaml";
	char *data = datadir ? xasprintf("%s/configs", datadir) : NULL;
	const char *dirs[2] = {"configs", data};
	char *found = NULL;
	size_t d;

	if (given && (is_file(given) || strchr(given, '/'))) {
		free(data);
		return xstrdup(given);
	}
	for (d = 0; d < 2 && dirs[d] && !found; d++) {
		char *p = xasprintf("%s/%s", dirs[d], name), *q = xasprintf("%s.yaml", p);

		if (is_file(p))
			found = xstrdup(p);
		else if (is_file(q))
			found = xstrdup(q);
		free(p);
		free(q);
	}
	free(data);
	return found ? found : xstrdup(given ? given : "configs/default.yaml");
}

/*
 * A project directory is one with a configs/ directory or a tuner.db: there
 * the database and the cache live beside the configs (./tuner.db,
 * ./tuner-cache). Anywhere else they go where XDG says.
 */
static int in_project(void)
{
	return is_dir("configs") || access("tuner.db", F_OK) == 0;
}

/* $XDG_<what>_HOME/tuner, else $HOME/<fallback>/tuner; NULL without either. */
static char *xdg_dir(const char *var, const char *fallback)
{
	const char *base = getenv(var), *home = getenv("HOME");

	/* The spec: a relative value is invalid and ignored. */
	if (base && base[0] == '/')
		return xasprintf("%s/tuner", base);
	if (home && *home)
		return xasprintf("%s/%s/tuner", home, fallback);
	return NULL;
}

int cmd_setup(struct globals *g, char ***owned, size_t *nowned)
{
	unsigned flags = g->cmd->flags;
	const char *env;
	char *dir;
	int project = in_project();

	g->config_given = g->config_path != NULL;
	g->db_given = g->db_path != NULL;
	if (flags & NEED_CONFIG) {
		if ((dir = find_datadir()))
			g->datadir = keep(owned, nowned, dir);
		env = getenv("TUNER_CONFIG");
		if (!g->config_path && env && *env)
			g->config_path = env;
		g->config_path = keep(owned, nowned, find_config(g->config_path, g->datadir));
	}
	if (flags & (NEED_DB | READ_DB)) {
		env = getenv("TUNER_DB");
		if (!g->db_path && env && *env)
			g->db_path = env;
		if (!g->db_path && project) {
			g->db_path = "tuner.db";
		} else if (!g->db_path) {
			if (!(dir = xdg_dir("XDG_DATA_HOME", ".local/share")))
				goto nowhere;
			g->db_path = keep(owned, nowned, xasprintf("%s/tuner.db", dir));
			g->db_default = 1;
			free(dir);
		}
	}
	if (flags & NEED_CACHE) {
		env = getenv("TUNER_CACHE");
		if (env && *env)
			g->cache_dir = env;
		else if (project)
			g->cache_dir = "tuner-cache";
		else if ((dir = xdg_dir("XDG_CACHE_HOME", ".cache")))
			g->cache_dir = keep(owned, nowned, dir);
		else
			goto nowhere;
	}
	if (g->verbosity > 0)
		fprintf(stderr, "tuner: config %s, database %s, cache %s, data %s\n",
		        g->config_path ? g->config_path : "-", g->db_path ? g->db_path : "-",
		        g->cache_dir ? g->cache_dir : "-", g->datadir ? g->datadir : "-");
	return 0;
nowhere:
	error("no place for the database or the cache outside a project directory: set HOME, "
	      "XDG_DATA_HOME and XDG_CACHE_HOME, or give --db and $TUNER_CACHE");
	return EX_USAGE;
}

/* ------------------------------------------------------- opening things */

int cmd_open_db(const struct globals *g, struct db **out)
{
	struct stat st;
	char *dir;

	*out = NULL;
	if (pq_is_url(g->db_path)) {
		/* PostgreSQL: a reader's transactions are read-only, a writer sets the schema up */
		if (g->cmd->flags & READ_DB)
			return db_open_read(g->db_path, out) < 0 ? EX_NOINPUT : 0;
		return db_open(g->db_path, out) < 0 ? EX_CANTCREAT : 0;
	}
	if (g->cmd->flags & READ_DB) {
		/* Reading out never creates a database. */
		if (stat(g->db_path, &st) < 0) {
			if (errno == ENOENT)
				error("no database '%s' (run 'tuner run' first)", g->db_path);
			else
				error("cannot read database '%s': %s", g->db_path, strerror(errno));
			return EX_NOINPUT;
		}
		if (!S_ISREG(st.st_mode)) {
			error("database '%s' is not a regular file", g->db_path);
			return EX_NOINPUT;
		}
		return db_open_read(g->db_path, out) < 0 ? EX_DATAERR : 0;
	}
	if (!(g->cmd->flags & NEED_DB))
		BUG("command '%s' opens a database it did not declare", g->cmd->name);
	/* The XDG directory is made on first use; a --db in a missing directory is an error. */
	if (g->db_default) {
		dir = path_dirname(g->db_path);
		if (mkdir_p(dir) < 0) {
			free(dir);
			return EX_CANTCREAT;
		}
		free(dir);
	}
	return db_open(g->db_path, out) < 0 ? EX_CANTCREAT : 0;
}

int cmd_pick_run(struct db *db, long long run_id, int completed, long long *out)
{
	struct db_run r;
	long long latest;
	int found;

	if (run_id > 0) {
		if (db_run_get(db, run_id, &r) < 0)
			return EX_DATAERR;
		db_run_release(&r);
		*out = run_id;
		return 0;
	}
	found = db_run_latest_with(db, completed ? "done" : NULL, out);
	if (found > 0)
		return 0;
	if (found < 0)
		return EX_DATAERR;
	if (db_run_latest_with(db, NULL, &latest) <= 0) {
		error("database '%s' has no runs", db_path(db));
		return EX_DATAERR;
	}
	if (db_run_get(db, latest, &r) < 0)
		return EX_DATAERR;
	error("database '%s' has no completed run; the latest, run %lld, is %s (name it with "
	      "--run %lld)",
	      db_path(db), latest, r.status, latest);
	db_run_release(&r);
	return EX_DATAERR;
}

int cmd_load_config(const struct globals *g, struct config *cfg)
{
	if (!(g->cmd->flags & NEED_CONFIG))
		BUG("command '%s' loads a config it did not declare", g->cmd->name);
	if (config_load(g->config_path, cfg) == 0) {
		if (checks_exprs(cfg) == 0)
			return 0;
		config_release(cfg);
		return EX_CONFIG;
	}
	config_release(cfg);
	if (!g->config_given && !getenv("TUNER_CONFIG") && access(g->config_path, F_OK) < 0)
		error(
		    "no tuning job found: looked for configs/default.yaml here%s%s; give --config "
		    "FILE",
		    g->datadir ? " and in " : "", g->datadir ? g->datadir : "");
	return EX_CONFIG;
}

/* ---------------------------------------------------------------- parsing */

int cmd_parse_range(const char *flag, const char *s, long long min, long long max, long long *out)
{
	char *end;
	long long v;

	/* Digits, with a minus sign at most: no blanks, no "0x", no "12abc". */
	if (!((s[0] >= '0' && s[0] <= '9') || (s[0] == '-' && s[1] >= '0' && s[1] <= '9')))
		return error("%s needs an integer from %lld to %lld, got '%s'", flag, min, max, s);
	errno = 0;
	v = strtoll(s, &end, 10);
	if (*end)
		return error("%s needs an integer from %lld to %lld, got '%s'", flag, min, max, s);
	if (errno == ERANGE || v < min || v > max)
		return error("%s must be from %lld to %lld, got '%s'", flag, min, max, s);
	*out = v;
	return 0;
}

int cmd_parse_int(const char *flag, const char *s, long long min, long long *out)
{
	return cmd_parse_range(flag, s, min, LLONG_MAX, out);
}

int cmd_parse_u64(const char *flag, const char *s, unsigned long long *out)
{
	char *end;
	unsigned long long v;

	/* strtoull accepts "-1" as 2^64-1: only digits are a seed. */
	errno = 0;
	v = strtoull(s, &end, 10);
	if (s[0] < '0' || s[0] > '9' || *end)
		return error("%s needs an integer from 0 to %llu, got '%s'", flag, ULLONG_MAX, s);
	if (errno == ERANGE)
		return error("%s must be from 0 to %llu, got '%s'", flag, ULLONG_MAX, s);
	*out = v;
	return 0;
}

int cmd_parse_time(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno)
		goto bad;
	if (!strcmp(end, "m"))
		v *= 60;
	else if (!strcmp(end, "h"))
		v *= 3600;
	else if (*end && strcmp(end, "s"))
		goto bad;
	if (!(v > 0) || v > CMD_TIME_MAX)
		goto bad;
	*out = v;
	return 0;
bad:
	return error("--time needs a duration above 0 and at most a week (90, 90s, 10m, 2h), "
	             "got '%s'",
	             s);
}

int cmd_parse_evals(const char *s, long long *out)
{
	return cmd_parse_range("--evals", s, 1, CMD_EVALS_MAX, out);
}

void cmd_job_budget(const struct db_job *j, double *time_s, long long *evals, char *buf, size_t len)
{
	json_t *o = j->options ? json_loads(j->options, 0, NULL) : NULL;
	json_t *t = json_object_get(o, "time"), *e = json_object_get(o, "evals");
	char d[32];
	size_t at = 0;

	*time_s = json_is_number(t) ? json_number_value(t) : 0;
	*evals = json_is_integer(e) ? json_integer_value(e) : 0;
	json_decref(o);
	*buf = '\0';
	if (*time_s > 0) {
		format_duration(d, sizeof(d), *time_s);
		at = (size_t)snprintf(buf, len, "%s", d);
	}
	if (*evals > 0 && at < len)
		at += (size_t)snprintf(buf + at, len - at, "%s%lld evaluations", at ? ", " : "",
		                       *evals);
	if (at && at < len)
		snprintf(buf + at, len - at, "; %.0f s spent", j->elapsed);
}

long long cmd_jobs_max(void)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);

	if (cores < 1)
		cores = 1;
	return cores > 256 ? 1024 : 4 * (long long)cores;
}

int cmd_flush_stdout(void)
{
	if (fflush(stdout) || ferror(stdout)) {
		error("cannot write to stdout: %s", strerror(errno));
		return EX_IOERR;
	}
	return 0;
}
