/* Problems as data: element types, roles, fills, and releasing what the sidecar loader built. */
#include <stdlib.h>
#include <string.h>

#include "tuner/common.h"
#include "tuner/problem.h"

static const struct {
	const char *name;
	size_t size;
	int is_float;
} dtypes[DT_COUNT] = {
    [DT_F16] = {"f16", 2, 1},   [DT_BF16] = {"bf16", 2, 1}, [DT_F32] = {"f32", 4, 1},
    [DT_F64] = {"f64", 8, 1},   [DT_I8] = {"i8", 1, 0},     [DT_U8] = {"u8", 1, 0},
    [DT_I32] = {"i32", 4, 0},   [DT_I64] = {"i64", 8, 0},   [DT_E4M3] = {"e4m3", 1, 1},
    [DT_E5M2] = {"e5m2", 1, 1},
};

const char *dtype_name(enum dtype t)
{
	return (unsigned)t < DT_COUNT ? dtypes[t].name : "?";
}

int dtype_parse(const char *name)
{
	int i;

	for (i = 0; i < DT_COUNT; i++)
		if (!strcmp(dtypes[i].name, name))
			return i;
	return -1;
}

size_t dtype_size(enum dtype t)
{
	return (unsigned)t < DT_COUNT ? dtypes[t].size : 0;
}

int dtype_is_float(enum dtype t)
{
	return (unsigned)t < DT_COUNT && dtypes[t].is_float;
}

const char *role_name(enum buf_role r)
{
	static const char *const names[] = {"in", "out", "inout", "scratch"};

	return (unsigned)r < ARRAY_SIZE(names) ? names[r] : "?";
}

const char *fill_name(enum fill_kind f)
{
	static const char *const names[] = {"normal", "uniform", "iota",      "constant",
	                                    "zeros",  "poison",  "zeros-once"};

	return (unsigned)f < ARRAY_SIZE(names) ? names[f] : "?";
}

int problem_dim_index(const struct problem *p, const char *name)
{
	size_t i;

	for (i = 0; i < p->ndims; i++)
		if (p->dims[i] && !strcmp(p->dims[i], name))
			return (int)i;
	return -1;
}

int problem_buffer_index(const struct problem *p, const char *name)
{
	size_t i;

	for (i = 0; i < p->nbufs; i++)
		if (p->bufs[i].name && !strcmp(p->bufs[i].name, name))
			return (int)i;
	return -1;
}

static void arg_release(struct problem_arg *a)
{
	size_t i;

	expr_free(a->e);
	if (a->tmap) {
		for (i = 0; i < 5; i++) {
			expr_free(a->tmap->dims[i]);
			expr_free(a->tmap->strides[i]);
			expr_free(a->tmap->box[i]);
		}
		free(a->tmap);
	}
	memset(a, 0, sizeof(*a));
}

void launch_spec_release(struct launch_spec *l)
{
	size_t i;

	free(l->kernel);
	for (i = 0; i < 3; i++) {
		expr_free(l->grid[i]);
		expr_free(l->block[i]);
		expr_free(l->cluster[i]);
	}
	expr_free(l->smem);
	expr_free(l->when);
	expr_free(l->pdl);
	for (i = 0; i < l->nargs; i++)
		arg_release(&l->args[i]);
	free(l->args);
	memset(l, 0, sizeof(*l));
}

void problem_release(struct problem *p)
{
	size_t i;

	free(p->path);
	free(p->text);
	for (i = 0; i < p->ndims; i++)
		free(p->dims[i]);
	for (i = 0; i < p->nvalid; i++)
		expr_free(p->valid[i]);
	free(p->valid);
	free(p->valid_line);
	for (i = 0; i < p->nbufs; i++) {
		free(p->bufs[i].name);
		expr_free(p->bufs[i].count);
	}
	for (i = 0; i < p->nargs; i++)
		arg_release(&p->args[i]);
	free(p->ref.source_path);
	free(p->ref.source);
	for (i = 0; i < p->ref.noptions; i++)
		free(p->ref.options[i]);
	free(p->ref.options);
	for (i = 0; i < p->ref.nlaunches; i++)
		launch_spec_release(&p->ref.launches[i]);
	expr_free(p->flops);
	expr_free(p->bytes);
	memset(p, 0, sizeof(*p));
}
