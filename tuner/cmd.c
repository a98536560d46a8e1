/* The subcommand table. */
#include <string.h>

#include "tuner/cmd.h"

const struct cmd cmd_table[] = {
	{
		.name = "run",
		.fn = cmd_run,
		.flags = NEED_CONFIG | NEED_DB,
		.summary = "search the space: gate, compile, evaluate on the GPU, record",
		.usage = "usage: tuner run [--generations N] [--population N] [--seed N] [--no-gpu]\n"
			 "\n"
			 "Sample the configured kernel family's space, gate and compile every\n"
			 "candidate, evaluate the survivors on the GPU and record everything in\n"
			 "the database. Without a GPU (or with --no-gpu) nothing is timed.\n"
			 "\n"
			 "  --generations N   generations to run (default: the config's budget)\n"
			 "  --population N    candidates per generation (default: the config's budget)\n"
			 "  --seed N          RNG seed (default: the config's seed)\n"
			 "  --jobs N          parallel compiles (default: one per core)\n"
			 "  --no-gpu          compile and gate only, even where a GPU is present\n"
			 "  -h, --help        print this help\n",
	},
	{
		.name = "check",
		.fn = cmd_check,
		.flags = NEED_CONFIG,
		.summary = "run every gate on one configuration and explain each verdict",
		.usage = "usage: tuner check [--set NAME=V,...] [--no-compile]\n"
			 "\n"
			 "Run the gates (constraints, shared memory, alignment, compile,\n"
			 "resources) on one configuration of the configured family, for every\n"
			 "shape of the suite. Params not named keep the baseline's value; values\n"
			 "outside the declared domain are allowed with a warning.\n"
			 "Exits 0 when every gate passes, 1 when one rejects.\n"
			 "\n"
			 "  --set NAME=V,...  the configuration (default: the baseline)\n"
			 "  --no-compile      stop after the static gates\n"
			 "  -h, --help        print this help\n",
	},
	{
		.name = "show",
		.fn = cmd_show,
		.flags = NEED_DB,
		.summary = "explain a variant or a run from the database",
		.usage = "usage: tuner show [VARIANT | --run ID]\n"
			 "\n"
			 "With a variant id or hash prefix: its params, builds, gate verdicts\n"
			 "and measurements. With --run (or nothing): a run's summary.\n"
			 "\n"
			 "  --run ID     the run to summarise (default: the latest)\n"
			 "  -h, --help   print this help\n",
	},
};

const unsigned cmd_count = sizeof(cmd_table) / sizeof(cmd_table[0]);

const struct cmd *cmd_find(const char *name)
{
	unsigned i;

	for (i = 0; i < cmd_count; i++)
		if (!strcmp(cmd_table[i].name, name))
			return &cmd_table[i];
	return NULL;
}
