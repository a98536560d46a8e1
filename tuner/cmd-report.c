/* tuner report: a run as Markdown and self-contained HTML with plots, in a directory. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tuner/cmd.h"
#include "tuner/common.h"
#include "tuner/db.h"
#include "tuner/export.h"
#include "tuner/report.h"

static const char cmd_report_usage[] =
    "usage: tuner report [--run ID] [-o DIR] [--library FILE]... [--sweep DB]\n"
    "                    [--no-plots]\n"
    "\n"
    "Write a report of a run (the latest unless --run) into DIR: report.md\n"
    "(Markdown, linking the PNGs beside it), report.html (the same, self-\n"
    "contained: the plots embedded as data: URIs), the plots as PNG files and\n"
    "plots.gp, the gnuplot script that draws them (its data inline).\n"
    "The plots: best fitness against evaluations and against wall time, with\n"
    "a random-search baseline where there is one; each shape's speedup of the\n"
    "winner over the baseline configuration and over imported library\n"
    "timings; the verdicts of each generation; the winner's timing samples.\n"
    "Without gnuplot (Debian: gnuplot-nox) the report keeps its tables and\n"
    "tuner warns. Nothing is half-written: the files are made beside DIR and\n"
    "moved into it whole.\n"
    "\n"
    "Random-search baselines: a run with strategy random over the same space\n"
    "(template, arch, device, shapes) in the database; and the exact expected\n"
    "best after n evaluations of random search (order statistics), computed\n"
    "from a finished exhaustive run of the space: in the database --sweep\n"
    "names, else in this database, else in the one a replayed run answered\n"
    "from.\n"
    "\n"
    "  --run ID          the run (default: the latest)\n"
    "  -o, --output DIR  where (default: report-run<ID>); DIR's parent must\n"
    "                    exist; the files of an earlier report in DIR are\n"
    "                    replaced\n"
    "  --library FILE    library timings to compare with (repeatable). JSON:\n"
    "                      [{\"shape\": \"sq4096\", \"library\": \"torch\",\n"
    "                        \"median_us\": 9.31}, ...]\n"
    "                    shape is a shape of the run's suite; optional keys:\n"
    "                    \"dims\" (\"rows=4096,cols=4096\": the suite's),\n"
    "                    \"device\" and \"method\" (shown in the report).\n"
    "                    A bench script of the family may write it.\n"
    "  --sweep DB        a database holding an exhaustive sweep of the same\n"
    "                    space on the same device (read only), for the\n"
    "                    expected random-search curve\n"
    "  --no-plots        tables only: do not run gnuplot\n"
    "  -h, --help        print this help\n"
    "\n"
    "Environment: TUNER_GNUPLOT, the gnuplot to run (default: gnuplot).\n"
    "Exit status: 0 written (also without gnuplot), 64 bad usage, 65 unknown\n"
    "run, bad library file or no sweep in --sweep, 66 no database or a file\n"
    "that cannot be read, 73 DIR cannot be written.\n";

/* Read one --library file into lib: 0, or a sysexits code after error(). */
static int load_library(const char *path, struct report_libraries *lib)
{
	char *text = NULL;
	size_t len;
	int rc;

	/* a few hundred bytes a timing: 64 MiB is far more than any library's */
	if (read_file_limited(path, 64u << 20, &text, &len) < 0) {
		error("cannot read library timings '%s': %s", path, strerror(errno));
		return EX_NOINPUT;
	}
	rc = report_library_parse(path, text, lib) < 0 ? EX_DATAERR : 0;
	free(text);
	return rc;
}

/* s as one shell word: quoted when it holds anything but safe characters. */
static void add_word(struct strbuf *sb, const char *s)
{
	const char *c;

	if (*s && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	                    "_./=,:+@%-") == strlen(s)) {
		sb_adds(sb, s);
		return;
	}
	sb_adds(sb, "'");
	for (c = s; *c; c++) {
		if (*c == '\'')
			sb_adds(sb, "'\\''");
		else
			sb_add(sb, c, 1);
	}
	sb_adds(sb, "'");
}

/* The command that writes the same report again. */
static char *reproduce(const struct globals *g, long long run, const char *dir,
                       const char *const *files, size_t nfiles, const char *sweep, int no_plots)
{
	struct strbuf sb = STRBUF_INIT;
	size_t i;

	sb_adds(&sb, "tuner --db ");
	add_word(&sb, g->db_path);
	sb_addf(&sb, " report --run %lld -o ", run);
	add_word(&sb, dir);
	for (i = 0; i < nfiles; i++) {
		sb_adds(&sb, " --library ");
		add_word(&sb, files[i]);
	}
	if (sweep) {
		sb_adds(&sb, " --sweep ");
		add_word(&sb, sweep);
	}
	if (no_plots)
		sb_adds(&sb, " --no-plots");
	return sb_detach(&sb);
}

const struct cmd cmd_report_entry = {
    .name = "report",
    .fn = cmd_report,
    .flags = READ_DB,
    .summary = "write a run's report: Markdown and HTML with plots (gnuplot)",
    .usage = cmd_report_usage,
};

int cmd_report(int argc, char **argv, const struct globals *g)
{
	static const struct option opts[] = {
	    {"run", required_argument, NULL, 'r'},
	    {"output", required_argument, NULL, 'o'},
	    {"library", required_argument, NULL, 'l'},
	    {"sweep", required_argument, NULL, 's'},
	    {"no-plots", no_argument, NULL, 'n'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct report_libraries lib = {NULL, 0, 0};
	struct report_write_opts wo;
	struct report_result res;
	const char **files = NULL;
	size_t nfiles = 0, alloc = 0, len, i;
	long long run = 0;
	char *dir = NULL, *command;
	const char *gnuplot, *sweep = NULL;
	int no_plots = 0, c, rc;
	struct report r;
	struct db *db;

	while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			if (cmd_parse_int("--run", optarg, 1, &run) < 0)
				goto usage;
			break;
		case 'o':
			if (!*optarg) {
				error("-o needs a directory");
				goto usage;
			}
			free(dir);
			dir = xstrdup(optarg);
			break;
		case 'l':
			ALLOC_GROW(files, nfiles + 1, alloc);
			files[nfiles++] = optarg;
			break;
		case 's':
			sweep = optarg;
			break;
		case 'n':
			no_plots = 1;
			break;
		case 'h':
			fputs(cmd_report_usage, stdout);
			free(dir);
			free(files);
			return 0;
		default:
			goto usage;
		}
	}
	if (optind < argc) {
		error("unexpected argument '%s'", argv[optind]);
		goto usage;
	}
	for (i = 0; i < nfiles; i++) {
		rc = load_library(files[i], &lib);
		if (rc)
			goto out_lib;
	}
	if (sweep && access(sweep, R_OK) < 0) {
		error("cannot read the sweep '%s': %s", sweep, strerror(errno));
		rc = EX_NOINPUT;
		goto out_lib;
	}

	rc = export_open(g->db_path, run, &db, &run);
	if (rc) {
		rc = rc > 0 ? EX_NOINPUT : EX_DATAERR;
		goto out_lib;
	}
	rc = report_gather(db, run, &lib, sweep, &r);
	db_close(db);
	if (rc < 0) {
		rc = EX_DATAERR;
		goto out_lib;
	}
	if (!dir)
		dir = xasprintf("report-run%lld", run);
	/* "out/" and "out" are one directory; the staging name is made from the last part. */
	for (len = strlen(dir); len > 1 && dir[len - 1] == '/'; len--)
		dir[len - 1] = '\0';
	gnuplot = getenv("TUNER_GNUPLOT");
	if (!gnuplot || !*gnuplot)
		gnuplot = "gnuplot";
	command = reproduce(g, run, dir, files, nfiles, sweep, no_plots);
	wo.dir = dir;
	wo.gnuplot = no_plots ? NULL : gnuplot;
	wo.command = command;
	wo.now = time(NULL);
	rc = report_write(&r, &wo, &res) < 0 ? EX_CANTCREAT : 0;
	if (!rc) {
		printf("wrote %s/report.md and %s/report.html", dir, dir);
		if (res.plots)
			printf(", %d plot%s", res.plots, res.plots == 1 ? "" : "s");
		else if (res.plots_wanted)
			printf(", no plots");
		printf(" (run %lld)\n", run);
		rc = cmd_flush_stdout();
	}
	free(command);
	report_release(&r);
out_lib:
	report_libraries_release(&lib);
	free(files);
	free(dir);
	return rc;

usage:
	fputs(cmd_report_usage, stderr);
	free(files);
	free(dir);
	return EX_USAGE;
}
