/* The subcommand table. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/cmd.h"
#include "tuner/common.h"
#include "tuner/compile.h"
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
		 "  --strategy S      evolve (default), random or exhaustive\n"
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
	.name = "report",
	.fn = cmd_report,
	.flags = NEED_DB,
	.summary = "write a run's report: Markdown and HTML with plots (gnuplot)",
	.usage = cmd_report_usage,
    },
    {
	.name = "serve",
	.fn = cmd_serve,
	.flags = NEED_DB,
	.summary = "the daemon: run the queued jobs on this host's GPUs until SIGTERM",
	.usage = cmd_serve_usage,
    },
    {
	.name = "submit",
	.fn = cmd_submit,
	.flags = NEED_DB,
	.summary = "check a tuning job and queue it for tuner serve",
	.usage = cmd_submit_usage,
    },
    {
	.name = "jobs",
	.fn = cmd_jobs,
	.flags = NEED_DB,
	.summary = "list the queue: status, progress, best so far, GPUs, host",
	.usage = cmd_jobs_usage,
    },
    {
	.name = "cancel",
	.fn = cmd_cancel,
	.flags = NEED_DB,
	.summary = "cancel a queued or running job",
	.usage = cmd_cancel_usage,
    },
    {
	.name = "wait",
	.fn = cmd_wait,
	.flags = NEED_DB,
	.summary = "wait for a job to finish and print how it ended",
	.usage = cmd_wait_usage,
    },
    {
	/* The GPU child process; started by tuner itself, not listed. */
	.name = "__worker",
	.fn = cmd_worker,
	.flags = 0,
	.summary = NULL,
	.usage = "usage: tuner __worker --fd=N --device=N (started by tuner itself)\n",
    },
    {
	/* A compile process of the compile pool; started by tuner itself, not listed. */
	.name = "__compile",
	.fn = cmd_compile_child,
	.flags = 0,
	.summary = NULL,
	.usage = "usage: tuner __compile --fd=N (started by tuner itself)\n",
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

int cmd_compile_child(int argc, char **argv, const struct globals *g)
{
	(void)g;
	return compile_child_main(argc, argv);
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
