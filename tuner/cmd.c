/* The subcommand table. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/cmd.h"
#include "tuner/common.h"
#include "tuner/worker.h"

const struct cmd cmd_table[] = {
    {
	.name = "run",
	.fn = cmd_run,
	.flags = NEED_CONFIG | NEED_DB,
	.summary = "search the space: gate, compile, evaluate on the GPU, record",
	.usage = "usage: tuner run [--generations N] [--population N] [--seed N] [--strategy S]\n"
		 "                 [--jobs N] [--no-gpu] [--resume[=RUN]] [--replay OTHER.db]\n"
		 "\n"
		 "Search the configured kernel family's space: each generation is\n"
		 "proposed by the strategy, gated, compiled, checked and timed on the\n"
		 "GPU, and the elite (top K by geometric-mean speedup over the shape\n"
		 "suite) is kept in the database. Without a GPU (or with --no-gpu)\n"
		 "everything is gated and compiled but nothing is timed.\n"
		 "SIGINT or SIGTERM finishes the variant in flight and stops; a second\n"
		 "one exits at once. Either way --resume continues the run.\n"
		 "\n"
		 "  --generations N   generations to run (default: the config's budget)\n"
		 "  --population N    candidates per generation (default: the config's budget)\n"
		 "  --seed N          RNG seed (default: the config's seed)\n"
		 "  --strategy S      evolve (default), evolve1 (the evolution before it),\n"
		 "                    random or exhaustive\n"
		 "  --jobs N          parallel compiles (default: one per core)\n"
		 "  --no-gpu          compile and gate only, even where a GPU is present\n"
		 "  --resume[=RUN]    continue a stopped or killed run (default: the latest)\n"
		 "                    without measuring again what it measured\n"
		 "  --replay OTHER.db answer from another database's measurements instead\n"
		 "                    of the GPU (same template, arch and shapes); a variant\n"
		 "                    it did not measure is reported as unmeasured\n"
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
    {
	.name = "sweep",
	.fn = cmd_sweep,
	.flags = NEED_CONFIG | NEED_DB,
	.summary = "evaluate every point of the space (run --strategy exhaustive)",
	.usage = "usage: tuner sweep [run options]\n"
		 "\n"
		 "The same as 'tuner run --strategy exhaustive': every point of the\n"
		 "declared space, generation after generation, until none is left.\n"
		 "See 'tuner run --help' for the options.\n",
    },
    {
	.name = "top",
	.fn = cmd_top,
	.flags = NEED_DB,
	.summary = "rank a run's elite by geometric-mean speedup",
	.usage = "usage: tuner top [--k N] [--run ID] [--json]\n"
		 "\n"
		 "The best K variants of a run (its final elite, then its other correct\n"
		 "variants by fitness): rank, params, geometric-mean speedup over the\n"
		 "baseline with its 95% interval, and each shape's median time and\n"
		 "speedup.\n"
		 "\n"
		 "  --k N        how many (default 3)\n"
		 "  --run ID     the run (default: the latest)\n"
		 "  --json       one JSON document on stdout\n"
		 "  -h, --help   print this help\n",
    },
    {
	.name = "export",
	.fn = cmd_export,
	.flags = NEED_DB,
	.summary = "write the winners as a C header, JSON or T4 results",
	.usage = "usage: tuner export [--k N] [--run ID] [-o FILE] [--format header|json|t4]\n"
		 "                    [--per-shape]\n"
		 "\n"
		 "Write the best K variants of a run (those 'tuner top' lists first).\n"
		 "header: #define PREFIX_PARAM value per param, the prefix from the\n"
		 "template's name, with the provenance in a comment; compiles on its own.\n"
		 "json: the ranking as 'tuner top --json' prints it.\n"
		 "t4: the T4 autotuning results format, every evaluated variant.\n"
		 "\n"
		 "  --k N             how many winners (default 1)\n"
		 "  --run ID          the run (default: the latest)\n"
		 "  -o, --output FILE write there (atomically) instead of stdout\n"
		 "  --format F        header (default), json or t4\n"
		 "  --per-shape       header: each shape's own best configuration\n"
		 "  -h, --help        print this help\n",
    },
    {
	.name = "import",
	.fn = cmd_import,
	.flags = NEED_DB,
	.summary = "read another tuner's recorded results as a landscape to replay",
	.usage = "usage: tuner import [--t1 SPACE.json] [--device NAME] [--name NAME]\n"
		 "                    [--baseline default|median|NAME=V,...] [--force]\n"
		 "                    -o CONFIG.yaml RESULTS\n"
		 "\n"
		 "Read RESULTS, a T4 results file or a Kernel Tuner cache file (JSON,\n"
		 "gzipped or not), with the T1 description of its search space, into a\n"
		 "new database (--db) that 'tuner run --replay' answers from, and write\n"
		 "CONFIG.yaml with its landscape sidecar CONFIG.family.yaml beside it:\n"
		 "  tuner --config CONFIG.yaml run --replay DB\n"
		 "searches the recorded landscape on a CPU. The restrictions (Python) are\n"
		 "translated into tuner's expressions, or refused with the reason. Every\n"
		 "recorded invalid configuration keeps its verdict (compile, runtime,\n"
		 "restrictions, correctness). Values that are not integers become codes\n"
		 "of their labels. Fitness is the baseline's time over a variant's.\n"
		 "\n"
		 "  --t1 SPACE.json   the T1 search space (needed for T4 files)\n"
		 "  --device NAME     where it was measured (default: the file's, or its\n"
		 "                    name: KERNEL_DEVICE_T4.json.gz)\n"
		 "  --name NAME       the family's name (default: the benchmark's)\n"
		 "  --baseline B      default (the declared defaults; the default), median\n"
		 "                    (the timed configuration of median time) or NAME=V,...\n"
		 "  -o, --output F    the config to write\n"
		 "  --force           replace the database if it exists\n"
		 "  -h, --help        print this help\n",
    },
    {
	/* The GPU child process; started by tuner itself, not listed. */
	.name = "__worker",
	.fn = cmd_worker,
	.flags = 0,
	.summary = NULL,
	.usage = "usage: tuner __worker --fd=N --device=N (started by tuner itself)\n",
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

int cmd_worker(int argc, char **argv, const struct globals *g)
{
	(void)g;
	return worker_main(argc, argv);
}

int cmd_parse_int(const char *flag, const char *s, long long min, long long *out)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < min)
		return error("%s needs an integer >= %lld, got '%s'", flag, min, s);
	*out = v;
	return 0;
}

int cmd_flush_stdout(void)
{
	if (fflush(stdout) || ferror(stdout)) {
		error("cannot write to stdout: %s", strerror(errno));
		return EX_IOERR;
	}
	return 0;
}
