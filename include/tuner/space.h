/* The search space: parameter vectors, their domains, scopes for expressions, specialisations. */
#ifndef TUNER_SPACE_H
#define TUNER_SPACE_H

#include <stddef.h>

#include "tuner/config.h"

/* A configuration: one value per family param, in the family's param order. */
struct variant {
	long long v[TUNER_MAX_PARAMS];
};

/* Variables for evaluating an expression on one variant (and optionally one shape). */
struct space_scope {
	struct expr_var vars[TUNER_MAX_PARAMS + TUNER_MAX_DIMS];
	struct expr_scope scope;
};
void space_scope_init(struct space_scope *s, const struct config *cfg, const struct variant *va,
                      const struct shape *shape /* may be NULL */);

/* Number of points in the declared space (product of domain sizes). */
unsigned long long space_size(const struct family *fam);
/* The idx-th point in mixed-radix order (last param fastest). */
void space_point(const struct family *fam, unsigned long long idx, struct variant *out);
/* 1 if every value is in its declared domain; else 0 and *bad = the first param outside. */
int space_in_domain(const struct family *fam, const struct variant *va, int *bad);
/* The baseline variant from the sidecar. */
void space_baseline(const struct family *fam, struct variant *out);
/*
 * Sort the positions of pa's domain by value (pa->order), so that
 * space_value_index() bisects them: a landscape's param may have 10**6
 * values. The first position whose value came earlier in the domain, or
 * nvalues when none did. The loader does it; a domain made by hand without
 * it is looked through.
 */
size_t space_param_order(struct param *pa);
/* The position of value in param pa's domain, -1 when it is not there. */
long long space_value_index(const struct param *pa, long long value);
/* 1 if l can be a label: what "NAME=V,..." can hold, letters, digits and _ . + -, at least one. */
int space_label_valid(const char *l);
/* The label of value v of pa, or NULL when pa has no labels or v is not in its domain. */
const char *space_label(const struct param *pa, long long v);
/*
 * The value that text names: where pa has labels, the value whose label it
 * is; else text as an integer. 0, or -1 (text names none; nothing printed).
 */
int space_value_of(const struct param *pa, const char *text, long long *out);
/*
 * Parse "NAME=V,NAME=V": params not named keep their value in *va (start from
 * the baseline); V is a label where the param has labels. Unknown names are an
 * error with a "did you mean".
 */
int space_parse_set(const struct family *fam, const char *spec, struct variant *va);
/* "TILE=32,RPT=4,..." in param order, a labelled param by its label; caller frees. */
char *space_format(const struct family *fam, const struct variant *va);
int space_equal(const struct family *fam, const struct variant *a, const struct variant *b);

/* Distinct compile-time specialisations of the suite (values of fam->specialize dims). */
struct spec {
	long long vals[TUNER_MAX_DIMS]; /* indexed like fam->specialize */
	char key[64];                   /* "N=128"; "" when the family specialises nothing */
};
/* Fill specs (capacity TUNER_MAX_SHAPES) and return how many; shape_spec[i] = spec index of shape
 * i. */
size_t space_specs(const struct config *cfg, struct spec *specs, size_t *shape_spec);
/* The first shape with that specialisation (its TUNER_SMEM_BYTES, its launch); NULL if none. */
const struct shape *space_spec_shape(const struct config *cfg, const struct spec *sp);

#endif
