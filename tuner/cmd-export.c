/* tuner export: write a run's winners as a C header, JSON or T4 results, to stdout or a file. */
#include <errno.h>
#include <getopt.h>
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
                  const char *output, struct strbuf *out)
{
	struct export_header_opts ho = {output, per_shape, time(NULL)};
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
	} else if ((per_shape && export_rank_per_shape(db, &r) < 0) ||
	           export_header(&r, &ho, out) < 0) {
		rc = EX_DATAERR;
	}
	ranking_release(&r);
	return rc;
}

int cmd_export(int argc, char **argv, const struct globals *g)
{
	static const struct option opts[] = {
	    {"k", required_argument, NULL, 'k'},
	    {"run", required_argument, NULL, 'r'},
	    {"output", required_argument, NULL, 'o'},
	    {"format", required_argument, NULL, 'f'},
	    {"per-shape", no_argument, NULL, 'p'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	long long k = 1, run = 0;
	const char *output = NULL;
	enum format format = FORMAT_HEADER;
	int per_shape = 0, c, rc;
	struct strbuf out = STRBUF_INIT;
	struct db *db;

	while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
		switch (c) {
		case 'k':
			if (cmd_parse_int("--k", optarg, 1, &k) < 0)
				goto usage;
			break;
		case 'r':
			if (cmd_parse_int("--run", optarg, 1, &run) < 0)
				goto usage;
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
				goto usage;
			}
			break;
		case 'p':
			per_shape = 1;
			break;
		case 'h':
			fputs(cmd_find("export")->usage, stdout);
			return 0;
		default:
			goto usage;
		}
	}
	if (optind < argc) {
		error("unexpected argument '%s'", argv[optind]);
		goto usage;
	}
	if (per_shape && format != FORMAT_HEADER) {
		error("--per-shape applies to --format header only");
		goto usage;
	}
	if (output && !*output) {
		error("-o needs a file name");
		goto usage;
	}

	rc = export_open(g->db_path, run, &db, &run);
	if (rc)
		return rc > 0 ? EX_NOINPUT : EX_DATAERR;
	rc = render(db, run, k, format, per_shape, output, &out);
	db_close(db);
	if (rc) {
		sb_release(&out);
		return rc;
	}
	/* Nothing is written unless all of it is: the file appears whole or not at all. */
	if (output) {
		rc = write_file_atomic(output, out.buf, out.len) < 0 ? EX_CANTCREAT : 0;
	} else {
		fwrite(out.buf, 1, out.len, stdout);
		rc = cmd_flush_stdout();
	}
	sb_release(&out);
	return rc;

usage:
	fputs(cmd_find("export")->usage, stderr);
	return EX_USAGE;
}
