/* tuner export: write a run's winners as a C header, JSON or T4 results, to stdout or a file. */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tuner/cmd.h"
#include "tuner/common.h"
#include "tuner/db.h"
#include "tuner/export.h"

enum format { FORMAT_HEADER, FORMAT_JSON, FORMAT_T4 };

/* The document, in out; a sysexits code. */
static int render(struct db *db, long long run, long long k, enum format format, int per_shape,
                  const char *output, const char *config, struct strbuf *out)
{
	struct export_header_opts ho = {output, per_shape, time(NULL), NULL};
	struct config cfg;
	struct ranking r;
	int rc = 0;

	if (format == FORMAT_T4)
		return export_t4(db, run, out) < 0 ? EX_DATAERR : 0;
	if (export_rank(db, run, (size_t)k, &r) < 0)
		return EX_DATAERR;
	if (!r.n) {
		char why[128];

		error("%s: nothing to export", export_empty_reason(&r, why, sizeof(why)));
		rc = EX_DATAERR;
	} else if (format == FORMAT_JSON) {
		rc = export_json(&r, out) < 0 ? EX_DATAERR : 0;
	} else if (export_load_family(&r, config, &cfg) < 0) {
		rc = EX_CONFIG;
	} else {
		/* a recorded landscape has no kernel to launch: its header is the #defines */
		ho.cfg = cfg.fam.source ? &cfg : NULL;
		if ((per_shape && export_rank_per_shape(db, &r) < 0) ||
		    export_header(&r, &ho, out) < 0)
			rc = EX_DATAERR;
		config_release(&cfg);
	}
	ranking_release(&r);
	return rc;
}

/* Several runs, each its own family, as one header with a dispatch: a sysexits code. */
static int render_families(struct db *db, const long long *runs, size_t n, long long k,
                           const char *prefix, const char *output, struct strbuf *out)
{
	struct export_header_opts ho = {output, 1, time(NULL), NULL};
	struct export_family *f = xcalloc(n, sizeof(*f));
	size_t i, ranked = 0, loaded = 0;
	int rc = 0;

	for (i = 0; i < n && !rc; i++) {
		long long id;

		if ((rc = cmd_pick_run(db, runs[i], 1, &id)) != 0)
			break;
		if (export_rank(db, id, (size_t)k, &f[i].r) < 0) {
			rc = EX_DATAERR;
			break;
		}
		ranked++;
		if (!f[i].r.n) {
			char why[128];

			error("%s: nothing to export",
			      export_empty_reason(&f[i].r, why, sizeof(why)));
			rc = EX_DATAERR;
		} else if (export_load_family(&f[i].r, NULL, &f[i].cfg) < 0) {
			rc = EX_CONFIG;
		} else {
			loaded++;
			if (export_rank_per_shape(db, &f[i].r) < 0)
				rc = EX_DATAERR;
		}
	}
	if (!rc && export_header_families(f, n, prefix, &ho, out) < 0)
		rc = EX_DATAERR;
	for (i = 0; i < loaded; i++)
		config_release(&f[i].cfg);
	for (i = 0; i < ranked; i++)
		ranking_release(&f[i].r);
	free(f);
	return rc;
}

const struct cmd cmd_export_entry = {
    .name = "export",
    .fn = cmd_export,
    .flags = READ_DB,
    .summary = "write the winners as a C header, JSON or T4 results",
    .usage = "usage: tuner export [--k N] [--run ID] [-o FILE] [--format header|json|t4]\n"
	     "                    [--per-shape [--run ID --run ID ... [--prefix NAME]]]\n"
	     "\n"
	     "Write the best K variants of a run (those 'tuner top' lists first).\n"
	     "header: #define PREFIX_PARAM value per param, the prefix from the\n"
	     "template's name, with the provenance in a comment; then the template's\n"
	     "preamble (include the header, then the template: nothing else needed),\n"
	     "the launch (prefix_rank(r, dims...): grid, block, dynamic shared memory)\n"
	     "and with --per-shape prefix_select(dims...), the nearest tuned shape's.\n"
	     "It reads the run's sidecar through the config the run recorded (relative\n"
	     "to the current directory) or the one --config names.\n"
	     "With --per-shape and --run given twice or more, one header for them all:\n"
	     "each run's family in its section (its preamble only in a translation\n"
	     "unit that defines PREFIX_CONFIG or PREFIX_RANK: one per family build),\n"
	     "then NAME_select(dims...), which picks for tuned dims the family whose\n"
	     "best there has the lowest median, else the nearest tuned shape whose\n"
	     "winner can serve these dims (its problem's valid, a build of these\n"
	     "specialised dims), else another family that can. The runs must share\n"
	     "their problem's dims and their GPU, and tune a template each.\n"
	     "json: the ranking as 'tuner top --json' prints it.\n"
	     "t4: the T4 autotuning results format, every evaluated variant.\n"
	     "-o replaces FILE whole or not at all (a temporary file beside it,\n"
	     "synced, then renamed); it refuses the database itself, a directory\n"
	     "and anything that is not a regular file.\n"
	     "\n"
	     "  --k N             how many winners, 1 to 100000 (default 1)\n"
	     "  --run ID          the run (default: the latest completed run); with\n"
	     "                    --per-shape, repeatable: one family per run\n"
	     "  -o, --output FILE write there instead of stdout\n"
	     "  --format F        header (default), json or t4\n"
	     "  --per-shape       header: each shape's own best configuration\n"
	     "  --prefix NAME     the dispatch of several runs: NAME_select(),\n"
	     "                    NAME_ macros (default: dispatch)\n"
	     "  -h, --help        print this help\n",
};

int cmd_export(int argc, char **argv, const struct globals *g)
{
	static const struct option opts[] = {
	    {"k", required_argument, NULL, 'k'},      {"run", required_argument, NULL, 'r'},
	    {"output", required_argument, NULL, 'o'}, {"format", required_argument, NULL, 'f'},
	    {"per-shape", no_argument, NULL, 'p'},    {"prefix", required_argument, NULL, 'P'},
	    {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
	};
	long long k = 1, run = 0, runs[16]; /* one header for at most 16 families */
	size_t nruns = 0;
	const char *output = NULL, *prefix = NULL;
	enum format format = FORMAT_HEADER;
	int per_shape = 0, c, rc;
	struct strbuf out = STRBUF_INIT;
	struct db *db;

	while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
		switch (c) {
		case 'k':
			if (cmd_parse_range("--k", optarg, 1, 100000, &k) < 0)
				return cmd_usage(g, EX_USAGE);
			break;
		case 'r':
			if (cmd_parse_range("--run", optarg, 1, LLONG_MAX, &run) < 0)
				return cmd_usage(g, EX_USAGE);
			if (nruns == ARRAY_SIZE(runs)) {
				error("more than %zu runs", ARRAY_SIZE(runs));
				return cmd_usage(g, EX_USAGE);
			}
			runs[nruns++] = run;
			break;
		case 'P':
			if (!*optarg) {
				error("--prefix needs a name");
				return cmd_usage(g, EX_USAGE);
			}
			prefix = optarg;
			break;
		case 'o':
			output = optarg;
			break;
		case 'f':
			if (!strcmp(optarg, "header")) {
				format = FORMAT_HEADER;
			} else if (!strcmp(optarg, "json")) {
				format = FORMAT_JSON;
			} else if (!strcmp(optarg, "t4")) {
				format = FORMAT_T4;
			} else {
				error("unknown format '%s' (header, json, t4)", optarg);
				return cmd_usage(g, EX_USAGE);
			}
			break;
		case 'p':
			per_shape = 1;
			break;
		case 'h':
			return cmd_usage(g, 0);
		default:
			return cmd_usage(g, EX_USAGE);
		}
	}
	if (optind < argc)
		return cmd_extra_arg(g, argv[optind]);
	if (per_shape && format != FORMAT_HEADER) {
		error("--per-shape applies to --format header only");
		return cmd_usage(g, EX_USAGE);
	}
	if (nruns > 1 && !per_shape) {
		error(
		    "--run is repeatable with --per-shape only (one header for several families)");
		return cmd_usage(g, EX_USAGE);
	}
	if (prefix && nruns < 2) {
		error("--prefix names the dispatch of several runs: give --run twice or more");
		return cmd_usage(g, EX_USAGE);
	}
	if (nruns > 1 && g->config_given) {
		error("--config names one family's sidecar: several runs are read through the "
		      "configs they recorded");
		return cmd_usage(g, EX_USAGE);
	}
	if (output && !*output) {
		error("-o needs a file name");
		return cmd_usage(g, EX_USAGE);
	}
	/* Before anything is read: the target must be one export_write_file() may replace. */
	if (output && export_check_target(output, g->db_path) < 0)
		return EX_CANTCREAT;

	if ((rc = cmd_open_db(g, &db)) != 0)
		return rc;
	if (nruns > 1) {
		rc =
		    render_families(db, runs, nruns, k, prefix ? prefix : "dispatch", output, &out);
	} else if ((rc = cmd_pick_run(db, run, 1, &run)) == 0) {
		rc = render(db, run, k, format, per_shape, output,
		            g->config_given ? g->config_path : NULL, &out);
	}
	db_close(db);
	if (rc) {
		sb_release(&out);
		return rc;
	}
	/* Nothing is written unless all of it is: the file appears whole or not at all. */
	if (output)
		rc = export_write_file(output, g->db_path, out.buf, out.len) < 0 ? EX_CANTCREAT : 0;
	else
		fwrite(out.buf, 1, out.len, stdout);
	sb_release(&out);
	return rc;
}
