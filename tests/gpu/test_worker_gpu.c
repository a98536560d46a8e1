/* GPU tests of the worker: reference vs float64, planted faults, timing sanity, flat resources. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>

#include "gpu/attention_cpu.h"
#include "tuner/common.h"
#include "tuner/cuda.h"
#include "tuner/problem.h"
#include "tuner/worker.h"

static int passed, failed;
static const char *kdir;

static void TUNER_PRINTF(3, 4) check(int ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("%s %s: ", ok ? "ok     " : "FAILED ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (ok)
		passed++;
	else
		failed++;
}

static void TUNER_PRINTF(1, 2) info(const char *fmt, ...)
{
	va_list ap;

	printf("info    ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static char *cubin(const char *name)
{
	return xasprintf("%s/%s.cubin", kdir, name);
}

static int exists(const char *path)
{
	return access(path, R_OK) == 0;
}

/* ---------------------------------------------------- jobs and shapes */

static const char *cur_kernel = "attn_half"; /* the candidate job_init named */
static long long cur_d = 64;                 /* the head dim shape() makes */

static unsigned long long f32_bits(float f)
{
	unsigned u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static void arg_buf(struct worker_call *c, int buf)
{
	c->args[c->nargs].kind = ARG_BUFFER;
	c->args[c->nargs++].index = buf;
}

static void arg_scalar(struct worker_call *c, int kind, unsigned long long bits)
{
	c->args[c->nargs].kind = kind;
	c->args[c->nargs++].bits = bits;
}

/*
 * The attention problem as kernels/problems/attention.yaml describes it, on one
 * shape: Q K V (f16, normal), O (f16, the reference's f32), the candidate one
 * thread per query row as attn_half and the reference kernel.
 */
static struct worker_shape_job *shape(struct worker_job *job, const char *name, long long B,
                                      long long H, long long S)
{
	static const char *const names[] = {"Q", "K", "V", "O"};
	struct worker_shape_job *s = worker_job_shape(job);
	unsigned long long n = (unsigned long long)(B * H * S * cur_d);
	const int D = (int)cur_d;
	struct worker_call *c;
	int k;

	snprintf(s->name, sizeof(s->name), "%s", name);
	snprintf(s->dims, sizeof(s->dims), "B=%lld,H=%lld,S=%lld,D=%d", B, H, S, D);
	s->nbufs = 4;
	for (k = 0; k < 4; k++) {
		snprintf(s->bufs[k].name, sizeof(s->bufs[k].name), "%s", names[k]);
		s->bufs[k].dtype = s->bufs[k].ref_dtype = DT_F16;
		s->bufs[k].count = n;
		s->bufs[k].role = k < 3 ? ROLE_IN : ROLE_OUT;
		s->bufs[k].fill = FILL_NORMAL;
		s->bufs[k].fb = 1;
	}
	s->bufs[3].ref_dtype = DT_F32;
	s->bufs[3].rel_l2 = 1e-2;
	s->bufs[3].max_abs = 2e-2;
	s->ncalls = s->nref = 1;
	c = &s->calls[0];
	snprintf(c->kernel, sizeof(c->kernel), "%s", cur_kernel);
	c->grid[0] = (unsigned)((S + 127) / 128);
	c->grid[1] = (unsigned)H;
	c->grid[2] = (unsigned)B;
	c->block[0] = 128;
	c->block[1] = c->block[2] = 1;
	for (k = 0; k < 4; k++)
		arg_buf(c, k);
	arg_scalar(c, ARG_I32, (unsigned)B);
	arg_scalar(c, ARG_I32, (unsigned)H);
	arg_scalar(c, ARG_I32, (unsigned)S);
	arg_scalar(c, ARG_F32, f32_bits((float)(1.0 / sqrt((double)D))));
	s->ref[0] = *c;
	c = &s->ref[0];
	snprintf(c->kernel, sizeof(c->kernel), "attention_ref");
	c->nargs = 7;
	arg_scalar(c, ARG_I32, D);
	arg_scalar(c, ARG_F32, f32_bits((float)(1.0 / sqrt((double)D))));
	return s;
}

static void flat_grid(struct worker_shape_job *s, unsigned block, unsigned per_thread)
{
	unsigned long long n = s->bufs[0].count;

	s->calls[0].grid[0] = (unsigned)((n / per_thread + block - 1) / block);
	s->calls[0].grid[1] = s->calls[0].grid[2] = 1;
	s->calls[0].block[0] = block;
}

static void tolerances(struct worker_job *job, double rel, double abs)
{
	size_t i;

	for (i = 0; i < job->nshapes; i++) {
		job->shapes[i].bufs[3].rel_l2 = rel;
		job->shapes[i].bufs[3].max_abs = abs;
	}
}

struct job_paths {
	char *cand, *ref, *sup;
};

static void job_init(struct worker_job *job, struct job_paths *p, const char *kernel)
{
	memset(job, 0, sizeof(*job));
	cur_kernel = kernel;
	p->cand = cubin(kernel);
	p->ref = cubin("attention_ref");
	p->sup = cubin("tuner_support");
	job->cubin_path = p->cand;
	job->ref_cubin_path = p->ref;
	job->support_path = p->sup;
	job->check_seeds = 2;
	job->seed = 1;
	job->warmup = 3;
	job->repeats = 10;
	job->launches = 5;
	job->timeout_s = 30;
	job->check = 1;
}

static void job_release(struct worker_job *job, struct job_paths *p)
{
	free(p->cand);
	free(p->ref);
	free(p->sup);
	worker_job_release(job);
}

static int eval(struct worker *w, const struct worker_job *job, struct worker_result *res)
{
	int r = worker_eval(w, job, res);

	printf("        %s -> %s%s%s\n", job->shapes[0].calls[0].kernel,
	       r < 0 ? "error" : outcome_name(res->outcome), *res->reason ? ": " : "", res->reason);
	return r;
}

/* ---------------------------------------- reference kernel vs float64 */

static int ref_vs_cpu_shape(CUfunction fn, CUstream stream, const long long *dims, double *rel,
                            double *maxabs)
{
	size_t n = (size_t)(dims[0] * dims[1] * dims[2] * dims[3]), i, k;
	uint16_t *in[3];
	float *got = xmalloc(n * sizeof(float));
	double *want = xmalloc(n * sizeof(double)), d2 = 0, r2 = 0;
	CUdeviceptr dev[3], ref;
	int B = (int)dims[0], H = (int)dims[1], S = (int)dims[2], Dd = (int)dims[3];
	float scale = (float)(1.0 / sqrt((double)dims[3]));
	void *params[] = {&dev[0], &dev[1], &dev[2], &ref, &B, &H, &S, &Dd, &scale};
	unsigned long long z = 7;

	for (k = 0; k < 3; k++) {
		in[k] = xmalloc(n * 2);
		for (i = 0; i < n; i++) { /* uniform in [-2, 2): what fp16 holds exactly enough */
			z = z * 6364136223846793005ULL + 1442695040888963407ULL;
			in[k][i] = cuda_float_to_half((float)((double)(z >> 11) * 0x1p-53 * 4 - 2));
		}
		CU_CHECK(cuda.MemAlloc(&dev[k], n * 2));
		CU_CHECK(cuda.MemcpyHtoD(dev[k], in[k], n * 2));
	}
	CU_CHECK(cuda.MemAlloc(&ref, n * 4));
	CU_CHECK(cuda.MemsetD16(ref, 0x7e00, n * 2));
	CU_CHECK(cuda.LaunchKernel(fn, (unsigned)((S + 127) / 128), (unsigned)H, (unsigned)B, 128,
	                           1, 1, 0, stream, params, NULL));
	CU_CHECK(cuda.StreamSynchronize(stream));
	CU_CHECK(cuda.MemcpyDtoH(got, ref, n * 4));
	if (attention_cpu_reference(in[0], in[1], in[2], want, dims) < 0)
		return -1;
	*maxabs = 0;
	for (i = 0; i < n; i++) {
		double e = fabs(got[i] - want[i]);

		if (!(e <= *maxabs)) /* NaN counts as the worst */
			*maxabs = isnan(e) ? INFINITY : e;
		d2 += e * e;
		r2 += want[i] * want[i];
	}
	*rel = sqrt(d2 / r2);
	for (k = 0; k < 3; k++) {
		cuda.MemFree(dev[k]);
		free(in[k]);
	}
	cuda.MemFree(ref);
	free(got);
	free(want);
	return 0;
}

static void test_reference_against_cpu(void)
{
	static const long long shapes[][4] = {
	    {1, 2, 64, 64}, {2, 1, 200, 64}, {1, 1, 130, 128}, {1, 1, 1, 64}};
	char why[256], *path = cubin("attention_ref"), *image;
	CUcontext ctx;
	CUdevice dev;
	CUmodule mod;
	CUfunction fn;
	CUstream stream;
	double rel = 0, maxabs = 0;
	size_t i;

	if (cuda_load(why, sizeof(why)) < 0 || cuda.DeviceGet(&dev, 0) ||
	    cuda.DevicePrimaryCtxRetain(&ctx, dev) || cuda.CtxSetCurrent(ctx) ||
	    cuda.StreamCreate(&stream, 0)) {
		check(0, "reference-vs-cpu", "no CUDA context: %s", why);
		free(path);
		return;
	}
	if (read_file(path, &image, NULL) < 0 || cuda.ModuleLoadData(&mod, image) ||
	    cuda.ModuleGetFunction(&fn, mod, "attention_ref")) {
		check(0, "reference-vs-cpu", "cannot load '%s'", path);
		free(path);
		return;
	}
	free(image);
	for (i = 0; i < ARRAY_SIZE(shapes); i++) {
		const long long *d = shapes[i];
		char name[64];

		snprintf(name, sizeof(name), "reference-vs-cpu %lldx%lldx%lldx%lld", d[0], d[1],
		         d[2], d[3]);
		if (ref_vs_cpu_shape(fn, stream, d, &rel, &maxabs) < 0) {
			check(0, name, "CUDA error %s", cuda_error_name(cuda_last_error()));
			continue;
		}
		/* fp32 arithmetic on O(1) values: far below fp16 resolution */
		check(rel < 1e-5 && maxabs < 1e-4, name, "rel_l2 %.3g, max_abs %.3g", rel, maxabs);
	}
	cuda.ModuleUnload(mod);
	cuda.StreamDestroy(stream);
	free(path);
	/* keep the context: the flatness test reads device memory through it */
}

/* ------------------------------------------------------ worker cases */

static void expect(struct worker *w, const char *test, const char *kernel, int outcome,
                   const char *needle, void (*tweak)(struct worker_job *))
{
	struct worker_job job;
	struct job_paths p;
	struct worker_result res;
	int r;

	job_init(&job, &p, kernel);
	shape(&job, "small", 1, 2, 256);
	if (tweak)
		tweak(&job);
	r = eval(w, &job, &res);
	check(r == 0 && res.outcome == outcome && (!needle || strstr(res.reason, needle)), test,
	      "%s (%s)", r < 0 ? "error" : outcome_name(res.outcome), res.reason);
	worker_result_release(&res);
	job_release(&job, &p);
}

/* An arrival counter after the attention arguments: one int of scratch, 'init: zeros-once'. */
static void counter_once(struct worker_job *job)
{
	struct worker_shape_job *s = &job->shapes[0];
	struct worker_buf *b = &s->bufs[s->nbufs];

	memset(b, 0, sizeof(*b));
	snprintf(b->name, sizeof(b->name), "Count");
	b->dtype = b->ref_dtype = DT_I32;
	b->count = 1;
	b->role = ROLE_SCRATCH;
	b->fill = FILL_ZEROS_ONCE;
	arg_buf(&s->calls[0], (int)s->nbufs++);
	job->time_it = 1; /* the checks zero it before each run: only timing shows a stale count */
}

/* Timed back to back with programmatic stream serialization (a sidecar's pdl). */
static void pdl_on(struct worker_job *job)
{
	job->shapes[0].calls[0].pdl = 1;
	job->time_it = 1; /* the checks launch one call at a time: only timing overlaps calls */
}

static void pdl_off(struct worker_job *job)
{
	job->time_it = 1;
}

static void test_good_candidate(struct worker *w, const char *test)
{
	struct worker_job job;
	struct job_paths p;
	struct worker_result res;
	size_t i, j;
	int ok, r;

	job_init(&job, &p, "attn_half");
	shape(&job, "small", 1, 2, 256);
	shape(&job, "ragged", 2, 4, 1000); /* S not a multiple of the block */
	job.time_it = 1;
	r = eval(w, &job, &res);
	ok = r == 0 && res.outcome == VARIANT_OK && res.nshapes == 2;
	for (i = 0; ok && i < 2; i++) {
		ok = res.shapes[i].rel_l2 < 2e-3 && res.shapes[i].max_abs < 1e-2 &&
		     res.shapes[i].nsamples == 10;
		for (j = 0; ok && j < res.shapes[i].nsamples; j++)
			ok = res.shapes[i].samples_us[j] > 0 &&
			     isfinite(res.shapes[i].samples_us[j]);
	}
	check(ok, test, "%s; rel_l2 %.3g / %.3g, max_abs %.3g / %.3g, first samples %.2f / %.2f us",
	      r < 0 ? "error" : outcome_name(res.outcome), res.shapes[0].rel_l2,
	      res.shapes[1].rel_l2, res.shapes[0].max_abs, res.shapes[1].max_abs,
	      res.shapes[0].nsamples ? res.shapes[0].samples_us[0] : -1,
	      res.shapes[1].nsamples ? res.shapes[1].samples_us[0] : -1);
	worker_result_release(&res);
	job_release(&job, &p);
}

static void nan_geometry(struct worker_job *job)
{
	flat_grid(&job->shapes[0], 256, 1);
}

static void race_geometry(struct worker_job *job)
{
	flat_grid(&job->shapes[0], 32, 1);
	job->shapes[0].calls[0].block[0] = 64; /* two warps per 32 outputs */
}

static void misalign_geometry(struct worker_job *job)
{
	flat_grid(&job->shapes[0], 128, 8);
	job->shapes[0].calls[0].smem = 128 * 16 + 16;
}

static void sanitize_geometry(struct worker_job *job)
{
	misalign_geometry(job);
	job->sanitize = 1;
}

static void short_timeout(struct worker_job *job)
{
	job->timeout_s = 3;
	job->shapes[0].calls[0].grid[0] = 1;
}

static void test_race(struct worker *w)
{
	struct worker_job job;
	struct job_paths p;
	struct worker_result res;
	int r;

	job_init(&job, &p, "race");
	shape(&job, "small", 1, 2, 256);
	race_geometry(&job);
	r = eval(w, &job, &res);
	/* REJECT_RACE is the aim; REJECT_WRONG (the same wrong answer twice) still rejects it */
	check(r == 0 && (res.outcome == REJECT_RACE || res.outcome == REJECT_WRONG), "race",
	      "%s (%s)", r < 0 ? "error" : outcome_name(res.outcome), res.reason);
	if (r == 0 && res.outcome != REJECT_RACE)
		info("the race showed as a wrong answer, not as two different answers");
	worker_result_release(&res);
	job_release(&job, &p);
}

static void test_sanitize(struct worker *w)
{
	struct worker_job job;
	struct job_paths p;
	struct worker_result res;
	int r;

	job_init(&job, &p, "misalign");
	free(p.cand);
	p.cand = cubin("misalign_san");
	job.cubin_path = p.cand;
	shape(&job, "small", 1, 2, 256);
	sanitize_geometry(&job);
	r = eval(w, &job, &res);
	check(r == 0 && res.outcome == REJECT_ALIGN &&
	          strstr(res.reason, "misaligned cp.async writes; first: thread (") &&
	          strstr(res.reason, "shared address 0x"),
	      "sanitize-misaligned-cp.async", "%s (%s)",
	      r < 0 ? "error" : outcome_name(res.outcome), res.reason);
	worker_result_release(&res);
	job_release(&job, &p);
}

static double median(double *v, size_t n)
{
	size_t i, j;

	for (i = 1; i < n; i++)
		for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The copy kernel moves 4 bytes per element (2 read, 2 written): H100 HBM3 copies ~3 TB/s. */
static void test_copy_timing(struct worker *w)
{
	struct worker_job job;
	struct job_paths p;
	struct worker_result res;
	double us = 0, tbs = 0, hot_us = 0;
	long long n = 16LL * 16 * 1024 * 64;
	int r;

	job_init(&job, &p, "copy");
	shape(&job, "copy", 16, 16, 1024);
	job.shapes[0].calls[0].grid[0] = 132 * 8;
	job.shapes[0].calls[0].grid[1] = job.shapes[0].calls[0].grid[2] = 1;
	job.shapes[0].calls[0].block[0] = 256;
	tolerances(&job, 1e30, 1e30); /* not attention: any finite output passes */
	job.check_seeds = 1;
	job.time_it = 1;
	job.warmup = 5;
	job.repeats = 30;
	job.launches = 20;
	r = eval(w, &job, &res);
	if (r == 0 && res.outcome == VARIANT_OK && res.shapes[0].nsamples == 30) {
		us = median(res.shapes[0].samples_us, 30);
		tbs = 4.0 * (double)n / (us * 1e-6) / 1e12;
	}
	check(tbs > 1.5 && tbs < 6.0, "timing-copy-bandwidth",
	      "%s; median %.2f us per launch = %.2f TB/s (expected 3 within a factor of 2)",
	      r < 0 ? "error" : outcome_name(res.outcome), us, tbs);
	worker_result_release(&res);
	/* the same in a hot cache, on a shape that fits in L2: must not be slower than cold */
	job.nshapes = 0;
	shape(&job, "copy-small", 1, 8, 1024);
	tolerances(&job, 1e30, 1e30);
	job.shapes[0].calls[0].grid[0] = 132 * 2;
	job.shapes[0].calls[0].grid[1] = job.shapes[0].calls[0].grid[2] = 1;
	job.shapes[0].calls[0].block[0] = 256;
	r = eval(w, &job, &res);
	if (r == 0 && res.outcome == VARIANT_OK)
		us = median(res.shapes[0].samples_us, res.shapes[0].nsamples);
	worker_result_release(&res);
	job.l2_hot = 1;
	r = eval(w, &job, &res);
	if (r == 0 && res.outcome == VARIANT_OK)
		hot_us = median(res.shapes[0].samples_us, res.shapes[0].nsamples);
	worker_result_release(&res);
	info("copy of 1x8x1024x64 (1 MB in, 1 MB out): cold %.2f us, hot %.2f us per launch", us,
	     hot_us);
	check(hot_us > 0 && us > 0 && hot_us <= us * 1.1, "timing-l2-hot-not-slower",
	      "cold %.2f us, hot %.2f us", us, hot_us);
	job_release(&job, &p);
}

static long child_rss_kb(long pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6))
			kb = atol(line + 6);
	fclose(f);
	return kb;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1;
}

/* Thousands of jobs must not grow the child's memory, the device's memory or our descriptors. */
static void test_flat_over_many_jobs(struct worker *w)
{
	struct worker_job job;
	struct job_paths p;
	struct worker_result res;
	long rss0 = 0, rss1 = 0, pid = 0;
	size_t free0 = 0, free1 = 0, total;
	int fds0 = 0, fds1 = 0, i, bad = 0, njobs = 600;
	double t0 = 0;

	job_init(&job, &p, "attn_half");
	shape(&job, "tiny", 1, 1, 128);
	shape(&job, "tiny2", 1, 2, 64);
	for (i = 0; i < njobs; i++) {
		if (worker_eval(w, &job, &res) < 0 || res.outcome != VARIANT_OK)
			bad++;
		worker_result_release(&res);
		if (i == 99) {
			pid = worker_pid(w);
			rss0 = child_rss_kb(pid);
			fds0 = count_fds();
			cuda.MemGetInfo(&free0, &total);
			t0 = now_seconds();
		}
	}
	rss1 = child_rss_kb(pid);
	fds1 = count_fds();
	cuda.MemGetInfo(&free1, &total);
	info("%d check jobs: %.2f ms per job (module load, 2 shapes x 2 seeds x 2 runs, compare)",
	     njobs - 100, (now_seconds() - t0) * 1000 / (njobs - 100));
	check(!bad && worker_pid(w) == pid && rss1 - rss0 < 4096 && fds1 == fds0 &&
	          (long long)free0 - (long long)free1 < (16LL << 20),
	      "flat-over-many-jobs",
	      "%d failed; child %ld -> %ld: RSS %ld -> %ld kB, fds %d -> %d, device free %zu -> "
	      "%zu MB",
	      bad, pid, worker_pid(w), rss0, rss1, fds0, fds1, free0 >> 20, free1 >> 20);
	job_release(&job, &p);
}

static void big_smem(struct worker_job *job)
{
	job->shapes[0].calls[0].smem =
	    100 * 1024; /* unused by the kernel, but needs the opt-in to launch */
}

static void too_much_smem(struct worker_job *job)
{
	job->shapes[0].calls[0].smem = 300 * 1024; /* past the 227 KB any sm_90 block may have */
}

static void no_such_kernel(struct worker_job *job)
{
	snprintf(job->shapes[0].calls[0].kernel, sizeof(job->shapes[0].calls[0].kernel),
	         "attn_half_typo");
}

/* Errors that leave the context usable are the variant's result, and the child stays. */
static void test_soft_errors(struct worker *w)
{
	struct worker_job job;
	struct job_paths p;
	struct worker_result res;
	long pid;
	int r;

	expect(w, "smem-opt-in-100KB", "attn_half", VARIANT_OK, NULL, big_smem);
	pid = worker_pid(w);
	expect(w, "smem-300KB-refused", "attn_half", REJECT_RUNTIME_FAULT,
	       "CUDA_ERROR_INVALID_VALUE", too_much_smem);
	expect(w, "missing-kernel", "attn_half", REJECT_RUNTIME_FAULT, "CUDA_ERROR_NOT_FOUND",
	       no_such_kernel);
	check(worker_pid(w) == pid, "soft-errors-keep-the-worker", "pid %ld -> %ld", pid,
	      worker_pid(w));
	/* a broken reference is the evaluation's failure, not the variant's */
	job_init(&job, &p, "attn_half");
	shape(&job, "small", 1, 2, 256);
	job.ref_cubin_path = "/nonexistent/attention_ref.cubin";
	r = worker_eval(w, &job, &res);
	check(r < 0 && worker_pid(w) == pid, "bad-reference-is-an-error", "worker_eval %d, pid %ld",
	      r, worker_pid(w));
	worker_result_release(&res);
	job_release(&job, &p);
	expect(w, "good-after-bad-reference", "attn_half", VARIANT_OK, NULL, NULL);
}

/*
 * What the first job on the default config's largest shape costs (fresh inputs and the
 * reference kernel) against the next (cached): informational, for the timeout setting.
 */
static void reference_cost_info(struct worker *w)
{
	struct worker_job job;
	struct job_paths p;
	struct worker_result res;
	double t[2];
	int i;

	job_init(&job, &p, "copy");
	free(p.cand);
	p.cand = cubin("copy128");
	job.cubin_path = p.cand;
	cur_d = 128;
	shape(&job, "d128", 4, 16, 4096);
	cur_d = 64;
	job.shapes[0].calls[0].grid[0] = 132 * 8;
	job.shapes[0].calls[0].grid[1] = job.shapes[0].calls[0].grid[2] = 1;
	job.shapes[0].calls[0].block[0] = 256;
	tolerances(&job, 1e30, 1e30);
	job.timeout_s = 120;
	for (i = 0; i < 2; i++) {
		double t0 = now_seconds();

		if (worker_eval(w, &job, &res) < 0 || res.outcome != VARIANT_OK)
			info("d128 job %d: %s", i, res.reason);
		t[i] = now_seconds() - t0;
		worker_result_release(&res);
	}
	info("shape 4x16x4096x128, 2 seeds: first job %.2f s (inputs and reference), then %.2f s",
	     t[0], t[1]);
	job_release(&job, &p);
}

/* The colleague's FlashAttention family, if its cubins were built: informational. */
static void flash_info(struct worker *w)
{
	static const char *const names[] = {"flash_fwd", "flash_fwd_plant", "flash_fwd_plant_san"};
	struct worker_job job;
	struct job_paths p;
	struct worker_result res;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(names); i++) {
		job_init(&job, &p, "flash_fwd");
		free(p.cand);
		p.cand = cubin(names[i]);
		if (!exists(p.cand)) {
			info("%s: not built", names[i]);
			job_release(&job, &p);
			continue;
		}
		job.cubin_path = p.cand;
		shape(&job, "mission", 1, 8, 512);
		shape(&job, "long", 2, 8, 2048);
		for (int s = 0; s < 2; s++) {
			job.shapes[s].calls[0].grid[0] = s ? 2048 / 64 : 512 / 64;
			job.shapes[s].calls[0].smem =
			    27648; /* baseline: (64 + 2 * 64) * (64 + 8) * 2 */
		}
		job.sanitize = strstr(names[i], "_san") != NULL;
		job.time_it = !job.sanitize;
		job.repeats = 30;
		job.launches = 20;
		if (worker_eval(w, &job, &res) == 0) {
			info("%s: %s %s", names[i], outcome_name(res.outcome), res.reason);
			if (res.outcome == VARIANT_OK)
				info("%s: mission %.2f us, long %.2f us (median), rel_l2 %.2g / "
				     "%.2g",
				     names[i],
				     median(res.shapes[0].samples_us, res.shapes[0].nsamples),
				     median(res.shapes[1].samples_us, res.shapes[1].nsamples),
				     res.shapes[0].rel_l2, res.shapes[1].rel_l2);
		} else {
			info("%s: evaluation error", names[i]);
		}
		worker_result_release(&res);
		job_release(&job, &p);
	}
}

int main(int argc, char **argv)
{
	struct worker *w = NULL;
	char why[256], name[128], driver[32];
	int sm = 0;
	long long smem = 0;
	long pid;

	if (argc > 1 && !strcmp(argv[1], "__worker"))
		return worker_main(argc - 1, argv + 1);
	if (argc != 2) {
		fprintf(stderr, "usage: %s KERNEL-DIR (cubins built by tests/gpu/run.sh)\n",
		        argv[0]);
		return 2;
	}
	kdir = argv[1];
	setvbuf(stdout, NULL, _IOLBF, 0);

	test_reference_against_cpu();
	if (worker_start(&w, why, sizeof(why)) < 0) {
		check(0, "worker-start", "%s", why);
		printf("%d passed, %d failed\n", passed, failed);
		return 1;
	}
	worker_device(w, name, sizeof(name), driver, sizeof(driver), &sm, &smem);
	check(sm > 0 && smem >= 48 * 1024, "worker-start",
	      "%s, CUDA driver %s, %d SMs, %lld B smem", name, driver, sm, smem);

	test_good_candidate(w, "good-candidate");
	pid = worker_pid(w);
	expect(w, "nan-output", "nan_out", REJECT_WRONG, "NaN or Inf", nan_geometry);
	check(worker_pid(w) == pid, "wrong-keeps-the-worker", "pid %ld -> %ld", pid, worker_pid(w));
	/* Scratch zeroed once must be left at zero by every call; the output alone cannot tell. */
	expect(w, "zeros-once-left-at-zero", "counter_reset", VARIANT_OK, NULL, counter_once);
	expect(w, "zeros-once-left-behind", "counter_stale", REJECT_WRONG,
	       "scratch 'Count' (init: zeros-once) was not left at zero", counter_once);
	/*
	 * PDL: a kernel that triggers its dependents at entry and does not wait is caught when
	 * its calls overlap, which they do only if the launch carries the attribute.
	 */
	expect(w, "pdl-no-wait-overlaps", "pdl_nowait", REJECT_WRONG,
	       "results change from launch to launch", pdl_on);
	expect(w, "pdl-no-wait-plain-launch", "pdl_nowait", VARIANT_OK, NULL, pdl_off);
	expect(w, "pdl-wait", "pdl_wait", VARIANT_OK, NULL, pdl_on);
	test_race(w);
	expect(w, "misaligned-cp.async", "misalign", REJECT_RUNTIME_FAULT,
	       "CUDA_ERROR_MISALIGNED_ADDRESS", misalign_geometry);
	check(worker_pid(w) == 0, "fault-retires-the-worker", "pid %ld", worker_pid(w));
	test_good_candidate(w, "good-after-misaligned");
	expect(w, "out-of-bounds-write", "oob", REJECT_RUNTIME_FAULT, "CUDA_ERROR_ILLEGAL_ADDRESS",
	       NULL);
	test_good_candidate(w, "good-after-illegal-address");
	{
		double t0 = now_seconds(), dt;

		expect(w, "infinite-loop", "spin", REJECT_TIMEOUT, "timed out after 3.0 s",
		       short_timeout);
		dt = now_seconds() - t0;
		check(dt < 15, "timeout-is-prompt", "%.1f s for a 3 s watchdog", dt);
	}
	test_good_candidate(w, "good-after-timeout");
	test_sanitize(w);
	test_copy_timing(w);
	test_soft_errors(w);
	test_flat_over_many_jobs(w);
	reference_cost_info(w);
	flash_info(w);
	worker_stop(w);
	printf("test_worker_gpu: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
