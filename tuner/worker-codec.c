/* The worker's wire format: jobs and results as key=value messages (see worker.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/wire.h"
#include "tuner/worker.h"

struct worker_shape_job *worker_job_shape(struct worker_job *job)
{
	struct worker_shape_job *s;

	if (job->nshapes == WORKER_MAX_SHAPES)
		BUG("more than %d shapes in one job", WORKER_MAX_SHAPES);
	ALLOC_GROW(job->shapes, job->nshapes + 1, job->shapes_alloc);
	s = &job->shapes[job->nshapes++];
	memset(s, 0, sizeof(*s));
	return s;
}

void worker_job_release(struct worker_job *job)
{
	free(job->shapes);
	job->shapes = NULL;
	job->nshapes = job->shapes_alloc = 0;
}

void worker_result_release(struct worker_result *res)
{
	size_t i;

	for (i = 0; i < WORKER_MAX_SHAPES; i++) {
		free(res->shapes[i].samples_us);
		res->shapes[i].samples_us = NULL;
		res->shapes[i].nsamples = 0;
	}
}

/* ------------------------------------------------------------------ jobs */

static void encode_call(struct strbuf *out, size_t i, const char *what, size_t j,
                        const struct worker_call *c)
{
	size_t a;

	sb_addf(out, "shape.%zu.%s.%zu=%s %u %u %u %u %u %u %u %u %u %u %u %zu", i, what, j,
	        c->kernel, c->grid[0], c->grid[1], c->grid[2], c->block[0], c->block[1],
	        c->block[2], c->cluster[0], c->cluster[1], c->cluster[2], c->smem, c->pdl,
	        c->nargs);
	for (a = 0; a < c->nargs; a++)
		sb_addf(out, " %d:%d:%llx", c->args[a].kind, c->args[a].index, c->args[a].bits);
	sb_add(out, "\n", 1);
}

void worker_job_encode(const struct worker_job *job, struct strbuf *out)
{
	char key[64];
	size_t i, j, k;

	sb_reset(out);
	sb_adds(out, "type=job\n");
	wire_kv_str(out, "cubin", job->cubin_path);
	wire_kv_str(out, "ref_cubin", job->ref_cubin_path);
	wire_kv_str(out, "support", job->support_path);
	sb_addf(out, "check_seeds=%d\nseed=%llu\n", job->check_seeds, job->seed);
	sb_addf(out,
	        "warmup=%d\nrepeats=%d\nmin_repeats=%d\nrel_ci=%.17g\nlaunches=%d\nl2_hot=%d\n"
	        "timeout=%.17g\n",
	        job->warmup, job->repeats, job->min_repeats, job->rel_ci, job->launches,
	        job->l2_hot, job->timeout_s);
	sb_addf(out, "sanitize=%d\ncheck=%d\ntime_it=%d\nnshapes=%zu\n", job->sanitize, job->check,
	        job->time_it, job->nshapes);
	for (i = 0; i < job->nshapes; i++) {
		const struct worker_shape_job *s = &job->shapes[i];

		snprintf(key, sizeof(key), "shape.%zu.name", i);
		wire_kv_str(out, key, s->name);
		snprintf(key, sizeof(key), "shape.%zu.dims", i);
		wire_kv_str(out, key, s->dims);
		sb_addf(out, "shape.%zu.check_only=%d\nshape.%zu.counts=%zu %zu %zu %zu\n", i,
		        s->check_only, i, s->nbufs, s->ntmaps, s->ncalls, s->nref);
		for (j = 0; j < s->nbufs; j++) {
			const struct worker_buf *b = &s->bufs[j];

			sb_addf(out,
			        "shape.%zu.buf.%zu=%s %d %d %llu %d %.17g %.17g %d %.17g %.17g "
			        "%.17g\n",
			        i, j, b->name, b->dtype, b->role, b->count, b->fill, b->fa, b->fb,
			        b->ref_dtype, b->rel_l2, b->max_abs, b->cosine);
		}
		for (j = 0; j < s->ntmaps; j++) {
			const struct worker_tmap *t = &s->tmaps[j];

			sb_addf(out, "shape.%zu.tmap.%zu=%d %d %d", i, j, t->buffer, t->rank,
			        t->swizzle);
			for (k = 0; k < 5; k++)
				sb_addf(out, " %llu %llu %u", t->dims[k], t->strides[k], t->box[k]);
			sb_add(out, "\n", 1);
		}
		for (j = 0; j < s->ncalls; j++)
			encode_call(out, i, "call", j, &s->calls[j]);
		for (j = 0; j < s->nref; j++)
			encode_call(out, i, "ref", j, &s->ref[j]);
	}
}

/* Space-separated fields of a value, in place: at most max; returns how many. */
static size_t split(char *s, char **f, size_t max)
{
	size_t n = 0;
	char *save = NULL, *t;

	for (t = strtok_r(s, " ", &save); t && n < max; t = strtok_r(NULL, " ", &save))
		f[n++] = t;
	return t ? max + 1 : n;
}

static int field_ull(const char *key, const char *s, unsigned long long *out)
{
	return wire_parse_ull(key, s, out);
}

static int field_uint(const char *key, const char *s, unsigned *out)
{
	unsigned long long v;

	if (wire_parse_ull(key, s, &v) < 0)
		return -1;
	if (v > 0xffffffffULL)
		return error("wire protocol: '%s' out of range", key);
	*out = (unsigned)v;
	return 0;
}

static int decode_buf(const char *key, char *val, struct worker_buf *b)
{
	char *f[12];
	int r = 0;

	if (split(val, f, 12) != 11 || strlen(f[0]) >= sizeof(b->name))
		return error("wire protocol: bad buffer '%s'", key);
	memcpy(b->name, f[0], strlen(f[0]) + 1);
	r |= wire_parse_int(key, f[1], &b->dtype);
	r |= wire_parse_int(key, f[2], &b->role);
	r |= field_ull(key, f[3], &b->count);
	r |= wire_parse_int(key, f[4], &b->fill);
	r |= wire_parse_dbl(key, f[5], &b->fa);
	r |= wire_parse_dbl(key, f[6], &b->fb);
	r |= wire_parse_int(key, f[7], &b->ref_dtype);
	r |= wire_parse_dbl(key, f[8], &b->rel_l2);
	r |= wire_parse_dbl(key, f[9], &b->max_abs);
	r |= wire_parse_dbl(key, f[10], &b->cosine);
	return r ? -1 : 0;
}

static int decode_tmap(const char *key, char *val, struct worker_tmap *t)
{
	char *f[19];
	size_t k;
	int r = 0;

	if (split(val, f, 19) != 18)
		return error("wire protocol: bad tensor map '%s'", key);
	r |= wire_parse_int(key, f[0], &t->buffer);
	r |= wire_parse_int(key, f[1], &t->rank);
	r |= wire_parse_int(key, f[2], &t->swizzle);
	for (k = 0; k < 5; k++) {
		r |= field_ull(key, f[3 + 3 * k], &t->dims[k]);
		r |= field_ull(key, f[4 + 3 * k], &t->strides[k]);
		r |= field_uint(key, f[5 + 3 * k], &t->box[k]);
	}
	return r ? -1 : 0;
}

/* A call's fixed fields: kernel, grid[3], block[3], cluster[3], smem, pdl, nargs; its args follow.
 */
enum { CALL_FIELDS = 13 };

static int decode_call(const char *key, char *val, struct worker_call *c)
{
	char *f[CALL_FIELDS + WORKER_MAX_ARGS + 1], *end;
	size_t n = split(val, f, ARRAY_SIZE(f)), a, k;
	unsigned long long nargs;
	int r = 0;

	if (n < CALL_FIELDS || n > CALL_FIELDS + WORKER_MAX_ARGS ||
	    strlen(f[0]) >= sizeof(c->kernel))
		return error("wire protocol: bad call '%s'", key);
	memcpy(c->kernel, f[0], strlen(f[0]) + 1);
	for (k = 0; k < 3; k++) {
		r |= field_uint(key, f[1 + k], &c->grid[k]);
		r |= field_uint(key, f[4 + k], &c->block[k]);
		r |= field_uint(key, f[7 + k], &c->cluster[k]);
	}
	r |= field_uint(key, f[10], &c->smem);
	r |= field_uint(key, f[11], &c->pdl);
	r |= field_ull(key, f[12], &nargs);
	if (r || nargs != n - CALL_FIELDS)
		return error("wire protocol: bad call '%s'", key);
	c->nargs = (size_t)nargs;
	for (a = 0; a < c->nargs; a++) {
		struct worker_arg *g = &c->args[a];
		char *s = f[CALL_FIELDS + a];

		errno = 0;
		g->kind = (int)strtol(s, &end, 10);
		if (*end != ':')
			return error("wire protocol: bad argument '%s' in '%s'", f[CALL_FIELDS + a],
			             key);
		g->index = (int)strtol(end + 1, &end, 10);
		if (*end != ':')
			return error("wire protocol: bad argument '%s' in '%s'", f[CALL_FIELDS + a],
			             key);
		g->bits = strtoull(end + 1, &end, 16);
		if (*end || errno)
			return error("wire protocol: bad argument '%s' in '%s'", f[CALL_FIELDS + a],
			             key);
	}
	return 0;
}

/* "shape.N.rest": N and rest; 0 when key is not a shape key, -1 when N is bad. */
static int shape_key(const char *key, size_t nshapes, size_t *idx, const char **field)
{
	char *end;
	unsigned long v;

	if (strncmp(key, "shape.", 6))
		return 0;
	errno = 0;
	v = strtoul(key + 6, &end, 10);
	if (errno || end == key + 6 || *end != '.' || v >= nshapes)
		return error("wire protocol: bad shape key '%s'", key);
	*idx = v;
	*field = end + 1;
	return 1;
}

/* "what.J" of a shape field: J, if field starts with what and J < max. */
static int sub_index(const char *field, const char *what, size_t max, size_t *j)
{
	size_t n = strlen(what);
	char *end;
	unsigned long v;

	if (strncmp(field, what, n) || field[n] != '.')
		return 0;
	errno = 0;
	v = strtoul(field + n + 1, &end, 10);
	if (errno || *end || end == field + n + 1 || v >= max)
		return -1;
	*j = v;
	return 1;
}

static int decode_job_shape(struct worker_shape_job *s, const char *field, const char *key,
                            char *val)
{
	size_t j = 0, c[4];
	char *f[5];
	int k;

	if (!strcmp(field, "name")) {
		if (strlen(val) >= sizeof(s->name))
			return error("wire protocol: shape name '%.80s' too long", val);
		memcpy(s->name, val, strlen(val) + 1);
		return 0;
	}
	if (!strcmp(field, "dims")) {
		if (strlen(val) >= sizeof(s->dims))
			return error("wire protocol: shape dims '%.80s' too long", val);
		memcpy(s->dims, val, strlen(val) + 1);
		return 0;
	}
	if (!strcmp(field, "check_only"))
		return wire_parse_int(key, val, &s->check_only);
	if (!strcmp(field, "counts")) {
		unsigned long long v;

		if (split(val, f, 5) != 4)
			return error("wire protocol: bad counts '%s'", key);
		for (k = 0; k < 4; k++) {
			if (wire_parse_ull(key, f[k], &v) < 0)
				return -1;
			c[k] = (size_t)v;
		}
		if (c[0] > WORKER_MAX_BUFS || c[1] > WORKER_MAX_TMAPS || c[2] > WORKER_MAX_CALLS ||
		    c[3] > WORKER_MAX_CALLS)
			return error("wire protocol: counts out of range in '%s'", key);
		s->nbufs = c[0];
		s->ntmaps = c[1];
		s->ncalls = c[2];
		s->nref = c[3];
		return 0;
	}
	if ((k = sub_index(field, "buf", s->nbufs, &j)) != 0)
		return k < 0 ? error("wire protocol: bad key '%s'", key)
		             : decode_buf(key, val, &s->bufs[j]);
	if ((k = sub_index(field, "tmap", s->ntmaps, &j)) != 0)
		return k < 0 ? error("wire protocol: bad key '%s'", key)
		             : decode_tmap(key, val, &s->tmaps[j]);
	if ((k = sub_index(field, "call", s->ncalls, &j)) != 0)
		return k < 0 ? error("wire protocol: bad key '%s'", key)
		             : decode_call(key, val, &s->calls[j]);
	if ((k = sub_index(field, "ref", s->nref, &j)) != 0)
		return k < 0 ? error("wire protocol: bad key '%s'", key)
		             : decode_call(key, val, &s->ref[j]);
	return error("wire protocol: unknown key '%s'", key);
}

/* Every argument names a buffer or tensor map the shape has. */
static int check_shape_refs(const struct worker_shape_job *s)
{
	size_t j, a, t;

	for (t = 0; t < s->ntmaps; t++)
		if (s->tmaps[t].buffer < 0 || (size_t)s->tmaps[t].buffer >= s->nbufs ||
		    s->tmaps[t].rank < 1 || s->tmaps[t].rank > 5)
			return error("wire protocol: shape '%s': bad tensor map %zu", s->name, t);
	for (j = 0; j < s->ncalls + s->nref; j++) {
		const struct worker_call *c = j < s->ncalls ? &s->calls[j] : &s->ref[j - s->ncalls];

		for (a = 0; a < c->nargs; a++) {
			const struct worker_arg *g = &c->args[a];
			size_t lim = g->kind == 0 ? s->nbufs : g->kind == 5 ? s->ntmaps : 1;

			if (g->kind < 0 || g->kind > 5 || g->index < 0 || (size_t)g->index >= lim)
				return error("wire protocol: shape '%s': call '%s' argument %zu "
				             "names nothing",
				             s->name, c->kernel, a);
		}
	}
	return 0;
}

int worker_job_decode(char *msg, size_t len, struct worker_job *job)
{
	unsigned long long n = 0;
	struct wire_iter it;
	const char *type = NULL, *field = NULL;
	char *key, *val;
	size_t idx = 0, i;
	int r, k;

	memset(job, 0, sizeof(*job));
	if (wire_begin(msg, len, &it, &type) < 0)
		return -1;
	if (strcmp(type, "job"))
		return error("wire protocol: expected a job, got '%s'", type);
	while ((r = wire_next(&it, &key, &val)) > 0) {
		k = shape_key(key, job->nshapes, &idx, &field);
		if (k < 0)
			goto fail;
		if (k) {
			if (decode_job_shape(&job->shapes[idx], field, key, val) < 0)
				goto fail;
			continue;
		}
		if (!strcmp(key, "cubin"))
			job->cubin_path = val;
		else if (!strcmp(key, "ref_cubin"))
			job->ref_cubin_path = val;
		else if (!strcmp(key, "support"))
			job->support_path = val;
		else if (!strcmp(key, "check_seeds"))
			r = wire_parse_int(key, val, &job->check_seeds);
		else if (!strcmp(key, "seed"))
			r = wire_parse_ull(key, val, &job->seed);
		else if (!strcmp(key, "warmup"))
			r = wire_parse_int(key, val, &job->warmup);
		else if (!strcmp(key, "repeats"))
			r = wire_parse_int(key, val, &job->repeats);
		else if (!strcmp(key, "min_repeats"))
			r = wire_parse_int(key, val, &job->min_repeats);
		else if (!strcmp(key, "rel_ci"))
			r = wire_parse_dbl(key, val, &job->rel_ci);
		else if (!strcmp(key, "launches"))
			r = wire_parse_int(key, val, &job->launches);
		else if (!strcmp(key, "l2_hot"))
			r = wire_parse_int(key, val, &job->l2_hot);
		else if (!strcmp(key, "timeout"))
			r = wire_parse_dbl(key, val, &job->timeout_s);
		else if (!strcmp(key, "sanitize"))
			r = wire_parse_int(key, val, &job->sanitize);
		else if (!strcmp(key, "time_it"))
			r = wire_parse_int(key, val, &job->time_it);
		else if (!strcmp(key, "check"))
			r = wire_parse_int(key, val, &job->check);
		else if (!strcmp(key, "nshapes")) {
			r = wire_parse_ull(key, val, &n);
			if (r == 0 && (n > WORKER_MAX_SHAPES || job->nshapes))
				r = error("wire protocol: %llu shapes, at most %d", n,
				          WORKER_MAX_SHAPES);
			for (i = 0; r == 0 && i < n; i++)
				worker_job_shape(job);
		} else
			r = error("wire protocol: unknown key '%s'", key);
		if (r < 0)
			goto fail;
	}
	if (r < 0)
		goto fail;
	for (i = 0; i < job->nshapes; i++)
		if (check_shape_refs(&job->shapes[i]) < 0)
			goto fail;
	return 0;
fail:
	worker_job_release(job);
	return -1;
}

/* --------------------------------------------------------------- results */

void worker_result_encode(const struct worker_result *res, unsigned flags, struct strbuf *out)
{
	size_t n = res->nshapes < WORKER_MAX_SHAPES ? res->nshapes : WORKER_MAX_SHAPES;
	char key[64];
	size_t i, j;

	sb_reset(out);
	sb_addf(out, "type=result\nflags=%u\n", flags);
	wire_kv_str(out, "outcome", outcome_name(res->outcome));
	wire_kv_str(out, "reason", res->reason);
	sb_addf(out, "nshapes=%zu\n", n);
	for (i = 0; i < n; i++) {
		const struct worker_shape_result *s = &res->shapes[i];

		snprintf(key, sizeof(key), "shape.%zu.outcome", i);
		wire_kv_str(out, key, outcome_name(s->outcome));
		snprintf(key, sizeof(key), "shape.%zu.reason", i);
		wire_kv_str(out, key, s->reason);
		sb_addf(out,
		        "shape.%zu.rel_l2=%.17g\nshape.%zu.max_abs=%.17g\nshape.%zu.samples=", i,
		        s->rel_l2, i, s->max_abs, i);
		for (j = 0; j < s->nsamples; j++)
			sb_addf(out, j ? " %.17g" : "%.17g", s->samples_us[j]);
		sb_addf(out, "\nshape.%zu.clock=%.17g %.17g %.17g %llu %d\n", i, s->sm_mhz,
		        s->temp_c, s->power_w, s->throttle, s->retaken);
	}
}

static int decode_outcome(const char *key, const char *val, int *out)
{
	int o = outcome_parse(val);

	if (o < 0)
		return error("wire protocol: unknown outcome '%.80s' for '%s'", val, key);
	*out = o;
	return 0;
}

static int decode_samples(const char *key, const char *s, struct worker_shape_result *r)
{
	size_t n = 0, alloc = 0;
	double *v = NULL;
	char *end;

	free(r->samples_us);
	r->samples_us = NULL;
	r->nsamples = 0;
	while (*s) {
		ALLOC_GROW(v, n + 1, alloc);
		v[n] = strtod(s, &end);
		if (end == s || (*end && *end != ' ')) {
			free(v);
			return error("wire protocol: bad samples for '%s'", key);
		}
		n++;
		s = *end ? end + 1 : end;
	}
	r->samples_us = v;
	r->nsamples = n;
	return 0;
}

static int decode_result_shape(struct worker_shape_result *s, const char *field, const char *key,
                               const char *val)
{
	if (!strcmp(field, "outcome"))
		return decode_outcome(key, val, &s->outcome);
	if (!strcmp(field, "reason")) {
		snprintf(s->reason, sizeof(s->reason), "%s", val);
		return 0;
	}
	if (!strcmp(field, "rel_l2"))
		return wire_parse_dbl(key, val, &s->rel_l2);
	if (!strcmp(field, "max_abs"))
		return wire_parse_dbl(key, val, &s->max_abs);
	if (!strcmp(field, "samples"))
		return decode_samples(key, val, s);
	if (!strcmp(field, "clock")) {
		if (sscanf(val, "%lf %lf %lf %llu %d", &s->sm_mhz, &s->temp_c, &s->power_w,
		           &s->throttle, &s->retaken) != 5)
			return error("wire protocol: bad clock '%.80s' for '%s'", val, key);
		return 0;
	}
	return error("wire protocol: unknown key '%s'", key);
}

int worker_result_decode(char *msg, size_t len, struct worker_result *res, unsigned *flags)
{
	unsigned long long n = 0, fl = 0;
	struct wire_iter it;
	const char *type = NULL, *field = NULL;
	char *key, *val;
	size_t idx = 0;
	int r, k = 0;

	memset(res, 0, sizeof(*res));
	*flags = 0;
	if (wire_begin(msg, len, &it, &type) < 0)
		return -1;
	if (strcmp(type, "result"))
		return error("wire protocol: expected a result, got '%s'", type);
	while ((r = wire_next(&it, &key, &val)) > 0) {
		k = shape_key(key, WORKER_MAX_SHAPES, &idx, &field);
		if (k < 0)
			break;
		if (k) {
			r = decode_result_shape(&res->shapes[idx], field, key, val);
		} else if (!strcmp(key, "flags")) {
			r = wire_parse_ull(key, val, &fl);
		} else if (!strcmp(key, "outcome")) {
			r = decode_outcome(key, val, &res->outcome);
		} else if (!strcmp(key, "reason")) {
			snprintf(res->reason, sizeof(res->reason), "%s", val);
		} else if (!strcmp(key, "nshapes")) {
			r = wire_parse_ull(key, val, &n);
		} else {
			r = error("wire protocol: unknown key '%s'", key);
		}
		if (r < 0)
			break;
	}
	if (r >= 0 && k >= 0 && n > WORKER_MAX_SHAPES)
		r = error("wire protocol: %llu shapes, at most %d", n, WORKER_MAX_SHAPES);
	if (r < 0 || k < 0) {
		worker_result_release(res);
		return -1;
	}
	res->nshapes = (size_t)n;
	*flags = (unsigned)fl;
	return 0;
}
