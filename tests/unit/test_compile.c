/* Unit tests for the compile pool: builds, compile errors, crashes and hangs as results, the cache.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compile_fixture.h"
#include "tuner/compile.h"
#include "tuner/template.h"

static char cache[64];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static int setup(void **state)
{
	snprintf(cache, sizeof(cache), "/tmp/tuner-test-compile-XXXXXX");
	if (!mkdtemp(cache))
		return -1;
	fx_capture_start();
	return 0;
}

static int teardown(void **state)
{
	set_error_routine(NULL);
	unsetenv("CUDA_HOME");
	unsetenv("TUNER_TEST_COMPILE_CRASH");
	return nftw(cache, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static const char *const sm90[] = {"--gpu-architecture=sm_90", "-std=c++17", "-Xptxas=-v"};

/* A kernel with 1 KB of static shared memory; `tag` makes distinct sources. */
static char *tiny_source(int tag)
{
	return xasprintf("#define TAG %d\n"
	                 "extern \"C\" __global__ void tiny(float *p)\n"
	                 "{\n"
	                 "\t__shared__ float s[256];\n"
	                 "\ts[threadIdx.x] = p[threadIdx.x] * TAG;\n"
	                 "\t__syncthreads();\n"
	                 "\tp[threadIdx.x] = s[255 - threadIdx.x];\n"
	                 "}\n",
	                 tag);
}

static void job_init(struct compile_job *job, const char *key, char *source, const char *name)
{
	memset(job, 0, sizeof(*job));
	snprintf(job->key, sizeof(job->key), "%s", key);
	job->source = source;
	job->name = name;
	job->entry = "tiny";
	job->options = (char **)sm90;
	job->noptions = ARRAY_SIZE(sm90);
}

static int file_exists(const char *key, const char *ext)
{
	char *path = xasprintf("%s/%s.%s", cache, key, ext);
	struct stat st;
	int ok = stat(path, &st) == 0;

	free(path);
	return ok;
}

/* Submit one job to a fresh pool and wait for it. */
static void compile_one(struct compile_job *job)
{
	struct compile_pool *pool = compile_pool_new(1, cache);

	assert_non_null(pool);
	compile_pool_submit(pool, job);
	assert_ptr_equal(compile_pool_next(pool), job);
	assert_null(compile_pool_next(pool));
	compile_pool_free(pool);
}

/* ----------------------------------------------------------------- builds */

static void test_tiny_kernel_and_cache_hit(void **state)
{
	struct compile_job job, again;
	char *src = tiny_source(3);
	struct stat st;

	job_init(&job, "00000000000000000000000000000001", src, "tiny.cu");
	compile_one(&job);
	assert_int_equal(job.result.outcome, VARIANT_OK);
	assert_false(job.result.cached);
	assert_true(job.result.seconds > 0);
	assert_true(job.result.regs > 0 && job.result.regs <= 255);
	assert_int_equal(job.result.static_smem, 1024);
	assert_int_equal(job.result.spill_stores + job.result.spill_loads, 0);
	assert_non_null(strstr(job.result.log, "Compiling entry function 'tiny'"));
	assert_non_null(job.result.cubin_path);
	assert_int_equal(stat(job.result.cubin_path, &st), 0);
	assert_int_equal((size_t)st.st_size, job.result.cubin_size);
	assert_true(file_exists(job.key, "log") && file_exists(job.key, "meta"));

	/* Same key, a new pool (nothing in memory): served from the cache, not recompiled. */
	job_init(&again, job.key, src, "tiny.cu");
	compile_one(&again);
	assert_int_equal(again.result.outcome, VARIANT_OK);
	assert_true(again.result.cached);
	assert_true(again.result.seconds == 0);
	assert_int_equal(again.result.regs, job.result.regs);
	assert_int_equal(again.result.static_smem, 1024);
	assert_int_equal(again.result.stack_frame, job.result.stack_frame);
	assert_string_equal(again.result.cubin_path, job.result.cubin_path);
	assert_int_equal(again.result.cubin_size, job.result.cubin_size);
	assert_string_equal(again.result.log, job.result.log);

	/* A half-written entry (no meta) is not a hit. */
	{
		char *meta = xasprintf("%s/%s.meta", cache, job.key);

		assert_int_equal(unlink(meta), 0);
		free(meta);
	}
	build_release(&again.result);
	job_init(&again, job.key, src, "tiny.cu");
	compile_one(&again);
	assert_int_equal(again.result.outcome, VARIANT_OK);
	assert_false(again.result.cached);

	build_release(&job.result);
	build_release(&again.result);
	free(src);
}

static void test_syntax_error_is_a_result(void **state)
{
	static const char bad[] = "extern \"C\" __global__ void tiny(float *p)\n"
				  "{\n"
				  "\tp[0] = 1.0f\n"
				  "}\n";
	struct compile_pool *pool = compile_pool_new(2, cache);
	struct compile_job job, good, again;
	char *src = tiny_source(1), *bad_src = xstrdup(bad);

	assert_non_null(pool);
	job_init(&job, "000000000000000000000000000000b1", bad_src, "bad.cu");
	compile_pool_submit(pool, &job);
	assert_ptr_equal(compile_pool_next(pool), &job);
	assert_int_equal(job.result.outcome, REJECT_COMPILE);
	assert_null(job.result.cubin_path);
	assert_non_null(job.result.log);
	assert_non_null(strstr(job.result.log, "bad.cu(4)"));
	assert_non_null(strstr(job.result.log, "error"));

	/* The pool keeps working after a failed build. */
	job_init(&good, "000000000000000000000000000000b2", src, "tiny.cu");
	compile_pool_submit(pool, &good);
	assert_ptr_equal(compile_pool_next(pool), &good);
	assert_int_equal(good.result.outcome, VARIANT_OK);
	compile_pool_free(pool);

	/* The compile error itself is cached, log included: a bad variant is not rebuilt. */
	assert_false(file_exists(job.key, "cubin"));
	job_init(&again, job.key, bad_src, "bad.cu");
	compile_one(&again);
	assert_int_equal(again.result.outcome, REJECT_COMPILE);
	assert_true(again.result.cached);
	assert_string_equal(again.result.log, job.result.log);

	build_release(&job.result);
	build_release(&good.result);
	build_release(&again.result);
	free(src);
	free(bad_src);
}

static void test_api_failure_is_not_cached(void **state)
{
	static const char *const opts[] = {"--gpu-architecture=sm_90", "--no-such-option"};
	struct compile_job job;
	char *src = tiny_source(2);

	job_init(&job, "000000000000000000000000000000c1", src, "tiny.cu");
	job.options = (char **)opts;
	job.noptions = ARRAY_SIZE(opts);
	compile_one(&job);
	assert_int_equal(job.result.outcome, REJECT_COMPILE);
	assert_non_null(strstr(job.result.log, "NVRTC_ERROR_INVALID_OPTION"));
	assert_false(file_exists(job.key, "meta"));
	build_release(&job.result);
	free(src);
}

static void test_many_jobs_two_threads(void **state)
{
	enum { N = 16 };
	struct compile_pool *pool = compile_pool_new(2, cache);
	struct compile_job jobs[N + 2], *done;
	char *srcs[N];
	int seen[N + 2] = {0}, cached = 0, i;

	assert_non_null(pool);
	assert_null(compile_pool_next(pool)); /* nothing outstanding: no wait */
	for (i = 0; i < N; i++) {
		char key[HASH_HEX_LEN];

		srcs[i] = tiny_source(100 + i);
		snprintf(key, sizeof(key), "%032x", 0x1000 + i);
		job_init(&jobs[i], key, srcs[i], "tiny.cu");
		jobs[i].user = &seen[i];
	}
	/*
	 * Two more with the key of job 0, queued right behind it: a key is never
	 * compiled twice at once, so both wait for job 0 and hit the cache.
	 */
	job_init(&jobs[N], jobs[0].key, srcs[0], "tiny.cu");
	jobs[N].user = &seen[N];
	job_init(&jobs[N + 1], jobs[0].key, srcs[0], "tiny.cu");
	jobs[N + 1].user = &seen[N + 1];
	compile_pool_submit(pool, &jobs[0]);
	compile_pool_submit(pool, &jobs[N]);
	compile_pool_submit(pool, &jobs[N + 1]);
	for (i = 1; i < N; i++)
		compile_pool_submit(pool, &jobs[i]);
	for (i = 0; i < N + 2; i++) {
		done = compile_pool_next(pool);
		assert_non_null(done);
		(*(int *)done->user)++;
		assert_int_equal(done->result.outcome, VARIANT_OK);
		assert_int_equal(done->result.static_smem, 1024);
		cached += done->result.cached;
	}
	assert_null(compile_pool_next(pool));
	for (i = 0; i < N + 2; i++)
		assert_int_equal(seen[i], 1);
	assert_int_equal(cached, 2);
	compile_pool_free(pool);
	for (i = 0; i < N + 2; i++)
		build_release(&jobs[i].result);
	for (i = 0; i < N; i++)
		free(srcs[i]);
}

static void test_free_with_jobs_queued(void **state)
{
	struct compile_pool *pool = compile_pool_new(1, cache);
	struct compile_job jobs[4];
	char *src = tiny_source(7);
	int i;

	for (i = 0; i < 4; i++) {
		char key[HASH_HEX_LEN];

		snprintf(key, sizeof(key), "%032x", 0x2000 + i);
		job_init(&jobs[i], key, src, "tiny.cu");
		compile_pool_submit(pool, &jobs[i]);
	}
	compile_pool_free(pool); /* must not hang or touch the jobs afterwards */
	for (i = 0; i < 4; i++)
		build_release(&jobs[i].result);
	free(src);
}

/*
 * Work queued ahead: a background job waits behind every foreground one, and
 * one that has not started can be withdrawn (never compiled, never returned);
 * poll never waits.
 */
static void test_withdraw_and_poll(void **state)
{
	struct compile_pool *pool = compile_pool_new(1, cache);
	struct compile_job jobs[3], *done;
	char *srcs[3];
	int i, w1;

	assert_non_null(pool);
	assert_null(compile_pool_poll(pool)); /* nothing outstanding */
	for (i = 0; i < 3; i++) {
		char key[HASH_HEX_LEN];

		srcs[i] = tiny_source(300 + i);
		snprintf(key, sizeof(key), "%032x", 0x3000 + i);
		job_init(&jobs[i], key, srcs[i], "tiny.cu");
	}
	jobs[1].background = jobs[2].background = 1;
	compile_pool_submit(pool, &jobs[1]);
	compile_pool_submit(pool, &jobs[2]);
	compile_pool_submit(pool, &jobs[0]);
	/* job 2 waits behind job 0 (one thread); job 1 may have started before job 0 came */
	assert_int_equal(compile_pool_withdraw(pool, &jobs[2]), 1);
	w1 = compile_pool_withdraw(pool, &jobs[1]);
	if (!w1)
		assert_ptr_equal(compile_pool_next(pool), &jobs[1]);
	assert_ptr_equal(compile_pool_next(pool), &jobs[0]);
	assert_null(compile_pool_next(pool));
	assert_null(compile_pool_poll(pool));
	assert_false(file_exists(jobs[2].key, "cubin"));            /* withdrawn: never compiled */
	assert_int_equal(compile_pool_withdraw(pool, &jobs[0]), 0); /* done: not queued */
	compile_pool_submit(pool, &jobs[2]);
	while (!(done = compile_pool_poll(pool)))
		usleep(10000);
	assert_ptr_equal(done, &jobs[2]);
	assert_true(file_exists(jobs[2].key, "cubin"));
	compile_pool_free(pool);
	for (i = 0; i < 3; i++) {
		build_release(&jobs[i].result);
		free(srcs[i]);
	}
}

static void test_cuda_home_override(void **state)
{
	static const char kernel[] =
	    "#include <tuner_test_home.h>\n"
	    "extern \"C\" __global__ void tiny(int *p) { p[0] = HOME_VALUE; }\n";
	char *inc = xasprintf("%s/home/include", cache), *hdr, *home;
	struct compile_job job;
	char *src = xstrdup(kernel);

	assert_int_equal(mkdir_p(inc), 0);
	hdr = xasprintf("%s/tuner_test_home.h", inc);
	assert_int_equal(write_file_atomic(hdr, "#define HOME_VALUE 42\n", 22), 0);
	home = xasprintf("%s/home", cache);
	setenv("CUDA_HOME", home, 1);
	job_init(&job, "000000000000000000000000000000d1", src, "home.cu");
	compile_one(&job);
	assert_int_equal(job.result.outcome, VARIANT_OK);
	build_release(&job.result);
	free(inc);
	free(hdr);
	free(home);
	free(src);
}

/* The real template, rendered with the tuner's own options, compiles for sm_90 without spills. */
static void test_flash_template_compiles(void **state)
{
	struct config cfg;
	struct spec specs[TUNER_MAX_SHAPES];
	struct compile_job job;
	struct variant va;
	size_t nopts;
	char **opts, vh[HASH_HEX_LEN], *src;

	fx_flash_config(&cfg);
	free(cfg.fam.source);
	if (read_file(cfg.fam.source_path, &cfg.fam.source, NULL) < 0)
		fail_msg("cannot read %s", cfg.fam.source_path);
	hash_hex(cfg.fam.source, strlen(cfg.fam.source), cfg.fam.source_hash);
	space_specs(&cfg, specs, NULL);
	space_baseline(&cfg.fam, &va);
	opts = template_options(&cfg, 1, &nopts);
	template_variant_hash(&cfg, &va, vh);
	memset(&job, 0, sizeof(job));
	template_build_key(vh, &specs[0], 1, job.key);
	src = template_render(&cfg, &va, &specs[0], 1);
	job.source = src;
	job.name = "flash_fwd.cu";
	job.entry = cfg.fam.launches[0].kernel;
	job.options = opts;
	job.noptions = nopts;
	compile_one(&job);
	if (job.result.outcome != VARIANT_OK)
		fail_msg("flash_fwd did not compile:\n%s", job.result.log);
	assert_true(job.result.regs > 0);
	assert_int_equal(job.result.spill_stores + job.result.spill_loads, 0);
	build_release(&job.result);
	free(src);
	template_options_free(opts, nopts);
	fx_release(&cfg);
}

/* ------------------------------------------------ crashes and hangs */

static const char *const sm90a[] = {"--gpu-architecture=sm_90a", "-Xptxas=-v"};

#if defined(__SANITIZE_ADDRESS__)
/* AddressSanitizer stops NVRTC's wild allocation before the segfault: the process exits 1. */
#define NVRTC_CRASH "the compile process ended without a result for 'wgmma.cu' (exit status 1)"
#else
#define NVRTC_CRASH                                                                                \
	"the compiler crashed on 'wgmma.cu': the compile process died of signal 11 (SIGSEGV"
#endif

/* The fixture's wgmma with constant-zero descriptors, on which NVRTC 13.0 segfaults. */
static char *wgmma_crash_source(void)
{
	char *body, *src;

	if (read_file("tests/fixtures/crash/kernels/wgmma.cu", &body, NULL) < 0)
		fail_msg("cannot read tests/fixtures/crash/kernels/wgmma.cu");
	src = xasprintf("#define CRASH 1\n%s", body);
	free(body);
	return src;
}

/*
 * NVRTC itself segfaults on a job: that job is a compile rejection naming the
 * signal, not cached; the jobs beside it and after it compile, in a fresh process.
 */
static void test_nvrtc_crash_is_a_rejection(void **state)
{
	enum { N = 6 };
	struct compile_pool *pool = compile_pool_new(2, cache);
	struct compile_job jobs[N + 1], *done;
	char *crash = wgmma_crash_source(), *good[N + 1], version[32];
	int i, crashed = 0, ok = 0;

	assert_non_null(pool);
	assert_int_equal(compile_nvrtc_version(version, sizeof(version)), 0);
	for (i = 0; i <= N; i++) {
		char key[HASH_HEX_LEN];

		good[i] = tiny_source(300 + i);
		snprintf(key, sizeof(key), "%032x", 0x3000 + i);
		job_init(&jobs[i], key, good[i], "tiny.cu");
		if (i % 3 == 1) { /* jobs 1 and 4 crash */
			jobs[i].source = crash;
			jobs[i].name = "wgmma.cu";
			jobs[i].entry = "wgmma_zero";
			jobs[i].options = (char **)sm90a;
			jobs[i].noptions = ARRAY_SIZE(sm90a);
		}
	}
	for (i = 0; i < N; i++)
		compile_pool_submit(pool, &jobs[i]);
	for (i = 0; i < N; i++) {
		done = compile_pool_next(pool);
		assert_non_null(done);
		if (done->source != crash) {
			assert_int_equal(done->result.outcome, VARIANT_OK);
			assert_int_equal(done->result.static_smem, 1024);
			ok++;
			continue;
		}
		if (done->result.outcome == VARIANT_OK && strcmp(version, "13.0"))
			skip(); /* this NVRTC no longer crashes on it: nothing to isolate */
		assert_int_equal(done->result.outcome, REJECT_COMPILE);
		if (!strstr(done->result.log, NVRTC_CRASH))
			fail_msg("NVRTC %s did not crash on the wgmma source: %s", version,
			         done->result.log);
		assert_null(done->result.cubin_path);
		assert_false(done->result.cached);
		assert_false(file_exists(done->key, "meta")); /* may be the machine: not cached */
		crashed++;
	}
	assert_int_equal(crashed, 2);
	assert_int_equal(ok, N - 2);

	/* The same pool compiles on: the dead processes were replaced. */
	compile_pool_submit(pool, &jobs[N]);
	assert_ptr_equal(compile_pool_next(pool), &jobs[N]);
	assert_int_equal(jobs[N].result.outcome, VARIANT_OK);
	compile_pool_free(pool);
	for (i = 0; i <= N; i++) {
		build_release(&jobs[i].result);
		free(good[i]);
	}
	free(crash);
}

/*
 * A compile that never finishes (NVRTC blocks reading an #include that is a FIFO
 * nobody writes) is killed at the timeout: a rejection that says so, not cached;
 * the pool goes on with a fresh process.
 */
static void test_hung_compile_times_out(void **state)
{
	struct compile_pool *pool = compile_pool_new(1, cache);
	struct compile_job hang, good;
	char *fifo = xasprintf("%s/never-written.h", cache), *src, *tiny = tiny_source(400);
	double t0, took;

	assert_non_null(pool);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	alarm(60); /* a pool that never times out fails the test rather than hanging it */
	src = xasprintf("#include \"%s\"\n%s", fifo, tiny);
	compile_pool_set_timeout(pool, 1.0);
	job_init(&hang, "000000000000000000000000000000e1", src, "hang.cu");
	t0 = now_seconds();
	compile_pool_submit(pool, &hang);
	assert_ptr_equal(compile_pool_next(pool), &hang);
	took = now_seconds() - t0;
	assert_int_equal(hang.result.outcome, REJECT_COMPILE);
	assert_non_null(strstr(hang.result.log, "the compile of 'hang.cu' timed out"));
	assert_non_null(strstr(hang.result.log, "within 1 s"));
	assert_true(took >= 1.0 && took < 30.0);
	assert_null(hang.result.cubin_path);
	assert_false(file_exists(hang.key, "meta"));

	job_init(&good, "000000000000000000000000000000e2", tiny, "tiny.cu");
	compile_pool_submit(pool, &good);
	assert_ptr_equal(compile_pool_next(pool), &good);
	assert_int_equal(good.result.outcome, VARIANT_OK);
	compile_pool_free(pool);
	alarm(0);
	build_release(&hang.result);
	build_release(&good.result);
	free(fifo);
	free(src);
	free(tiny);
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory's own */
}

/*
 * The testing hook crashes the compile process on a marker; each crash costs a
 * process, none is left behind: no descriptor, no zombie, after the pool is freed.
 */
static void test_crash_hook_leaves_nothing_behind(void **state)
{
	enum { N = 8 };
	struct compile_job jobs[N], *done;
	struct compile_pool *pool;
	char *srcs[N];
	int before = count_fds(), i, crashed = 0;

	setenv("TUNER_TEST_COMPILE_CRASH", "#define TAG 50", 1);
	pool = compile_pool_new(2, cache);
	assert_non_null(pool);
	for (i = 0; i < N; i++) {
		char key[HASH_HEX_LEN];

		srcs[i] = tiny_source(i % 2 ? 600 + i : 50); /* even jobs crash */
		snprintf(key, sizeof(key), "%032x", 0x4000 + i);
		job_init(&jobs[i], key, srcs[i], "tiny.cu");
		compile_pool_submit(pool, &jobs[i]);
	}
	for (i = 0; i < N; i++) {
		done = compile_pool_next(pool);
		assert_non_null(done);
		if (strstr(done->source, "#define TAG 50")) {
			assert_int_equal(done->result.outcome, REJECT_COMPILE);
			assert_non_null(strstr(done->result.log, "signal 6 (SIGABRT"));
			crashed++;
		} else {
			assert_int_equal(done->result.outcome, VARIANT_OK);
		}
	}
	assert_int_equal(crashed, N / 2);
	compile_pool_free(pool);
	assert_int_equal(count_fds(), before);
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1); /* no child, live or zombie */
	assert_int_equal(errno, ECHILD);
	for (i = 0; i < N; i++) {
		build_release(&jobs[i].result);
		free(srcs[i]);
	}
}

/* ------------------------------------------------------------ ptxas -v */

static const char ptxas_log[] =
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function 'flash_fwd_v2' for 'sm_90'\n"
    "ptxas info    : Function properties for flash_fwd_v2\n"
    "ptxas         .     8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
    "ptxas info    : Used 200 registers, used 1 barriers, 4096 bytes smem, 400 bytes cmem[0]\n"
    "ptxas info    : Compiling entry function 'flash_fwd' for 'sm_90'\n"
    "ptxas info    : Function properties for flash_fwd\n"
    "ptxas         .     16 bytes stack frame, 24 bytes spill stores, 20 bytes spill loads\n"
    "ptxas info    : Used 168 registers, used 1 barriers, 1024 bytes smem, 400 bytes cmem[0]\n"
    "ptxas info    : Compile time = 8.523 ms\n"
    "ptxas info    : Function properties for _Z6helperPf\n"
    "ptxas         .     48 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Compiling entry function 'small' for 'sm_90'\n"
    "ptxas info    : Used 12 registers, used 0 barriers, 380 bytes cmem[0]\n";

static void test_parse_ptxas(void **state)
{
	struct build b;

	memset(&b, 0, sizeof(b));
	assert_int_equal(compile_parse_ptxas(ptxas_log, "flash_fwd", &b), 0);
	assert_int_equal(b.regs, 168);
	assert_int_equal(b.static_smem, 1024);
	assert_int_equal(b.stack_frame, 16);
	assert_int_equal(b.spill_stores, 24);
	assert_int_equal(b.spill_loads, 20);

	assert_int_equal(compile_parse_ptxas(ptxas_log, "flash_fwd_v2", &b), 0);
	assert_int_equal(b.regs, 200);
	assert_int_equal(b.static_smem, 4096);
	assert_int_equal(b.spill_stores, 4);

	/* No properties line and no "bytes smem": those fields are 0. */
	assert_int_equal(compile_parse_ptxas(ptxas_log, "small", &b), 0);
	assert_int_equal(b.regs, 12);
	assert_int_equal(b.static_smem, 0);
	assert_int_equal(b.stack_frame, 0);
	assert_int_equal(b.spill_stores + b.spill_loads, 0);

	assert_int_equal(compile_parse_ptxas(ptxas_log, "flash", &b), -1);
	assert_int_equal(compile_parse_ptxas("", "flash_fwd", &b), -1);
	assert_int_equal(compile_parse_ptxas("ptxas info    : Used 9 registers", "flash_fwd", &b),
	                 -1);
}

static void test_nvrtc_version(void **state)
{
	char v[32];
	int major = 0, minor = -1;

	assert_int_equal(compile_nvrtc_version(v, sizeof(v)), 0);
	assert_int_equal(sscanf(v, "%d.%d", &major, &minor), 2);
	assert_true(major >= 11 && minor >= 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_ptxas),
	    cmocka_unit_test(test_nvrtc_version),
	    cmocka_unit_test_setup_teardown(test_tiny_kernel_and_cache_hit, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_syntax_error_is_a_result, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_api_failure_is_not_cached, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_many_jobs_two_threads, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_free_with_jobs_queued, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_withdraw_and_poll, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_cuda_home_override, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_flash_template_compiles, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_nvrtc_crash_is_a_rejection, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_hung_compile_times_out, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_crash_hook_leaves_nothing_behind, setup, teardown),
	};

	/* The pool re-executes this binary as its compile processes, as it does the tuner binary.
	 */
	if (argc > 1 && !strcmp(argv[1], "__compile"))
		return compile_child_main(argc - 1, argv + 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
