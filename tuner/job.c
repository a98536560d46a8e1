/* Worker jobs from problem data: each expression resolved for one variant on one shape. */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/job.h"

/* Where a resolution failure is explained. */
struct why {
	char *buf;
	size_t len;
};

static int why_set(struct why *w, const char *fmt, ...) TUNER_PRINTF(2, 3);

static int why_set(struct why *w, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(w->buf, w->len, fmt, ap);
	va_end(ap);
	return -1;
}

void job_shape_dims(const struct config *cfg, const struct shape *sh, char *out, size_t len)
{
	const struct problem *pr = cfg->fam.problem;
	size_t i, at = 0;

	*out = '\0';
	for (i = 0; pr && i < pr->ndims && at < len; i++)
		at += (size_t)snprintf(out + at, len - at, "%s%s=%lld", i ? "," : "", pr->dims[i],
		                       sh->dims[i]);
}

int job_launch_smem(const struct config *cfg, const struct launch_spec *l,
                    const struct expr_scope *scope, long long *out, struct expr_err *err)
{
	const struct expr *e = l->smem_family ? cfg->fam.smem_bytes : l->smem;

	*out = 0;
	return e ? expr_eval(e, scope, out, err) : 0;
}

/* An integer expression that must lie in [lo, hi]; -1 after error() naming it. */
static int eval_in(struct why *w, const struct expr *e, const struct expr_scope *sc, long long lo,
                   long long hi, const char *what, const char *shape, long long *out)
{
	struct expr_err err;

	if (expr_eval(e, sc, out, &err) < 0)
		return why_set(w, "%s '%s' on shape '%s': %s", what, expr_text(e), shape, err.msg);
	if (*out < lo || *out > hi)
		return why_set(w, "%s '%s' on shape '%s' is %lld, must be %lld to %lld", what,
		               expr_text(e), shape, *out, lo, hi);
	return 0;
}

/* A scalar argument's bytes. */
static int arg_bits(struct why *w, const struct problem_arg *a, const struct expr_scope *sc,
                    const char *shape, unsigned long long *bits)
{
	struct expr_err err;
	long long iv = 0;
	double v;
	float f;
	int is_float;

	if (expr_eval_number(a->e, sc, &v, &is_float, &iv, &err) < 0)
		return why_set(w, "argument '%s' on shape '%s': %s", expr_text(a->e), shape,
		               err.msg);
	switch (a->kind) {
	case ARG_I32:
	case ARG_I64:
		if (is_float)
			return why_set(
			    w,
			    "argument '%s' on shape '%s' is %g, an integer type needs an "
			    "integer",
			    expr_text(a->e), shape, v);
		if (a->kind == ARG_I32 && (iv < -2147483648LL || iv > 2147483647LL))
			return why_set(w, "argument '%s' on shape '%s' is %lld, outside i32",
			               expr_text(a->e), shape, iv);
		*bits = a->kind == ARG_I32 ? (unsigned long long)(unsigned)(int)iv
		                           : (unsigned long long)iv;
		return 0;
	case ARG_F32: {
		unsigned u;

		f = (float)v;
		memcpy(&u, &f, sizeof(u));
		*bits = u;
		return 0;
	}
	case ARG_F64:
		memcpy(bits, &v, sizeof(*bits));
		return 0;
	default:
		BUG("argument kind %d is not a scalar", (int)a->kind);
	}
}

static int resolve_tmap(struct why *w, const struct problem *pb, const struct tensormap_spec *t,
                        const struct expr_scope *sc, const char *shape, struct worker_tmap *out)
{
	const struct problem_buffer *b = &pb->bufs[t->buffer];
	size_t esize = dtype_size(b->dtype), k;
	unsigned long long packed = esize, elems = 1;
	long long v;

	memset(out, 0, sizeof(*out));
	out->buffer = t->buffer;
	out->rank = (int)t->rank;
	out->swizzle = t->swizzle;
	for (k = 0; k < t->rank; k++) {
		if (eval_in(w, t->dims[k], sc, 1, 1LL << 32, "tensor map dim", shape, &v) < 0)
			return -1;
		out->dims[k] = (unsigned long long)v;
		elems *= (unsigned long long)v;
		if (eval_in(w, t->box[k], sc, 1, 256, "tensor map box", shape, &v) < 0)
			return -1;
		out->box[k] = (unsigned)v;
		if (k > 0) {
			if (t->strides[k]) {
				if (eval_in(w, t->strides[k], sc, 16, 1LL << 40,
				            "tensor map stride", shape, &v) < 0)
					return -1;
				out->strides[k] = (unsigned long long)v;
			} else {
				out->strides[k] = packed;
			}
			if (out->strides[k] % 16)
				return why_set(
				    w,
				    "tensor map over '%s' on shape '%s': the byte stride of dim "
				    "%zu is %llu, TMA needs a multiple of 16",
				    b->name, shape, k, out->strides[k]);
		}
		packed *= out->dims[k];
	}
	if ((out->box[0] * esize) % 16)
		return why_set(w,
		               "tensor map over '%s' on shape '%s': the box's inner extent is %zu "
		               "bytes, TMA needs a multiple of 16",
		               b->name, shape, out->box[0] * esize);
	if (t->swizzle && out->box[0] * esize > (size_t)t->swizzle)
		return why_set(w,
		               "tensor map over '%s' on shape '%s': the box's inner extent is %zu "
		               "bytes, more than the %d-byte swizzle span",
		               b->name, shape, out->box[0] * esize, t->swizzle);
	(void)elems;
	return 0;
}

/* The arguments of one launch: buffers by index, scalars as bytes, tensor maps by index. */
static int resolve_args(struct why *w, const struct problem *pb, const struct problem_arg *args,
                        size_t nargs, const struct expr_scope *sc, const char *shape,
                        struct worker_shape_job *ws, struct worker_call *call)
{
	size_t i;

	call->nargs = nargs;
	for (i = 0; i < nargs; i++) {
		const struct problem_arg *a = &args[i];
		struct worker_arg *g = &call->args[i];

		g->kind = (int)a->kind;
		if (a->kind == ARG_BUFFER) {
			g->index = a->buffer;
		} else if (a->kind == ARG_TENSORMAP) {
			if (ws->ntmaps == WORKER_MAX_TMAPS)
				return why_set(w, "more than %d tensor maps on shape '%s'",
				               WORKER_MAX_TMAPS, shape);
			if (resolve_tmap(w, pb, a->tmap, sc, shape, &ws->tmaps[ws->ntmaps]) < 0)
				return -1;
			g->index = (int)ws->ntmaps++;
		} else if (arg_bits(w, a, sc, shape, &g->bits) < 0) {
			return -1;
		}
	}
	return 0;
}

static int resolve_call(struct why *w, const struct config *cfg, const struct launch_spec *l,
                        const struct expr_scope *sc, const char *shape, struct worker_shape_job *ws,
                        struct worker_call *call)
{
	static const long long grid_max[3] = {2147483647LL, 65535, 65535};
	const struct problem *pb = cfg->fam.problem;
	struct expr_err err;
	long long v;
	size_t d, len = strlen(l->kernel);

	memset(call, 0, sizeof(*call));
	if (len >= sizeof(call->kernel))
		return why_set(w, "kernel name '%s' is too long", l->kernel);
	memcpy(call->kernel, l->kernel, len + 1);
	for (d = 0; d < 3; d++) {
		if (eval_in(w, l->grid[d], sc, 1, grid_max[d], "grid", shape, &v) < 0)
			return -1;
		call->grid[d] = (unsigned)v;
		if (eval_in(w, l->block[d], sc, 1, 1024, "block", shape, &v) < 0)
			return -1;
		call->block[d] = (unsigned)v;
		if (l->cluster[d]) {
			if (eval_in(w, l->cluster[d], sc, 1, 16, "cluster", shape, &v) < 0)
				return -1;
			call->cluster[d] = (unsigned)v;
		}
	}
	if (l->pdl) {
		if (eval_in(w, l->pdl, sc, 0, 1, "pdl", shape, &v) < 0)
			return -1;
		call->pdl = (unsigned)v;
	}
	if (call->cluster[0])
		for (d = 0; d < 3; d++)
			if (call->grid[d] % call->cluster[d])
				return why_set(
				    w,
				    "launch '%s' on shape '%s': grid[%zu] = %u is no multiple "
				    "of the cluster's %u",
				    l->kernel, shape, d, call->grid[d], call->cluster[d]);
	if (job_launch_smem(cfg, l, sc, &v, &err) < 0)
		return why_set(w, "launch '%s' smem on shape '%s': %s", l->kernel, shape, err.msg);
	if (v < 0 || v > 0x7fffffffLL)
		return why_set(w, "launch '%s' smem on shape '%s' is %lld bytes", l->kernel, shape,
		               v);
	call->smem = (unsigned)v;
	return l->args ? resolve_args(w, pb, l->args, l->nargs, sc, shape, ws, call)
	               : resolve_args(w, pb, pb->args, pb->nargs, sc, shape, ws, call);
}

int job_resolve_shape(const struct config *cfg, const struct variant *va, const struct shape *sh,
                      struct worker_shape_job *ws, char *whybuf, size_t whylen)
{
	struct why why = {whybuf, whylen};
	struct why *w = &why;
	const struct family *fam = &cfg->fam;
	const struct problem *pb = fam->problem;
	struct space_scope sc, dims_only;
	long long v;
	size_t k;

	memset(ws, 0, sizeof(*ws));
	snprintf(ws->name, sizeof(ws->name), "%s", sh->name);
	job_shape_dims(cfg, sh, ws->dims, sizeof(ws->dims));
	space_scope_init(&sc, cfg, va, sh);
	/* the reference sees the dims alone: it is the same whatever the variant */
	space_scope_init(&dims_only, cfg, va, sh);
	dims_only.scope.vars += fam->nparams;
	dims_only.scope.n -= fam->nparams;
	ws->nbufs = pb->nbufs;
	for (k = 0; k < pb->nbufs; k++) {
		const struct problem_buffer *b = &pb->bufs[k];
		struct worker_buf *wb = &ws->bufs[k];

		snprintf(wb->name, sizeof(wb->name), "%s", b->name);
		wb->dtype = (int)b->dtype;
		wb->ref_dtype = (int)b->ref_dtype;
		wb->role = (int)b->role;
		if (eval_in(w, b->count, &sc.scope, 1,
		            (long long)(CONFIG_MAX_BUFFER_BYTES / dtype_size(b->dtype)),
		            "buffer count", sh->name, &v) < 0)
			return -1;
		wb->count = (unsigned long long)v;
		wb->fill = (int)b->fill.kind;
		wb->fa = b->fill.a;
		wb->fb = b->fill.b;
		wb->rel_l2 = cfg->rel_l2_set || isnan(b->rel_l2) ? cfg->rel_l2 : b->rel_l2;
		wb->max_abs = cfg->max_abs_set || isnan(b->max_abs) ? cfg->max_abs : b->max_abs;
		wb->cosine = isnan(b->cosine) ? 0 : b->cosine;
	}
	ws->ncalls = fam->nlaunches;
	for (k = 0; k < fam->nlaunches; k++)
		if (resolve_call(w, cfg, &fam->launches[k], &sc.scope, sh->name, ws,
		                 &ws->calls[k]) < 0)
			return -1;
	ws->nref = pb->ref.nlaunches;
	for (k = 0; k < pb->ref.nlaunches; k++)
		if (resolve_call(w, cfg, &pb->ref.launches[k], &dims_only.scope, sh->name, ws,
		                 &ws->ref[k]) < 0)
			return -1;
	return 0;
}

/* ---------------------------------------------------------- ragged shapes */

static int is_prime(long long n)
{
	long long d;

	if (n < 2)
		return 0;
	for (d = 2; d * d <= n; d++)
		if (n % d == 0)
			return 0;
	return 1;
}

/* The problem's rules hold for these dims and every buffer of the problem has an element. */
static int legal(const struct problem *pb, const long long *dims)
{
	struct expr_var vars[PROBLEM_MAX_DIMS];
	struct expr_scope sc = {vars, pb->ndims, NULL};
	long long v;
	size_t i;

	for (i = 0; i < pb->ndims; i++) {
		vars[i].name = pb->dims[i];
		vars[i].value = dims[i];
	}
	for (i = 0; i < pb->nvalid; i++)
		if (expr_eval(pb->valid[i], &sc, &v, NULL) < 0 || !v)
			return 0;
	for (i = 0; i < pb->nbufs; i++)
		if (pb->bufs[i].role != ROLE_SCRATCH &&
		    (expr_eval(pb->bufs[i].count, &sc, &v, NULL) < 0 || v < 1))
			return 0;
	return 1;
}

static int specialised(const struct family *fam, const char *dim)
{
	size_t i;

	for (i = 0; i < fam->nspecialize; i++)
		if (!strcmp(fam->specialize[i], dim))
			return 1;
	return 0;
}

static int same_dims(const long long *a, const long long *b, size_t n)
{
	return !memcmp(a, b, n * sizeof(*a));
}

size_t job_derive_ragged(const struct config *cfg, struct shape *derived, size_t *of_suite,
                         size_t max)
{
	const struct problem *pb = cfg->fam.problem;
	size_t n = 0, s, d, j, k;

	for (s = 0; s < cfg->nshapes; s++) {
		const struct shape *sh = &cfg->shapes[s];

		for (d = 0; d < pb->ndims; d++) {
			long long cand[2] = {0, 0}, v;

			if (!pb->ragged[d] || specialised(&cfg->fam, pb->dims[d]))
				continue;
			for (v = sh->dims[d] - 1; v >= 2 && !cand[0]; v--)
				if (is_prime(v))
					cand[0] = v;
			for (v = 1; v < sh->dims[d] && v <= 4096 && !cand[1]; v++) {
				long long dims[TUNER_MAX_DIMS];

				memcpy(dims, sh->dims, sizeof(dims));
				dims[d] = v;
				if (legal(pb, dims))
					cand[1] = v;
			}
			for (k = 0; k < 2 && n < max; k++) {
				struct shape *t = &derived[n];
				int dup = 0;

				if (!cand[k])
					continue;
				memset(t, 0, sizeof(*t));
				memcpy(t->dims, sh->dims, sizeof(t->dims));
				t->dims[d] = cand[k];
				if (!legal(pb, t->dims))
					continue;
				for (j = 0; j < cfg->nshapes && !dup; j++)
					dup = same_dims(cfg->shapes[j].dims, t->dims, pb->ndims);
				for (j = 0; j < n && !dup; j++)
					dup = same_dims(derived[j].dims, t->dims, pb->ndims);
				if (dup)
					continue;
				t->name =
				    xasprintf("%.24s~%s=%lld", sh->name, pb->dims[d], cand[k]);
				t->line = sh->line;
				of_suite[n++] = s;
			}
		}
	}
	return n;
}

/* The shape's cost: the problem's flops, else its bytes, else its elements (the dims' product). */
static double shape_cost(const struct problem *pb, const long long *dims)
{
	struct expr_var vars[PROBLEM_MAX_DIMS];
	struct expr_scope sc = {vars, pb->ndims, NULL};
	const struct expr *e = pb->flops ? pb->flops : pb->bytes;
	double v = 1;
	size_t i;

	for (i = 0; i < pb->ndims; i++) {
		vars[i].name = pb->dims[i];
		vars[i].value = dims[i];
	}
	if (e && expr_eval_number(e, &sc, &v, NULL, NULL, NULL) == 0)
		return v;
	for (i = 0, v = 1; i < pb->ndims; i++)
		v *= (double)dims[i];
	return v;
}

double job_shape_cost(const struct config *cfg, const struct shape *sh)
{
	return shape_cost(cfg->fam.problem, sh->dims);
}

int job_shrink_shape(const struct config *cfg, const struct shape *sh, double budget,
                     struct shape *out)
{
	const struct problem *pb = cfg->fam.problem;
	long long dims[TUNER_MAX_DIMS];
	size_t d;
	int round, shrunk = 0;

	memcpy(dims, sh->dims, sizeof(dims));
	for (round = 0; round < 64 && shape_cost(pb, dims) > budget; round++) {
		int any = 0;

		for (d = 0; d < pb->ndims; d++) {
			long long was = dims[d];

			if (was <= 1 || specialised(&cfg->fam, pb->dims[d]))
				continue;
			dims[d] = (was + 1) / 2;
			if (legal(pb, dims))
				any = 1;
			else
				dims[d] = was;
		}
		if (!any)
			break;
		shrunk = 1;
	}
	if (!shrunk)
		return 1;
	memset(out, 0, sizeof(*out));
	memcpy(out->dims, dims, sizeof(out->dims));
	out->name = xasprintf("%.24s~small", sh->name);
	out->line = sh->line;
	return 0;
}

void job_shapes_release(struct shape *shapes, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(shapes[i].name);
		shapes[i].name = NULL;
	}
}
