/* Unit tests of the GPU worker that need no GPU: protocol, watchdog, restarts, fp16, reference. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture.h"
#include "tuner/attention_gpu.h"
#include "tuner/cuda.h"
#include "tuner/worker.h"

/* ------------------------------------------------------ error capture */

static int setup(void **state)
{
	capture_start();
	return 0;
}

static int teardown(void **state)
{
	capture_stop();
	unsetenv("TUNER_WORKER_FAKE");
	unsetenv("TUNER_LIBCUDA");
	return 0;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own descriptor */
}

/* ---------------------------------------------------------------- half */

static void test_half_exact_values(void **state)
{
	assert_int_equal(cuda_float_to_half(1.0f), 0x3c00);
	assert_int_equal(cuda_float_to_half(-2.0f), 0xc000);
	assert_int_equal(cuda_float_to_half(65504.0f), 0x7bff);
	assert_int_equal(cuda_float_to_half(0x1p-14f), 0x0400); /* smallest normal */
	assert_int_equal(cuda_float_to_half(0x1p-24f), 0x0001); /* smallest subnormal */
	assert_int_equal(cuda_float_to_half(-0.0f), 0x8000);
	assert_int_equal(cuda_float_to_half(INFINITY), 0x7c00);
	assert_int_equal(cuda_float_to_half(-INFINITY), 0xfc00);
	assert_true((cuda_float_to_half(NAN) & 0x7c00) == 0x7c00);
	assert_true((cuda_float_to_half(NAN) & 0x03ff) != 0);
	assert_true(cuda_half_to_float(0x3c00) == 1.0f);
	assert_true(cuda_half_to_float(0xc000) == -2.0f);
	assert_true(cuda_half_to_float(0x7bff) == 65504.0f);
	assert_true(cuda_half_to_float(0x0001) == 0x1p-24f);
	assert_true(cuda_half_to_float(0x0400) == 0x1p-14f);
	assert_true(cuda_half_to_float(0x3555) == 0x1.554p-2f); /* ~1/3 */
	assert_true(isinf(cuda_half_to_float(0xfc00)) && cuda_half_to_float(0xfc00) < 0);
	assert_true(isnan(cuda_half_to_float(0x7e00))); /* the worker's poison */
	assert_true(isnan(cuda_half_to_float(0xffff)));
}

static void test_half_rounds_to_nearest_even(void **state)
{
	/* ties between two halves go to the even mantissa */
	assert_int_equal(cuda_float_to_half(1.0f + 0x1p-11f), 0x3c00);
	assert_int_equal(cuda_float_to_half(1.0f + 3 * 0x1p-11f), 0x3c02);
	assert_int_equal(cuda_float_to_half(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);
	/* overflow: 65520 is the tie between 65504 and 65536 (inf) */
	assert_int_equal(cuda_float_to_half(65519.0f), 0x7bff);
	assert_int_equal(cuda_float_to_half(65520.0f), 0x7c00);
	assert_int_equal(cuda_float_to_half(1e10f), 0x7c00);
	/* subnormals: 2^-25 ties to 0, just above goes to 1 unit, 3 * 2^-25 ties up to 2 units */
	assert_int_equal(cuda_float_to_half(0x1p-25f), 0x0000);
	assert_int_equal(cuda_float_to_half(0x1.01p-25f), 0x0001);
	assert_int_equal(cuda_float_to_half(3 * 0x1p-25f), 0x0002);
	assert_int_equal(cuda_float_to_half(5 * 0x1p-25f), 0x0002);
	assert_int_equal(cuda_float_to_half(1e-10f), 0x0000);
	/* the largest subnormal rounds up into the smallest normal */
	assert_int_equal(cuda_float_to_half(0x1p-14f - 0x1p-26f), 0x0400);
}

static void test_half_round_trips_every_value(void **state)
{
	unsigned h;

	for (h = 0; h < 0x10000; h++) {
		float f = cuda_half_to_float((uint16_t)h);

		if (isnan(f))
			continue;
		if (cuda_float_to_half(f) != h)
			fail_msg("half 0x%04x -> %a -> 0x%04x", h, (double)f,
			         cuda_float_to_half(f));
	}
}

/* ------------------------------------------------------- CPU reference */

static void to_half(const double *x, uint16_t *h, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		h[i] = cuda_float_to_half((float)x[i]);
}

static void test_cpu_reference_hand_case(void **state)
{
	/* B = H = 1, S = 2, D = 1, scale 1: row i's weights are softmax(q_i * k). */
	const double q[] = {1, 2}, k[] = {0, 1}, v[] = {1, 3};
	const long long dims[] = {1, 1, 2, 1};
	uint16_t qh[2], kh[2], vh[2];
	double out[2], e = exp(1.0), e2 = exp(2.0);

	to_half(q, qh, 2);
	to_half(k, kh, 2);
	to_half(v, vh, 2);
	assert_int_equal(attention_cpu_reference(qh, kh, vh, out, dims), 0);
	assert_true(fabs(out[0] - (1 + 3 * e) / (1 + e)) < 1e-12);
	assert_true(fabs(out[1] - (1 + 3 * e2) / (1 + e2)) < 1e-12);
}

static void test_cpu_reference_scales_by_sqrt_d(void **state)
{
	/* D = 4: q.k1 = 4, times 1/sqrt(4) = 2, so row 0 weighs key 1 by e^2 against 1 */
	const double q[] = {1, 1, 1, 1, 0, 0, 0, 0};
	const double k[] = {0, 0, 0, 0, 1, 1, 1, 1};
	const double v[] = {1, 0, 0, 0, 0, 1, 0, 0};
	const long long dims[] = {1, 1, 2, 4};
	uint16_t qh[8], kh[8], vh[8];
	double out[8], w = exp(2.0) / (1 + exp(2.0));

	to_half(q, qh, 8);
	to_half(k, kh, 8);
	to_half(v, vh, 8);
	assert_int_equal(attention_cpu_reference(qh, kh, vh, out, dims), 0);
	assert_true(fabs(out[0] - (1 - w)) < 1e-12);
	assert_true(fabs(out[1] - w) < 1e-12);
	assert_true(fabs(out[2]) < 1e-15 && fabs(out[3]) < 1e-15);
	/* row 1 has q = 0: every key weighs the same, the output is the mean of V */
	assert_true(fabs(out[4] - 0.5) < 1e-12 && fabs(out[5] - 0.5) < 1e-12);
}

static void test_cpu_reference_heads_are_independent(void **state)
{
	/* B = 2, H = 1, S = 1: one key per head, so each output row is that head's V row */
	const double x[] = {0.5, -1.5, 2.0, 0.25};
	const long long dims[] = {2, 1, 1, 2};
	uint16_t h[4];
	double out[4];

	to_half(x, h, 4);
	assert_int_equal(attention_cpu_reference(h, h, h, out, dims), 0);
	assert_true(out[0] == 0.5 && out[1] == -1.5 && out[2] == 2.0 && out[3] == 0.25);
}

static void test_cpu_reference_refuses_big_shapes(void **state)
{
	const long long dims[] = {64, 64, 8192, 128};
	uint16_t h[1] = {0};
	double out[1];

	assert_int_equal(attention_cpu_reference(h, h, h, out, dims), -1);
	assert_non_null(strstr(captured, "too large"));
}

/* ------------------------------------------------- attention, GPU half */

static void test_attention_fill_is_deterministic_and_split_invariant(void **state)
{
	const struct worker_problem *p = worker_problem_find("attention");
	enum { N = 100001 };
	uint16_t *a = calloc(N, 2), *b = calloc(N, 2), *c = calloc(N, 2);
	double sum = 0, sum2 = 0;
	size_t i, zeros = 0;

	assert_non_null(p);
	assert_ptr_equal(p, &attention_gpu_problem);
	p->fill(42, 1, a, 0, N);
	p->fill(42, 1, b, 0, 333);
	p->fill(42, 1, b, 333, N);
	assert_memory_equal(a, b, N * 2);
	p->fill(43, 1, c, 0, N);
	assert_memory_not_equal(a, c, N * 2);
	p->fill(42, 2, c, 0, N); /* another input of the same seed differs too */
	assert_memory_not_equal(a, c, N * 2);
	for (i = 0; i < N; i++) {
		double x = cuda_half_to_float(a[i]);

		zeros += a[i] == 0;
		sum += x;
		sum2 += x * x;
	}
	/* N(0, 1): the mean within 5 sigma of 0, the variance within 2% of 1, never all zero */
	assert_true(fabs(sum / N) < 5 / sqrt(N));
	assert_true(fabs(sum2 / N - 1) < 0.02);
	assert_true(zeros < 10);
	free(a);
	free(b);
	free(c);
}

static void test_attention_args(void **state)
{
	const struct worker_problem *p = &attention_gpu_problem;
	const long long dims[] = {2, 8, 300, 64};
	const unsigned long long in[] = {0x1000, 0x2000, 0x3000};
	size_t in_elems[WORKER_MAX_INPUTS], out_elems;
	unsigned grid[3], block[3];
	struct worker_args a;
	char why[128];

	assert_int_equal(p->elems(dims, in_elems, &out_elems, why, sizeof(why)), 0);
	assert_int_equal(out_elems, 2 * 8 * 300 * 64);
	assert_int_equal(in_elems[2], out_elems);
	p->args(dims, in, 0x4000, &a);
	assert_int_equal(a.n, 8);
	assert_true(a.v[0].ptr == 0x1000 && a.v[3].ptr == 0x4000);
	assert_true(a.v[4].i == 2 && a.v[5].i == 8 && a.v[6].i == 300);
	assert_true(a.v[7].f == 0.125f);
	assert_ptr_equal(a.params[7], &a.v[7]);
	p->ref_args(dims, in, 0x5000, &a, grid, block);
	assert_int_equal(a.n, 9);
	assert_true(a.v[3].ptr == 0x5000 && a.v[7].i == 64 && a.v[8].f == 0.125f);
	assert_true(grid[0] == 3 && grid[1] == 8 && grid[2] == 2);
	assert_true(block[0] == 128 && block[1] == 1 && block[2] == 1);
	{
		const long long bad[] = {2, 0, 300, 64};

		assert_int_equal(p->elems(bad, in_elems, &out_elems, why, sizeof(why)), -1);
		assert_non_null(strstr(why, "H"));
	}
}

static void test_attention_compare(void **state)
{
	const struct worker_problem *p = &attention_gpu_problem;
	const float ref[4] = {1.0f, -2.0f, 0.5f, 2.0f};
	uint16_t out[4];
	struct worker_compare c;
	int i;

	for (i = 0; i < 4; i++)
		out[i] = cuda_float_to_half(ref[i]);
	p->compare(out, ref, 4, &c);
	assert_true(c.rel_l2 == 0 && c.max_abs == 0 && c.nonfinite == 0);
	out[1] = cuda_float_to_half(-1.0f); /* off by 1 where ||ref|| = sqrt(9.25) */
	p->compare(out, ref, 4, &c);
	assert_true(fabs(c.rel_l2 - 1 / sqrt(9.25)) < 1e-12);
	assert_true(c.max_abs == 1.0 && c.worst == 1);
	out[2] = p->out_poison; /* an element the kernel never wrote */
	out[3] = 0xfc00;
	p->compare(out, ref, 4, &c);
	assert_int_equal(c.nonfinite, 2);
	assert_int_equal(c.first_nonfinite, 2);
}

/* ------------------------------------------------------------ protocol */

static void fill_job(struct worker_job *job)
{
	memset(job, 0, sizeof(*job));
	job->cubin_path = "/tmp/cache/ab cd.cubin";
	job->kernel = "flash_fwd";
	job->problem = "attention";
	job->ref_cubin_path = "odd\\path\nwith newline=and equals";
	job->ref_kernel = "attention_ref";
	job->nshapes = 2;
	snprintf(job->shapes[0].name, sizeof(job->shapes[0].name), "mission");
	job->shapes[0].dims[0] = 1;
	job->shapes[0].dims[1] = 8;
	job->shapes[0].dims[2] = 512;
	job->shapes[0].dims[3] = 64;
	job->shapes[0].dims[7] = -5;
	job->shapes[0].grid[0] = 8;
	job->shapes[0].grid[1] = 8;
	job->shapes[0].grid[2] = 1;
	job->shapes[0].block[0] = 128;
	job->shapes[0].block[1] = job->shapes[0].block[2] = 1;
	job->shapes[0].smem = 110592;
	snprintf(job->shapes[1].name, sizeof(job->shapes[1].name), "d128");
	job->shapes[1].dims[3] = 128;
	job->shapes[1].grid[0] = job->shapes[1].grid[1] = job->shapes[1].grid[2] = 4294967295u;
	job->rel_l2 = 1e-2;
	job->max_abs = 0.1 + 0.2; /* not exact in decimal: needs all 17 digits */
	job->check_seeds = 2;
	job->seed = 18446744073709551615ull;
	job->warmup = 10;
	job->repeats = 30;
	job->launches = 20;
	job->l2_hot = 1;
	job->timeout_s = 2.5;
	job->sanitize = 1;
	job->time_it = 1;
}

static void test_protocol_job_round_trip(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	struct worker_job a, b;

	fill_job(&a);
	worker_job_encode(&a, &sb);
	assert_int_equal(worker_job_decode(sb.buf, sb.len, &b), 0);
	assert_string_equal(b.cubin_path, a.cubin_path);
	assert_string_equal(b.kernel, a.kernel);
	assert_string_equal(b.problem, a.problem);
	assert_string_equal(b.ref_cubin_path, a.ref_cubin_path);
	assert_string_equal(b.ref_kernel, a.ref_kernel);
	assert_int_equal(b.nshapes, 2);
	assert_memory_equal(b.shapes, a.shapes, 2 * sizeof(a.shapes[0]));
	assert_true(b.rel_l2 == a.rel_l2 && b.max_abs == a.max_abs && b.timeout_s == a.timeout_s);
	assert_true(b.seed == a.seed);
	assert_true(b.check_seeds == 2 && b.warmup == 10 && b.repeats == 30 && b.launches == 20);
	assert_true(b.l2_hot == 1 && b.sanitize == 1 && b.time_it == 1);
	sb_release(&sb);
}

static void test_protocol_result_round_trip(void **state)
{
	struct strbuf sb = STRBUF_INIT;
	struct worker_result a, b;
	unsigned flags;
	double samples[3] = {12.5, 1.0 / 3, 1e-300};

	memset(&a, 0, sizeof(a));
	a.outcome = REJECT_RUNTIME_FAULT;
	snprintf(a.reason, sizeof(a.reason), "CUDA_ERROR_MISALIGNED_ADDRESS\nin 'x'\\y");
	a.nshapes = 2;
	a.shapes[0].outcome = VARIANT_OK;
	a.shapes[0].rel_l2 = 3.25e-4;
	a.shapes[0].max_abs = INFINITY;
	a.shapes[0].samples_us = samples;
	a.shapes[0].nsamples = 3;
	a.shapes[1].outcome = REJECT_RUNTIME_FAULT;
	snprintf(a.shapes[1].reason, sizeof(a.shapes[1].reason), "shape 'd128': fault");
	worker_result_encode(&a, WORKER_RESULT_FATAL, &sb);
	assert_int_equal(worker_result_decode(sb.buf, sb.len, &b, &flags), 0);
	assert_int_equal(flags, WORKER_RESULT_FATAL);
	assert_int_equal(b.outcome, REJECT_RUNTIME_FAULT);
	assert_string_equal(b.reason, a.reason);
	assert_int_equal(b.nshapes, 2);
	assert_int_equal(b.shapes[0].outcome, VARIANT_OK);
	assert_true(b.shapes[0].rel_l2 == 3.25e-4 && isinf(b.shapes[0].max_abs));
	assert_int_equal(b.shapes[0].nsamples, 3);
	assert_memory_equal(b.shapes[0].samples_us, samples, sizeof(samples));
	assert_int_equal(b.shapes[1].outcome, REJECT_RUNTIME_FAULT);
	assert_string_equal(b.shapes[1].reason, "shape 'd128': fault");
	assert_null(b.shapes[1].samples_us);
	worker_result_release(&b);
	sb_release(&sb);
}

static void test_protocol_rejects_garbage(void **state)
{
	char unknown[] = "type=job\ncubin=a\nbogus=1\n";
	char badnum[] = "type=job\nrepeats=12x\n";
	char badshape[] = "type=job\nshape.32.name=x\n";
	char notjob[] = "type=result\n";
	char noeq[] = "type=job\ncubin\n";
	char badout[] = "type=result\noutcome=splendid\n";
	struct worker_job job;
	struct worker_result res;
	unsigned flags;

	assert_int_equal(worker_job_decode(unknown, strlen(unknown), &job), -1);
	assert_non_null(strstr(captured, "bogus"));
	assert_int_equal(worker_job_decode(badnum, strlen(badnum), &job), -1);
	assert_int_equal(worker_job_decode(badshape, strlen(badshape), &job), -1);
	assert_int_equal(worker_job_decode(notjob, strlen(notjob), &job), -1);
	assert_int_equal(worker_job_decode(noeq, strlen(noeq), &job), -1);
	assert_int_equal(worker_result_decode(badout, strlen(badout), &res, &flags), -1);
	assert_int_equal(nerrors, 6);
}

/* ------------------------------------------------------- the process */

static void test_start_without_driver_fails_cleanly(void **state)
{
	struct worker *w = (struct worker *)1;
	char why[256] = "";

	setenv("TUNER_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
	assert_int_equal(worker_start(&w, why, sizeof(why)), -1);
	assert_null(w);
	assert_non_null(strstr(why, "libcuda.so.1"));
	assert_null(strchr(why, '\n'));
	assert_int_equal(nerrors, 0); /* the reason is the caller's to print */
	/* no child is left behind */
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

static void make_job(struct worker_job *job, const char *kernel, double timeout)
{
	memset(job, 0, sizeof(*job));
	job->cubin_path = "none.cubin";
	job->kernel = kernel;
	job->problem = "attention";
	job->nshapes = 2;
	snprintf(job->shapes[0].name, sizeof(job->shapes[0].name), "a");
	snprintf(job->shapes[1].name, sizeof(job->shapes[1].name), "b");
	job->repeats = 5;
	job->time_it = 1;
	job->timeout_s = timeout;
}

static struct worker *start_fake(void)
{
	struct worker *w = NULL;
	char why[256];

	setenv("TUNER_WORKER_FAKE", "1", 1);
	if (worker_start(&w, why, sizeof(why)) < 0)
		fail_msg("worker_start: %s", why);
	return w;
}

static void eval_ok(struct worker *w)
{
	struct worker_job job;
	struct worker_result res;

	make_job(&job, "ok", 5);
	if (worker_eval(w, &job, &res) < 0)
		fail_msg("worker_eval: %s", captured);
	assert_int_equal(res.outcome, VARIANT_OK);
	assert_int_equal(res.nshapes, 2);
	assert_int_equal(res.shapes[1].nsamples, 5);
	assert_true(res.shapes[1].samples_us[4] == 2.0);
	worker_result_release(&res);
}

static void test_fake_worker_serves_jobs(void **state)
{
	struct worker *w = start_fake();
	char name[64], driver[16];
	int sm = 0;
	long long smem = 0;

	assert_int_equal(worker_device(w, name, sizeof(name), driver, sizeof(driver), &sm, &smem),
	                 0);
	assert_string_equal(name, "fake GPU (TUNER_WORKER_FAKE)");
	assert_true(sm == 1 && smem == 49152);
	assert_true(worker_pid(w) > 0);
	eval_ok(w);
	eval_ok(w);
	worker_stop(w);
}

static void test_watchdog_kills_a_hung_child_and_restarts(void **state)
{
	struct worker *w = start_fake();
	struct worker_job job;
	struct worker_result res;
	long pid = worker_pid(w);
	double t0 = now_seconds();

	make_job(&job, "hang", 0.3);
	assert_int_equal(worker_eval(w, &job, &res), 0);
	assert_int_equal(res.outcome, REJECT_TIMEOUT);
	assert_true(now_seconds() - t0 < 3);
	assert_non_null(strstr(res.reason, "timed out after 0.3 s in fake job 'hang'"));
	assert_int_equal(worker_pid(w), 0);
	assert_int_equal(kill((pid_t)pid, 0), -1); /* killed and reaped */
	worker_result_release(&res);
	eval_ok(w); /* a fresh child, transparently */
	assert_true(worker_pid(w) > 0 && worker_pid(w) != pid);
	worker_stop(w);
}

static void test_a_crashed_child_is_a_runtime_fault(void **state)
{
	struct worker *w = start_fake();
	struct worker_job job;
	struct worker_result res;

	make_job(&job, "crash", 5);
	assert_int_equal(worker_eval(w, &job, &res), 0);
	assert_int_equal(res.outcome, REJECT_RUNTIME_FAULT);
	if (strncmp(res.reason, "worker died: signal 6", 21))
		fail_msg("reason: %s", res.reason);
	worker_result_release(&res);
	eval_ok(w);
	worker_stop(w);
}

static void test_a_sticky_fault_restarts_the_child(void **state)
{
	struct worker *w = start_fake();
	struct worker_job job;
	struct worker_result res;

	make_job(&job, "fault", 5);
	assert_int_equal(worker_eval(w, &job, &res), 0);
	assert_int_equal(res.outcome, REJECT_RUNTIME_FAULT);
	assert_non_null(strstr(res.reason, "CUDA_ERROR_ILLEGAL_ADDRESS"));
	assert_int_equal(res.nshapes, 0);
	assert_int_equal(worker_pid(w), 0);
	worker_result_release(&res);
	eval_ok(w);
	worker_stop(w);
}

static void test_child_inherits_no_other_fds(void **state)
{
	int leak = open("/dev/null", O_RDONLY); /* no O_CLOEXEC: the worker must not see it */
	int dup_leak = dup(leak);
	struct worker *w;
	struct worker_job job;
	struct worker_result res;

	assert_true(leak >= 0 && dup_leak >= 0);
	w = start_fake();
	make_job(&job, "fds", 5);
	assert_int_equal(worker_eval(w, &job, &res), 0);
	assert_string_equal(res.reason, "fds 0 1 2 3");
	worker_result_release(&res);
	worker_stop(w);
	close(leak);
	close(dup_leak);
}

static void test_fds_and_children_stay_flat(void **state)
{
	int before = count_fds(), i;
	struct worker *w = start_fake();
	struct worker_job job;
	struct worker_result res;
	static const char *const kernels[] = {"ok", "crash", "ok", "fault", "ok"};

	for (i = 0; i < 40; i++) {
		make_job(&job, kernels[i % 5], 5);
		assert_int_equal(worker_eval(w, &job, &res), 0);
		worker_result_release(&res);
	}
	assert_int_equal(count_fds(), before + 1); /* the one socket of the live child */
	worker_stop(w);
	worker_stop(NULL);
	assert_int_equal(count_fds(), before);
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1); /* no zombies */
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_half_exact_values, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_half_rounds_to_nearest_even, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_half_round_trips_every_value, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cpu_reference_hand_case, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cpu_reference_scales_by_sqrt_d, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cpu_reference_heads_are_independent, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_cpu_reference_refuses_big_shapes, setup, teardown),
	    cmocka_unit_test_setup_teardown(
		test_attention_fill_is_deterministic_and_split_invariant, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_attention_args, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_attention_compare, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_protocol_job_round_trip, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_protocol_result_round_trip, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_protocol_rejects_garbage, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_start_without_driver_fails_cleanly, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_fake_worker_serves_jobs, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_watchdog_kills_a_hung_child_and_restarts, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_a_crashed_child_is_a_runtime_fault, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_a_sticky_fault_restarts_the_child, setup,
	                                    teardown),
	    cmocka_unit_test_setup_teardown(test_child_inherits_no_other_fds, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_fds_and_children_stay_flat, setup, teardown),
	};

	/* The worker re-executes this binary as its child, as it does the tuner binary. */
	if (argc > 1 && !strcmp(argv[1], "__worker"))
		return worker_main(argc - 1, argv + 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
