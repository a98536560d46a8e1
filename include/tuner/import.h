/* Other tuners' recorded results (T4 files, Kernel Tuner caches) as landscapes that tuner replays.
 */
#ifndef TUNER_IMPORT_H
#define TUNER_IMPORT_H

#include <stddef.h>

#include "tuner/config.h"
#include "tuner/outcome.h"

/*
 * A parameter of a recorded space. Integer domains keep their values; any
 * other domain (floats, strings, booleans mixed in) becomes codes 0..n-1 into
 * its labels, in the declared order, so that tuner's integer expressions and
 * variants can carry it: the sidecar lists the codes and names the labels.
 */
struct import_param {
	char *name;
	size_t n;
	long long *values; /* the domain: integers, or the codes 0..n-1 */
	char **labels;     /* coded: each value as the file writes it ("0.5", "'row'"), else NULL */
	double *num;       /* coded: each label's number (NAN for a string) */
	size_t *order;     /* the positions sorted by value, to find one; NULL: look through */
	int coded;
	long long deflt; /* the declared default, as a value of the domain; -1 index when none */
	int has_default;
};

/* One recorded configuration: its verdict and, when timed, its cost (lower is better). */
struct import_entry {
	long long v[TUNER_MAX_PARAMS];
	enum outcome outcome; /* VARIANT_OK, REJECT_CONSTRAINT, _COMPILE, _RUNTIME_FAULT, _TIMEOUT,
	                         _WRONG */
	char *reason;
	double cost; /* the objective as a cost: µs for a time, 1e6 / value when higher is better */
	double *samples; /* repeated measurements in the same unit as cost, may be NULL */
	size_t nsamples;
};

struct import_landscape {
	char *name;      /* the family name: a C identifier */
	char *device;    /* where it was measured */
	char *source;    /* the results file, for provenance */
	char *space;     /* the T1 file, or NULL */
	char *format;    /* "T4 1.0.0", "Kernel Tuner cache 1.1.0" */
	char *objective; /* "time" */
	int maximize;    /* the objective is better higher (cost is then 1e6 / value) */
	char *unit;      /* of cost: "us", or "1e6/value" */
	struct import_param params[TUNER_MAX_PARAMS];
	size_t nparams;
	char **restrictions; /* as written (Python) */
	char **translated;   /* as tuner's expressions */
	size_t nrestrictions;
	struct import_entry *entries;
	size_t nentries, alloc;
	long long baseline[TUNER_MAX_PARAMS];
	char *baseline_why; /* "the declared default", "the median configuration" */
};

/*
 * Read a T4 results file or a Kernel Tuner cache file (gzip or plain JSON) at
 * results, with the T1 search-space description at space (required for T4,
 * optional for a cache, which carries its parameters but no restrictions).
 * The T1 restrictions are translated into tuner's expressions; one that
 * cannot be is an error naming the file and the restriction. device NULL:
 * the file's own (a cache names it), else from the file name
 * (NAME_DEVICE_T4.json.gz). name NULL: the benchmark's name. 0 or error().
 */
int import_read(const char *results, const char *space, const char *device, const char *name,
                struct import_landscape *ls);
void import_release(struct import_landscape *ls);

/*
 * The objective's direction, "higher" or "lower" is better, where the user
 * knows it and the files do not say (NULL: as read from the objective's name:
 * higher for a rate such as GFLOP/s, lower otherwise). A time cannot be made
 * higher-is-better. Call before import_set_baseline(). 0 or error().
 */
int import_set_direction(struct import_landscape *ls, const char *how);

/*
 * Choose the baseline: "default" (NULL) the declared defaults, "median" the
 * timed configuration of median cost, or "NAME=V,..." (values as labels for
 * coded params, the rest from the defaults). It must have been timed. 0 or
 * error().
 */
int import_set_baseline(struct import_landscape *ls, const char *how);

/*
 * Translate one restriction written in Python (T1's "Conditions", Kernel
 * Tuner's restrictions) into tuner's C-syntax expression language: and, or,
 * not as &&, ||, !; chained comparisons split; // as / and % as % (the same
 * for the non-negative operands allowed); x in [a, b]; min, max, abs; a if c
 * else b; ** by a small constant; True and False. A coded param may only be
 * compared with constants (the comparison becomes a test of its codes).
 * Returns the expression (caller frees), or NULL with why filled.
 */
char *import_translate(const struct import_landscape *ls, const char *python, char *why,
                       size_t whylen);

/*
 * Write the landscape: config at config_path, its sidecar beside it
 * (CONFIG.family.yaml), and the recording into a new database at db_path,
 * which `tuner --config CONFIG run --replay DB` answers from. command is
 * stored as the recording run's command line. 0 or error().
 */
int import_write(const struct import_landscape *ls, const char *config_path, const char *db_path,
                 const char *command);

#endif
