/* A hand-built flash_fwd-like config for the space, template and checks tests (no YAML). */
#ifndef TESTS_COMPILE_FIXTURE_H
#define TESTS_COMPILE_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/config.h"
#include "tuner/space.h"

/* error() text is captured here so that tests can assert on messages. */
static char fx_errors[8192];
static int fx_nerrors;

static inline void fx_capture(const char *prefix, const char *msg)
{
	size_t len = strlen(fx_errors);

	if (strcmp(prefix, "error: "))
		return;
	fx_nerrors++;
	snprintf(fx_errors + len, sizeof(fx_errors) - len, "%s\n", msg);
}

static inline void fx_capture_start(void)
{
	fx_errors[0] = '\0';
	fx_nerrors = 0;
	set_error_routine(fx_capture);
}

static inline struct expr *fx_expr(const char *src)
{
	struct expr_err err;
	struct expr *e = expr_parse(src, &err);

	if (!e) {
		fprintf(stderr, "fixture: cannot parse '%s': %s (col %d)\n", src, err.msg, err.col);
		abort();
	}
	return e;
}

static inline void fx_param(struct family *fam, const char *name, const long long *vals, size_t n,
                            long long baseline)
{
	struct param *p = &fam->params[fam->nparams];

	p->name = xstrdup(name);
	p->values = xmalloc(n * sizeof(*p->values));
	memcpy(p->values, vals, n * sizeof(*vals));
	p->nvalues = n;
	fam->baseline[fam->nparams++] = baseline;
}

static inline void fx_shape(struct config *cfg, const char *name, long long b, long long h,
                            long long s, long long d)
{
	struct shape *sh = &cfg->shapes[cfg->nshapes++];

	sh->name = xstrdup(name);
	sh->dims[0] = b;
	sh->dims[1] = h;
	sh->dims[2] = s;
	sh->dims[3] = d;
}

static inline void fx_constraint(struct family *fam, const char *src)
{
	fam->constraints =
	    xrealloc(fam->constraints, (fam->nconstraints + 1) * sizeof(*fam->constraints));
	fam->constraints[fam->nconstraints].e = fx_expr(src);
	fam->constraints[fam->nconstraints].line = 0;
	fam->nconstraints++;
}

static inline void fx_layout(struct family *fam, const char *name, const char *offset,
                             const char *stride, int align, const char *access)
{
	struct layout_buf *b;

	fam->layout = xrealloc(fam->layout, (fam->nlayout + 1) * sizeof(*fam->layout));
	b = &fam->layout[fam->nlayout++];
	memset(b, 0, sizeof(*b));
	b->name = xstrdup(name);
	b->offset = fx_expr(offset);
	b->stride = fx_expr(stride);
	b->align = align;
	b->access = xstrdup(access);
}

/*
 * The flash_fwd family as its sidecar declares it (PAD may also be 1, the
 * seeds' bug), on sm_90 with the default suite: four shapes at D=64, one at 128.
 */
static inline void fx_flash_config(struct config *cfg)
{
	static const long long bm[] = {32, 64, 128}, bn[] = {32, 64, 128}, nw[] = {1, 2, 4, 8};
	static const long long st[] = {1, 2, 3}, sw[] = {0, 1}, pad[] = {0, 1, 8};
	static const char *const dims[] = {"B", "H", "S", "D"};
	struct family *fam = &cfg->fam;
	struct launch_spec *l = &fam->launches[0];
	struct problem *pb = xcalloc(1, sizeof(*pb));
	size_t i;

	memset(cfg, 0, sizeof(*cfg));
	for (i = 0; i < 4; i++)
		pb->dims[i] = xstrdup(dims[i]);
	pb->ndims = 4;
	pb->path = xstrdup("kernels/problems/attention.yaml");
	fam->path = xstrdup("kernels/templates/flash_fwd.yaml");
	fam->name = xstrdup("flash_fwd");
	fam->source_path = xstrdup("kernels/templates/flash_fwd.cu");
	fam->source =
	    xstrdup("extern \"C\" __global__ void flash_fwd(float *o) { o[0] = BLOCK_M; }\n");
	hash_hex(fam->source, strlen(fam->source), fam->source_hash);
	fam->problem = pb;
	fam->nlaunches = 1;
	l->kernel = xstrdup("flash_fwd");
	l->smem_family = 1;
	fx_param(fam, "BLOCK_M", bm, 3, 64);
	fx_param(fam, "BLOCK_N", bn, 3, 64);
	fx_param(fam, "NUM_WARPS", nw, 4, 4);
	fx_param(fam, "STAGES", st, 3, 1);
	fx_param(fam, "SWIZZLE", sw, 2, 1);
	fx_param(fam, "PAD", pad, 3, 8);
	fx_constraint(fam, "BLOCK_M % (16 * NUM_WARPS) == 0");
	fam->smem_bytes = fx_expr("(BLOCK_M + 2 * STAGES * BLOCK_N) * (D + PAD) * 2");
	fx_layout(fam, "Q_smem", "0", "(D + PAD) * 2", 16, "cp.async 16B");
	fx_layout(fam, "K_smem", "BLOCK_M * (D + PAD) * 2", "(D + PAD) * 2", 16, "cp.async 16B");
	fx_layout(fam, "V_smem", "(BLOCK_M + STAGES * BLOCK_N) * (D + PAD) * 2", "(D + PAD) * 2",
	          16, "cp.async 16B");
	l->grid[0] = fx_expr("ceil_div(S, BLOCK_M)");
	l->grid[1] = fx_expr("H");
	l->grid[2] = fx_expr("B");
	l->block[0] = fx_expr("NUM_WARPS * 32");
	l->block[1] = fx_expr("1");
	l->block[2] = fx_expr("1");
	fam->specialize[0] = xstrdup("D");
	fam->nspecialize = 1;
	if (arch_lookup("sm_90", &cfg->arch) < 0)
		abort();
	fx_shape(cfg, "mission", 1, 8, 512, 64);
	fx_shape(cfg, "small", 2, 8, 512, 64);
	fx_shape(cfg, "long", 2, 8, 2048, 64);
	fx_shape(cfg, "wide", 8, 16, 2048, 64);
	fx_shape(cfg, "d128", 4, 16, 4096, 128);
	cfg->max_spill_bytes = 0;
}

/* Everything fx_flash_config allocated is the loader's kind of allocation: release it the loader's
 * way. */
static inline void fx_release(struct config *cfg)
{
	config_release(cfg);
}

/* cmocka setup and teardown: *state is an fx_flash_config, errors captured. */
static inline int fx_setup(void **state)
{
	struct config *cfg = xmalloc(sizeof(*cfg));

	fx_flash_config(cfg);
	fx_capture_start();
	*state = cfg;
	return 0;
}

static inline int fx_teardown(void **state)
{
	set_error_routine(NULL);
	fx_release(*state);
	free(*state);
	return 0;
}

/* A variant from "NAME=V,..." on top of the baseline; aborts on a bad spec. */
static inline void fx_variant(const struct config *cfg, const char *set, struct variant *va)
{
	space_baseline(&cfg->fam, va);
	if (set && *set && space_parse_set(&cfg->fam, set, va) < 0) {
		fprintf(stderr, "fixture: bad variant '%s'\n", set);
		abort();
	}
}

#endif
