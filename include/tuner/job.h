/* Worker jobs from problem data: each expression resolved for one variant on one shape. */
#ifndef TUNER_JOB_H
#define TUNER_JOB_H

#include <stddef.h>

#include "tuner/config.h"
#include "tuner/space.h"
#include "tuner/worker.h"

/*
 * Fill ws with what the worker needs to check and time va on sh: the buffers
 * (element counts, fills, the tolerances, the job's correctness settings
 * overriding the sidecar's), the candidate's launches and the reference's with
 * their arguments as bytes, the tensor maps. 0, or -1 with why naming the
 * expression that failed and how (a variant that cannot be launched there).
 */
int job_resolve_shape(const struct config *cfg, const struct variant *va, const struct shape *sh,
                      struct worker_shape_job *ws, char *why, size_t whylen);

/* A launch's dynamic shared memory: its own expression, the family's smem_bytes, or 0. */
int job_launch_smem(const struct config *cfg, const struct launch_spec *l,
                    const struct expr_scope *scope, long long *out, struct expr_err *err);

/*
 * The shapes derived from the suite for the ragged check: for each suite shape
 * and each dim the problem declares ragged (and the family does not
 * specialise), the largest prime below the shape's value (no multiple of any
 * tile size) and the smallest value the problem's rules allow, each only when
 * the rules hold for it and it differs from every shape already there. Names
 * read "sq4096~rows=4093". Returns how many (at most max); each derived[i] is a
 * copy the caller frees with job_shapes_release, of_suite[i] its suite shape.
 */
size_t job_derive_ragged(const struct config *cfg, struct shape *derived, size_t *of_suite,
                         size_t max);
void job_shapes_release(struct shape *shapes, size_t n);

/* What a shape costs to run: the problem's flops, else its bytes, else its elements. */
double job_shape_cost(const struct config *cfg, const struct shape *sh);

/*
 * A scaled-down copy of sh for compute-sanitizer, whose tools slow a kernel
 * down a hundred to many thousand times: each round halves every dim the
 * family does not specialise (where the problem's rules still hold), keeping
 * the shape's proportions, until its cost is at most budget. 0 with *out (named
 * "NAME~small"; job_shapes_release frees it), 1 when sh is within budget or
 * cannot shrink (out untouched).
 */
int job_shrink_shape(const struct config *cfg, const struct shape *sh, double budget,
                     struct shape *out);

/* "rows=4096,cols=4096": the shape's dims named in the problem's order. */
void job_shape_dims(const struct config *cfg, const struct shape *sh, char *out, size_t len);

#endif
