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
