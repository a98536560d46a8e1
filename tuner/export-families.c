/* One exported header for several families: each family's section, then a dispatch across them. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/export.h"

/* A shape of the combined suite: the same dims in every run that tuned it. */
struct xshape {
	char *name;                  /* the first run's name of it, made unique */
	const char *dims;            /* "B=1,...": the first run's */
	const long long *v;          /* the dims' values, in the problem's order */
	int local[TUNER_MAX_SHAPES]; /* per family, its own index of the shape; -1 */
	int order[TUNER_MAX_SHAPES]; /* the families with a correct best on it, fastest first; -1 */
};

/* Families as many as a header takes: one per run, each a template of its own. */
#define MAX_FAMILIES TUNER_MAX_SHAPES

static const char *nn(const char *s)
{
	return s ? s : "";
}

/* Runs that one dispatch may join: one device, the same dims, a template each. */
static int check_families(const struct export_family *f, size_t n)
{
	size_t i, j, d;

	if (n < 2)
		return error("a combined header needs two runs or more, not %zu", n);
	if (n > MAX_FAMILIES)
		return error("%zu runs: a combined header takes %d at most", n, MAX_FAMILIES);
	for (i = 0; i < n; i++) {
		const struct db_run *a = &f[i].r.run;

		if (!f[i].r.n) {
			char why[128];

			return error("%s: nothing to export",
			             export_empty_reason(&f[i].r, why, sizeof(why)));
		}
		for (j = 0; j < i; j++) {
			const struct db_run *b = &f[j].r.run;
			const struct problem *pa = f[i].cfg.fam.problem, *pb = f[j].cfg.fam.problem;

			if (!strcmp(nn(a->template_name), nn(b->template_name)))
				return error(
				    "runs %lld and %lld both tuned '%s': a combined header "
				    "takes each template once",
				    b->id, a->id, nn(a->template_name));
			if (strcmp(nn(a->device), nn(b->device)))
				return error(
				    "run %lld was measured on '%s', run %lld on '%s': their "
				    "times cannot be compared",
				    b->id, nn(b->device), a->id, nn(a->device));
			for (d = 0; pa->ndims == pb->ndims && d < pa->ndims; d++)
				if (strcmp(pa->dims[d], pb->dims[d]))
					break;
			if (pa->ndims != pb->ndims || d < pa->ndims) {
				struct strbuf da = STRBUF_INIT, db = STRBUF_INIT;

				for (d = 0; d < pa->ndims; d++)
					sb_addf(&da, "%s%s", d ? " " : "", pa->dims[d]);
				for (d = 0; d < pb->ndims; d++)
					sb_addf(&db, "%s%s", d ? " " : "", pb->dims[d]);
				error("run %lld's problem '%s' has dims [%s], run %lld's '%s' has "
				      "[%s]: one dispatch needs the same dims, in the same order",
				      b->id, nn(pb->path), nn(db.buf), a->id, nn(pa->path),
				      nn(da.buf));
				sb_release(&da);
				sb_release(&db);
				return -1;
			}
		}
	}
	return 0;
}

/* The shapes of every suite, matched by their dims' values; each family's fastest first. */
static size_t union_shapes(const struct export_family *f, size_t n, struct xshape *xs,
                           int *overflow)
{
	size_t ndims = f[0].cfg.fam.problem->ndims, ns = 0, i, s, k, j;
	struct export_names names = {NULL, 0, 0};

	for (i = 0; i < n; i++)
		for (s = 0; s < f[i].r.nshapes; s++) {
			const long long *v = f[i].cfg.shapes[s].dims;
			char *id;

			for (k = 0; k < ns && memcmp(xs[k].v, v, ndims * sizeof(*v)); k++)
				;
			if (k == ns) {
				if (ns == TUNER_MAX_SHAPES) {
					*overflow = 1;
					continue;
				}
				memset(&xs[k], 0, sizeof(xs[k]));
				for (j = 0; j < MAX_FAMILIES; j++)
					xs[k].local[j] = xs[k].order[j] = -1;
				xs[k].v = v;
				xs[k].dims = f[i].r.shapes[s].dims;
				/* Another suite's shape of the same name and other dims: renamed.
				 */
				id = export_ident(f[i].r.shapes[s].name);
				if (export_names_add(&names, id) == 0) {
					xs[k].name = xstrdup(f[i].r.shapes[s].name);
				} else {
					xs[k].name = xasprintf("%s_%s", f[i].r.shapes[s].name,
					                       nn(f[i].r.run.template_name));
					free(id);
					id = export_ident(xs[k].name);
					export_names_add(&names, id);
				}
				free(id);
				ns++;
			}
			xs[k].local[i] = (int)s;
		}
	export_names_release(&names);

	/* Per shape, the families with a correct best there, by median (ties: run order). */
	for (k = 0; k < ns; k++) {
		size_t m = 0;

		for (i = 0; i < n; i++) {
			int l = xs[k].local[i];
			double med;

			if (l < 0 || !f[i].r.best[l].variant_id)
				continue;
			med = f[i].r.best[l].t.median_us;
			for (j = m; j > 0; j--) {
				const struct export_family *o = &f[xs[k].order[j - 1]];
				double om = o->r.best[xs[k].local[xs[k].order[j - 1]]].t.median_us;

				if (!(isnan(om) || (!isnan(med) && med < om)))
					break;
				xs[k].order[j] = xs[k].order[j - 1];
			}
			xs[k].order[j] = (int)i;
			m++;
		}
	}
	return ns;
}

/* "my_gemm": a family's function prefix without its '_'; caller frees. */
static char *family_ident(const struct export_family *f)
{
	char *p = export_prefix(f->r.run.template_name), *q;

	for (q = p; *q; q++)
		*q = (char)tolower((unsigned char)*q);
	if (q > p)
		q[-1] = '\0';
	return p;
}

/* The choice per shape, with each family's best median and its provenance. */
static void combined_comment(const struct export_family *f, size_t n, const struct xshape *xs,
                             size_t ns, const char *P, const char *p, struct strbuf *c)
{
	struct strbuf l = STRBUF_INIT;
	size_t i, k;

	sb_adds(c, "/*\n");
	export_comment_line(
	    c, "The tuned configurations of several kernel families, each in its section");
	sb_reset(&l);
	sb_addf(&l, "with its provenance, and a dispatch across them, %sselect().", p);
	export_comment_line(c, l.buf);
	export_comment_line(c, "Export again rather than edit.");
	export_comment_line(c, "");
	for (i = 0; i < n; i++) {
		sb_reset(&l);
		sb_addf(&l, "family %zu  %s: run %lld (%s), %s", i, nn(f[i].r.run.template_name),
		        f[i].r.run.id, nn(f[i].r.run.status), nn(f[i].r.run.command));
		export_comment_line(c, l.buf);
	}
	sb_reset(&l);
	sb_addf(&l, "GPU       %s", nn(f[0].r.run.device));
	export_comment_line(c, l.buf);
	export_comment_line(c, "");
	export_comment_line(
	    c, "Per tuned shape, each family's correct best and its median; the lowest wins:");
	for (k = 0; k < ns; k++) {
		export_comment_line(c, "");
		sb_reset(&l);
		sb_addf(&l, "%s  %s", xs[k].name, xs[k].dims);
		export_comment_line(c, l.buf);
		for (i = 0; i < n; i++) {
			int li = xs[k].local[i];
			const struct export_best *b = li >= 0 ? &f[i].r.best[li] : NULL;

			sb_reset(&l);
			sb_addf(&l, "  %-20s ", nn(f[i].r.run.template_name));
			if (!b)
				sb_adds(&l, "not in its suite");
			else if (!b->variant_id)
				sb_addf(&l, "run %lld: no correct timed variant", f[i].r.run.id);
			else {
				sb_addf(&l, "run %lld, variant %lld, median ", f[i].r.run.id,
				        b->variant_id);
				export_add_fixed(&l, "%.3f us", b->t.median_us);
			}
			if (xs[k].order[0] == (int)i)
				sb_adds(&l, "  <- winner");
			export_comment_line(c, l.buf);
		}
	}
	export_comment_line(c, "");
	sb_reset(&l);
	sb_addf(&l, "%s<SHAPE>_FAMILY is each tuned shape's winner (%s<TEMPLATE>, -1: none).", P,
	        P);
	export_comment_line(c, l.buf);
	export_comment_line(
	    c, "A build: one translation unit per family build, each defining that family's");
	export_comment_line(
	    c, "<TEMPLATE>_CONFIG=i before including this header, then the template (its");
	export_comment_line(
	    c, "preamble is emitted there alone), and host code that includes it bare and");
	sb_reset(&l);
	sb_addf(&l, "calls %sselect(dims...) to learn the family, its build and its launches.", p);
	export_comment_line(c, l.buf);
	sb_adds(c, " */\n");
	sb_release(&l);
}

/* The dispatch section: the family indices, the choice struct and prefix_select(). */
static int write_dispatch(const struct export_family *f, size_t n, const struct xshape *xs,
                          size_t ns, const char *P, const char *p, struct export_names *names,
                          struct strbuf *out)
{
	static const char *const members[] = {"family", "family_name", "config",
	                                      "shape",  "shape_name",  "exact"};
	const struct problem *pr = f[0].cfg.fam.problem;
	size_t nd = pr->ndims, i, k, d;
	char *fid[MAX_FAMILIES], *s;
	struct strbuf args = STRBUF_INIT, dnames = STRBUF_INIT;
	int rc = -1;

	for (i = 0; i < n; i++)
		fid[i] = family_ident(&f[i]);
	for (d = 0; d < nd; d++) {
		sb_addf(&args, "%slong long %s", d ? ", " : "", pr->dims[d]);
		sb_addf(&dnames, "%s%s", d ? ", " : "", pr->dims[d]);
	}
	if (!nd)
		sb_adds(&args, "void");
	sb_grow(&dnames, 0);

	/* The names: macros, the struct and the function, and the struct's members. */
	{
		static const char *const macros[] = {"NFAMILIES", "NSHAPES"};
		static const char *const fns[] = {"choice", "select"};

		for (i = 0; i < ARRAY_SIZE(macros); i++) {
			s = xasprintf("%s%s", P, macros[i]);
			rc = export_names_add(names, s);
			free(s);
			if (rc < 0)
				goto out;
		}
		for (i = 0; i < ARRAY_SIZE(fns); i++) {
			s = xasprintf("%s%s", p, fns[i]);
			rc = export_names_add(names, s);
			free(s);
			if (rc < 0)
				goto out;
		}
		rc = -1;
		for (i = 0; i < n; i++)
			for (k = 0; k < ARRAY_SIZE(members); k++)
				if (!strcmp(fid[i], members[k])) {
					error("family '%s' would be the member '%s' of struct "
					      "%schoice, "
					      "which it has already",
					      fid[i], members[k], p);
					goto out;
				}
	}

	sb_adds(out,
	        "\n/* ======================================================= the dispatch */\n");
	sb_addf(out, "#define %sNFAMILIES %zu\n", P, n);
	for (i = 0; i < n; i++) {
		char *id = export_ident(fid[i]);

		s = xasprintf("%s%s", P, id);
		free(id);
		rc = export_names_add(names, s);
		if (rc == 0)
			sb_addf(out, "#define %s %zu\n", s, i);
		free(s);
		if (rc < 0)
			goto out;
	}
	sb_addf(out, "#define %sNSHAPES %zu\n", P, ns);
	for (k = 0; k < ns; k++) {
		char *id = export_ident(xs[k].name);

		s = xasprintf("%s%s_FAMILY", P, id);
		free(id);
		rc = export_names_add(names, s);
		if (rc == 0)
			sb_addf(out, "#define %s %s%d%s\n", s, xs[k].order[0] < 0 ? "(" : "",
			        xs[k].order[0], xs[k].order[0] < 0 ? ")" : "");
		free(s);
		if (rc < 0)
			goto out;
	}

	sb_adds(out, "\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
	sb_addf(out,
	        "/* Which family serves some dims, its build and its launches there. */\n"
	        "struct %schoice {\n"
	        "\tint family;              /* %s<TEMPLATE>: 0 to %sNFAMILIES - 1; -1: none */\n"
	        "\tconst char *family_name; /* its template's name; \"\" when none */\n"
	        "\tint config;              /* its build, <TEMPLATE>_CONFIG; -1 when none */\n"
	        "\tint shape;               /* the tuned shape (of the combined suite); -1 */\n"
	        "\tconst char *shape_name;  /* and its name; \"\" when none */\n"
	        "\tint exact;               /* 1 when the dims are that shape's */\n",
	        p, P, P);
	for (i = 0; i < n; i++)
		sb_addf(out, "\tstruct %s_config %s;%s\n", fid[i], fid[i],
		        i ? "" : " /* the chosen family's configuration; the others cleared */");
	sb_adds(out, "};\n\n");

	sb_addf(out,
	        "/*\n"
	        " * The family for these dims. Tuned dims (a shape of a suite): the family\n"
	        " * whose correct best there has the lowest median. Other dims: the nearest\n"
	        " * tuned shape in log space (the product over dims of the ratio of 1 + dim\n"
	        " * to 1 + tuned dim; ties to the earlier shape) whose winner can serve them:\n"
	        " * its problem's valid expressions hold and the shape has the specialised\n"
	        " * dims of these (a build serves no other); else the nearest shape that\n"
	        " * another family tuned and can serve; else family -1.\n"
	        " */\n"
	        "static inline struct %schoice %sselect(%s)\n{\n",
	        p, p, args.buf);
	sb_addf(out, "\tstatic const long long tuned[%zu][%zu] = {", ns ? ns : 1, nd ? nd : 1);
	for (k = 0; k < ns; k++) {
		sb_adds(out, k ? ", {" : "{");
		for (d = 0; d < nd; d++)
			sb_addf(out, "%s%lld", d ? ", " : "", xs[k].v[d]);
		if (!nd)
			sb_adds(out, "0");
		sb_adds(out, "}");
	}
	if (!ns)
		sb_adds(out, "{0}");
	sb_addf(out, "};\n\tstatic const char *const names[%zu] = {", ns ? ns : 1);
	for (k = 0; k < ns; k++) {
		sb_adds(out, k ? ", \"" : "\"");
		for (s = xs[k].name; *s; s++)
			if (isalnum((unsigned char)*s) || *s == '_' || *s == '-' || *s == '.')
				sb_add(out, s, 1);
			else
				sb_addf(out, "\\%03o", (unsigned char)*s);
		sb_adds(out, "\"");
	}
	if (!ns)
		sb_adds(out, "\"\"");
	sb_adds(out,
	        "};\n\t/* Per shape, the families with a correct best there, fastest first. */\n");
	sb_addf(out, "\tstatic const int order[%zu][%zu] = {", ns ? ns : 1, n);
	for (k = 0; k < ns || (!ns && k < 1); k++) {
		sb_adds(out, k ? ", {" : "{");
		for (i = 0; i < n; i++)
			sb_addf(out, "%s%d", i ? ", " : "", ns ? xs[k].order[i] : -1);
		sb_adds(out, "}");
	}
	sb_adds(out,
	        "};\n\t/* Per shape and family, the family's own index of the shape; -1. */\n");
	sb_addf(out, "\tstatic const int local[%zu][%zu] = {", ns ? ns : 1, n);
	for (k = 0; k < ns || (!ns && k < 1); k++) {
		sb_adds(out, k ? ", {" : "{");
		for (i = 0; i < n; i++)
			sb_addf(out, "%s%d", i ? ", " : "", ns ? xs[k].local[i] : -1);
		sb_adds(out, "}");
	}
	sb_adds(out,
	        "};\n\t/* Per family, 1 for each dim it specialises (compiled into a build). */\n");
	sb_addf(out, "\tstatic const int spec[%zu][%zu] = {", n, nd ? nd : 1);
	for (i = 0; i < n; i++) {
		const struct family *fam = &f[i].cfg.fam;

		sb_adds(out, i ? ", {" : "{");
		for (d = 0; d < nd; d++) {
			for (k = 0; k < fam->nspecialize && strcmp(fam->specialize[k], pr->dims[d]);
			     k++)
				;
			sb_addf(out, "%s%d", d ? ", " : "", k < fam->nspecialize);
		}
		if (!nd)
			sb_adds(out, "0");
		sb_adds(out, "}");
	}
	sb_addf(out, "};\n\tstatic const char *const family_names[%zu] = {", n);
	for (i = 0; i < n; i++)
		sb_addf(out, "%s\"%s\"", i ? ", " : "",
		        nn(f[i].r.run.template_name)); /* an identifier */
	sb_addf(out, "};\n\tconst long long q[%zu] = {%s};\n", nd ? nd : 1, nd ? dnames.buf : "0");
	sb_addf(out,
	        "\tint can[%zu];\n\tstruct %schoice c;\n"
	        "\tint s, k, j, f, pass, best = -1, best_f = -1, exact = 0;\n"
	        "\tdouble best_d = 0;\n\n",
	        n, p);
	for (i = 0; i < n; i++)
		sb_addf(out, "\tcan[%zu] = %s_valid(%s);\n", i, fid[i], dnames.buf);
	sb_addf(out,
	        "\tfor (s = 0; s < %zu && !exact; s++) {\n"
	        "\t\tf = order[s][0];\n"
	        "\t\tif (f < 0 || !can[f])\n\t\t\tcontinue;\n"
	        "\t\tfor (j = 0; j < %zu && q[j] == tuned[s][j]; j++) {\n\t\t}\n"
	        "\t\tif (j == %zu) {\n\t\t\tbest = s;\n\t\t\tbest_f = f;\n\t\t\texact = 1;\n"
	        "\t\t}\n\t}\n",
	        ns, nd, nd);
	sb_addf(out,
	        "\t/* Pass 0: each shape's winner; pass 1: the other families that tuned it. */\n"
	        "\tfor (pass = 0; pass < 2 && best < 0; pass++)\n"
	        "\t\tfor (s = 0; s < %zu; s++)\n"
	        "\t\t\tfor (k = pass; k < (pass ? %zu : 1); k++) {\n"
	        "\t\t\t\tdouble d = 1;\n\n"
	        "\t\t\t\tf = order[s][k];\n"
	        "\t\t\t\tif (f < 0 || !can[f])\n\t\t\t\t\tcontinue;\n"
	        "\t\t\t\tfor (j = 0; j < %zu && (!spec[f][j] || q[j] == tuned[s][j]); "
	        "j++) {\n\t\t\t\t}\n"
	        "\t\t\t\tif (j < %zu)\n\t\t\t\t\tcontinue;\n"
	        "\t\t\t\tfor (j = 0; j < %zu; j++) {\n"
	        "\t\t\t\t\tdouble a = (double)(q[j] > 0 ? q[j] : 0) + 1,\n"
	        "\t\t\t\t\t       t = (double)tuned[s][j] + 1;\n\n"
	        "\t\t\t\t\td *= a > t ? a / t : t / a;\n"
	        "\t\t\t\t}\n"
	        "\t\t\t\tif (best < 0 || d < best_d) {\n"
	        "\t\t\t\t\tbest = s;\n\t\t\t\t\tbest_f = f;\n\t\t\t\t\tbest_d = d;\n"
	        "\t\t\t\t}\n\t\t\t}\n",
	        ns, n, nd, nd, nd);
	sb_adds(out,
	        "\tc.family = -1;\n\tc.family_name = \"\";\n\tc.config = -1;\n\tc.shape = -1;\n"
	        "\tc.shape_name = \"\";\n\tc.exact = 0;\n");
	for (i = 0; i < n; i++)
		sb_addf(out, "\t%s_clear(&c.%s);\n", fid[i], fid[i]);
	sb_adds(out, "\tif (best < 0)\n\t\treturn c;\n"
	             "\tc.family = best_f;\n\tc.family_name = family_names[best_f];\n"
	             "\tc.shape = best;\n\tc.shape_name = names[best];\n\tc.exact = exact;\n"
	             "\tswitch (best_f) {\n");
	for (i = 0; i < n; i++)
		sb_addf(out,
		        "\tcase %zu:\n\t\tc.%s = %s_tuned(local[best][%zu]%s%s);\n"
		        "\t\tc.config = c.%s.config;\n\t\tbreak;\n",
		        i, fid[i], fid[i], i, nd ? ", " : "", nd ? dnames.buf : "", fid[i]);
	sb_adds(out, "\tdefault:\n\t\tbreak;\n\t}\n\treturn c;\n}\n\n");
	sb_adds(out, "#ifdef __cplusplus\n}\n#endif\n");
	rc = 0;
out:
	for (i = 0; i < n; i++)
		free(fid[i]);
	sb_release(&args);
	sb_release(&dnames);
	return rc;
}

int export_header_families(const struct export_family *f, size_t n, const char *prefix,
                           const struct export_header_opts *o, struct strbuf *out)
{
	struct xshape xs[TUNER_MAX_SHAPES];
	struct export_header_opts so = *o;
	struct export_names names = {NULL, 0, 0};
	struct strbuf body = STRBUF_INIT;
	char *P = export_prefix(prefix), *p = xstrdup(P), *guard = NULL, *q;
	size_t ns = 0, i;
	int rc = -1, overflow = 0;

	for (q = p; *q; q++)
		*q = (char)tolower((unsigned char)*q);
	if (check_families(f, n) < 0)
		goto out;
	ns = union_shapes(f, n, xs, &overflow);
	if (overflow) {
		error("the suites have more than %d distinct shapes", TUNER_MAX_SHAPES);
		goto out;
	}
	so.per_shape = 1;
	guard = export_header_guard(P, &so);
	export_names_add(&names, guard);
	for (i = 0; i < n; i++) {
		so.cfg = &f[i].cfg;
		if (export_header_section(&f[i].r, &so, &names, &body) < 0)
			goto out;
	}
	if (write_dispatch(f, n, xs, ns, P, p, &names, &body) < 0)
		goto out;
	combined_comment(f, n, xs, ns, P, p, out);
	sb_addf(out, "#ifndef %s\n#define %s\n", guard, guard);
	sb_add(out, body.buf, body.len);
	sb_addf(out, "\n#endif /* %s */\n", guard);
	rc = 0;
out:
	for (i = 0; i < ns; i++)
		free(xs[i].name);
	export_names_release(&names);
	sb_release(&body);
	free(guard);
	free(P);
	free(p);
	return rc;
}
