/* libFuzzer harness for the importer: Python values and restrictions, and whole files. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tuner/common.h"
#include "tuner/expr.h"
#include "tuner/import-python.h"
#include "tuner/import.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * The first byte of an input chooses what the rest is ('0' to '4' in the
 * seeds, for reading), so that one corpus covers them all and a mutation can
 * carry an input from one to another.
 */
enum mode {
	M_VALUES,   /* T1's "Values" as Python */
	M_RESTRICT, /* a restriction, translated against the fixed landscape */
	M_CACHE,    /* a Kernel Tuner cache file, alone */
	M_T4,       /* a T4 results file, with the fixed T1 */
	M_T1,       /* a T1 file, with the fixed cache */
	M_COUNT
};

/*
 * The fixed landscape, read as `tuner import` reads one: integer params (one
 * of them with negative values, which the translator must refuse under '//'),
 * a string-coded and a float-coded one.
 */
static const char fixed_t1[] =
    "{\"General\": {\"BenchmarkName\": \"fuzz_kernel\"}, \"ConfigurationSpace\": {"
    "\"TuningParameters\": ["
    "{\"Name\": \"a\", \"Values\": \"[16, 32, 64]\", \"Default\": 32},"
    "{\"Name\": \"b\", \"Values\": \"range(1, 5)\", \"Default\": 1},"
    "{\"Name\": \"c\", \"Values\": [-2, 0, 2], \"Default\": 0},"
    "{\"Name\": \"layout\", \"Values\": \"['row', 'col', 'tiled']\", \"Default\": \"row\"},"
    "{\"Name\": \"frac\", \"Values\": [0.5, 1.0, 1.5], \"Default\": 1.0}],"
    "\"Conditions\": [{\"Expression\": \"a * b <= 128\"}]}}";

static const char fixed_cache[] =
    "{\"schema_version\": \"1.1.0\", \"device_name\": \"Fuzz GPU\", "
    "\"kernel_name\": \"fuzz_kernel\", "
    "\"tune_params_keys\": [\"a\", \"b\", \"c\", \"layout\", \"frac\"], "
    "\"tune_params\": {\"a\": [16, 32, 64], \"b\": [1, 2, 3, 4], \"c\": [-2, 0, 2], "
    "\"layout\": [\"row\", \"col\", \"tiled\"], \"frac\": [0.5, 1.0, 1.5]}, "
    "\"objective\": \"time\", \"cache\": {"
    "\"32,1,0,row,1.0\": {\"a\": 32, \"b\": 1, \"c\": 0, \"layout\": \"row\", \"frac\": 1.0, "
    "\"time\": 1.5, \"times\": [1.4, 1.5, 1.6]},"
    "\"16,2,-2,col,0.5\": {\"a\": 16, \"b\": 2, \"c\": -2, \"layout\": \"col\", "
    "\"frac\": 0.5, \"time\": \"InvalidConfig\"}}}";

static struct import_landscape fixed;
static char dir[] = "/tmp/tuner-import-fuzz-XXXXXX";
static char *t1_path, *cache_path, *input_t1, *input_t4, *input_cache;
static char *py_loops; /* " for a in [16, 32, 64] for b in ...": every point, in order */
static int nerrors;
static char first_error[512];

static void quiet(const char *prefix, const char *msg)
{
	if (strcmp(prefix, "error: "))
		return;
	if (!nerrors++)
		snprintf(first_error, sizeof(first_error), "%s", msg);
}

static void put_file(const char *path, const void *data, size_t size)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(data, 1, size, f) != size || fclose(f)) {
		perror(path);
		abort();
	}
}

static void cleanup(void)
{
	unlink(t1_path);
	unlink(cache_path);
	unlink(input_t1);
	unlink(input_t4);
	unlink(input_cache);
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct strbuf sb = STRBUF_INIT;
	size_t i, j;

	if (!mkdtemp(dir)) {
		perror(dir);
		abort();
	}
	t1_path = xasprintf("%s/fuzz_kernel_T1.json", dir);
	cache_path = xasprintf("%s/fuzz_kernel_cache.json", dir);
	input_t1 = xasprintf("%s/input_T1.json", dir);
	/* named as the hub names them, so that the device comes from the name */
	input_t4 = xasprintf("%s/fuzz_kernel_gpu_T4.json", dir);
	input_cache = xasprintf("%s/input_cache.json", dir);
	atexit(cleanup);
	put_file(t1_path, fixed_t1, strlen(fixed_t1));
	put_file(cache_path, fixed_cache, strlen(fixed_cache));
	set_error_routine(quiet);
	if (import_read(cache_path, t1_path, NULL, NULL, &fixed) < 0 || fixed.nparams != 5) {
		fprintf(stderr, "the fixed landscape does not import: %s\n", first_error);
		abort();
	}
	for (i = 0; i < fixed.nparams; i++) {
		const struct import_param *p = &fixed.params[i];

		sb_addf(&sb, " for %s in [", p->name);
		for (j = 0; j < p->n; j++) {
			sb_adds(&sb, j ? ", " : "");
			if (!p->coded)
				sb_addf(&sb, "%lld", p->values[j]);
			else if (isnan(p->num[j]))
				sb_addf(&sb, "'%s'", p->labels[j]);
			else
				sb_adds(&sb, p->labels[j]);
		}
		sb_adds(&sb, "]");
	}
	py_loops = sb_detach(&sb);
	return 0;
}

static void check_why(const char *why, size_t len, const char *what, const char *src)
{
	size_t n = strnlen(why, len);

	if (n == 0 || n == len) {
		fprintf(stderr, "%s of '%s' failed without a terminated reason\n", what, src);
		abort();
	}
}

static void fuzz_values(const char *src)
{
	struct import_values v;
	char why[200] = "";
	size_t i;

	if (import_python_values(src, &v, why, sizeof(why)) < 0) {
		check_why(why, sizeof(why), "values", src);
		return;
	}
	for (i = 0; i < v.n; i++)
		if (v.v[i].is_str && !v.v[i].s)
			abort();
	import_values_free(&v);
}

/*
 * Python and the translation must agree where both can say: true division and
 * fractions are left out, as the translation computes them exactly where
 * Python rounds.
 */
static int exact_only(const char *src)
{
	const char *s;

	for (s = src; *s; s++) {
		if (*s == '/' && s[1] != '/' && (s == src || s[-1] != '/'))
			return 0;
		if (*s == '.' ||
		    ((*s == 'e' || *s == 'E') && s > src && s[-1] >= '0' && s[-1] <= '9'))
			return 0;
	}
	return 1;
}

static int truthy(const struct import_lit *l)
{
	return l->is_str ? *l->s != 0 : l->num != 0;
}

static int ident_is_param(const char *name, int col, void *ctx)
{
	if (import_param_index(&fixed, name) < 0 && !expr_is_function(name)) {
		fprintf(stderr, "the translation names '%s', which is not a param\n", name);
		abort();
	}
	return 0;
}

static void fuzz_restriction(const char *src)
{
	struct expr_var vars[TUNER_MAX_PARAMS];
	struct expr_scope scope = {vars, fixed.nparams, NULL};
	struct import_values py = {0};
	unsigned long long idx, size = 1;
	char why[300] = "", pywhy[200], *t, *wrapped;
	struct expr_err err;
	struct expr *e;
	size_t i;

	t = import_translate(&fixed, src, why, sizeof(why));
	if (!t) {
		check_why(why, sizeof(why), "translation", src);
		return;
	}
	e = expr_parse(t, &err);
	if (!e) {
		fprintf(stderr, "'%s' translated to '%s', which does not parse: %s\n", src, t,
		        err.msg);
		abort();
	}
	expr_foreach_ident(e, ident_is_param, NULL);
	/* Python's verdict on every point, where Python's arithmetic is exact here */
	if (exact_only(src)) {
		wrapped = xasprintf("[(%s)%s]", src, py_loops);
		if (import_python_values(wrapped, &py, pywhy, sizeof(pywhy)) < 0)
			py.n = 0;
		free(wrapped);
	}
	for (i = 0; i < fixed.nparams; i++) {
		vars[i].name = fixed.params[i].name;
		size *= fixed.params[i].n;
	}
	for (idx = 0; idx < size; idx++) {
		unsigned long long rest = idx;
		long long r;

		for (i = fixed.nparams; i-- > 0;) {
			vars[i].value = fixed.params[i].values[rest % fixed.params[i].n];
			rest /= fixed.params[i].n;
		}
		if (expr_eval(e, &scope, &r, &err) < 0 || py.n != size)
			continue;
		if ((r != 0) != truthy(&py.v[idx])) {
			fprintf(stderr, "'%s' translated to '%s' gives %lld at point %llu", src, t,
			        r, idx);
			for (i = 0; i < fixed.nparams; i++)
				fprintf(stderr, " %s=%lld", vars[i].name, vars[i].value);
			fprintf(stderr, ", Python %s\n", truthy(&py.v[idx]) ? "True" : "False");
			abort();
		}
	}
	import_values_free(&py);
	expr_free(e);
	free(t);
}

/* A file that does not import must say why; one that does must hold a sane landscape. */
static void fuzz_file(enum mode m, const uint8_t *data, size_t size)
{
	const char *results = m == M_T1 ? cache_path : m == M_T4 ? input_t4 : input_cache;
	const char *space = m == M_T1 ? input_t1 : m == M_T4 ? t1_path : NULL;
	struct import_landscape ls;
	size_t i, j;
	int r;

	put_file(m == M_T1 ? input_t1 : results, data, size);
	nerrors = 0;
	r = import_read(results, space, NULL, NULL, &ls);
	if (r == 0) {
		if (!ls.nparams || !ls.nentries || !ls.name || !ls.device || !ls.objective)
			abort();
		for (i = 0; i < ls.nrestrictions; i++)
			if (!ls.translated[i])
				abort();
		for (i = 0; i < ls.nentries; i++)
			for (j = 0; j < ls.nparams; j++)
				if (ls.params[j].coded &&
				    (ls.entries[i].v[j] < 0 ||
				     (size_t)ls.entries[i].v[j] >= ls.params[j].n))
					abort();
		r = import_set_baseline(&ls, NULL);
	}
	if (r < 0 && (!nerrors || !*first_error)) {
		fprintf(stderr, "import failed without an error message\n");
		abort();
	}
	import_release(&ls);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum mode m;
	char *src;

	if (!size)
		return 0;
	m = (enum mode)((uint8_t)(data[0] - '0') % M_COUNT);
	data++;
	size--;
	if (m >= M_CACHE) {
		fuzz_file(m, data, size);
		return 0;
	}
	src = xmalloc(size + 1);
	memcpy(src, data, size);
	src[size] = '\0';
	if (m == M_VALUES)
		fuzz_values(src);
	else
		fuzz_restriction(src);
	free(src);
	return 0;
}
