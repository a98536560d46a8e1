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
#include "gpu/attention_cpu.h"
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

/* ------------------------------------------------------------ protocol */

static void fill_job(struct worker_job *job)
{
	struct worker_shape_job *s;
	struct worker_call *c;

	memset(job, 0, sizeof(*job));
	job->cubin_path = "/tmp/cache/ab cd.cubin";
	job->ref_cubin_path = "odd\\path\nwith newline=and equals";
	job->support_path = "/tmp/cache/support.cubin";
	s = worker_job_shape(job);
	snprintf(s->name, sizeof(s->name), "mission");
	snprintf(s->dims, sizeof(s->dims), "B=1,H=8,S=512,D=64");
	s->nbufs = 2;
	snprintf(s->bufs[0].name, sizeof(s->bufs[0].name), "Q");
	s->bufs[0].dtype = 1;
	s->bufs[0].count = 262144;
	s->bufs[0].fill = 1;
	s->bufs[0].fa = -0.5;
	s->bufs[0].fb = 0.1 + 0.2; /* not exact in decimal: needs all 17 digits */
	snprintf(s->bufs[1].name, sizeof(s->bufs[1].name), "O");
	s->bufs[1].role = 1;
	s->bufs[1].ref_dtype = 2;
	s->bufs[1].count = 18446744073709551615ull;
	s->bufs[1].rel_l2 = 1e-2;
	s->bufs[1].max_abs = 2e-2;
	s->bufs[1].cosine = 0.999;
	s->ntmaps = 1;
	s->tmaps[0].buffer = 1;
	s->tmaps[0].rank = 3;
	s->tmaps[0].swizzle = 128;
	s->tmaps[0].dims[0] = 64;
	s->tmaps[0].dims[2] = 1ULL << 40;
	s->tmaps[0].strides[1] = 128;
	s->tmaps[0].box[1] = 256;
	s->ncalls = 1;
	c = &s->calls[0];
	snprintf(c->kernel, sizeof(c->kernel), "flash_fwd");
	c->grid[0] = 8;
	c->grid[1] = 8;
	c->grid[2] = 1;
	c->block[0] = 128;
	c->block[1] = c->block[2] = 1;
	c->cluster[0] = 2;
	c->pdl = 1;
	c->smem = 110592;
	c->nargs = 3;
	c->args[0].kind = 0;
	c->args[0].index = 1;
	c->args[1].kind = 3;
	c->args[1].bits = 0x3e000000;
	c->args[2].kind = 5;
	c->args[2].index = 0;
	s->nref = 1;
	s->ref[0] = *c;
	s->ref[0].grid[0] = 4294967295u;
	s = worker_job_shape(job);
	snprintf(s->name, sizeof(s->name), "d128~S=4093");
	s->check_only = 1;
	s->ncalls = s->nref = 1;
	s->calls[0] = job->shapes[0].calls[0];
	s->calls[0].nargs = 0;
	memset(s->calls[0].args, 0, sizeof(s->calls[0].args));
	s->ref[0] = s->calls[0];
	job->check_seeds = 2;
	job->seed = 18446744073709551615ull;
	job->warmup = 10;
	job->repeats = 30;
	job->min_repeats = 5;
	job->rel_ci = 0.01;
	job->launches = 20;
	job->l2_hot = 1;
	job->timeout_s = 2.5;
	job->sanitize = 1;
	job->check = 1;
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
	assert_string_equal(b.ref_cubin_path, a.ref_cubin_path);
	assert_string_equal(b.support_path, a.support_path);
	assert_int_equal(b.nshapes, 2);
	assert_memory_equal(b.shapes, a.shapes, 2 * sizeof(a.shapes[0]));
	assert_true(b.timeout_s == a.timeout_s && b.rel_ci == a.rel_ci);
	assert_true(b.seed == a.seed);
	assert_true(b.check_seeds == 2 && b.warmup == 10 && b.repeats == 30 && b.launches == 20);
	assert_true(b.min_repeats == 5 && b.l2_hot == 1 && b.sanitize == 1 && b.time_it == 1);
	assert_true(b.check == 1);
	worker_job_release(&a);
	worker_job_release(&b);
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
	char badshape[] = "type=job\nnshapes=1\nshape.1.name=x\n";
	char badarg[] = "type=job\nnshapes=1\nshape.0.counts=1 0 1 0\nshape.0.call.0=k 1 1 1 1 1 "
			"1 0 0 0 0 0 1 0:3:0\n";
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
	/* an argument naming buffer 3 of a shape with one */
	capture_start();
	assert_int_equal(worker_job_decode(badarg, strlen(badarg), &job), -1);
	assert_non_null(strstr(captured, "names nothing"));
	assert_int_equal(worker_job_decode(notjob, strlen(notjob), &job), -1);
	assert_int_equal(worker_job_decode(noeq, strlen(noeq), &job), -1);
	assert_int_equal(worker_result_decode(badout, strlen(badout), &res, &flags), -1);
	assert_int_equal(nerrors, 4);
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
	int i;

	memset(job, 0, sizeof(*job));
	job->cubin_path = "none.cubin";
	for (i = 0; i < 2; i++) {
		struct worker_shape_job *s = worker_job_shape(job);

		snprintf(s->name, sizeof(s->name), "%c", 'a' + i);
		s->ncalls = s->nref = 1;
		snprintf(s->calls[0].kernel, sizeof(s->calls[0].kernel), "%s", kernel);
		snprintf(s->ref[0].kernel, sizeof(s->ref[0].kernel), "reference");
	}
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
	worker_job_release(&job);
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
	worker_job_release(&job);
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
	worker_job_release(&job);
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
	worker_job_release(&job);
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
	worker_job_release(&job);
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
		worker_job_release(&job);
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
