/* tuner check: run every gate on one configuration and explain each verdict. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/checks.h"
#include "tuner/cmd.h"
#include "tuner/common.h"
#include "tuner/compile.h"
#include "tuner/config.h"
#include "tuner/space.h"
#include "tuner/template.h"

const struct cmd cmd_check_entry = {
    .name = "check",
    .fn = cmd_check,
    .flags = NEED_CONFIG | NEED_CACHE,
    .summary = "run every gate on one configuration and explain each verdict",
    .usage = "usage: tuner check [--set NAME=V,...] [--no-compile] [--jobs N]\n"
	     "\n"
	     "Run the gates (constraints, shared memory, alignment, compile,\n"
	     "resources) on one configuration of the configured family, for every\n"
	     "shape of the suite, and compile the problem's reference kernel. Params\n"
	     "not named keep the baseline's value; values outside the declared domain\n"
	     "are allowed with a warning.\n"
	     "Exits 0 when every gate passes, 1 when one rejects, 78 when the\n"
	     "reference kernel does not compile.\n"
	     "\n"
	     "  --set NAME=V,...  the configuration (default: the baseline)\n"
	     "  --no-compile      stop after the static gates\n"
	     "  --jobs N          parallel compiles (default: one per core)\n"
	     "  -h, --help        print this help\n",
};

static void print_verdicts(const struct verdicts *vs, size_t from)
{
	size_t i;

	for (i = from; i < vs->n; i++) {
		const struct verdict *v = &vs->v[i];

		printf("  %-10s %-7s %s\n", gate_name(v->gate),
		       v->outcome == VARIANT_OK ? "pass" : "REJECT", v->reason);
	}
}

/* Warn about each value outside its declared domain: allowed here, never in a search. */
static void warn_domain(const struct family *fam, const struct variant *va)
{
	size_t i, j;

	for (i = 0; i < fam->nparams; i++) {
		const struct param *p = &fam->params[i];
		struct strbuf sb = STRBUF_INIT;
		int found = 0;

		for (j = 0; j < p->nvalues; j++) {
			found |= p->values[j] == va->v[i];
			sb_addf(&sb, "%s%lld", j ? ", " : "", p->values[j]);
		}
		if (!found)
			warning("%s=%lld is outside the declared domain {%s}", p->name, va->v[i],
			        sb.buf);
		sb_release(&sb);
	}
}

/* Compile every specialisation and run the build gates; returns the first rejection or OK. */
static enum outcome check_builds(const struct config *cfg, const struct variant *va,
                                 const char *cache_dir, int jobs, struct verdicts *vs)
{
	struct spec specs[TUNER_MAX_SHAPES];
	size_t shape_spec[TUNER_MAX_SHAPES];
	struct compile_job cj[TUNER_MAX_SHAPES];
	char vhash[HASH_HEX_LEN];
	struct compile_pool *pool;
	size_t nspecs, i, nopts;
	char **opts;
	enum outcome result = VARIANT_OK;

	nspecs = space_specs(cfg, specs, shape_spec);
	pool = compile_pool_new(jobs, cache_dir);
	if (!pool)
		return REJECT_COMPILE;
	compile_pool_set_timeout(pool, cfg->compile_timeout_s);
	opts = template_options(cfg, 0, &nopts);
	template_variant_hash(cfg, va, vhash);
	memset(cj, 0, sizeof(cj));
	for (i = 0; i < nspecs; i++) {
		template_build_key(vhash, &specs[i], 0, cj[i].key);
		cj[i].source = template_render(cfg, va, &specs[i], 0);
		cj[i].name = cfg->fam.source_path;
		cj[i].entry = cfg->fam.launches[0].kernel;
		cj[i].options = opts;
		cj[i].noptions = nopts;
		cj[i].user = &specs[i];
		compile_pool_submit(pool, &cj[i]);
	}
	for (i = 0; i < nspecs; i++) {
		struct compile_job *done = compile_pool_next(pool);
		const struct spec *sp = done->user;
		size_t before = vs->n;
		enum outcome o;

		printf("  build %s: %d registers, %d bytes static smem, %d+%d bytes spilled, %.2f "
		       "s%s\n",
		       *sp->key ? sp->key : "(no specialisation)", done->result.regs,
		       done->result.static_smem, done->result.spill_stores,
		       done->result.spill_loads, done->result.seconds,
		       done->result.cached ? " (cached)" : "");
		o = checks_build(cfg, va, sp, &done->result, vs);
		print_verdicts(vs, before);
		if (o != VARIANT_OK && result == VARIANT_OK)
			result = o;
		if (o == REJECT_COMPILE && done->result.log)
			fprintf(stderr, "%s\n", done->result.log);
	}
	for (i = 0; i < nspecs; i++) {
		free(cj[i].source);
		build_release(&cj[i].result);
	}
	template_options_free(opts, nopts);
	compile_pool_free(pool);
	return result;
}

/*
 * Compile the problem's reference kernel as the run will before its first check (on a GPU
 * only), so that a reference that does not compile, or lacks its kernel, is found here:
 * 0, or error() naming it.
 */
static int check_reference(const struct config *cfg, const char *cache_dir)
{
	const struct problem_reference *ref = &cfg->fam.problem->ref;
	struct compile_pool *pool;
	struct compile_job job, *done;
	size_t i, n = 0, nbase;
	char **base = template_options(cfg, 0, &nbase);
	char **opts = xcalloc(nbase + ref->noptions + 1, sizeof(*opts));
	int r = 0;

	for (i = 0; i < nbase; i++)
		opts[n++] = base[i];
	for (i = 0; i < ref->noptions; i++)
		opts[n++] = ref->options[i];
	memset(&job, 0, sizeof(job));
	compile_aux_key("reference kernel", ref->source, opts, n, job.key);
	job.source = ref->source;
	job.name = ref->source_path;
	job.entry = ref->launches[0].kernel;
	job.options = opts;
	job.noptions = n;
	pool = compile_pool_new(1, cache_dir);
	if (!pool) {
		r = -1;
		goto out;
	}
	compile_pool_set_timeout(pool, cfg->compile_timeout_s);
	compile_pool_submit(pool, &job);
	done = compile_pool_next(pool);
	if (done->result.outcome == VARIANT_OK)
		printf("  reference  pass    '%s': kernel '%s', %d registers%s\n", ref->source_path,
		       job.entry, done->result.regs, done->result.cached ? " (cached)" : "");
	else
		r = error("the reference kernel '%s' does not compile for %s:\n%s",
		          ref->source_path, cfg->arch.name,
		          done->result.log ? done->result.log : "");
	build_release(&job.result);
	compile_pool_free(pool);
out:
	free(opts);
	template_options_free(base, nbase);
	return r;
}

int cmd_check(int argc, char **argv, const struct globals *g)
{
	static const struct option opts[] = {
	    {"set", required_argument, NULL, 's'},
	    {"no-compile", no_argument, NULL, 'n'},
	    {"jobs", required_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *set = NULL;
	int no_compile = 0, jobs = 0, c;
	struct config cfg;
	struct variant va;
	struct verdicts vs = {0};
	enum outcome o;
	long long v;
	char *desc;

	while ((c = getopt_long(argc, argv, "hs:j:", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			set = optarg;
			break;
		case 'n':
			no_compile = 1;
			break;
		case 'j':
			if (cmd_parse_range("--jobs", optarg, 0, cmd_jobs_max(), &v) < 0)
				return cmd_usage(g, EX_USAGE);
			jobs = (int)v;
			break;
		case 'h':
			return cmd_usage(g, 0);
		default:
			return cmd_usage(g, EX_USAGE);
		}
	}
	if (optind < argc)
		return cmd_extra_arg(g, argv[optind]);
	if ((c = cmd_load_config(g, &cfg)) != 0)
		return c;
	space_baseline(&cfg.fam, &va);
	if (set && space_parse_set(&cfg.fam, set, &va) < 0) {
		config_release(&cfg);
		return EX_USAGE;
	}
	desc = space_format(&cfg.fam, &va);
	printf("%s %s on %s, %zu shape%s\n", cfg.fam.name, desc, cfg.arch.name, cfg.nshapes,
	       cfg.nshapes == 1 ? "" : "s");
	fflush(stdout);
	warn_domain(&cfg.fam, &va);
	fflush(stderr);

	o = checks_static(&cfg, &va, &vs);
	print_verdicts(&vs, 0);
	if (o == VARIANT_OK && !no_compile)
		o = check_builds(&cfg, &va, g->cache_dir, jobs, &vs);
	if (o == VARIANT_OK && !no_compile && check_reference(&cfg, g->cache_dir) < 0) {
		free(desc);
		verdicts_release(&vs);
		config_release(&cfg);
		return EX_CONFIG;
	}
	if (o == VARIANT_OK) {
		printf("accepted: every gate passed%s\n",
		       no_compile ? " (static gates only)" : "; GPU gates not run by check");
	} else {
		size_t i;

		for (i = 0; i < vs.n; i++)
			if (vs.v[i].outcome != VARIANT_OK)
				break;
		printf("rejected by the %s gate\n", i < vs.n ? gate_name(vs.v[i].gate) : "?");
	}
	free(desc);
	verdicts_release(&vs);
	config_release(&cfg);
	return o == VARIANT_OK ? 0 : 1;
}
