/* The gates, cheapest first: constraints, shared memory, alignment, then resources after compiling.
 */
#ifndef TUNER_CHECKS_H
#define TUNER_CHECKS_H

#include <stddef.h>

#include "tuner/compile.h"
#include "tuner/config.h"
#include "tuner/outcome.h"
#include "tuner/space.h"

enum gate {
	GATE_CONSTRAINT = 0,
	GATE_SMEM,
	GATE_ALIGN,
	GATE_COMPILE,
	GATE_RESOURCES,
	GATE_SANITIZE, /* the dynamic alignment gate on the GPU */
	GATE_CORRECT,
	GATE_RACE, /* timing stopped early: the candidate cannot win */
	GATE_COUNT
};
/* "constraint", "smem", "align", "compile", "resources", "sanitize", "correct", "race" */
const char *gate_name(enum gate g);

struct verdict {
	enum gate gate;
	enum outcome outcome; /* VARIANT_OK when the gate passed */
	char shape[32];       /* the shape it failed on, "" if shape-independent or passed */
	char reason[512]; /* why, e.g. "buffer 'Q_smem' row stride 130 bytes is not a multiple of 16
	                     (cp.async 16B)" */
};

struct verdicts {
	struct verdict *v;
	size_t n, alloc;
};
void verdicts_release(struct verdicts *vs);

/*
 * Constraints, smem budget (sidecar expression vs the arch's opt-in limit) and
 * static alignment, on every shape of the suite, in that order; stops at the
 * first gate that rejects. Appends one verdict per gate run. Returns
 * VARIANT_OK or the rejecting outcome. An expression that fails to evaluate
 * (division by zero, unknown name) rejects at its gate with the reason.
 */
enum outcome checks_static(const struct config *cfg, const struct variant *va,
                           struct verdicts *out);

/*
 * After compiling one spec: the compile result itself, ptxas's static shared
 * memory plus the dynamic amount against the limit, and the spill limit.
 */
enum outcome checks_build(const struct config *cfg, const struct variant *va, const struct spec *sp,
                          const struct build *b, struct verdicts *out);

/*
 * Every expression of the family and its problem (constraints, smem_bytes, layout, launch
 * geometry, buffer counts, scalar arguments) can be evaluated at some point of the space,
 * for every shape of the suite: 0, or error() naming the file, the line and the expression
 * (a config error). An expression that fails at every point would reject every variant
 * with one reason. The points: the whole space when it has at most CHECKS_EXPR_POINTS,
 * else the baseline and a fixed pseudo-random sample of that many; an expression other
 * than a constraint is tried only at points every constraint admits. One that fails at
 * some points only stays a per-variant rejection.
 */
#define CHECKS_EXPR_POINTS 4096
int checks_exprs(const struct config *cfg);

#endif
