/* The tuner command line: global options (before or after the command), then one subcommand. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/cmd.h"
#include "tuner/common.h"
#include "tuner/compile.h"
#include "tuner/cuda.h"

static void usage(FILE *out)
{
	unsigned i;

	fprintf(out, "usage: tuner [--db FILE] [--config FILE] [-q | -v] <command> [<args>]\n"
	             "       tuner --version | --help | help <command>\n\n"
	             "An autotuning search daemon for CUDA kernels.\n\ncommands:\n");
	for (i = 0; i < cmd_count; i++)
		if (cmd_table[i]->summary)
			fprintf(out, "  %-8s %s\n", cmd_table[i]->name, cmd_table[i]->summary);
	fprintf(out,
	        "\nglobal options (before or after the command):\n"
	        "  --db FILE       the database\n"
	        "  --config FILE   the tuning job; a bare NAME is also looked up as\n"
	        "                  configs/NAME[.yaml] here and in the data directory\n"
	        "  -q, --quiet     print only errors, warnings and what was asked for\n"
	        "  -v, --verbose   say more: paths, each verdict, cache evictions\n"
	        "  --version       print the versions of tuner, NVRTC and the CUDA driver\n"
	        "  -h, --help      print this help and exit\n\n"
	        "where things are:\n"
	        "  In a project directory (one with configs/ or tuner.db) the database is\n"
	        "  ./tuner.db and the cubin cache ./tuner-cache; elsewhere they are\n"
	        "  $XDG_DATA_HOME/tuner/tuner.db and $XDG_CACHE_HOME/tuner (by default\n"
	        "  ~/.local/share/tuner and ~/.cache/tuner). $TUNER_DB and $TUNER_CACHE\n"
	        "  override them. The config is --config, $TUNER_CONFIG, ./configs/default.yaml,\n"
	        "  else the installed one in the data directory ($TUNER_DATADIR, else\n"
	        "  ../share/tuner beside the binary).\n\n"
	        "%s\n"
	        "Run 'tuner <command> --help' for a command's options.\n",
	        cmd_exit_codes);
}

/* The NVRTC tuner is linked with, and the CUDA driver it would load (none is no error). */
static void version(void)
{
	char nvrtc[32], driver[32], why[256], module[64];

	printf("tuner %s\n", TUNER_VERSION);
	if (compile_nvrtc_version(nvrtc, sizeof(nvrtc)) == 0)
		printf("NVRTC %s\n", nvrtc);
	else
		printf("NVRTC: unknown\n");
	if (cuda_driver_version(driver, sizeof(driver), module, sizeof(module), why, sizeof(why)) ==
	    0)
		printf("CUDA driver %s%s%s%s\n", driver, *module ? " (kernel module " : "", module,
		       *module ? ")" : "");
	else
		printf("CUDA driver: none (%s)\n", why);
}

/* Global options: one getopt table for before the command, the same names after it. */
enum { OPT_DB = 256, OPT_CONFIG, OPT_VERSION };

static const struct option global_opts[] = {
    {"db", required_argument, NULL, OPT_DB},
    {"config", required_argument, NULL, OPT_CONFIG},
    {"quiet", no_argument, NULL, 'q'},
    {"verbose", no_argument, NULL, 'v'},
    {"version", no_argument, NULL, OPT_VERSION},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void set_global(struct globals *g, int c, const char *arg)
{
	switch (c) {
	case OPT_DB:
		g->db_path = arg;
		break;
	case OPT_CONFIG:
		g->config_path = arg;
		break;
	case 'q':
		g->verbosity = -1;
		break;
	case 'v':
		g->verbosity = 1;
		break;
	default:
		BUG("global option %d", c);
	}
}

/*
 * Take the global options out of a command's arguments (up to a "--"):
 * --db FILE, --db=FILE, --config FILE, --config=FILE, -q, --quiet, -v,
 * --verbose. --help after the command is the command's own. 0, or EX_USAGE.
 */
static int take_globals(int *argc, char **argv, struct globals *g)
{
	int i, j = 1;

	for (i = 1; i < *argc; i++) {
		const char *a = argv[i];
		const struct option *o;

		if (!strcmp(a, "--")) {
			while (i < *argc)
				argv[j++] = argv[i++];
			break;
		}
		if (!strcmp(a, "-q") || !strcmp(a, "-v")) {
			set_global(g, a[1], NULL);
			continue;
		}
		for (o = global_opts; o->name; o++) {
			size_t n = strlen(o->name);

			if (o->val == 'h' || o->val == OPT_VERSION || strncmp(a, "--", 2) ||
			    strncmp(a + 2, o->name, n) || (a[2 + n] && a[2 + n] != '='))
				continue;
			if (o->has_arg == no_argument && a[2 + n] == '=') {
				error("option '--%s' takes no value", o->name);
				return EX_USAGE;
			}
			if (o->has_arg == no_argument)
				set_global(g, o->val, NULL);
			else if (a[2 + n] == '=')
				set_global(g, o->val, a + 3 + n);
			else if (i + 1 < *argc)
				set_global(g, o->val, argv[++i]);
			else {
				error("option '--%s' needs a value", o->name);
				return EX_USAGE;
			}
			break;
		}
		if (!o->name)
			argv[j++] = argv[i];
	}
	argv[j] = NULL;
	*argc = j;
	return 0;
}

/*
 * Run a command as its flags ask (git's run_builtin): resolve where things
 * are, run it, and check once that what it printed reached stdout.
 */
static int run_builtin(const struct cmd *cmd, int argc, char **argv, struct globals *g)
{
	char **owned = NULL;
	size_t nowned = 0, i;
	int rc;

	g->cmd = cmd;
	rc = take_globals(&argc, argv, g);
	if (!rc)
		rc = cmd_setup(g, &owned, &nowned);
	if (!rc) {
		optind = 0; /* reset getopt for the subcommand (GNU: 0 reinitialises) */
		rc = cmd->fn(argc, argv, g);
	}
	if (!rc)
		rc = cmd_flush_stdout();
	for (i = 0; i < nowned; i++)
		free(owned[i]);
	free(owned);
	return rc;
}

int main(int argc, char **argv)
{
	struct globals g;
	const struct cmd *cmd;
	int c;

	memset(&g, 0, sizeof(g));
	while ((c = getopt_long(argc, argv, "+hqv", global_opts, NULL)) != -1) {
		switch (c) {
		case OPT_DB:
		case OPT_CONFIG:
		case 'q':
		case 'v':
			set_global(&g, c, optarg);
			break;
		case OPT_VERSION:
			version();
			return cmd_flush_stdout();
		case 'h':
			usage(stdout);
			return cmd_flush_stdout();
		default:
			usage(stderr);
			return EX_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EX_USAGE;
	}
	if (!strcmp(argv[optind], "help")) {
		if (optind + 1 >= argc) {
			usage(stdout);
			return cmd_flush_stdout();
		}
		cmd = cmd_find(argv[optind + 1]);
		if (!cmd) {
			error("unknown command '%s' (see 'tuner --help')", argv[optind + 1]);
			return EX_USAGE;
		}
		fputs(cmd->usage, stdout);
		return cmd_flush_stdout();
	}
	cmd = cmd_find(argv[optind]);
	if (!cmd) {
		error("unknown command '%s' (see 'tuner --help')", argv[optind]);
		return EX_USAGE;
	}
	/* The subcommand sees its own name as argv[0]. */
	return run_builtin(cmd, argc - optind, argv + optind, &g);
}
