/* The report stage: a run read out of the database as Markdown and self-contained HTML, with plots
 * by gnuplot. */
#ifndef TUNER_REPORT_H
#define TUNER_REPORT_H

#include <stddef.h>
#include <time.h>

#include "tuner/common.h"
#include "tuner/db.h"
#include "tuner/export.h"
#include "tuner/outcome.h"

/* ------------------------------------------------------------ pure parts */

/*
 * A library's time on one shape of the suite, imported with `tuner report
 * --library FILE`. The file is a JSON array of objects:
 *   {"shape": "sq4096", "library": "torch", "median_us": 93.1,
 *    "dims": "rows=4096,cols=4096", "device": "NVIDIA H100 80GB HBM3",
 *    "method": "CUDA graph of 20 calls, median of 30, warm L2"}
 * shape, library and median_us (> 0) are required; dims, device and method
 * are optional. A family's bench script may write it.
 */
struct report_library {
	char *shape, *library;
	double median_us;
	char *dims, *device, *method; /* NULL when the entry has none */
	char *source;                 /* the file it came from */
};

struct report_libraries {
	struct report_library *v;
	size_t n, alloc;
};

/*
 * Parse one file's text (path names it in messages) and append its entries;
 * an unknown key, a missing or mistyped one, or a library name with control
 * characters is an error. 0, or error() naming the file and the entry.
 */
int report_library_parse(const char *path, const char *text, struct report_libraries *out);
void report_libraries_release(struct report_libraries *l);

/*
 * The expected best fitness of random search after n = 1 .. nout evaluations,
 * in out[n - 1]: the first evaluation is the baseline (fitness base), each
 * later one a point drawn uniformly without replacement from pool (NAN: a
 * point that has no fitness, rejected by a gate). Exact, from the order
 * statistics of the pool: with w = max(base, fitness) sorted best first, the
 * best of k draws is w[i] with probability C(npool - 1 - i, k - 1) / C(npool, k).
 * Past npool + 1 evaluations the pool is spent; nout must not exceed npool + 1.
 */
void report_expected_best(double base, const double *pool, size_t npool, double *out, size_t nout);

/* RFC 4648 base64 (with padding) of data, appended to sb. */
void report_base64(struct strbuf *sb, const unsigned char *data, size_t len);

/* 1 if data is a whole PNG: the signature, an IHDR first and an IEND last. */
int report_png_valid(const unsigned char *data, size_t len);

/* ------------------------------------------------------------- gathering */

/* Best fitness so far after each evaluation of a run, in the order it recorded them. */
struct report_curve {
	size_t n;
	double *best;    /* best[i]: after evaluation i + 1; NAN before the first fitness */
	double *seconds; /* since the run's start; NULL for an expectation */
};

/* A random-search baseline to compare the run with. */
struct report_baseline {
	int present;
	long long run_id; /* the random run, or the exhaustive run the expectation is from */
	char *db;         /* the database that run is in */
	size_t pool;      /* expectation: the points random search draws from */
	double base;      /* expectation: the baseline's fitness */
	struct report_curve curve;
};

struct report {
	char *db_path;
	struct ranking rank; /* the elite, the baseline's and each shape's best timings */
	struct db_eval_point *evals;
	size_t nevals;
	struct report_curve curve;
	struct report_baseline random_run; /* a run with strategy random */
	struct report_baseline expected;   /* order statistics of an exhaustive run */
	char *baseline_note;               /* why there is no expectation, or NULL */
	long long outcomes[OUTCOME_COUNT];
	int first_generation, last_generation;
	long long *gen_outcomes;    /* (generation - first) * OUTCOME_COUNT + outcome */
	struct db_measured *timing; /* the winner's measurement on each shape */
	int *timed;                 /* timing[s] was found */
	/* Imported library timings: lib_us[shape * nlibs + library], NAN where none. */
	const struct report_libraries *lib;
	char **libs;
	size_t nlibs;
	double *lib_us;
	char **lib_method; /* per library: the method its entries state, or NULL */
	char *lib_note;    /* a device that is not the run's, or NULL */
};

/*
 * Read run_id's report out of db: ranking, evaluations, baselines (a random
 * run over the same space in db; the expectation from a finished exhaustive
 * run of the space in the database sweep names, else here, else in the
 * database a replay answered from), verdicts per generation, the winner's
 * samples, and lib matched to the suite (a shape not in the suite, dims that
 * differ, or one library twice on a shape is an error). 0, or error() (an
 * unknown run, a sweep without such a run included).
 */
int report_gather(struct db *db, long long run_id, const struct report_libraries *lib,
                  const char *sweep, struct report *out);
void report_release(struct report *r);

/* --------------------------------------------------------------- writing */

struct report_write_opts {
	const char *dir;     /* the output directory; its parent must exist */
	const char *gnuplot; /* the program that draws the plots; NULL: none */
	const char *command; /* the command that reproduces the report */
	time_t now;
};

/* What report_write() produced, for the caller's message. */
struct report_result {
	int plots;        /* PNGs drawn */
	int plots_wanted; /* plots the data allowed */
};

/*
 * Write the report into o->dir: report.md, report.html, plots.gp and a PNG
 * per plot. Everything is written into a fresh directory beside (or, when
 * dir exists, inside) it first, then renamed into place: the whole directory
 * when dir is new, else file by file (an older report's other files removed),
 * so no file is ever half-written and an error before the move leaves dir as
 * it was. When gnuplot cannot be run or fails, the report says so and keeps
 * its tables, and a warning is printed. 0, or error().
 */
int report_write(const struct report *r, const struct report_write_opts *o,
                 struct report_result *res);

#endif
