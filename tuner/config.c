/* Load and validate tuning jobs (configs/NAME.yaml): settings, shapes, the sidecar they name. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/config.h"
#include "tuner/evolve.h"
#include "tuner/space.h"
#include "tuner/yaml-src.h"

/* ---------------------------------------------------------- tuning jobs */

enum {
	CK_TEMPLATE,
	CK_ARCH,
	CK_LIMITS,
	CK_SHAPES,
	CK_CORRECTNESS,
	CK_BUDGET,
	CK_TIMING,
	CK_COMPILE,
	CK_SANITIZE,
	CK_STRATEGY,
	CK_SEED,
	CK_TOOLS,
	CK_COUNT
};

static const char *const config_keys[CK_COUNT] = {
    "template", "arch",    "limits",   "shapes",   "correctness", "budget",
    "timing",   "compile", "sanitize", "strategy", "seed",        "compute_sanitizer",
};

static const char *const limit_keys[] = {
    "smem_per_block",  "smem_per_block_optin",  "smem_per_sm", "regs_per_sm",
    "regs_per_thread", "max_threads_per_block", "sm_count"};

static int load_limits(struct ysrc *s, const yaml_node_t *n, struct arch_limits *a)
{
	yaml_node_t *v[ARRAY_SIZE(limit_keys)], *k[ARRAY_SIZE(limit_keys)];
	long long *ll[] = {&a->smem_per_block, &a->smem_per_block_optin, &a->smem_per_sm,
	                   &a->regs_per_sm};
	int *ii[] = {&a->regs_per_thread, &a->max_threads_per_block, &a->sm_count};
	size_t i;

	if (is_null(n))
		return 0;
	if (map_fields(s, n, "limits", limit_keys, ARRAY_SIZE(limit_keys), v, k) < 0)
		return -1;
	for (i = 0; i < ARRAY_SIZE(ll); i++)
		if (v[i] && get_ll(s, v[i], limit_keys[i], 1, LLONG_MAX, ll[i]) < 0)
			return -1;
	for (i = 0; i < ARRAY_SIZE(ii); i++) {
		size_t j = ARRAY_SIZE(ll) + i;

		/* sm_count 0 means unknown */
		if (v[j] && get_int(s, v[j], limit_keys[j], j == 6 ? 0 : 1, ii[i]) < 0)
			return -1;
	}
	if (a->smem_per_block_optin < a->smem_per_block)
		return err_node(s, v[1] ? v[1] : v[0],
		                "'smem_per_block_optin' (%lld) must not be below 'smem_per_block' "
		                "(%lld)",
		                a->smem_per_block_optin, a->smem_per_block);
	return 0;
}

static const char *const correctness_keys[] = {"rel_l2", "max_abs", "seeds", "ragged"};
static const char *const budget_keys[] = {"generations", "population", "elite", "margin"};
static const char *const timing_keys[] = {"warmup",  "repeats",     "launches", "l2",
                                          "timeout", "min_repeats", "rel_ci"};
static const char *const compile_keys[] = {"jobs", "max_spill_bytes", "timeout"};
static const char *const l2_names[] = {"cold", "hot"};
static const char *const sanitize_names[] = {"never", "elite", "every"};

static int load_correctness(struct ysrc *s, const yaml_node_t *n, struct config *cfg)
{
	static const char *const bools[] = {"false", "true"};
	yaml_node_t *v[4];

	if (is_null(n))
		return 0;
	if (map_fields(s, n, "correctness", correctness_keys, 4, v, NULL) < 0)
		return -1;
	if ((v[0] && get_double(s, v[0], "rel_l2", 0, &cfg->rel_l2) < 0) ||
	    (v[1] && get_double(s, v[1], "max_abs", 0, &cfg->max_abs) < 0) ||
	    (v[2] && get_int_max(s, v[2], "seeds", 1, 1000, &cfg->check_seeds) < 0) ||
	    (v[3] && get_enum(s, v[3], "ragged", bools, 2, &cfg->ragged) < 0))
		return -1;
	cfg->rel_l2_set = v[0] != NULL;
	cfg->max_abs_set = v[1] != NULL;
	return 0;
}

static int load_budget(struct ysrc *s, const yaml_node_t *n, struct config *cfg)
{
	yaml_node_t *v[4];

	if (is_null(n))
		return 0;
	if (map_fields(s, n, "budget", budget_keys, 4, v, NULL) < 0)
		return -1;
	if ((v[0] && get_int_max(s, v[0], "generations", 1, 1000000, &cfg->generations) < 0) ||
	    (v[1] && get_int_max(s, v[1], "population", 1, 100000, &cfg->population) < 0) ||
	    (v[2] && get_int_max(s, v[2], "elite", 1, 1000, &cfg->elite) < 0) ||
	    (v[3] && get_double(s, v[3], "margin", 0, &cfg->margin) < 0))
		return -1;
	return 0;
}

static int load_timing(struct ysrc *s, const yaml_node_t *n, struct config *cfg)
{
	yaml_node_t *v[7];
	int l2;

	if (is_null(n))
		return 0;
	if (map_fields(s, n, "timing", timing_keys, 7, v, NULL) < 0)
		return -1;
	if ((v[0] && get_int_max(s, v[0], "warmup", 0, 100000, &cfg->warmup) < 0) ||
	    (v[1] && get_int_max(s, v[1], "repeats", 1, 100000, &cfg->repeats) < 0) ||
	    (v[2] && get_int_max(s, v[2], "launches", 1, 100000, &cfg->launches) < 0) ||
	    (v[4] && get_double(s, v[4], "timeout", 1, &cfg->timeout_s) < 0) ||
	    (v[5] && get_int_max(s, v[5], "min_repeats", 1, 100000, &cfg->min_repeats) < 0) ||
	    (v[6] && get_double(s, v[6], "rel_ci", 0, &cfg->rel_ci) < 0))
		return -1;
	if (v[4] && cfg->timeout_s > 86400)
		return err_node(s, v[4], "'timeout' must be at most 86400 seconds, got %g",
		                cfg->timeout_s);
	if (v[6] && cfg->rel_ci >= 1)
		return err_node(s, v[6], "'rel_ci' is a fraction of the median, below 1, got %g",
		                cfg->rel_ci);
	if (v[3]) {
		if (get_enum(s, v[3], "l2", l2_names, ARRAY_SIZE(l2_names), &l2) < 0)
			return -1;
		cfg->l2 = l2 ? L2_HOT : L2_COLD;
	}
	return 0;
}

static int load_compile(struct ysrc *s, const yaml_node_t *n, struct config *cfg)
{
	yaml_node_t *v[3];

	if (is_null(n))
		return 0;
	if (map_fields(s, n, "compile", compile_keys, 3, v, NULL) < 0)
		return -1;
	if ((v[0] && get_int_max(s, v[0], "jobs", 0, 1024, &cfg->jobs) < 0) ||
	    (v[1] && get_ll(s, v[1], "max_spill_bytes", 0, LLONG_MAX, &cfg->max_spill_bytes) < 0) ||
	    (v[2] && get_double(s, v[2], "timeout", 1, &cfg->compile_timeout_s) < 0))
		return -1;
	if (v[2] && cfg->compile_timeout_s > 86400)
		return err_node(s, v[2], "'timeout' must be at most 86400 seconds, got %g",
		                cfg->compile_timeout_s);
	return 0;
}

static int load_seed(struct ysrc *s, const yaml_node_t *n, struct config *cfg)
{
	const char *v;
	char *end;

	if (!is_scalar(n) || is_null(n))
		return err_node(s, n, "'seed' must be an integer, got a %s", ykind(n));
	v = sval(n);
	if (*v == '-' && v[1] >= '0' && v[1] <= '9')
		return err_node(s, n, "'seed' must not be negative, got %.80s", v);
	if (*v < '0' || *v > '9')
		return err_node(s, n, "'seed' must be an integer, got '%.80s'", v);
	errno = 0;
	cfg->seed = strtoull(v, &end, 10);
	if (*end)
		return err_node(s, n, "'seed' must be an integer, got '%.80s'", v);
	if (errno == ERANGE)
		return err_node(s, n, "'seed' is too large, got %.80s", v);
	return 0;
}

static int is_shape_name(const char *v)
{
	if (!*v || strlen(v) > 31)
		return 0;
	for (; *v; v++)
		if (!((*v >= 'A' && *v <= 'Z') || (*v >= 'a' && *v <= 'z') ||
		      (*v >= '0' && *v <= '9') || *v == '_' || *v == '-' || *v == '.'))
			return 0;
	return 1;
}

/* A launch's geometry on one shape against what the hardware takes. */
static int check_launch_limits(struct ysrc *s, const yaml_node_t *n, const struct config *cfg,
                               const struct shape *sh, const struct expr_scope *sc,
                               const struct launch_spec *l, const char *whose)
{
	static const long long grid_max[3] = {2147483647LL, 65535, 65535};
	long long v, threads = 1;
	struct expr_err err;
	size_t d;

	for (d = 0; d < 6; d++) {
		const struct expr *e = d < 3 ? l->grid[d] : l->block[d - 3];
		const char *what = d < 3 ? "grid" : "block";

		if (expr_eval(e, sc, &v, &err) < 0)
			return err_node(s, n, "shape '%s': %s launch '%s' %s[%zu] '%s': %s",
			                sh->name, whose, l->kernel, what, d % 3, expr_text(e),
			                err.msg);
		if (v < 1 || (d < 3 && v > grid_max[d]))
			return err_node(
			    s, n,
			    "shape '%s': %s launch '%s' has %s[%zu] = %lld (%s must be 1 "
			    "to %lld)",
			    sh->name, whose, l->kernel, what, d % 3, v, what,
			    d < 3 ? grid_max[d] : (long long)cfg->arch.max_threads_per_block);
		if (d >= 3)
			threads = threads * (v > 1024 ? 1025 : v);
	}
	if (threads > cfg->arch.max_threads_per_block)
		return err_node(s, n,
		                "shape '%s': %s launch '%s' has %lld threads per block, more "
		                "than %s's %d",
		                sh->name, whose, l->kernel, threads, cfg->arch.name,
		                cfg->arch.max_threads_per_block);
	return 0;
}

/*
 * A shape must satisfy the problem's validity rules, its buffers must have a
 * size a GPU can hold, and the reference and the baseline must be launchable
 * on it: a job that cannot run is refused before anything is written.
 */
static int check_shape(struct ysrc *s, const yaml_node_t *n, const struct config *cfg,
                       const struct shape *sh)
{
	const struct family *fam = &cfg->fam;
	const struct problem *pb = fam->problem;
	struct space_scope base;
	struct variant va;
	struct expr_var vars[PROBLEM_MAX_DIMS];
	struct expr_scope sc = {vars, pb->ndims, NULL};
	struct expr_err err;
	long long v;
	double f;
	size_t i;

	for (i = 0; i < pb->ndims; i++) {
		vars[i].name = pb->dims[i];
		vars[i].value = sh->dims[i];
	}
	for (i = 0; i < pb->nvalid; i++) {
		if (expr_eval(pb->valid[i], &sc, &v, &err) < 0)
			return err_node(
			    s, n, "shape '%s': cannot evaluate the problem's rule '%s' (%s:%d): %s",
			    sh->name, expr_text(pb->valid[i]), pb->path, pb->valid_line[i],
			    err.msg);
		if (!v)
			return err_node(s, n, "shape '%s' breaks the problem's rule '%s' (%s:%d)",
			                sh->name, expr_text(pb->valid[i]), pb->path,
			                pb->valid_line[i]);
	}
	for (i = 0; i < pb->nbufs; i++) {
		const struct problem_buffer *b = &pb->bufs[i];

		if (b->role == ROLE_SCRATCH)
			continue;
		if (expr_eval(b->count, &sc, &v, &err) < 0)
			return err_node(s, n, "shape '%s': buffer '%s' count '%s': %s", sh->name,
			                b->name, expr_text(b->count), err.msg);
		if (v < 1 || (unsigned long long)v > CONFIG_MAX_BUFFER_BYTES / dtype_size(b->dtype))
			return err_node(
			    s, n,
			    "shape '%s': buffer '%s' would hold %lld elements (1 to %llu "
			    "bytes' worth allowed)",
			    sh->name, b->name, v, CONFIG_MAX_BUFFER_BYTES);
	}
	for (i = 0; i < pb->ref.nlaunches; i++)
		if (check_launch_limits(s, n, cfg, sh, &sc, &pb->ref.launches[i],
		                        "the reference's") < 0)
			return -1;
	if (pb->flops && expr_eval_number(pb->flops, &sc, &f, NULL, NULL, &err) < 0)
		return err_node(s, n, "shape '%s': flops '%s': %s", sh->name, expr_text(pb->flops),
		                err.msg);
	if (pb->bytes && expr_eval_number(pb->bytes, &sc, &f, NULL, NULL, &err) < 0)
		return err_node(s, n, "shape '%s': bytes '%s': %s", sh->name, expr_text(pb->bytes),
		                err.msg);
	space_baseline(fam, &va);
	space_scope_init(&base, cfg, &va, sh);
	for (i = 0; i < fam->nlaunches; i++)
		if (check_launch_limits(s, n, cfg, sh, &base.scope, &fam->launches[i],
		                        "the baseline's") < 0)
			return -1;
	return 0;
}

static int load_shape(struct ysrc *s, const yaml_node_t *n, struct config *cfg, struct shape *sh)
{
	const struct problem *pb = cfg->fam.problem;
	const char *names[1 + TUNER_MAX_DIMS];
	yaml_node_t *v[1 + TUNER_MAX_DIMS], *k[1 + TUNER_MAX_DIMS];
	size_t i;

	names[0] = "name";
	for (i = 0; i < pb->ndims; i++)
		names[1 + i] = pb->dims[i];
	sh->line = (int)n->start_mark.line + 1;
	if (n->type != YAML_MAPPING_NODE) {
		char like[64] = "{name: N}"; /* a landscape's problem has no dims */

		if (pb->ndims)
			snprintf(like, sizeof(like), "{name: N, %.32s: ...}", pb->dims[0]);
		return err_node(s, n, "each of 'shapes' must be a mapping like %s, got a %s", like,
		                ykind(n));
	}
	if (map_fields_noun(s, n, "shapes", "dim", names, 1 + pb->ndims, v, k) < 0)
		return -1;
	if (yneed(s, n, "shapes", "name", v[0]) < 0)
		return -1;
	if (!is_scalar(v[0]) || is_null(v[0]) || !is_shape_name(sval(v[0])))
		return err_node(
		    s, v[0],
		    "shape 'name' must be 1 to 31 letters, digits, '_', '-' or '.', got "
		    "'%.80s'",
		    is_scalar(v[0]) ? sval(v[0]) : ykind(v[0]));
	sh->name = xstrdup(sval(v[0]));
	for (i = 0; i < (size_t)(sh - cfg->shapes); i++)
		if (!strcmp(cfg->shapes[i].name, sh->name))
			return err_node(s, v[0], "duplicate shape '%s' (first at line %d)",
			                sh->name, cfg->shapes[i].line);
	for (i = 0; i < pb->ndims; i++) {
		if (!v[1 + i])
			return err_node(s, n, "shape '%s' is missing dim '%s'", sh->name,
			                pb->dims[i]);
		if (get_ll(s, v[1 + i], pb->dims[i], 0, LLONG_MAX, &sh->dims[i]) < 0)
			return -1;
	}
	return check_shape(s, n, cfg, sh);
}

static int load_shapes(struct ysrc *s, const yaml_node_t *n, struct config *cfg)
{
	size_t i, cnt;

	if (n->type != YAML_SEQUENCE_NODE)
		return err_node(s, n, "'shapes' must be a list of shapes, got a %s", ykind(n));
	cnt = seq_len(n);
	if (!cnt)
		return err_node(s, n, "'shapes' must name at least one shape");
	for (i = 0; i < cnt; i++) {
		yaml_node_t *it = seq_at(s, n, i);

		if (i == TUNER_MAX_SHAPES)
			return err_node(s, it, "more than %d shapes", TUNER_MAX_SHAPES);
		cfg->nshapes = i + 1;
		if (load_shape(s, it, cfg, &cfg->shapes[i]) < 0)
			return -1;
	}
	return 0;
}

static int load_template(struct ysrc *s, const yaml_node_t *n, struct config *cfg)
{
	char *rel, *dir, *text;
	size_t len;
	int ret;

	if (get_string(s, n, "template", &rel) < 0)
		return -1;
	dir = path_dirname(s->path);
	cfg->template_path = path_join(dir, rel);
	free(dir);
	if (read_file_limited(cfg->template_path, CONFIG_MAX_SIDECAR_BYTES, &text, &len) < 0) {
		if (errno == EFBIG)
			err_node(s, n, "cannot read template '%s': larger than %u MiB", rel,
			         CONFIG_MAX_SIDECAR_BYTES >> 20);
		else
			err_node(s, n, "cannot read template '%s': %s", rel, strerror(errno));
		free(rel);
		return -1;
	}
	free(rel);
	ret = family_load_text(cfg->template_path, text, len, &cfg->fam);
	free(text);
	return ret;
}

static void config_defaults(struct config *cfg)
{
	cfg->rel_l2 = 1e-2;
	cfg->max_abs = 2e-2;
	cfg->check_seeds = 2;
	cfg->ragged = 1;
	cfg->generations = 10;
	cfg->population = 16;
	cfg->elite = 3;
	cfg->margin = 0.03;
	cfg->warmup = 10;
	cfg->repeats = 30;
	cfg->launches = 20;
	cfg->l2 = L2_COLD;
	cfg->timeout_s = 20;
	cfg->jobs = 0;
	cfg->max_spill_bytes = 0;
	cfg->sanitize = SANITIZE_ELITE;
	cfg->tools = TOOLS_FINAL;
	cfg->seed = 1;
}

/*
 * The settings come first, then the sidecar, then the shapes (whose dims the
 * sidecar's problem names), so a typo in the job is reported before anything
 * is read from the template.
 */
static int config_parse(struct ysrc *s, struct config *cfg)
{
	yaml_node_t *v[CK_COUNT], *root;
	const char *const *strategies;
	size_t nstrategies;
	int e;

	if (ysrc_load(s) < 0)
		return -1;
	root = yaml_document_get_root_node(&s->doc);
	if (!root)
		return err_pos(s, 1, 1, "empty config (expected 'template', 'arch' and 'shapes')");
	if (map_fields(s, root, "", config_keys, CK_COUNT, v, NULL) < 0 ||
	    yneed(s, root, "", "template", v[CK_TEMPLATE]) < 0 ||
	    yneed(s, root, "", "arch", v[CK_ARCH]) < 0 ||
	    yneed(s, root, "", "shapes", v[CK_SHAPES]) < 0)
		return -1;
	if (!is_scalar(v[CK_ARCH]) || is_null(v[CK_ARCH]))
		return err_node(s, v[CK_ARCH], "'arch' must be a name, got a %s",
		                ykind(v[CK_ARCH]));
	if (arch_lookup(sval(v[CK_ARCH]), &cfg->arch) < 0)
		return err_node(s, v[CK_ARCH], "unknown arch '%.80s' (known: %s)", sval(v[CK_ARCH]),
		                arch_known_names());
	if (v[CK_LIMITS] && load_limits(s, v[CK_LIMITS], &cfg->arch) < 0)
		return -1;
	if ((v[CK_CORRECTNESS] && load_correctness(s, v[CK_CORRECTNESS], cfg) < 0) ||
	    (v[CK_BUDGET] && load_budget(s, v[CK_BUDGET], cfg) < 0) ||
	    (v[CK_TIMING] && load_timing(s, v[CK_TIMING], cfg) < 0) ||
	    (v[CK_COMPILE] && load_compile(s, v[CK_COMPILE], cfg) < 0))
		return -1;
	if (v[CK_SANITIZE]) {
		if (get_enum(s, v[CK_SANITIZE], "sanitize", sanitize_names,
		             ARRAY_SIZE(sanitize_names), &e) < 0)
			return -1;
		cfg->sanitize = e == 0 ? SANITIZE_NEVER : e == 1 ? SANITIZE_ELITE : SANITIZE_EVERY;
	}
	e = 0;
	strategies = search_strategy_names(&nstrategies);
	if (v[CK_STRATEGY] &&
	    get_enum(s, v[CK_STRATEGY], "strategy", strategies, nstrategies, &e) < 0)
		return -1;
	cfg->strategy = xstrdup(strategies[e]);
	if (v[CK_SEED] && load_seed(s, v[CK_SEED], cfg) < 0)
		return -1;
	if (v[CK_TOOLS]) {
		static const char *const tools_names[] = {"never", "elite", "final", "every"};

		if (get_enum(s, v[CK_TOOLS], "compute_sanitizer", tools_names,
		             ARRAY_SIZE(tools_names), &e) < 0)
			return -1;
		cfg->tools = (enum tools_when)e;
	}
	if (load_template(s, v[CK_TEMPLATE], cfg) < 0)
		return -1;
	/* 'none' is the arch of what is never compiled: a landscape's recorded measurements */
	if (cfg->fam.source && !cfg->arch.max_threads_per_block)
		return err_node(s, v[CK_ARCH],
		                "arch '%s' is for recorded landscapes, and '%s' compiles a kernel: "
		                "give a GPU architecture (known: %s)",
		                cfg->arch.name, cfg->fam.name, arch_known_names());
	return load_shapes(s, v[CK_SHAPES], cfg);
}

int config_load(const char *path, struct config *cfg)
{
	struct ysrc s;
	size_t len;
	int ret;

	memset(cfg, 0, sizeof(*cfg));
	config_defaults(cfg);
	if (read_file_limited(path, CONFIG_MAX_FILE_BYTES, &cfg->text, &len) < 0) {
		if (errno == EFBIG)
			error("cannot read config '%s': larger than %u MiB", path,
			      CONFIG_MAX_FILE_BYTES >> 20);
		else
			error("cannot read config '%s': %s", path, strerror(errno));
		config_release(cfg);
		return -1;
	}
	cfg->path = xstrdup(path);
	memset(&s, 0, sizeof(s));
	s.path = cfg->path;
	s.text = cfg->text;
	s.len = len;
	ret = config_parse(&s, cfg);
	ysrc_release(&s);
	if (ret < 0)
		config_release(cfg);
	return ret;
}

void config_release(struct config *cfg)
{
	size_t i;

	free(cfg->path);
	free(cfg->text);
	free(cfg->template_path);
	family_release(&cfg->fam);
	for (i = 0; i < cfg->nshapes; i++)
		free(cfg->shapes[i].name);
	free(cfg->strategy);
	memset(cfg, 0, sizeof(*cfg));
}
