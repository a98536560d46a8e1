/* The importer's Python: the part of it that T1 files and Kernel Tuner caches use. */
#ifndef TUNER_IMPORT_PYTHON_H
#define TUNER_IMPORT_PYTHON_H

#include <stddef.h>

#include "tuner/import.h"

/* A constant: a number (bools count as 1 and 0) or a string. */
struct import_lit {
	int is_str;
	double num;
	const char *s;
};

/*
 * The values that a Python expression lists (T1's "Values" as a string): a
 * list or tuple of constants, range(), list() or tuple() of those, lists
 * joined by +, and list comprehensions over them ([2**i for i in range(6)],
 * with 'if' filters). On success out->v holds out->n constants whose strings
 * live in out->pool (import_values_free frees all); -1 with why filled otherwise.
 */
struct import_values {
	struct import_lit *v;
	size_t n;
	char **pool; /* the strings the constants point into */
	size_t npool;
};
int import_python_values(const char *python, struct import_values *out, char *why, size_t whylen);
void import_values_free(struct import_values *vals);

/* The index of the param named name in ls, or -1 (import.c). */
int import_param_index(const struct import_landscape *ls, const char *name);

#endif
