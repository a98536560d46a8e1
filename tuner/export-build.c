/* The build half of an exported header: the template's preamble, launch geometry and dispatch. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tuner/export.h"
#include "tuner/space.h"
#include "tuner/template.h"

/* ------------------------------------------------------------------ names */

int export_names_add(struct export_names *m, const char *name)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (!strcmp(m->v[i], name))
			return error(
			    "two identifiers would be named '%s' (rename a shape or param)", name);
	ALLOC_GROW(m->v, m->n + 1, m->alloc);
	m->v[m->n++] = xstrdup(name);
	return 0;
}

void export_names_release(struct export_names *m)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		free(m->v[i]);
	free(m->v);
	memset(m, 0, sizeof(*m));
}

/* ------------------------------------------------------------- the family */

/* The run's suite into cfg->shapes, each dim by name in the problem's order. */
static int take_shapes(struct config *cfg, const struct export_shape *shapes, size_t n)
{
	const struct problem *pr = cfg->fam.problem;
	size_t i, d;

	if (n > TUNER_MAX_SHAPES)
		return error("the run has %zu shapes, more than %d", n, TUNER_MAX_SHAPES);
	for (i = 0; i < cfg->nshapes; i++)
		free(cfg->shapes[i].name);
	cfg->nshapes = 0;
	for (i = 0; i < n; i++) {
		struct export_params dims;
		struct shape *sh = &cfg->shapes[i];
		size_t k;

		if (export_params_parse(shapes[i].dims, &dims) < 0)
			return -1;
		memset(sh, 0, sizeof(*sh));
		sh->name = xstrdup(shapes[i].name);
		cfg->nshapes++;
		for (d = 0; pr && d < pr->ndims; d++) {
			for (k = 0; k < dims.n && strcmp(dims.v[k].name, pr->dims[d]); k++)
				;
			if (k == dims.n || !dims.v[k].is_int) {
				export_params_release(&dims);
				return error("shape '%s' of the run has no %s '%s' (dims %s)",
				             shapes[i].name, k == dims.n ? "dim" : "integer dim",
				             pr->dims[d], shapes[i].dims);
			}
			sh->dims[d] = dims.v[k].value;
		}
		export_params_release(&dims);
	}
	return 0;
}

int export_load_family(const struct ranking *r, const char *config_path, struct config *cfg)
{
	const struct db_run *run = &r->run;
	const char *path = config_path ? config_path : run->config_path;

	memset(cfg, 0, sizeof(*cfg));
	if (!path || !*path)
		return error("run %lld recorded no config: give --config FILE (the header's build "
		             "section needs the sidecar)",
		             run->id);
	if (!config_path && access(path, R_OK) < 0)
		return error("cannot read run %lld's config '%s' (run from another directory?): "
		             "give --config FILE (the header's build section needs the sidecar)",
		             run->id, path);
	if (config_load(path, cfg) < 0)
		return -1;
	if (!cfg->fam.name || !run->template_name || strcmp(cfg->fam.name, run->template_name)) {
		error("config '%s' is for the family '%s', run %lld tuned '%s'", path,
		      cfg->fam.name ? cfg->fam.name : "", run->id,
		      run->template_name ? run->template_name : "");
		goto fail;
	}
	if (!cfg->fam.problem) {
		error("family '%s' has no problem: nothing to launch", cfg->fam.name);
		goto fail;
	}
	if (run->template_hash && strcmp(run->template_hash, cfg->fam.source_hash))
		warning("the template of '%s' changed since run %lld (hash %s then, %s now): the "
		        "header follows it as it is now",
		        cfg->fam.name, run->id, run->template_hash, cfg->fam.source_hash);
	if (take_shapes(cfg, r->shapes, r->nshapes) < 0)
		goto fail;
	return 0;
fail:
	config_release(cfg);
	return -1;
}

/* ------------------------------------------------------------ the writer */

/* Words a C or C++ compiler would not take as a member's name. */
static const char *const keywords[] = {
    "alignas",  "alignof",   "and",      "asm",      "auto",      "bool",     "break",    "case",
    "catch",    "char",      "class",    "const",    "constexpr", "continue", "default",  "delete",
    "do",       "double",    "else",     "enum",     "explicit",  "export",   "extern",   "false",
    "float",    "for",       "friend",   "goto",     "if",        "inline",   "int",      "long",
    "mutable",  "namespace", "new",      "noexcept", "not",       "nullptr",  "operator", "or",
    "private",  "protected", "public",   "register", "restrict",  "return",   "short",    "signed",
    "sizeof",   "static",    "struct",   "switch",   "template",  "this",     "throw",    "true",
    "try",      "typedef",   "typename", "union",    "unsigned",  "using",    "virtual",  "void",
    "volatile", "while",     "xor",
};

/* The config struct's own members: no param may take their names. */
static const char *const members[] = {"rank", "config", "shape", "shape_name", "exact", "launch"};

struct section {
	const struct ranking *r;
	const struct config *cfg;
	const struct family *fam;
	const struct problem *pr;
	const char *P; /* "NAME_": macros */
	char *p;       /* "name_": functions and types */
	char **member; /* each param's member name: its name in lower case */
	struct spec specs[TUNER_MAX_SHAPES];
	size_t nspecs, shape_spec[TUNER_MAX_SHAPES];
	struct export_names *names;
	struct strbuf *out;
	int combined; /* EXPORT_SECTION: a family of a combined header */
};

/* A stored params string as a variant of the family: every param, and none other. */
static int to_variant(const struct family *fam, const char *params, struct variant *va)
{
	struct export_params ps;
	size_t i, k;

	if (export_params_parse(params ? params : "", &ps) < 0)
		return -1;
	memset(va, 0, sizeof(*va));
	for (i = 0; i < fam->nparams; i++) {
		for (k = 0; k < ps.n && strcmp(ps.v[k].name, fam->params[i].name); k++)
			;
		if (k == ps.n || space_value_of(&fam->params[i], ps.v[k].text, &va->v[i]) < 0)
			break;
	}
	k = ps.n;
	export_params_release(&ps);
	if (i < fam->nparams || k != fam->nparams)
		return error("params '%s' are not those of the family '%s' (its sidecar changed "
		             "since the run?)",
		             params ? params : "", fam->name);
	return 0;
}

/* Identifiers for expressions: a param is the config's member, a dim the function's argument. */
static int ident_c(const char *name, struct strbuf *out, void *ctx)
{
	const struct section *b = ctx;
	size_t i;

	for (i = 0; i < b->fam->nparams; i++)
		if (!strcmp(b->fam->params[i].name, name)) {
			sb_addf(out, "c->%s", b->member[i]);
			return 0;
		}
	if (problem_dim_index(b->pr, name) >= 0) {
		sb_adds(out, name);
		return 0;
	}
	return -1;
}

/* A C string literal of s: quotes and backslashes escaped, other bytes in octal. */
static void add_c_string(struct strbuf *out, const char *s)
{
	sb_adds(out, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			sb_addf(out, "\\%c", c);
		else if (c < 0x20 || c > 0x7e || c == '?') /* '?': no trigraph */
			sb_addf(out, "\\%03o", c);
		else
			sb_add(out, s, 1);
	}
	sb_adds(out, "\"");
}

/* "long long B, long long H, ..." */
static void dim_args(const struct section *b, struct strbuf *out)
{
	size_t d;

	for (d = 0; d < b->pr->ndims; d++)
		sb_addf(out, "%slong long %s", d ? ", " : "", b->pr->dims[d]);
	if (!b->pr->ndims)
		sb_adds(out, "void");
}

/* "B, H, ..." */
static void dim_names(const struct section *b, struct strbuf *out)
{
	size_t d;

	for (d = 0; d < b->pr->ndims; d++)
		sb_addf(out, "%s%s", d ? ", " : "", b->pr->dims[d]);
}

/* The SHAPE_ condition of a spec: " && SHAPE_N == 64 && SHAPE_kind == 0"; "" with none. */
static void spec_cond(const struct section *b, const struct spec *sp, struct strbuf *out)
{
	size_t k;

	for (k = 0; k < b->fam->nspecialize; k++)
		sb_addf(out, " && SHAPE_%s == %lld", b->fam->specialize[k], sp->vals[k]);
}

/* The launch expressions as one function; *used collects the helpers it calls. */
static int write_geometry(struct section *b, struct strbuf *fn, unsigned *used)
{
	const struct family *fam = b->fam;
	size_t i, d;

	sb_addf(fn,
	        "/* The launches of c's params at these dims: the sidecar's launch expressions. "
	        "*/\nstatic inline void %sgeometry(struct %sconfig *c, ",
	        b->p, b->p);
	dim_args(b, fn);
	sb_adds(fn, ")\n{\n");
	for (d = 0; d < b->pr->ndims; d++)
		sb_addf(fn, "\t(void)%s;\n", b->pr->dims[d]);
	for (i = 0; i < fam->nlaunches; i++) {
		const struct launch_spec *l = &fam->launches[i];
		const struct expr *smem = l->smem_family ? fam->smem_bytes : l->smem;
		static const char *const what[3] = {"grid", "block", "cluster"};
		size_t w;

		sb_addf(fn, "\tc->launch[%zu].kernel = \"%s\";\n", i, l->kernel);
		sb_addf(fn, "\tc->launch[%zu].enabled = ", i);
		if (l->when) {
			sb_adds(fn, "(");
			if (expr_to_c(l->when, fn, b->p, ident_c, b, used) < 0)
				return error("launch '%s': when", l->kernel);
			sb_adds(fn, ") != 0;\n");
		} else {
			sb_adds(fn, "1;\n");
		}
		for (w = 0; w < 3; w++)
			for (d = 0; d < 3; d++) {
				const struct expr *e = w == 0   ? l->grid[d]
				                       : w == 1 ? l->block[d]
				                                : l->cluster[d];

				if (!e)
					continue;
				sb_addf(fn, "\tc->launch[%zu].%s[%zu] = (unsigned int)(", i,
				        what[w], d);
				if (expr_to_c(e, fn, b->p, ident_c, b, used) < 0)
					return error("launch '%s': %s[%zu]", l->kernel, what[w], d);
				sb_adds(fn, ");\n");
			}
		if (smem) {
			sb_addf(fn, "\tc->launch[%zu].smem_bytes = (unsigned int)(", i);
			if (expr_to_c(smem, fn, b->p, ident_c, b, used) < 0)
				return error("launch '%s': smem", l->kernel);
			sb_adds(fn, ");\n");
		}
		sb_addf(fn, "\tc->launch[%zu].smem_optin = c->launch[%zu].smem_bytes > 49152u;\n",
		        i, i);
		if (l->pdl) {
			sb_addf(fn, "\tc->launch[%zu].pdl = (", i);
			if (expr_to_c(l->pdl, fn, b->p, ident_c, b, used) < 0)
				return error("launch '%s': pdl", l->kernel);
			sb_adds(fn, ") != 0;\n");
		}
	}
	sb_adds(fn, "}\n\n");
	return 0;
}

/* The problem's valid expressions as prefix_valid(dims...): 1 when every one holds. */
static int write_valid(struct section *b, struct strbuf *fn, unsigned *used)
{
	size_t i, d;

	sb_addf(fn,
	        "/* 1 when the problem's valid expressions hold at these dims. */\n"
	        "static inline int %svalid(",
	        b->p);
	dim_args(b, fn);
	sb_adds(fn, ")\n{\n");
	for (d = 0; d < b->pr->ndims; d++)
		sb_addf(fn, "\t(void)%s;\n", b->pr->dims[d]);
	sb_adds(fn, "\treturn 1");
	for (i = 0; i < b->pr->nvalid; i++) {
		sb_adds(fn, " &&\n\t       (");
		if (expr_to_c(b->pr->valid[i], fn, b->p, ident_c, b, used) < 0)
			return error("%s:%d: valid: not written as C", b->pr->path,
			             b->pr->valid_line[i]);
		sb_adds(fn, ") != 0");
	}
	sb_adds(fn, ";\n}\n\n");
	return 0;
}

/* The types, the helpers and the geometry: what every function of the header shares. */
static int write_types(struct section *b)
{
	struct strbuf fn = STRBUF_INIT;
	const char *p = b->p;
	unsigned used = 0;
	size_t i;

	if (write_geometry(b, &fn, &used) < 0 || (b->combined && write_valid(b, &fn, &used) < 0)) {
		sb_release(&fn);
		return -1;
	}
	sb_addf(
	    b->out,
	    "/*\n"
	    " * One launch of a call, as cudaLaunchKernel (cuLaunchKernelEx with a cluster\n"
	    " * or pdl) takes it. smem_optin: more than 48 KB of dynamic shared memory, which\n"
	    " * needs %sSMEM_ATTR(kernel, smem_bytes) once before the launch. pdl: launch with\n"
	    " * cudaLaunchAttributeProgrammaticStreamSerialization = 1 (the kernel waits for\n"
	    " * the work before it; tuned and timed that way).\n"
	    " */\n"
	    "struct %slaunch {\n"
	    "\tconst char *kernel;       /* the template's extern \"C\" entry */\n"
	    "\tint enabled;              /* 0: this call skips the launch */\n"
	    "\tunsigned int grid[3], block[3];\n"
	    "\tunsigned int cluster[3];  /* all 0: no cluster */\n"
	    "\tunsigned int smem_bytes;  /* dynamic shared memory */\n"
	    "\tint smem_optin;\n"
	    "\tint pdl;                  /* 1: programmatic dependent launch */\n"
	    "};\n\n",
	    b->P, p);
	sb_addf(b->out,
	        "/* A configuration and its launches at the dims it was asked for. */\n"
	        "struct %sconfig {\n"
	        "\tint rank;                /* %srank(): 1 to %sRANKS; else 0 */\n"
	        "\tint config;              /* %sselect(): its build, %sCONFIG; else -1 */\n"
	        "\tint shape;               /* %sselect(): the tuned shape's index; else -1 */\n"
	        "\tconst char *shape_name;  /* and its name; else \"\" */\n"
	        "\tint exact;               /* %sselect(): 1 when the dims are that shape's */\n",
	        p, p, b->P, p, b->P, p, p);
	for (i = 0; i < b->fam->nparams; i++)
		sb_addf(b->out, "\tlong long %s;%s\n", b->member[i],
		        i ? "" : " /* the params, in lower case */");
	sb_addf(b->out, "\tstruct %slaunch launch[%sNLAUNCHES];\n};\n\n", p, b->P);

	expr_c_helpers(b->out, p, used);
	if (used)
		sb_adds(b->out, "\n");
	sb_addf(b->out,
	        "/* No configuration: every count 0, every index -1. */\n"
	        "static inline void %sclear(struct %sconfig *c)\n{\n"
	        "\tint i, d;\n\n"
	        "\tc->rank = 0;\n\tc->config = -1;\n\tc->shape = -1;\n\tc->shape_name = \"\";\n"
	        "\tc->exact = 0;\n",
	        p, p);
	for (i = 0; i < b->fam->nparams; i++)
		sb_addf(b->out, "\tc->%s = 0;\n", b->member[i]);
	sb_addf(b->out,
	        "\tfor (i = 0; i < %sNLAUNCHES; i++) {\n"
	        "\t\tc->launch[i].kernel = \"\";\n"
	        "\t\tc->launch[i].enabled = 0;\n"
	        "\t\tfor (d = 0; d < 3; d++) {\n"
	        "\t\t\tc->launch[i].grid[d] = 0;\n"
	        "\t\t\tc->launch[i].block[d] = 0;\n"
	        "\t\t\tc->launch[i].cluster[d] = 0;\n"
	        "\t\t}\n"
	        "\t\tc->launch[i].smem_bytes = 0;\n"
	        "\t\tc->launch[i].smem_optin = 0;\n"
	        "\t\tc->launch[i].pdl = 0;\n"
	        "\t}\n}\n\n",
	        b->P);
	sb_add(b->out, fn.buf, fn.len);
	sb_release(&fn);
	return 0;
}

/* "static const long long params[N][NPARAMS] = {...};" and its use; nothing without params. */
static void params_table(const struct section *b, const struct variant *v, size_t n,
                         struct strbuf *out)
{
	size_t i, j;

	if (!b->fam->nparams)
		return;
	sb_addf(out, "\tstatic const long long params[%zu][%zu] = {", n, b->fam->nparams);
	for (i = 0; i < n; i++) {
		sb_adds(out, i ? ", {" : "{");
		for (j = 0; j < b->fam->nparams; j++)
			sb_addf(out, "%s%lld", j ? ", " : "", v[i].v[j]);
		sb_adds(out, "}");
	}
	sb_adds(out, "};\n");
}

static void params_assign(const struct section *b, const char *row, struct strbuf *out)
{
	size_t j;

	for (j = 0; j < b->fam->nparams; j++)
		sb_addf(out, "\tc.%s = params[%s][%zu];\n", b->member[j], row, j);
}

static int write_rank(struct section *b, const struct variant *ranked)
{
	const struct ranking *r = b->r;

	sb_addf(b->out,
	        "/* Rank r's configuration (1 to %sRANKS) at these dims; rank 0 when there is no "
	        "such rank. */\nstatic inline struct %sconfig %srank(int r, ",
	        b->P, b->p, b->p);
	dim_args(b, b->out);
	sb_adds(b->out, ")\n{\n");
	params_table(b, ranked, r->n, b->out);
	sb_addf(b->out, "\tstruct %sconfig c;\n\n\t%sclear(&c);\n", b->p, b->p);
	sb_addf(b->out, "\tif (r < 1 || r > %sRANKS)\n\t\treturn c;\n\tc.rank = r;\n", b->P);
	params_assign(b, "r - 1", b->out);
	sb_addf(b->out, "\t%sgeometry(&c%s", b->p, b->pr->ndims ? ", " : "");
	dim_names(b, b->out);
	sb_adds(b->out, ");\n\treturn c;\n}\n\n");
	return 0;
}

/* A tuned build of --per-shape: a variant at one specialisation. */
struct shape_build {
	long long variant_id;
	size_t spec;
	struct variant va;
};

/* The tuned shapes as a select function's tables: their dims, each one's build, their names. */
static void shape_tables(struct section *b, const int *build_of)
{
	const struct ranking *r = b->r;
	const struct problem *pr = b->pr;
	size_t i, d;

	sb_addf(b->out, "\tstatic const long long tuned[%zu][%zu] = {", r->nshapes,
	        pr->ndims ? pr->ndims : 1);
	for (i = 0; i < r->nshapes; i++) {
		sb_adds(b->out, i ? ", {" : "{");
		for (d = 0; d < pr->ndims; d++)
			sb_addf(b->out, "%s%lld", d ? ", " : "", b->cfg->shapes[i].dims[d]);
		if (!pr->ndims)
			sb_adds(b->out, "0");
		sb_adds(b->out, "}");
	}
	sb_addf(b->out, "};\n\tstatic const int build[%zu] = {", r->nshapes);
	for (i = 0; i < r->nshapes; i++)
		sb_addf(b->out, "%s%d", i ? ", " : "", build_of[i]);
	sb_addf(b->out, "};\n\tstatic const char *const names[%zu] = {", r->nshapes);
	for (i = 0; i < r->nshapes; i++) {
		sb_adds(b->out, i ? ", " : "");
		add_c_string(b->out, r->shapes[i].name);
	}
	sb_adds(b->out, "};\n");
}

static int write_select(struct section *b, const struct shape_build *builds, size_t nbuilds,
                        const int *build_of)
{
	const struct ranking *r = b->r;
	const struct problem *pr = b->pr;
	struct variant v[TUNER_MAX_SHAPES];
	size_t i, k;

	sb_addf(b->out,
	        "/*\n"
	        " * The configuration for these dims, from the tuned shapes: a shape whose dims\n"
	        " * are these exactly; else, among the shapes with the same specialised dims\n"
	        " * (compiled in: a build serves no other), the nearest in log space, by the sum\n"
	        " * over dims of |ln((1 + dim) / (1 + tuned dim))|; ties go to the earlier shape\n"
	        " * of the suite. config -1 when no tuned shape has these specialised dims.\n"
	        " */\nstatic inline struct %sconfig %sselect(",
	        b->p, b->p);
	dim_args(b, b->out);
	sb_adds(b->out, ")\n{\n");
	shape_tables(b, build_of);
	for (i = 0; i < nbuilds; i++)
		v[i] = builds[i].va;
	params_table(b, v, nbuilds, b->out);
	sb_addf(b->out, "\tconst long long q[%zu] = {", pr->ndims ? pr->ndims : 1);
	dim_names(b, b->out);
	if (!pr->ndims)
		sb_adds(b->out, "0");
	sb_addf(b->out,
	        "};\n\tstruct %sconfig c;\n\tint i, j, best = -1, exact = 0;\n"
	        "\tdouble best_d = 0;\n\n",
	        b->p);
	sb_addf(b->out,
	        "\tfor (i = 0; i < %zu && !exact; i++) {\n"
	        "\t\tif (build[i] < 0)\n\t\t\tcontinue;\n"
	        "\t\tfor (j = 0; j < %zu && q[j] == tuned[i][j]; j++) {\n\t\t}\n"
	        "\t\tif (j == %zu) {\n\t\t\tbest = i;\n\t\t\texact = 1;\n\t\t}\n\t}\n",
	        r->nshapes, pr->ndims, pr->ndims);
	sb_addf(b->out,
	        "\tfor (i = 0; i < %zu && !exact; i++) {\n\t\tdouble d = 1;\n\n"
	        "\t\tif (build[i] < 0",
	        r->nshapes);
	for (k = 0; k < b->fam->nspecialize; k++)
		sb_addf(b->out, " || q[%d] != tuned[i][%d]",
		        problem_dim_index(pr, b->fam->specialize[k]),
		        problem_dim_index(pr, b->fam->specialize[k]));
	sb_addf(b->out,
	        ")\n\t\t\tcontinue;\n"
	        "\t\tfor (j = 0; j < %zu; j++) {\n"
	        "\t\t\tdouble a = (double)(q[j] > 0 ? q[j] : 0) + 1, t = (double)tuned[i][j] + "
	        "1;\n\n"
	        "\t\t\td *= a > t ? a / t : t / a;\n"
	        "\t\t}\n"
	        "\t\tif (best < 0 || d < best_d) {\n\t\t\tbest = i;\n\t\t\tbest_d = d;\n\t\t}\n"
	        "\t}\n",
	        pr->ndims);
	sb_addf(b->out,
	        "\t%sclear(&c);\n\tif (best < 0)\n\t\treturn c;\n"
	        "\tc.config = build[best];\n\tc.shape = best;\n\tc.shape_name = names[best];\n"
	        "\tc.exact = exact;\n",
	        b->p);
	params_assign(b, "c.config", b->out);
	sb_addf(b->out, "\t%sgeometry(&c%s", b->p, pr->ndims ? ", " : "");
	dim_names(b, b->out);
	sb_adds(b->out, ");\n\treturn c;\n}\n\n");
	return 0;
}

/* prefix_tuned(s, dims...): tuned shape s's own build at these dims, for a combined dispatch. */
static void write_tuned(struct section *b, const struct shape_build *builds, size_t nbuilds,
                        const int *build_of)
{
	const struct ranking *r = b->r;
	const struct problem *pr = b->pr;
	struct variant v[TUNER_MAX_SHAPES];
	size_t i;

	sb_addf(b->out,
	        "/*\n"
	        " * Tuned shape s's own best configuration (its build, %s<SHAPE>_CONFIG) at\n"
	        " * these dims; exact 1 when they are s's. config -1 when s has no build.\n"
	        " */\nstatic inline struct %sconfig %stuned(int s%s",
	        b->P, b->p, b->p, pr->ndims ? ", " : "");
	dim_args(b, b->out);
	sb_adds(b->out, ")\n{\n");
	shape_tables(b, build_of);
	for (i = 0; i < nbuilds; i++)
		v[i] = builds[i].va;
	if (nbuilds)
		params_table(b, v, nbuilds, b->out);
	sb_addf(b->out, "\tconst long long q[%zu] = {", pr->ndims ? pr->ndims : 1);
	dim_names(b, b->out);
	if (!pr->ndims)
		sb_adds(b->out, "0");
	sb_addf(b->out,
	        "};\n\tstruct %sconfig c;\n\tint j;\n\n\t%sclear(&c);\n"
	        "\tif (s < 0 || s >= %zu || build[s] < 0)\n\t\treturn c;\n"
	        "\tfor (j = 0; j < %zu && q[j] == tuned[s][j]; j++) {\n\t}\n"
	        "\tc.config = build[s];\n\tc.shape = s;\n\tc.shape_name = names[s];\n"
	        "\tc.exact = j == %zu;\n",
	        b->p, b->p, r->nshapes, pr->ndims, pr->ndims);
	if (nbuilds)
		params_assign(b, "c.config", b->out);
	sb_addf(b->out, "\t%sgeometry(&c%s", b->p, pr->ndims ? ", " : "");
	dim_names(b, b->out);
	sb_adds(b->out, ");\n\treturn c;\n}\n\n");
}

/* One branch of the preamble: its #defines but the SHAPE_ ones when skip_shape. */
static int write_defines(struct section *b, const struct variant *va, const struct spec *sp,
                         int skip_shape, const char *what)
{
	struct template_define defs[TEMPLATE_MAX_DEFINES];
	int n = template_defines(b->cfg, va, sp, 0, defs), i;
	long long smem = 0;

	if (n < 0)
		return -1;
	for (i = 0; i < n; i++)
		if (defs[i].kind == TEMPLATE_SMEM)
			smem = defs[i].value;
	sb_addf(b->out, "/* %s: %lld bytes of dynamic shared memory", what, smem);
	if (smem > 49152)
		sb_addf(b->out,
		        ", above the 48 KB default: %sSMEM_ATTR(kernel, %lld) before "
		        "launching */\n",
		        b->P, smem);
	else
		sb_adds(b->out, " */\n");
	for (i = 0; i < n; i++)
		if (!(skip_shape && defs[i].kind == TEMPLATE_SHAPE))
			sb_addf(b->out, "#define %s%s %lld\n", defs[i].prefix, defs[i].name,
			        defs[i].value);
	return 0;
}

static int write_preamble(struct section *b, const struct variant *ranked,
                          const struct shape_build *builds, size_t nbuilds)
{
	const struct ranking *r = b->r;
	const struct family *fam = b->fam;
	struct strbuf what = STRBUF_INIT, cond = STRBUF_INIT;
	size_t i, s, k;
	int rc = -1;

	/* Combined, a family's preamble is for the translation units that ask for it alone: two
	 * families' params (BLOCK_N of each) must never meet. */
	if (b->combined)
		sb_addf(b->out,
		        "#if !defined(%sNO_PREAMBLE) && (defined(%sCONFIG) || defined(%sRANK))\n",
		        b->P, b->P, b->P);
	else
		sb_addf(b->out, "#ifndef %sNO_PREAMBLE\n", b->P);
	if (nbuilds) {
		sb_addf(b->out, "#if defined(%sCONFIG)\n", b->P);
		for (i = 0; i < nbuilds; i++) {
			sb_addf(b->out, "#%s %sCONFIG == %zu\n", i ? "elif" : "if", b->P, i);
			sb_reset(&what);
			sb_addf(&what, "build %zu: variant %lld%s%s", i, builds[i].variant_id,
			        *b->specs[builds[i].spec].key ? ", " : "",
			        b->specs[builds[i].spec].key);
			if (write_defines(b, &builds[i].va, &b->specs[builds[i].spec], 0,
			                  what.buf) < 0)
				goto out;
		}
		sb_addf(b->out, "#else\n#error \"%sCONFIG must be 0 to %zu\"\n#endif\n#else\n",
		        b->P, nbuilds - 1);
	}
	sb_addf(b->out, "#ifndef %sRANK\n#define %sRANK 1\n#endif\n", b->P, b->P);
	for (k = 0; k < fam->nspecialize; k++)
		sb_addf(b->out, "#ifndef SHAPE_%s\n#define SHAPE_%s %lld\n#endif\n",
		        fam->specialize[k], fam->specialize[k], b->specs[0].vals[k]);
	for (i = 0; i < r->n; i++)
		for (s = 0; s < b->nspecs; s++) {
			sb_reset(&cond);
			sb_grow(&cond, 0);
			spec_cond(b, &b->specs[s], &cond);
			sb_addf(b->out, "#%s %sRANK == %d%s\n", i || s ? "elif" : "if", b->P,
			        r->v[i].rank, cond.buf);
			sb_reset(&what);
			sb_addf(&what, "rank %d: variant %lld%s%s", r->v[i].rank,
			        r->v[i].variant_id, *b->specs[s].key ? ", " : "", b->specs[s].key);
			if (write_defines(b, &ranked[i], &b->specs[s], 1, what.buf) < 0)
				goto out;
		}
	sb_addf(b->out, "#else\n#error \"no tuned build for this %sRANK (1 to %zu)", b->P, r->n);
	for (s = 0; s < b->nspecs && fam->nspecialize; s++) {
		sb_adds(b->out, s ? "; " : " and specialisation (");
		sb_adds(b->out, b->specs[s].key);
	}
	sb_addf(b->out, "%s\"\n#endif\n", fam->nspecialize ? ")" : "");
	if (nbuilds)
		sb_adds(b->out, "#endif\n");
	sb_addf(b->out, "#define %sSMEM_OPTIN (TUNER_SMEM_BYTES > 49152)\n#endif\n\n", b->P);
	rc = 0;
out:
	sb_release(&what);
	sb_release(&cond);
	return rc;
}

static int in_list(const char *const *list, size_t n, const char *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(list[i], s))
			return 1;
	return 0;
}

/* Every identifier the section adds, so that none is taken twice. */
static int claim_names(struct section *b, int per_shape)
{
	static const char *const macros[] = {"RANK",      "CONFIG",     "NO_PREAMBLE", "NLAUNCHES",
	                                     "SMEM_ATTR", "SMEM_OPTIN", "NSHAPES",     "NCONFIGS"};
	static const char *const fns[] = {"launch", "config", "clear",    "geometry", "rank",
	                                  "select", "min_i",  "max_i",    "min_f",    "max_f",
	                                  "abs_i",  "abs_f",  "ceil_div", "valid",    "tuned"};
	char *s;
	size_t i, j;
	int rc = 0;

	for (i = 0; rc == 0 && i < ARRAY_SIZE(macros); i++) {
		if (!per_shape && i >= 6)
			break;
		s = xasprintf("%s%s", b->P, macros[i]);
		rc = export_names_add(b->names, s);
		free(s);
	}
	for (i = 0; rc == 0 && i < ARRAY_SIZE(fns); i++) {
		if (!b->combined && i >= ARRAY_SIZE(fns) - 2)
			break;
		s = xasprintf("%s%s", b->p, fns[i]);
		rc = export_names_add(b->names, s);
		free(s);
	}
	/* The kernels' entries, distinct ones only: a family may launch one twice. */
	for (i = 0; rc == 0 && i < b->fam->nlaunches; i++) {
		for (j = 0; j < i && strcmp(b->fam->launches[j].kernel, b->fam->launches[i].kernel);
		     j++)
			;
		if (j == i)
			rc = export_names_add(b->names, b->fam->launches[i].kernel);
	}
	for (i = 0; rc == 0 && i < b->fam->nparams; i++) {
		if (in_list(keywords, ARRAY_SIZE(keywords), b->member[i]) ||
		    in_list(members, ARRAY_SIZE(members), b->member[i]))
			rc = error(
			    "param '%s' would be the member '%s', a name C or the header takes",
			    b->fam->params[i].name, b->member[i]);
		for (j = 0; rc == 0 && j < i; j++)
			if (!strcmp(b->member[i], b->member[j]))
				rc = error("params '%s' and '%s' are one name in lower case",
				           b->fam->params[j].name, b->fam->params[i].name);
	}
	return rc;
}

int export_build(const struct ranking *r, const struct config *cfg, int mode,
                 struct export_names *names, struct strbuf *out)
{
	int per_shape = mode != EXPORT_RANKS;
	struct section b;
	struct variant *ranked = xcalloc(r->n + 1, sizeof(*ranked));
	struct shape_build builds[TUNER_MAX_SHAPES];
	int build_of[TUNER_MAX_SHAPES];
	size_t nbuilds = 0, i, j;
	char *P = export_prefix(r->run.template_name), *q;
	int rc = -1;

	memset(&b, 0, sizeof(b));
	b.r = r;
	b.cfg = cfg;
	b.fam = &cfg->fam;
	b.pr = cfg->fam.problem;
	b.P = P;
	b.p = xstrdup(P);
	for (q = b.p; *q; q++)
		*q = (char)tolower((unsigned char)*q);
	b.names = names;
	b.out = out;
	b.combined = mode == EXPORT_SECTION;
	b.member = xcalloc(b.fam->nparams + 1, sizeof(*b.member));
	for (i = 0; i < b.fam->nparams; i++) {
		b.member[i] = xstrdup(b.fam->params[i].name);
		for (q = b.member[i]; *q; q++)
			*q = (char)tolower((unsigned char)*q);
	}
	if (!b.pr || !b.fam->nlaunches) {
		error("family '%s' describes no launch", b.fam->name);
		goto out;
	}
	if (claim_names(&b, per_shape) < 0)
		goto out;
	b.nspecs = space_specs(cfg, b.specs, b.shape_spec);
	if (!b.nspecs) {
		error("the run has no shapes");
		goto out;
	}
	for (i = 0; i < r->n; i++)
		if (to_variant(b.fam, r->v[i].params, &ranked[i]) < 0)
			goto out;
	for (i = 0; per_shape && i < r->nshapes; i++) {
		const struct export_best *be = &r->best[i];

		build_of[i] = -1;
		if (!be->variant_id)
			continue;
		for (j = 0; j < nbuilds; j++)
			if (builds[j].variant_id == be->variant_id &&
			    builds[j].spec == b.shape_spec[i])
				break;
		if (j == nbuilds) {
			builds[j].variant_id = be->variant_id;
			builds[j].spec = b.shape_spec[i];
			if (to_variant(b.fam, be->params, &builds[j].va) < 0)
				goto out;
			nbuilds++;
		}
		build_of[i] = (int)j;
	}

	sb_addf(out,
	        "\n/* ---------------------------------------------------------- the build */\n"
	        "/*\n"
	        " * Include this header, then the template: it defines what tuner's preamble\n"
	        " * does (each param, each specialised dim as SHAPE_<dim>, TUNER_SMEM_BYTES)\n"
	        " * for rank %sRANK (default 1)%s.\n"
	        " * Define %sNO_PREAMBLE to have the %s names alone. A build of the\n"
	        " * template is one configuration (its extern \"C\" entries are one each):\n"
	        " * build another with -D%sRANK=2%s in another translation unit,\n"
	        " * its entries renamed (-Dkernel=other).\n"
	        " */\n",
	        P,
	        b.fam->nspecialize
	            ? "\n * at the specialisation the SHAPE_ macros name (default: the "
	              "suite's first)"
	            : "",
	        P, P, P, nbuilds ? " or -D...CONFIG=i" : "");
	if (b.combined)
		sb_addf(out,
		        "/*\n"
		        " * In this combined header the preamble is there only where %sCONFIG or\n"
		        " * %sRANK is defined: one translation unit per build of each family.\n"
		        " */\n",
		        P, P);
	if (write_preamble(&b, ranked, builds, nbuilds) < 0)
		goto out;
	sb_addf(out,
	        "/* Before launching a kernel with more than 48 KB of dynamic shared memory. */\n"
	        "#define %sSMEM_ATTR(kernel, bytes) cudaFuncSetAttribute((kernel), "
	        "cudaFuncAttributeMaxDynamicSharedMemorySize, (int)(bytes))\n\n",
	        P);
	sb_addf(out, "#define %sNLAUNCHES %zu\n", P, b.fam->nlaunches);
	if (per_shape) {
		sb_addf(out, "#define %sNSHAPES %zu\n#define %sNCONFIGS %zu\n", P, r->nshapes, P,
		        nbuilds);
		for (i = 0; i < r->nshapes; i++) {
			char *id = export_ident(r->shapes[i].name), *name;

			name = xasprintf("%s%s_CONFIG", P, id);
			free(id);
			if (export_names_add(names, name) < 0) {
				free(name);
				goto out;
			}
			sb_addf(out, "#define %s %s%d%s\n", name, build_of[i] < 0 ? "(" : "",
			        build_of[i], build_of[i] < 0 ? ")" : "");
			free(name);
		}
	}
	sb_adds(out, "\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
	if (write_types(&b) < 0 || write_rank(&b, ranked) < 0)
		goto out;
	if (per_shape && write_select(&b, builds, nbuilds, build_of) < 0)
		goto out;
	if (mode == EXPORT_SECTION) /* b.combined: per shape, so build_of is set */
		write_tuned(&b, builds, nbuilds, build_of);
	sb_adds(out, "#ifdef __cplusplus\n}\n#endif\n");
	rc = 0;
out:
	for (i = 0; i < b.fam->nparams; i++)
		free(b.member[i]);
	free(b.member);
	free(ranked);
	free(b.p);
	free(P);
	return rc;
}
