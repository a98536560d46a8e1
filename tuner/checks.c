/* The gates, cheapest first: constraints, shared memory, alignment, then build and resources. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/checks.h"

static const char *const gate_names[GATE_COUNT] = {
    [GATE_CONSTRAINT] = "constraint", [GATE_SMEM] = "smem",           [GATE_ALIGN] = "align",
    [GATE_COMPILE] = "compile",       [GATE_RESOURCES] = "resources", [GATE_SANITIZE] = "sanitize",
    [GATE_CORRECT] = "correct",       [GATE_RACE] = "race",
};

const char *gate_name(enum gate g)
{
	if ((unsigned)g >= GATE_COUNT)
		return "?";
	return gate_names[g];
}

void verdicts_release(struct verdicts *vs)
{
	free(vs->v);
	vs->v = NULL;
	vs->n = vs->alloc = 0;
}

static enum outcome add_verdict(struct verdicts *vs, enum gate g, enum outcome o,
                                const struct shape *sh, const char *fmt, ...) TUNER_PRINTF(5, 6);

static enum outcome add_verdict(struct verdicts *vs, enum gate g, enum outcome o,
                                const struct shape *sh, const char *fmt, ...)
{
	struct verdict *v;
	va_list ap;

	ALLOC_GROW(vs->v, vs->n + 1, vs->alloc);
	v = &vs->v[vs->n++];
	memset(v, 0, sizeof(*v));
	v->gate = g;
	v->outcome = o;
	if (sh && o != VARIANT_OK)
		snprintf(v->shape, sizeof(v->shape), "%s", sh->name);
	va_start(ap, fmt);
	vsnprintf(v->reason, sizeof(v->reason), fmt, ap);
	va_end(ap);
	return o;
}

static const char *plural(size_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

/* The suite's shapes; a suite without shapes is checked once on the params alone. */
static size_t nshapes_or_one(const struct config *cfg)
{
	return cfg->nshapes ? cfg->nshapes : 1;
}

static const struct shape *shape_at(const struct config *cfg, size_t i)
{
	return cfg->nshapes ? &cfg->shapes[i] : NULL;
}

static const char *shape_label(const struct shape *sh)
{
	return sh ? sh->name : "(none)";
}

/* ------------------------------------------------------- static gates */

static enum outcome gate_constraints(const struct config *cfg, const struct variant *va,
                                     struct verdicts *out)
{
	const struct family *fam = &cfg->fam;
	size_t s, c;

	for (s = 0; s < nshapes_or_one(cfg); s++) {
		const struct shape *sh = shape_at(cfg, s);
		struct space_scope sc;

		space_scope_init(&sc, cfg, va, sh);
		for (c = 0; c < fam->nconstraints; c++) {
			const struct expr *e = fam->constraints[c].e;
			struct expr_err err;
			long long v;

			if (expr_eval(e, &sc.scope, &v, &err) < 0)
				return add_verdict(out, GATE_CONSTRAINT, REJECT_CONSTRAINT, sh,
				                   "constraint '%s' cannot be evaluated for shape "
				                   "'%s': %s",
				                   expr_text(e), shape_label(sh), err.msg);
			if (!v)
				return add_verdict(out, GATE_CONSTRAINT, REJECT_CONSTRAINT, sh,
				                   "constraint '%s' is false for shape '%s'",
				                   expr_text(e), shape_label(sh));
		}
	}
	for (s = 0; s < cfg->nshapes; s++) {
		const struct shape *sh = &cfg->shapes[s];
		static const long long grid_max[3] = {2147483647LL, 65535, 65535};
		struct space_scope sc;
		size_t l, d;

		space_scope_init(&sc, cfg, va, sh);
		for (l = 0; l < fam->nlaunches; l++) {
			for (d = 0; d < 3; d++) {
				const struct expr *e = fam->launches[l].grid[d];
				struct expr_err err;
				long long v;

				if (expr_eval(e, &sc.scope, &v, &err) < 0)
					return add_verdict(
					    out, GATE_CONSTRAINT, REJECT_CONSTRAINT, sh,
					    "grid[%zu] '%s' of '%s' cannot be evaluated "
					    "for shape '%s': %s",
					    d, expr_text(e), fam->launches[l].kernel, sh->name,
					    err.msg);
				if (v < 1 || v > grid_max[d])
					return add_verdict(
					    out, GATE_CONSTRAINT, REJECT_CONSTRAINT, sh,
					    "cannot launch '%s' on shape '%s': grid[%zu] "
					    "'%s' is %lld, must be 1 to %lld",
					    fam->launches[l].kernel, sh->name, d, expr_text(e), v,
					    grid_max[d]);
			}
		}
	}
	return add_verdict(out, GATE_CONSTRAINT, VARIANT_OK, NULL, "%zu %s on %zu %s",
	                   fam->nconstraints,
	                   plural(fam->nconstraints, "constraint holds", "constraints hold"),
	                   cfg->nshapes, plural(cfg->nshapes, "shape", "shapes"));
}

static enum outcome gate_smem(const struct config *cfg, const struct variant *va,
                              struct verdicts *out)
{
	const struct family *fam = &cfg->fam;
	long long most = 0, limit = cfg->arch.smem_per_block_optin;
	size_t s;

	if (!fam->smem_bytes)
		return add_verdict(out, GATE_SMEM, VARIANT_OK, NULL,
		                   "no smem_bytes declared, sm limit %lld per block (opt-in)",
		                   limit);
	for (s = 0; s < nshapes_or_one(cfg); s++) {
		const struct shape *sh = shape_at(cfg, s);
		struct space_scope sc;
		struct expr_err err;
		long long v;

		space_scope_init(&sc, cfg, va, sh);
		if (expr_eval(fam->smem_bytes, &sc.scope, &v, &err) < 0)
			return add_verdict(out, GATE_SMEM, REJECT_SMEM, sh,
			                   "smem_bytes '%s' cannot be evaluated for shape '%s': %s",
			                   expr_text(fam->smem_bytes), shape_label(sh), err.msg);
		if (v < 0)
			return add_verdict(out, GATE_SMEM, REJECT_SMEM, sh,
			                   "smem_bytes '%s' is negative (%lld) for shape '%s'",
			                   expr_text(fam->smem_bytes), v, shape_label(sh));
		if (v > limit)
			return add_verdict(out, GATE_SMEM, REJECT_SMEM, sh,
			                   "needs %lld bytes of shared memory for shape '%s', %s "
			                   "allows %lld per block (opt-in)",
			                   v, shape_label(sh), cfg->arch.name, limit);
		if (v > most)
			most = v;
		for (size_t l = 0; l < fam->nlaunches; l++) {
			const struct launch_spec *ls = &fam->launches[l];

			if (ls->smem_family || !ls->smem)
				continue;
			if (expr_eval(ls->smem, &sc.scope, &v, &err) < 0 || v < 0 || v > limit)
				return add_verdict(out, GATE_SMEM, REJECT_SMEM, sh,
				                   "launch '%s' smem '%s' on shape '%s': %s",
				                   ls->kernel, expr_text(ls->smem), shape_label(sh),
				                   v < 0       ? "negative"
				                   : v > limit ? "over the limit"
				                               : err.msg);
		}
	}
	return add_verdict(out, GATE_SMEM, VARIANT_OK, NULL,
	                   "needs at most %lld bytes of shared memory on %zu %s, %s allows %lld "
	                   "per block (opt-in)",
	                   most, cfg->nshapes, plural(cfg->nshapes, "shape", "shapes"),
	                   cfg->arch.name, limit);
}

/* One buffer on one shape: 0 when aligned, else -1 with the reason in msg. */
static int check_buffer(const struct layout_buf *lb, const struct expr_scope *scope, char *msg,
                        size_t len)
{
	long long align = lb->align > 0 ? lb->align : 1;
	const char *access = lb->access ? lb->access : "access";
	struct expr_err err;
	long long off = 0, stride = 0;

	if (lb->offset && expr_eval(lb->offset, scope, &off, &err) < 0) {
		snprintf(msg, len, "buffer '%s' offset '%s' cannot be evaluated: %s", lb->name,
		         expr_text(lb->offset), err.msg);
		return -1;
	}
	if (lb->stride && expr_eval(lb->stride, scope, &stride, &err) < 0) {
		snprintf(msg, len, "buffer '%s' row stride '%s' cannot be evaluated: %s", lb->name,
		         expr_text(lb->stride), err.msg);
		return -1;
	}
	if (off % align) {
		snprintf(msg, len, "buffer '%s' offset %lld bytes is not a multiple of %lld (%s)",
		         lb->name, off, align, access);
		return -1;
	}
	if (stride % align) {
		snprintf(msg, len,
		         "buffer '%s' row stride %lld bytes is not a multiple of %lld (%s)",
		         lb->name, stride, align, access);
		return -1;
	}
	return 0;
}

static enum outcome gate_align(const struct config *cfg, const struct variant *va,
                               struct verdicts *out)
{
	const struct family *fam = &cfg->fam;
	size_t s, b;

	for (s = 0; s < nshapes_or_one(cfg); s++) {
		const struct shape *sh = shape_at(cfg, s);
		struct strbuf others = STRBUF_INIT;
		struct space_scope sc;
		char first[400] = "", msg[400];
		size_t nbad = 0;

		space_scope_init(&sc, cfg, va, sh);
		for (b = 0; b < fam->nlayout; b++) {
			if (!check_buffer(&fam->layout[b], &sc.scope, msg, sizeof(msg)))
				continue;
			if (!nbad++)
				memcpy(first, msg, sizeof(first));
			else
				sb_addf(&others, "%s'%s'", nbad > 2 ? ", " : "",
				        fam->layout[b].name);
		}
		if (nbad) {
			add_verdict(out, GATE_ALIGN, REJECT_ALIGN, sh, "%s for shape '%s'%s%s",
			            first, shape_label(sh), nbad > 1 ? "; also misaligned: " : "",
			            others.buf ? others.buf : "");
			sb_release(&others);
			return REJECT_ALIGN;
		}
	}
	return add_verdict(out, GATE_ALIGN, VARIANT_OK, NULL, "%zu %s aligned on %zu %s",
	                   fam->nlayout, plural(fam->nlayout, "buffer", "buffers"), cfg->nshapes,
	                   plural(cfg->nshapes, "shape", "shapes"));
}

enum outcome checks_static(const struct config *cfg, const struct variant *va, struct verdicts *out)
{
	enum outcome o;

	o = gate_constraints(cfg, va, out);
	if (o == VARIANT_OK)
		o = gate_smem(cfg, va, out);
	if (o == VARIANT_OK)
		o = gate_align(cfg, va, out);
	return o;
}

/* --------------------------------------------------------- build gates */

/* The first line of the log that reports an error, or its first non-empty line. */
static void first_error_line(const char *log, char *out, size_t len)
{
	const char *line, *end, *pick = NULL;
	size_t n;

	for (line = log; line && *line; line = *end ? end + 1 : end) {
		end = strchr(line, '\n');
		if (!end)
			end = line + strlen(line);
		n = (size_t)(end - line);
		if (!pick && n > 0)
			pick = line;
		if (memmem(line, n, "error", 5)) {
			pick = line;
			break;
		}
	}
	if (!pick) {
		snprintf(out, len, "compilation failed with an empty log");
		return;
	}
	end = strchr(pick, '\n');
	n = end ? (size_t)(end - pick) : strlen(pick);
	snprintf(out, len, "%.*s", (int)n, pick);
}

static const char *spec_label(const struct spec *sp)
{
	return *sp->key ? sp->key : "(no specialisation)";
}

enum outcome checks_build(const struct config *cfg, const struct variant *va, const struct spec *sp,
                          const struct build *b, struct verdicts *out)
{
	const struct family *fam = &cfg->fam;
	const struct shape *sh = space_spec_shape(cfg, sp);
	long long limit = cfg->arch.smem_per_block_optin, dyn = 0, spills, threads = 1;
	long long max_threads =
	    cfg->arch.max_threads_per_block > 0 ? cfg->arch.max_threads_per_block : 1024;
	struct space_scope sc;
	struct expr_err err;
	char line[400];
	size_t i;

	if (b->outcome != VARIANT_OK) {
		first_error_line(b->log, line, sizeof(line));
		return add_verdict(out, GATE_COMPILE, REJECT_COMPILE, NULL, "%s: %s",
		                   spec_label(sp), line);
	}
	/* without ptxas's report, registers, spills and static shared memory are unknown: an
	 * unchecked build is not admitted (an NVRTC that answers from a cache of its own omits it)
	 */
	if (compile_parse_ptxas(b->log, fam->launches[0].kernel, &(struct build){0}) < 0)
		return add_verdict(
		    out, GATE_RESOURCES, REJECT_RESOURCES, NULL,
		    "%s: the build's log has no ptxas report for '%s' (-Xptxas=-v): its "
		    "registers, spills and shared memory cannot be checked",
		    spec_label(sp), fam->launches[0].kernel);
	add_verdict(out, GATE_COMPILE, VARIANT_OK, NULL,
	            "%s: %d registers, %d bytes static smem, %d bytes stack%s", spec_label(sp),
	            b->regs, b->static_smem, b->stack_frame, b->cached ? " (cached)" : "");

	space_scope_init(&sc, cfg, va, sh);
	if (fam->smem_bytes && expr_eval(fam->smem_bytes, &sc.scope, &dyn, &err) < 0)
		return add_verdict(out, GATE_SMEM, REJECT_SMEM, sh,
		                   "smem_bytes '%s' cannot be evaluated for %s: %s",
		                   expr_text(fam->smem_bytes), spec_label(sp), err.msg);
	if (b->static_smem + dyn > limit)
		return add_verdict(
		    out, GATE_SMEM, REJECT_SMEM, sh,
		    "ptxas reports %d bytes of static shared memory for %s; with %lld "
		    "dynamic that is %lld, %s allows %lld per block (opt-in)",
		    b->static_smem, spec_label(sp), dyn, b->static_smem + dyn, cfg->arch.name,
		    limit);
	add_verdict(out, GATE_SMEM, VARIANT_OK, NULL,
	            "%s: %d static + %lld dynamic bytes of shared memory, %s allows %lld per block "
	            "(opt-in)",
	            spec_label(sp), b->static_smem, dyn, cfg->arch.name, limit);

	spills = (long long)b->spill_stores + b->spill_loads;
	if (spills > cfg->max_spill_bytes)
		return add_verdict(out, GATE_RESOURCES, REJECT_RESOURCES, NULL,
		                   "%s spills %lld bytes (%d stored, %d loaded), the limit is %lld "
		                   "(max_spill_bytes)",
		                   spec_label(sp), spills, b->spill_stores, b->spill_loads,
		                   cfg->max_spill_bytes);
	for (i = 0; i < fam->nlaunches; i++) {
		const struct launch_spec *l = &fam->launches[i];
		struct build eb = *b;
		long long t = 1, v;
		size_t d;

		/* each entry's own report: a combine pass must not spill either */
		if (i > 0 && compile_parse_ptxas(b->log, l->kernel, &eb) == 0) {
			spills = (long long)eb.spill_stores + eb.spill_loads;
			if (spills > cfg->max_spill_bytes)
				return add_verdict(out, GATE_RESOURCES, REJECT_RESOURCES, NULL,
				                   "%s: '%s' spills %lld bytes, the limit is %lld "
				                   "(max_spill_bytes)",
				                   spec_label(sp), l->kernel, spills,
				                   cfg->max_spill_bytes);
		}
		for (d = 0; d < 3; d++) {
			if (expr_eval(l->block[d], &sc.scope, &v, &err) < 0)
				return add_verdict(
				    out, GATE_RESOURCES, REJECT_RESOURCES, sh,
				    "block size '%s' of '%s' cannot be evaluated for %s: %s",
				    expr_text(l->block[d]), l->kernel, spec_label(sp), err.msg);
			if (v <= 0 || v > max_threads)
				return add_verdict(
				    out, GATE_RESOURCES, REJECT_RESOURCES, sh,
				    "cannot launch '%s': block size '%s' is %lld for %s, %s "
				    "allows 1 to %lld threads per block",
				    l->kernel, expr_text(l->block[d]), v, spec_label(sp),
				    cfg->arch.name, max_threads);
			t *= v; /* each factor is at most max_threads: no overflow */
		}
		if (t > max_threads)
			return add_verdict(out, GATE_RESOURCES, REJECT_RESOURCES, sh,
			                   "cannot launch '%s': %lld threads per block for %s, %s "
			                   "allows %lld",
			                   l->kernel, t, spec_label(sp), cfg->arch.name,
			                   max_threads);
		if (t * eb.regs > cfg->arch.regs_per_sm)
			return add_verdict(out, GATE_RESOURCES, REJECT_RESOURCES, sh,
			                   "cannot launch '%s': %lld threads x %d registers = %lld "
			                   "registers per block, %s has %lld per SM",
			                   l->kernel, t, eb.regs, t * eb.regs, cfg->arch.name,
			                   cfg->arch.regs_per_sm);
		if (i == 0)
			threads = t;
	}
	spills = (long long)b->spill_stores + b->spill_loads;
	return add_verdict(
	    out, GATE_RESOURCES, VARIANT_OK, NULL,
	    "%s: %lld bytes spilled (limit %lld), %lld threads x %d registers = %lld of "
	    "%lld per SM",
	    spec_label(sp), spills, cfg->max_spill_bytes, threads, b->regs, threads * b->regs,
	    cfg->arch.regs_per_sm);
}

/* ------------------------------------------------ expressions over the space */

struct expr_item {
	const struct expr *e;
	const char *path; /* the file it was read from */
	int line;
	char what[96];           /* "constraint", "grid[0] of 'gemm'", ... */
	int number;              /* may be floating (f32 and f64 arguments) */
	int constraint;          /* tried at every point, not only at admitted ones */
	const struct expr *when; /* its launch's condition; NULL: always launched */
	unsigned long long tried, ok;
	struct expr_err first; /* the first failure's */
};

struct expr_items {
	struct expr_item *v;
	size_t n, alloc;
};

static void add_item(struct expr_items *it, const struct expr *e, const char *path, int line,
                     const struct expr *when, int number, const char *fmt, ...) TUNER_PRINTF(7, 8);

static void add_item(struct expr_items *it, const struct expr *e, const char *path, int line,
                     const struct expr *when, int number, const char *fmt, ...)
{
	struct expr_item *x;
	va_list ap;

	if (!e)
		return;
	ALLOC_GROW(it->v, it->n + 1, it->alloc);
	x = &it->v[it->n++];
	memset(x, 0, sizeof(*x));
	x->e = e;
	x->path = path;
	x->line = line;
	x->when = when;
	x->number = number;
	va_start(ap, fmt);
	vsnprintf(x->what, sizeof(x->what), fmt, ap);
	va_end(ap);
}

static void add_args(struct expr_items *it, const struct problem_arg *a, size_t n, const char *path,
                     const struct expr *when, const char *kernel)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (a[i].kind != ARG_BUFFER && a[i].kind != ARG_TENSORMAP)
			add_item(it, a[i].e, path, a[i].line, when,
			         a[i].kind == ARG_F32 || a[i].kind == ARG_F64,
			         "argument %zu of '%s'", i + 1, kernel);
}

static void add_launches(struct expr_items *it, const struct launch_spec *l, size_t n,
                         const char *path)
{
	size_t i, d;

	for (i = 0; i < n; i++) {
		const struct expr *w = l[i].when;

		add_item(it, w, path, l[i].line, NULL, 0, "'when' of '%s'", l[i].kernel);
		for (d = 0; d < 3; d++) {
			add_item(it, l[i].grid[d], path, l[i].line, w, 0, "grid[%zu] of '%s'", d,
			         l[i].kernel);
			add_item(it, l[i].block[d], path, l[i].line, w, 0, "block[%zu] of '%s'", d,
			         l[i].kernel);
			add_item(it, l[i].cluster[d], path, l[i].line, w, 0, "cluster[%zu] of '%s'",
			         d, l[i].kernel);
		}
		if (!l[i].smem_family)
			add_item(it, l[i].smem, path, l[i].line, w, 0, "smem of '%s'", l[i].kernel);
		add_item(it, l[i].pdl, path, l[i].line, w, 0, "pdl of '%s'", l[i].kernel);
		add_args(it, l[i].args, l[i].nargs, path, w, l[i].kernel);
	}
}

static void collect_items(const struct config *cfg, struct expr_items *it)
{
	const struct family *fam = &cfg->fam;
	const struct problem *pr = fam->problem;
	size_t i;

	for (i = 0; i < fam->nconstraints; i++) {
		add_item(it, fam->constraints[i].e, fam->path, fam->constraints[i].line, NULL, 0,
		         "constraint");
		it->v[it->n - 1].constraint = 1;
	}
	if (fam->smem_bytes_line)
		add_item(it, fam->smem_bytes, fam->path, fam->smem_bytes_line, NULL, 0,
		         "smem_bytes");
	for (i = 0; i < fam->nlayout; i++) {
		add_item(it, fam->layout[i].offset, fam->path, fam->layout[i].line, NULL, 0,
		         "offset of '%s'", fam->layout[i].name);
		add_item(it, fam->layout[i].stride, fam->path, fam->layout[i].line, NULL, 0,
		         "stride of '%s'", fam->layout[i].name);
	}
	add_launches(it, fam->launches, fam->nlaunches, fam->path);
	if (!pr)
		return;
	for (i = 0; i < pr->nbufs; i++)
		add_item(it, pr->bufs[i].count, pr->path, pr->bufs[i].line, NULL, 0,
		         "count of '%s'", pr->bufs[i].name);
	add_args(it, pr->args, pr->nargs, pr->path, NULL, fam->launches[0].kernel);
	add_launches(it, pr->ref.launches, pr->ref.nlaunches, pr->path);
}

/* 1 when it evaluates (to *v, if an integer); its first failure kept in x->first. */
static int try_item(struct expr_item *x, const struct expr_scope *scope, long long *v)
{
	struct expr_err err;
	double d;
	int r;

	x->tried++;
	*v = 0;
	r = x->number ? expr_eval_number(x->e, scope, &d, NULL, NULL, &err)
	              : expr_eval(x->e, scope, v, &err);
	if (r == 0) {
		x->ok++;
		return 1;
	}
	if (x->tried - x->ok == 1)
		x->first = err;
	return 0;
}

/* The i-th point tried: all of a small space, else the baseline and a fixed sample. */
static void point_at(const struct family *fam, unsigned long long size, unsigned long long i,
                     struct variant *va)
{
	unsigned long long z;

	if (size <= CHECKS_EXPR_POINTS) {
		space_point(fam, i, va);
		return;
	}
	if (i == 0) {
		space_baseline(fam, va);
		return;
	}
	/* splitmix64 of i: spread over the whole mixed-radix range */
	z = i * 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	space_point(fam, (z ^ (z >> 31)) % size, va);
}

/* Try every item at the points on one shape (NULL: none); 0, or error(). */
static int exprs_on_shape(const struct config *cfg, const struct shape *sh, struct expr_items *it)
{
	const struct family *fam = &cfg->fam;
	unsigned long long size = space_size(fam), npoints, p;
	size_t i, pending = it->n;

	npoints = size <= CHECKS_EXPR_POINTS ? size : CHECKS_EXPR_POINTS;
	for (i = 0; i < it->n; i++)
		it->v[i].tried = it->v[i].ok = 0;
	for (p = 0; p < npoints && pending; p++) {
		struct space_scope sc;
		struct variant va;
		int admitted = 1;

		point_at(fam, size, p, &va);
		space_scope_init(&sc, cfg, &va, sh);
		for (i = 0; i < it->n; i++) {
			struct expr_item *x = &it->v[i];
			unsigned long long was = x->ok;
			struct expr_err err;
			long long v;

			if (x->constraint) {
				if (!try_item(x, &sc.scope, &v) || !v)
					admitted = 0;
			} else if (admitted &&
			           (!x->when ||
			            (expr_eval(x->when, &sc.scope, &v, &err) == 0 && v))) {
				try_item(x, &sc.scope, &v);
			}
			if (!was && x->ok)
				pending--;
		}
	}
	for (i = 0; i < it->n; i++) {
		const struct expr_item *x = &it->v[i];

		if (!x->tried || x->ok)
			continue;
		return error("%s:%d: %s '%s' cannot be evaluated at any point of the space%s%s%s: "
		             "%s%s",
		             x->path, x->line, x->what, expr_text(x->e), sh ? " for shape '" : "",
		             sh ? sh->name : "", sh ? "'" : "", x->first.msg,
		             size > npoints ? " (at a sample of the space)" : "");
	}
	return 0;
}

int checks_exprs(const struct config *cfg)
{
	struct expr_items it = {0};
	size_t s;
	int r = 0;

	collect_items(cfg, &it);
	for (s = 0; s < nshapes_or_one(cfg) && r == 0; s++)
		r = exprs_on_shape(cfg, shape_at(cfg, s), &it);
	free(it.v);
	return r;
}
