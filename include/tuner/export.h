/* The export stage: a run's ranking read out of the database, written as a C header, JSON or T4. */
#ifndef TUNER_EXPORT_H
#define TUNER_EXPORT_H

#include <stddef.h>
#include <time.h>

#include "tuner/common.h"
#include "tuner/config.h"
#include "tuner/db.h"

/* ------------------------------------------------------------ pure parts */

/* One param of a stored variant ("TILE=32" in variants.params). */
struct export_param {
	char *name;
	long long value; /* when is_int */
	char *text;      /* the value as stored: an integer, or a param's label */
	int is_int;
};

struct export_params {
	struct export_param *v;
	size_t n;
};

/*
 * Parse variants.params, canonical "A=1,B=2": names are C identifiers,
 * values integers, or labels (letters, digits, _ . + -) where a param has
 * them. 0, or error() naming the text.
 */
int export_params_parse(const char *text, struct export_params *out);
void export_params_release(struct export_params *p);

/* 1 if a param's label is a decimal number ("0.5", "-2", "1e-05"), 0 for a name ("row"). */
int export_label_is_number(const char *label);

/* s upper-cased with every byte that is not a letter or digit made '_'; caller frees. */
char *export_ident(const char *s);

/*
 * The macro prefix of a template: "transpose" gives "TRANSPOSE_". A name that
 * does not start with a letter gets "TUNER_" in front, so the macros are
 * identifiers outside the implementation's reserved names. Caller frees.
 */
char *export_prefix(const char *template_name);

/* One shape of a run's suite, as runs.shapes holds it. */
struct export_shape {
	char *name;
	char *dims; /* "rows=4096,cols=4096": measurements.shape_dims */
};

/*
 * Parse runs.shapes, a JSON array of objects {"name": "sq4096", "rows": 4096, ...}:
 * every member but "name" is a dim, in the order written (the problem's dim
 * order), and dims is "NAME=V" joined by ",", as measurements.shape_dims is
 * keyed. 0, or error().
 */
int export_shapes_parse(const char *json, struct export_shape **out, size_t *n);
void export_shapes_free(struct export_shape *s, size_t n);

/* Text safe inside a C block comment: no comment delimiters, trigraphs or control bytes. */
void export_comment_text(struct strbuf *sb, const char *s);
/* One line of a block comment: " * " and the text made safe for a comment, then a newline. */
void export_comment_line(struct strbuf *c, const char *text);
/* Append fmt of v (a "%.3f" kind), or "-" where v is not finite (NAN: not measured). */
void export_add_fixed(struct strbuf *sb, const char *fmt, double v);

/* ----------------------------------------------------------------- ranking */

/* A variant's result on one shape; every double is NAN when unknown. */
struct export_timing {
	int measured; /* a measurements row exists for the run's device and the shape's dims */
	double median_us, ci_lo_us, ci_hi_us, tflops, rel_l2;
	double speedup; /* the baseline's median / this median */
	double gbps;    /* the problem's bytes over the median; NAN without bytes */
};

struct export_entry {
	int rank;  /* 1 is best */
	int elite; /* 1: from the run's final elite; 0: another correct variant, by fitness */
	long long variant_id;
	char *hash, *params;
	double fitness, fitness_lo, fitness_hi; /* geo-mean speedup and its 95% interval */
	struct export_timing *t;                /* one per shape of the suite */
};

/* The correct variant with the lowest median on one shape (variant_id 0: none). */
struct export_best {
	long long variant_id;
	char *hash, *params;
	struct export_timing t;
};

struct ranking {
	struct db_run run;
	struct export_shape *shapes;
	size_t nshapes;
	int elite_generation;  /* the generation the elite is from; -1: no elite stored */
	long long baseline_id; /* 0: the run recorded no baseline */
	char *baseline_hash, *baseline_params;
	struct export_timing *base; /* the baseline on each shape */
	struct export_entry *v;
	size_t n;
	struct export_best *best; /* per shape, after export_rank_per_shape(); else NULL */
};

/*
 * The best k variants of a run: its elite of the highest generation, best
 * first, then (while fewer than k) its other evaluations with outcome ok and a
 * fitness, by fitness. Each with its median on every shape of the suite (on
 * the run's device) and its speedup over the baseline there. Fewer than k, or
 * none, when the run has fewer; 0, or error() (an unknown run included).
 */
int export_rank(struct db *db, long long run_id, size_t k, struct ranking *out);

/* Fill r->best: for each shape, the correct variant of the run with the lowest median there. */
int export_rank_per_shape(struct db *db, struct ranking *r);
void ranking_release(struct ranking *r);

/* Why a ranking is empty, for the message: "run 3 timed nothing (no GPU)". */
const char *export_empty_reason(const struct ranking *r, char *buf, size_t len);

/* ----------------------------------------------------------------- writers */

struct export_header_opts {
	const char *output;       /* the file written, for the include guard; NULL: stdout */
	int per_shape;            /* add each shape's own best (export_rank_per_shape() first) */
	time_t now;               /* the date of export */
	const struct config *cfg; /* the run's family (export_load_family()); NULL: no build */
};

/*
 * The C header: provenance in a comment, then "#define PREFIX_NAME value" for
 * rank 1 and "#define PREFIX_R<r>_NAME value" for rank r > 1, with per_shape
 * "#define PREFIX_<SHAPE>_NAME value", and "#define PREFIX_RANKS n". With
 * o->cfg, the build section of export_build() after them. Compiles on its
 * own, as C and as C++. 0, or error() (an empty ranking, two identifiers of
 * the same name).
 */
int export_header(const struct ranking *r, const struct export_header_opts *o, struct strbuf *out);

/* The identifiers a header defines, so that none is defined twice. */
struct export_names {
	char **v;
	size_t n, alloc;
};
/* Take name: 0, or error() when it is taken already. */
int export_names_add(struct export_names *m, const char *name);
void export_names_release(struct export_names *m);

/*
 * The family a run tuned, for the header's build section: the job at
 * config_path (NULL: the path the run recorded, relative to the current
 * directory), which must name the same family; a warning when its template
 * changed since the run. cfg->shapes become the run's suite. 0, or error().
 */
int export_load_family(const struct ranking *r, const char *config_path, struct config *cfg);

/*
 * The build section of a header (README.md, "Reading the results out"): the template's
 * preamble for rank PREFIX_RANK (default 1) and the specialisation the SHAPE_
 * macros name (default: the suite's first), or with per_shape for build
 * PREFIX_CONFIG; PREFIX_SMEM_OPTIN and PREFIX_SMEM_ATTR() for more than 48 KB
 * of dynamic shared memory; struct prefix_config with its launches and
 * prefix_rank(r, dims...), which fills them from the sidecar's launch
 * expressions written as C; with per_shape prefix_select(dims...), the
 * nearest tuned shape's configuration. Names taken go into names. 0, or
 * error() (a param that is not the family's, a name taken twice).
 * EXPORT_SECTION, per shape as a family of a combined header: the preamble
 * only where PREFIX_CONFIG or PREFIX_RANK is defined, and prefix_valid(dims...)
 * (the problem's valid expressions) and prefix_tuned(s, dims...) (tuned shape
 * s's build) for the dispatch.
 */
enum export_build_mode { EXPORT_RANKS, EXPORT_PER_SHAPE, EXPORT_SECTION };
int export_build(const struct ranking *r, const struct config *cfg, int mode,
                 struct export_names *names, struct strbuf *out);

/* ------------------------------------------------- several families at once */

/* One family of a combined header: a run ranked per shape, and its sidecar. */
struct export_family {
	struct ranking r;  /* export_rank() and export_rank_per_shape() */
	struct config cfg; /* export_load_family() */
};

/*
 * One header for several runs of one database, each a family (template) of its
 * own: each family's section as export_header() writes it with per_shape
 * (its comment and macros, its preamble only where PREFIX_CONFIG or
 * PREFIX_RANK is defined), then the dispatch named by prefix ("conv"):
 * prefix_select(dims...) picks, for tuned dims (matched by value across the
 * suites), the family whose per-shape best has the lowest median; for other
 * dims, the nearest tuned shape (prefix_select()'s log-space rule) whose
 * winner can serve them (its problem's valid expressions hold and it has a
 * build of these specialised dims), else the nearest any family that tuned a
 * shape can serve, else none. 0, or error(): runs of different dims, devices
 * or of one template twice, an empty ranking, a name taken twice.
 */
int export_header_families(const struct export_family *f, size_t n, const char *prefix,
                           const struct export_header_opts *o, struct strbuf *out);

/* For export_header_families(): the include guard, and a family's section (EXPORT_SECTION). */
char *export_header_guard(const char *prefix, const struct export_header_opts *o);
int export_header_section(const struct ranking *r, const struct export_header_opts *o,
                          struct export_names *names, struct strbuf *out);

/* The ranking as one JSON document ('tuner top --json'). 0 or error(). */
int export_json(const struct ranking *r, struct strbuf *out);

/*
 * Every evaluated variant of a run in the T4 autotuning results format
 * (AutoTuningAssociation/autotuning_methodology, schemas/T4.json). 0 or error().
 */
int export_t4(struct db *db, long long run_id, struct strbuf *out);

/* ------------------------------------------------------------- for cmd-*.c */

/*
 * Open an existing database for reading out, read-only and never creating
 * one, and pick a run: run_id > 0 that run, else the latest completed one
 * (run may be NULL: no run needed). 0; 1 after error() when the file does not
 * exist; -1 after error().
 */
int export_open(const char *db_path, long long run_id, struct db **db, long long *run);

/*
 * Whether export_write_file() may replace path: it does not exist, or is a
 * regular file that is not the database db_path (nor its -wal or -shm). A
 * directory, a device, a FIFO or a socket is refused. 0, or error().
 */
int export_check_target(const char *path, const char *db_path);

/*
 * Replace path with data whole or not at all: a temporary file of an
 * exclusive, unpredictable name (mkstemp) in path's directory, written,
 * fsync'ed and renamed over path, after export_check_target(). 0, or error()
 * with nothing left behind.
 */
int export_write_file(const char *path, const char *db_path, const void *data, size_t len);

#endif
