/* Problems as data: the dims, buffers, arguments, launches and reference a sidecar describes. */
#ifndef TUNER_PROBLEM_H
#define TUNER_PROBLEM_H

#include <stddef.h>

#include "tuner/expr.h"

#define PROBLEM_MAX_DIMS     8
#define PROBLEM_MAX_BUFFERS  16
#define PROBLEM_MAX_ARGS     32
#define PROBLEM_MAX_LAUNCHES 8

/* Element types of buffers, in the order of dtype_name(). */
enum dtype {
	DT_F16 = 0,
	DT_BF16,
	DT_F32,
	DT_F64,
	DT_I8,
	DT_U8,
	DT_I32,
	DT_I64,
	DT_E4M3,
	DT_E5M2,
	DT_COUNT
};
/* "f16", "bf16", ... ; -1 for an unknown name. */
const char *dtype_name(enum dtype t);
int dtype_parse(const char *name);
size_t dtype_size(enum dtype t);
int dtype_is_float(enum dtype t);

enum buf_role { ROLE_IN = 0, ROLE_OUT, ROLE_INOUT, ROLE_SCRATCH };
const char *role_name(enum buf_role r);

/* How a buffer is set before a run: inputs are filled, scratch is zeroed or poisoned. */
enum fill_kind {
	FILL_NORMAL = 0, /* a: mean, b: std */
	FILL_UNIFORM,    /* a: min, b: max */
	FILL_IOTA,       /* element i holds i */
	FILL_CONSTANT,   /* a */
	FILL_ZEROS,
	FILL_POISON, /* a NaN of the dtype, or a byte pattern for integers */
	/*
	 * Scratch zeroed once, before the checks and before the timed calls, not before every
	 * call: the kernel must leave it at zero (arrival counters), which the worker checks
	 * after timing. FILL_ZEROS zeroes before every call, timed ones included.
	 */
	FILL_ZEROS_ONCE,
};
const char *fill_name(enum fill_kind f);

struct fill {
	enum fill_kind kind;
	double a, b;
};

struct problem_buffer {
	char *name;
	enum dtype dtype;
	enum dtype ref_dtype; /* what the reference writes it in (outputs) */
	struct expr *count;   /* elements: over dims (scratch: params too) */
	enum buf_role role;
	struct fill
	    fill; /* inputs: the data; scratch: FILL_ZEROS, FILL_ZEROS_ONCE or FILL_POISON */
	/* outputs: tolerances; NAN where the sidecar gives none (the job's correctness applies) */
	double rel_l2, max_abs, cosine;
	int line;
};

enum arg_kind { ARG_BUFFER = 0, ARG_I32, ARG_I64, ARG_F32, ARG_F64, ARG_TENSORMAP };

/* A TMA tensor map over a buffer (cuTensorMapEncodeTiled), innermost dim first. */
struct tensormap_spec {
	int buffer;
	size_t rank;             /* 1 to 5 */
	struct expr *dims[5];    /* elements */
	struct expr *strides[5]; /* bytes, for dims 1.. (NULL: packed) */
	struct expr *box[5];
	int swizzle; /* 0 (none), 32, 64, 128 bytes */
};

struct problem_arg {
	enum arg_kind kind;
	int buffer;     /* ARG_BUFFER: index into the problem's buffers */
	struct expr *e; /* scalars: over dims and params */
	struct tensormap_spec *tmap;
	int line;
};

/* One kernel launch of a call: entry, geometry, dynamic shared memory, arguments. */
struct launch_spec {
	char *kernel;
	struct expr *grid[3], *block[3];
	struct expr *smem; /* bytes; NULL: 0, or the family's smem_bytes with smem_family */
	int smem_family;
	struct expr *cluster[3];  /* NULL: no cluster */
	struct expr *when;        /* NULL: always; else launched only where it is not 0 */
	struct expr *pdl;         /* NULL: a plain launch; else where it is not 0, with
	                           * programmatic stream serialization (PDL) */
	struct problem_arg *args; /* NULL: the problem's args */
	size_t nargs;
	int line;
};

struct problem_reference {
	char *source_path;
	char *source;
	char **options;
	size_t noptions;
	struct launch_spec launches[PROBLEM_MAX_LAUNCHES];
	size_t nlaunches;
};

struct problem {
	char *path; /* the file it was read from: the sidecar, or a problem file */
	char *text; /* that file's text, hashed into each variant */
	char *dims[PROBLEM_MAX_DIMS];
	size_t ndims;
	struct expr **valid; /* each must hold for every shape */
	int *valid_line;
	size_t nvalid;
	int ragged[PROBLEM_MAX_DIMS]; /* 1: checked at tile-unaligned values too */
	struct problem_buffer bufs[PROBLEM_MAX_BUFFERS];
	size_t nbufs;
	struct problem_arg args[PROBLEM_MAX_ARGS];
	size_t nargs;
	struct problem_reference ref;
	struct expr *flops, *bytes; /* NULL when not given */
};

void problem_release(struct problem *p);
/* Index of a dim or buffer by name, -1 if none. */
int problem_dim_index(const struct problem *p, const char *name);
int problem_buffer_index(const struct problem *p, const char *name);
void launch_spec_release(struct launch_spec *l);

#endif
