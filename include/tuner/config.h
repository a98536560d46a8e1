/* Tuning jobs (configs/NAME.yaml) and kernel-family sidecars (kernels/templates/NAME.yaml), loaded
 * with libyaml. */
#ifndef TUNER_CONFIG_H
#define TUNER_CONFIG_H

#include <stddef.h>

#include "tuner/arch.h"
#include "tuner/common.h"
#include "tuner/expr.h"
#include "tuner/problem.h"

#define TUNER_MAX_PARAMS 32
#define TUNER_MAX_DIMS   8
#define TUNER_MAX_SHAPES 32
#define TUNER_MAX_LAYOUT 64 /* shared-memory buffers in a sidecar's layout */

/* Limits on what a config may ask for: file sizes, one buffer's bytes. */
#define CONFIG_MAX_FILE_BYTES   (4u << 20)
#define CONFIG_MAX_DEPTH        64          /* YAML collections nested in one another */
#define CONFIG_MAX_ANCHORS      100         /* YAML anchors ('&name') in one file */
#define CONFIG_MAX_ALIASED      (16u << 20) /* bytes that aliases repeat, in all */
#define CONFIG_MAX_BUFFER_BYTES (64ULL << 30)

/* A sidecar may be bigger: an imported landscape lists up to 10**6 values of a param. */
#define CONFIG_MAX_SIDECAR_BYTES (64u << 20)

struct param {
	char *name;
	long long *values; /* the declared domain, in the sidecar's order */
	size_t nvalues;
	size_t *order; /* its positions sorted by value, to find one; NULL: looked through */
	/*
	 * NULL, or what each value stands for (the sidecar's labels:, in the
	 * domain's order): an imported landscape codes a float or a string as
	 * 0..n-1, and the labels are what runs store and show. Letters, digits
	 * and _ . + - only, so that they sit in "NAME=V,..." as a value does.
	 */
	char **labels;
	int line;
};

struct constraint {
	struct expr *e;
	int line;
};

/* One shared-memory buffer of the layout: its offset and row stride must be multiples of align. */
struct layout_buf {
	char *name;
	struct expr *offset; /* bytes from the start of dynamic shared memory */
	struct expr *stride; /* row stride in bytes */
	int align; /* the access width used on it, in bytes (16 for cp.async.cg 16 B, ldmatrix rows)
	            */
	char *access; /* what needs the alignment: "cp.async 16B", "ldmatrix" */
	int line;
};

struct family {
	char *path; /* the sidecar's path */
	char *text; /* the sidecar's text */
	char *name; /* "transpose": the export prefix is its upper case */
	char *source_path;
	char *source; /* the template text */
	char source_hash[HASH_HEX_LEN];
	char deps_hash[HASH_HEX_LEN]; /* template_deps_hash(): headers, sidecar, problem */
	struct problem *problem;      /* owned */
	/* the launches of one call, in order (the single-launch form is launches[0]) */
	struct launch_spec launches[PROBLEM_MAX_LAUNCHES];
	size_t nlaunches;
	struct param params[TUNER_MAX_PARAMS];
	size_t nparams;
	struct constraint *constraints;
	size_t nconstraints;
	struct expr *smem_bytes; /* dynamic shared memory per block */
	int smem_bytes_line;     /* 0: not given (0 bytes) */
	struct layout_buf *layout;
	size_t nlayout;
	/* shape dims baked in at compile time, defined as SHAPE_<dim> in the preamble */
	char *specialize[TUNER_MAX_DIMS];
	size_t nspecialize;
	long long baseline[TUNER_MAX_PARAMS];
	char **options; /* extra NVRTC options from the sidecar */
	size_t noptions;
};

struct shape {
	char *name;
	long long dims[TUNER_MAX_DIMS]; /* in the problem's dim order */
	int line;
};

enum l2_policy { L2_COLD = 0, L2_HOT };
enum sanitize_when { SANITIZE_NEVER = 0, SANITIZE_ELITE, SANITIZE_EVERY };
/* compute-sanitizer's gate: never, on each elite newcomer, on the final elite, or on every
 * correct variant */
enum tools_when { TOOLS_NEVER = 0, TOOLS_ELITE, TOOLS_FINAL, TOOLS_EVERY };

struct config {
	char *path;
	char *text;          /* the raw YAML, stored with each run */
	char *template_path; /* resolved sidecar path */
	struct family fam;
	struct arch_limits arch;
	struct shape shapes[TUNER_MAX_SHAPES];
	size_t nshapes;
	/* correctness */
	double rel_l2;               /* default 1e-2 */
	double max_abs;              /* default 2e-2 */
	int check_seeds;             /* fresh random inputs per shape, default 2 */
	int rel_l2_set, max_abs_set; /* given in the job: they override the sidecar's compare */
	int ragged; /* check the ragged shapes derived from the suite too, default 1 */
	/* budget */
	int generations; /* default 10 */
	int population;  /* default 16 */
	int elite;       /* K, default 3 */
	double margin;   /* admission margin, default 0.03 */
	/* timing */
	int warmup;        /* default 10 launches */
	int repeats;       /* samples, default 30; the most with adaptive sampling */
	int min_repeats;   /* adaptive sampling: samples before it may stop (0: repeats) */
	double rel_ci;     /* adaptive sampling: stop once the 95% interval is this close, 0: off */
	int launches;      /* launches per sample, default 20 */
	enum l2_policy l2; /* default cold */
	double timeout_s;  /* per variant on the GPU, default 20 */
	/* compile */
	int jobs;                    /* 0: one per core */
	long long max_spill_bytes;   /* default 0 */
	double compile_timeout_s;    /* one compile's limit; 0: the pool's default, 120 s */
	enum sanitize_when sanitize; /* default elite */
	enum tools_when tools;       /* compute_sanitizer: default final */
	char *strategy;              /* "evolve" (default), "random", "exhaustive" */
	unsigned long long seed;     /* default 1 */
};

/*
 * Load a tuning job and the sidecar it names. On error prints
 * "FILE:LINE:COL: message" (naming the key) and returns -1: the caller exits
 * EX_CONFIG and writes nothing.
 */
int config_load(const char *path, struct config *cfg);
void config_release(struct config *cfg);

/* Load a sidecar alone (used by config_load). */
int family_load(const char *path, struct family *fam);
void family_release(struct family *fam);
/* Index of a param by name, -1 if none. */
int family_param_index(const struct family *fam, const char *name);

#endif
