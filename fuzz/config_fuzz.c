/* libFuzzer harness for the YAML loaders: sidecars, tuning jobs and problem files. */
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tuner/common.h"
#include "tuner/config.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * The first byte of an input chooses what the rest is ('0' to '2' in the
 * seeds, for reading), so that one corpus covers them all and a mutation can
 * carry an input from one to another.
 */
enum mode {
	M_SIDECAR, /* a sidecar alone; where it loads, a job of two shapes over it */
	M_JOB,     /* a tuning job over a fixed sidecar: 'template: fixed.yaml' or landscape.yaml */
	M_PROBLEM, /* a problem file, named by a fixed sidecar; where it loads, a job too */
	M_COUNT
};

/*
 * The fixed files, all in one directory below the temporary one, so that a
 * sidecar's kernels/include (its directory's ../include) is never found and
 * hashed. A path that resolves outside the temporary directory is not read.
 */
static const char fixed_problem[] =
    "dims: [B, H, S, D]\n"
    "valid:\n"
    "  - B >= 1 && H >= 1 && S >= 1\n"
    "  - D == 64 || D == 128\n"
    "  - H <= 65535 && B <= 65535\n"
    "ragged: [S]\n"
    "buffers:\n"
    "  Q: {dtype: f16, count: B * H * S * D, role: in, fill: normal}\n"
    "  K: {dtype: f16, count: B * H * S * D, role: in, fill: {uniform: {min: -1, max: 1}}}\n"
    "  O: {dtype: f16, count: B * H * S * D, role: out, compare: {rel_l2: 1.0e-2}}\n"
    "  W: {dtype: f32, count: BLOCK_M * H, role: scratch, init: zeros}\n"
    "args: [Q, K, O, W, {i32: B}, {i32: S}, {f32: rsqrt(D)}]\n"
    "reference:\n"
    "  source: ref.cu\n"
    "  kernel: attention_ref\n"
    "  outputs: {O: f32}\n"
    "  grid: [\"ceil_div(S, 128)\", H, B]\n"
    "  block: [128, 1, 1]\n"
    "  args: [Q, K, O, {i32: B}, {i32: S}, {i32: D}]\n"
    "flops: 4 * B * H * S * S * D\n"
    "bytes: 3 * 2 * B * H * S * D\n";

static const char fixed_sidecar[] =
    "name: fuzz_fwd\n"
    "source: k.cu\n"
    "kernel: fuzz_fwd\n"
    "problem: problem.yaml\n"
    "specialize: [D]\n"
    "params:\n"
    "  BLOCK_M: [32, 64, 128]\n"
    "  NUM_WARPS: [1, 2, 4, 8]\n"
    "  PAD: [0, 8]\n"
    "constraints:\n"
    "  - BLOCK_M % (16 * NUM_WARPS) == 0\n"
    "smem_bytes: BLOCK_M * (D + PAD) * 2\n"
    "layout:\n"
    "  - {name: Q_smem, offset: 0, stride: (D + PAD) * 2, align: 16, access: cp.async 16B}\n"
    "launch:\n"
    "  grid: [ceil_div(S, BLOCK_M), H, B]\n"
    "  block: [NUM_WARPS * 32, 1, 1]\n"
    "baseline: {BLOCK_M: 64, NUM_WARPS: 4, PAD: 8}\n"
    "options: [-lineinfo]\n";

/*
 * For M_PROBLEM: no dim named, so that it fits any problem without these
 * names; the params are those the repository's problems use.
 */
static const char fixed_problem_sidecar[] =
    "name: fuzz_problem\n"
    "source: k.cu\n"
    "kernel: fuzz_problem\n"
    "problem: input-problem.yaml\n"
    "params:\n"
    "  BLOCK_M: [64, 128]\n"
    "  BLOCK_N: [32, 64]\n"
    "  SPLITS: [1, 2]\n"
    "  SPLIT_K: [1, 4]\n"
    "  STREAMK: [0, 1]\n"
    "  PERSISTENT: [0, 132]\n"
    "  CONSUMERS: [1, 2]\n"
    "  TMA: [0, 1]\n"
    "  TRANSPOSED: [0, 1]\n"
    "  TILE: [16, 32]\n"
    "launch: {grid: [7], block: [CONSUMERS * 128]}\n"
    "baseline: {BLOCK_M: 64, BLOCK_N: 64, SPLITS: 2, SPLIT_K: 1, STREAMK: 1, PERSISTENT: 132,\n"
    "           CONSUMERS: 2, TMA: 1, TRANSPOSED: 0, TILE: 32}\n";

/* A recorded landscape, as tuner import writes one: a job may name it as 'landscape.yaml'. */
static const char fixed_landscape[] = "name: toy_kernel\n"
				      "landscape: true\n"
				      "params:\n"
				      "  bs: [16, 32, 64, 128]\n"
				      "  tile: [1, 2, 4]\n"
				      "constraints:\n"
				      "  - \"((bs * tile) <= 256)\"\n"
				      "baseline: {bs: 32, tile: 1}\n";

static const char kernel_cu[] = "extern \"C\" __global__ void fuzz_fwd() {}\n";

#define DIR_PREFIX "/tmp/tuner-config-fuzz-" /* then the fuzzer's pid */

/* The files the fuzzer writes in DIR/t: the fixed ones (written once), then the inputs. */
static const char *const names[] = {
    "problem.yaml", "fixed.yaml", "problem-side.yaml", "landscape.yaml",     "k.cu",
    "ref.cu",       "input.yaml", "job.yaml",          "input-problem.yaml", "derived-job.yaml"};
static char dir[64];
static char *real_dir, *sub;
static char *fixed_paths[6];
static char *input_sidecar, *input_job, *input_problem, *problem_sidecar, *derived_job;
static int nerrors, verbose; /* verbose: TUNER_FUZZ_VERBOSE set, each load's outcome shown */
static char first_error[4096];
static const uint8_t *input; /* this run's, for what its messages may quote */
static size_t input_size;

static void quiet(const char *prefix, const char *msg)
{
	if (strcmp(prefix, "error: "))
		return;
	if (!nerrors++)
		snprintf(first_error, sizeof(first_error), "%s", msg);
}

/* Reads stay in the temporary directory: no /dev/stdin, no file of the machine's. */
static int confined(const char *path)
{
	char *abs = realpath(path, NULL);
	size_t n = strlen(real_dir);
	int ok;

	if (!abs)
		return 0; /* missing: the read fails on its own */
	ok = !strncmp(abs, real_dir, n) && (abs[n] == '/' || !abs[n]);
	free(abs);
	if (ok)
		return 0;
	errno = EACCES;
	return -1;
}

static void put_file(const char *path, const void *data, size_t size)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(data, 1, size, f) != size || fclose(f)) {
		perror(path);
		abort();
	}
}

/* A directory of the fuzzer's, and the files it writes there: nothing else is removed. */
static void remove_dir(const char *top)
{
	char *path;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(names); i++) {
		path = xasprintf("%s/t/%s", top, names[i]);
		unlink(path);
		free(path);
	}
	path = xasprintf("%s/t", top);
	rmdir(path);
	free(path);
	rmdir(top);
}

static void cleanup(void)
{
	remove_dir(dir);
}

/*
 * The directories of fuzzers that died on a finding: a sanitizer's report or a timeout ends the
 * process without its atexit() cleanup.
 */
static void remove_stale(void)
{
	glob_t g;
	size_t i;

	if (glob(DIR_PREFIX "*", 0, NULL, &g))
		return;
	for (i = 0; i < g.gl_pathc; i++) {
		long pid = strtol(g.gl_pathv[i] + strlen(DIR_PREFIX), NULL, 10);

		if (pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH)
			remove_dir(g.gl_pathv[i]);
	}
	globfree(&g);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *texts[] = {fixed_problem,   fixed_sidecar, fixed_problem_sidecar,
	                       fixed_landscape, kernel_cu,     kernel_cu};
	struct family fam;
	size_t i;

	remove_stale();
	snprintf(dir, sizeof(dir), DIR_PREFIX "%ld-XXXXXX", (long)getpid());
	if (!mkdtemp(dir)) {
		perror(dir);
		abort();
	}
	sub = xasprintf("%s/t", dir);
	if (mkdir(sub, 0700) < 0) {
		perror(sub);
		abort();
	}
	real_dir = realpath(dir, NULL);
	for (i = 0; i < ARRAY_SIZE(fixed_paths); i++) {
		fixed_paths[i] = xasprintf("%s/%s", sub, names[i]);
		put_file(fixed_paths[i], texts[i], strlen(texts[i]));
	}
	input_sidecar = xasprintf("%s/%s", sub, names[6]);
	input_job = xasprintf("%s/%s", sub, names[7]);
	input_problem = xasprintf("%s/%s", sub, names[8]);
	derived_job = xasprintf("%s/%s", sub, names[9]);
	problem_sidecar = fixed_paths[2];
	atexit(cleanup);
	verbose = getenv("TUNER_FUZZ_VERBOSE") != NULL;
	set_error_routine(quiet);
	set_read_guard(confined);
	if (family_load(fixed_paths[1], &fam) < 0) {
		fprintf(stderr, "the fixed sidecar does not load: %s\n", first_error);
		abort();
	}
	family_release(&fam);
	return 0;
}

static void fail(const char *what)
{
	fprintf(stderr, "%s (first error: %s)\n", what, nerrors ? first_error : "none");
	cleanup();
	abort();
}

/* "DIR/t/NAME:LINE:COL: message", LINE and COL from 1. */
static int positioned(const char *msg)
{
	size_t n = strlen(sub);
	const char *p;
	int i;

	if (strncmp(msg, sub, n) || msg[n] != '/')
		return 0;
	p = strstr(msg + n, ".yaml:");
	if (!p)
		return 0;
	p += 6;
	for (i = 0; i < 2; i++) {
		if (*p < '1' || *p > '9')
			return 0;
		while (*p >= '0' && *p <= '9')
			p++;
		if (*p++ != ':')
			return 0;
	}
	return *p == ' ' && p[1];
}

/* A load that fails says why, once, at a file's line and column. */
static void check_failure(void)
{
	if (verbose)
		fprintf(stderr, "refused: %s\n", first_error);
	if (nerrors != 1)
		fail(nerrors ? "a failed load reported more than one error"
		             : "a failed load reported no error");
	if (!positioned(first_error))
		fail("the error does not start with FILE:LINE:COL");
	if (strstr(first_error, "(null)") && !memmem(input, input_size, "(null)", 6))
		fail("the error printed a NULL string");
}

static void check_launch(const struct launch_spec *l, const struct problem *pb)
{
	size_t i;

	if (!l->kernel)
		fail("a launch without a kernel");
	for (i = 0; i < 3; i++)
		if (!l->grid[i] || !l->block[i] || (l->cluster[0] && !l->cluster[i]))
			fail("a launch with a dimension missing");
	for (i = 0; i < l->nargs; i++)
		if (l->args[i].kind == ARG_BUFFER && (size_t)l->args[i].buffer >= pb->nbufs)
			fail("an argument naming no buffer");
}

static void check_problem(const struct problem *pb, int landscape)
{
	size_t i;

	if (!pb || !pb->path)
		fail("a family without its problem");
	if (landscape)
		return;
	if (!pb->ndims || !pb->nbufs || !pb->ref.nlaunches || !pb->ref.source)
		fail("a problem without dims, buffers or a reference");
	for (i = 0; i < pb->ndims; i++)
		if (!pb->dims[i])
			fail("a dim without a name");
	for (i = 0; i < pb->nbufs; i++)
		if (!pb->bufs[i].name || !pb->bufs[i].count)
			fail("a buffer without a name or a count");
	for (i = 0; i < pb->nvalid; i++)
		if (!pb->valid[i])
			fail("a validity rule without its expression");
	for (i = 0; i < pb->nargs; i++)
		if (pb->args[i].kind == ARG_BUFFER && (size_t)pb->args[i].buffer >= pb->nbufs)
			fail("an argument naming no buffer");
	for (i = 0; i < pb->ref.nlaunches; i++)
		check_launch(&pb->ref.launches[i], pb);
}

/* A family that loads is whole: every name, expression and baseline value in place. */
static void check_family(const struct family *fam)
{
	int landscape = fam->nlaunches == 0;
	size_t i, j;

	if (!fam->name || !fam->path || !fam->text || !fam->smem_bytes)
		fail("a family without its name, path, text or smem_bytes");
	if (!fam->nparams || fam->nparams > TUNER_MAX_PARAMS)
		fail("a family without params");
	check_problem(fam->problem, landscape);
	if (!landscape && !fam->source)
		fail("a family without its source");
	for (i = 0; i < fam->nparams; i++) {
		const struct param *p = &fam->params[i];

		if (!p->name || !p->nvalues)
			fail("a param without a name or values");
		for (j = 0; j < p->nvalues && p->values[j] != fam->baseline[i]; j++)
			;
		if (j == p->nvalues)
			fail("a baseline value outside its param's domain");
	}
	for (i = 0; i < fam->nconstraints; i++)
		if (!fam->constraints[i].e)
			fail("a constraint without its expression");
	for (i = 0; i < fam->nlayout; i++)
		if (!fam->layout[i].name || !fam->layout[i].offset || !fam->layout[i].stride)
			fail("a layout buffer without its name, offset or stride");
	for (i = 0; i < fam->nlaunches; i++)
		check_launch(&fam->launches[i], fam->problem);
}

static void check_config(const struct config *cfg)
{
	size_t i;

	if (!cfg->path || !cfg->text || !cfg->template_path || !cfg->strategy)
		fail("a job without its path, text, template or strategy");
	if (!cfg->nshapes || cfg->nshapes > TUNER_MAX_SHAPES)
		fail("a job without shapes");
	for (i = 0; i < cfg->nshapes; i++)
		if (!cfg->shapes[i].name)
			fail("a shape without a name");
	check_family(&cfg->fam);
}

static void load_job(const char *path)
{
	struct config cfg;

	nerrors = 0;
	if (config_load(path, &cfg) < 0) {
		check_failure();
		if (cfg.path || cfg.text || cfg.fam.name || cfg.nshapes)
			fail("a failed job left data behind");
	} else {
		if (nerrors)
			fail("a job that loads reported an error");
		if (verbose)
			fprintf(stderr, "loaded the job %s\n", path);
		check_config(&cfg);
	}
	config_release(&cfg);
}

/*
 * A job over the sidecar just loaded (fuzzed, or naming the fuzzed problem): the problem's rules,
 * the buffers' counts and the launches evaluated on a shape that fits the repository's problems
 * (B H S D causal, M N K, rows cols), then on one of all 1s.
 */
static void derive_job(const struct family *fam)
{
	static const char *const first[] = {"64", "8", "128", "64", "1", "16", "32", "2"};
	struct strbuf sb = STRBUF_INIT;
	size_t i, j;

	sb_addf(&sb, "template: %s\narch: sm_90\nshapes:\n", strrchr(fam->path, '/') + 1);
	for (i = 0; i < 2; i++) {
		sb_addf(&sb, "  - {name: s%zu", i);
		for (j = 0; j < fam->problem->ndims; j++)
			sb_addf(&sb, ", %s: %s", fam->problem->dims[j], i ? "1" : first[j]);
		sb_adds(&sb, "}\n");
	}
	put_file(derived_job, sb.buf, sb.len);
	sb_release(&sb);
	load_job(derived_job);
	unlink(derived_job);
}

static void load_sidecar(const char *path)
{
	struct family fam;

	nerrors = 0;
	if (family_load(path, &fam) < 0) {
		check_failure();
		if (fam.name || fam.nparams || fam.problem)
			fail("a failed sidecar left data behind");
		family_release(&fam);
		return;
	}
	if (nerrors)
		fail("a sidecar that loads reported an error");
	if (verbose)
		fprintf(stderr, "loaded the sidecar %s\n", path);
	check_family(&fam);
	derive_job(&fam);
	family_release(&fam);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum mode m;

	if (!size)
		return 0;
	m = (enum mode)((uint8_t)(data[0] - '0') % M_COUNT);
	data++;
	size--;
	input = data;
	input_size = size;
	switch (m) {
	case M_SIDECAR:
		put_file(input_sidecar, data, size);
		load_sidecar(input_sidecar);
		unlink(input_sidecar);
		break;
	case M_JOB:
		put_file(input_job, data, size);
		load_job(input_job);
		unlink(input_job);
		break;
	default:
		put_file(input_problem, data, size);
		load_sidecar(problem_sidecar);
		unlink(input_problem);
		break;
	}
	return 0;
}
