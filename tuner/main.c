/* The tuner command line: global options, then one subcommand from the table. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/cmd.h"
#include "tuner/common.h"

static void usage(FILE *out)
{
	unsigned i;

	fprintf(out, "usage: tuner [--db FILE] [--config FILE] <command> [<args>]\n"
	             "       tuner --version | --help | help <command>\n\n"
	             "An autotuning search daemon for CUDA kernels.\n\ncommands:\n");
	for (i = 0; i < cmd_count; i++)
		if (cmd_table[i].summary)
			fprintf(out, "  %-8s %s\n", cmd_table[i].name, cmd_table[i].summary);
	fprintf(out, "\nglobal options:\n"
	             "  --db FILE       the database (default $TUNER_DB, else tuner.db)\n"
	             "  --config FILE   the tuning job (default configs/default.yaml)\n"
	             "  --version       print the version and exit\n"
	             "  -h, --help      print this help and exit\n\n"
	             "Run 'tuner <command> --help' for a command's options.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"db", required_argument, NULL, 'd'},
	    {"config", required_argument, NULL, 'c'},
	    {"version", no_argument, NULL, 'V'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct globals g = {0};
	const struct cmd *cmd;
	int c;

	g.db_path = getenv("TUNER_DB");
	if (!g.db_path || !*g.db_path)
		g.db_path = "tuner.db";
	g.config_path = "configs/default.yaml";

	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			g.db_path = optarg;
			break;
		case 'c':
			g.config_path = optarg;
			g.config_given = 1;
			break;
		case 'V':
			printf("tuner %s\n", TUNER_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
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
			return 0;
		}
		cmd = cmd_find(argv[optind + 1]);
		if (!cmd) {
			error("unknown command '%s'", argv[optind + 1]);
			return EX_USAGE;
		}
		fputs(cmd->usage, stdout);
		return 0;
	}
	cmd = cmd_find(argv[optind]);
	if (!cmd) {
		error("unknown command '%s' (see 'tuner --help')", argv[optind]);
		return EX_USAGE;
	}
	/* The subcommand sees its own name as argv[0]. */
	optind++;
	{
		int sub_argc = argc - optind + 1;
		char **sub_argv = argv + optind - 1;

		optind = 0; /* reset getopt for the subcommand (GNU: 0 reinitialises) */
		return cmd->fn(sub_argc, sub_argv, &g);
	}
}
