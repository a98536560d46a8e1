/* tuner import: another tuner's recorded results (T4, Kernel Tuner cache) as a replayable
 * landscape. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tuner/cmd.h"
#include "tuner/common.h"
#include "tuner/import.h"

struct import_opts {
	const char *t1, *device, *name, *baseline, *output, *direction;
	int force;
};

static const char cmd_import_usage[] =
    "usage: tuner import [--t1 SPACE.json] [--device NAME] [--name NAME]\n"
    "                    [--baseline default|median|NAME=V,...]\n"
    "                    [--direction higher|lower] [--force] -o CONFIG.yaml RESULTS\n"
    "\n"
    "Read RESULTS, a T4 results file or a Kernel Tuner cache file (JSON,\n"
    "gzipped or not), with the T1 description of its search space, into a\n"
    "new database (--db) that 'tuner run --replay' answers from, and write\n"
    "CONFIG.yaml with its landscape sidecar CONFIG.family.yaml beside it:\n"
    "  tuner --config CONFIG.yaml run --replay DB\n"
    "searches the recorded landscape on a CPU. The restrictions (Python) are\n"
    "translated into tuner's expressions (true division exactly, as\n"
    "fractions), or refused with the reason; T1's values may be Python lists,\n"
    "range() or comprehensions. Every recorded invalid configuration keeps\n"
    "its verdict (compile, runtime, restrictions, correctness). Values that\n"
    "are not integers become codes of their labels. Fitness is the\n"
    "baseline's time (or cost) over a variant's; a higher-is-better\n"
    "objective, such as GFLOP/s, counts as its inverse.\n"
    "\n"
    "  --t1 SPACE.json   the T1 search space (needed for T4 files)\n"
    "  --device NAME     where it was measured (default: the file's, or its\n"
    "                    name: KERNEL_DEVICE_T4.json.gz)\n"
    "  --name NAME       the family's name (default: the benchmark's)\n"
    "  --baseline B      default (the declared defaults; the default), median\n"
    "                    (the timed configuration of median time) or NAME=V,...\n"
    "  --direction D     higher or lower: which is better for the objective,\n"
    "                    where the files do not say (default: higher for a\n"
    "                    rate, a name with /s, flops, throughput or\n"
    "                    bandwidth; lower otherwise; a time is always lower)\n"
    "  -o, --output F    the config to write\n"
    "  --force           replace the database if it exists\n"
    "  -h, --help        print this help\n";

const struct cmd cmd_import_entry = {
    .name = "import",
    .fn = cmd_import,
    .flags = NEED_DB,
    .summary = "read another tuner's recorded results as a landscape to replay",
    .usage = cmd_import_usage,
};

static int parse_import_opts(int argc, char **argv, struct import_opts *o)
{
	static const struct option opts[] = {
	    {"t1", required_argument, NULL, 't'},
	    {"device", required_argument, NULL, 'd'},
	    {"name", required_argument, NULL, 'n'},
	    {"baseline", required_argument, NULL, 'b'},
	    {"output", required_argument, NULL, 'o'},
	    {"force", no_argument, NULL, 'f'},
	    {"direction", required_argument, NULL, 'r'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;

	memset(o, 0, sizeof(*o));
	while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			o->t1 = optarg;
			break;
		case 'd':
			o->device = optarg;
			break;
		case 'n':
			o->name = optarg;
			break;
		case 'b':
			o->baseline = optarg;
			break;
		case 'r':
			o->direction = optarg;
			break;
		case 'o':
			o->output = optarg;
			break;
		case 'f':
			o->force = 1;
			break;
		case 'h':
			fputs(cmd_import_usage, stdout);
			exit(0);
		default:
			return -1;
		}
	}
	if (optind == argc)
		return error("no results file to import");
	if (optind + 1 != argc)
		return error("one results file at a time, got %d", argc - optind);
	if (!o->output)
		return error("no config to write: give one with -o CONFIG.yaml");
	if (o->direction && strcmp(o->direction, "higher") && strcmp(o->direction, "lower"))
		return error("--direction must be 'higher' or 'lower', not '%s'", o->direction);
	return 0;
}

static char *command_line(int argc, char **argv)
{
	struct strbuf sb = STRBUF_INIT;
	int i;

	sb_adds(&sb, "tuner");
	for (i = 0; i < argc; i++)
		sb_addf(&sb, " %s", argv[i]);
	return sb_detach(&sb);
}

/* --force: the database to write is replaced, its -wal and -shm with it. */
static int remove_db(const char *path)
{
	static const char *const suffixes[] = {"", "-wal", "-shm"};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(suffixes); i++) {
		char *p = xasprintf("%s%s", path, suffixes[i]);
		int r = unlink(p);

		if (r < 0 && errno != ENOENT) {
			error("cannot remove '%s': %s", p, strerror(errno));
			free(p);
			return -1;
		}
		free(p);
	}
	return 0;
}

static void summary(const struct import_landscape *ls, const char *config, const char *db)
{
	long long counts[OUTCOME_COUNT] = {0};
	double best = INFINITY, base = NAN;
	size_t i;
	int o, first = 1;

	for (i = 0; i < ls->nentries; i++) {
		const struct import_entry *e = &ls->entries[i];

		counts[e->outcome]++;
		if (e->outcome == VARIANT_OK && e->cost < best)
			best = e->cost;
		if (!memcmp(e->v, ls->baseline, ls->nparams * sizeof(e->v[0])))
			base = e->cost;
	}
	printf("imported %zu configurations of %s on %s (%s): ", ls->nentries, ls->name, ls->device,
	       ls->format);
	for (o = 0; o < OUTCOME_COUNT; o++)
		if (counts[o]) {
			printf("%s%lld %s", first ? "" : ", ", counts[o],
			       o == VARIANT_OK ? "timed" : outcome_name((enum outcome)o));
			first = 0;
		}
	printf("\n%zu params, %zu restrictions translated; objective %s (%s is better)\n",
	       ls->nparams, ls->nrestrictions, ls->objective, ls->maximize ? "higher" : "lower");
	printf("baseline: %s; the optimum is x%.4f over it\n", ls->baseline_why, base / best);
	printf("replay it with: tuner --config %s run --replay %s\n", config, db);
}

int cmd_import(int argc, char **argv, const struct globals *g)
{
	struct import_landscape ls;
	struct import_opts o;
	char *cmd;
	int rc = 0;

	if (parse_import_opts(argc, argv, &o) < 0) {
		fputs(cmd_import_usage, stderr);
		return EX_USAGE;
	}
	if (import_read(argv[optind], o.t1, o.device, o.name, &ls) < 0) {
		import_release(&ls);
		return EX_DATAERR;
	}
	if (import_set_direction(&ls, o.direction) < 0 ||
	    import_set_baseline(&ls, o.baseline) < 0) {
		import_release(&ls);
		return EX_DATAERR;
	}
	if (o.force && remove_db(g->db_path) < 0) {
		import_release(&ls);
		return EX_CANTCREAT;
	}
	cmd = command_line(argc, argv);
	if (import_write(&ls, o.output, g->db_path, cmd) < 0)
		rc = EX_CANTCREAT;
	else
		summary(&ls, o.output, g->db_path);
	free(cmd);
	import_release(&ls);
	return rc ? rc : cmd_flush_stdout();
}
