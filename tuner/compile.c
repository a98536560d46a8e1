/* The NVRTC compile pool: worker threads, a cubin cache, and ptxas's resource report. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nvrtc.h>

#include "tuner/compile.h"

#ifndef TUNER_CUDA_HOME
#define TUNER_CUDA_HOME "/usr/local/cuda"
#endif

void build_release(struct build *b)
{
	free(b->log);
	free(b->cubin_path);
	memset(b, 0, sizeof(*b));
}

/* ------------------------------------------------------------ ptxas -v */

/* The number just before `what` in line ("Used 10 registers" -> 10): 1 and *out set, or 0. */
static int number_before(const char *line, const char *end, const char *what, int *out)
{
	size_t wlen = strlen(what);
	const char *p, *q;
	long v = 0, scale = 1;

	for (p = line; p + wlen <= end; p++) {
		if (memcmp(p, what, wlen))
			continue;
		q = p;
		while (q > line && q[-1] == ' ')
			q--;
		if (q == line || q[-1] < '0' || q[-1] > '9')
			continue;
		while (q > line && q[-1] >= '0' && q[-1] <= '9' && scale < 1000000000L) {
			v += (q[-1] - '0') * scale;
			scale *= 10;
			q--;
		}
		*out = (int)v;
		return 1;
	}
	return 0;
}

/* Whether line contains `prefix` followed by the entry's name and then `close`. */
static int names_function(const char *line, const char *end, const char *prefix, const char *close,
                          const char *entry, int *is_entry)
{
	size_t plen = strlen(prefix), elen = strlen(entry);
	const char *p;

	for (p = line; p + plen <= end; p++) {
		if (memcmp(p, prefix, plen))
			continue;
		p += plen;
		*is_entry = (size_t)(end - p) >= elen && !memcmp(p, entry, elen) &&
		            (p + elen == end || strchr(close, p[elen]));
		return 1;
	}
	return 0;
}

int compile_parse_ptxas(const char *log, const char *entry, struct build *b)
{
	const char *line = log, *end;
	int in_entry = 0, in_props = 0, found = 0, is_entry;

	if (!log || !entry)
		return -1;
	for (; *line; line = *end ? end + 1 : end) {
		end = strchr(line, '\n');
		if (!end)
			end = line + strlen(line);
		if (names_function(line, end, "Compiling entry function '", "'", entry,
		                   &is_entry)) {
			in_entry = is_entry;
			in_props = 0;
			if (is_entry) {
				found = 1;
				b->regs = b->spill_stores = b->spill_loads = 0;
				b->static_smem = b->stack_frame = 0;
			}
			continue;
		}
		if (names_function(line, end, "Function properties for ", " \r\t", entry,
		                   &is_entry)) {
			in_props = is_entry;
			if (!is_entry)
				in_entry = 0;
			continue;
		}
		if (in_props && number_before(line, end, " bytes stack frame", &b->stack_frame)) {
			number_before(line, end, " bytes spill stores", &b->spill_stores);
			number_before(line, end, " bytes spill loads", &b->spill_loads);
			in_props = 0;
			continue;
		}
		if (in_entry && number_before(line, end, " registers", &b->regs)) {
			if (!number_before(line, end, " bytes smem", &b->static_smem))
				b->static_smem = 0;
			in_entry = 0;
		}
	}
	return found ? 0 : -1;
}

int compile_nvrtc_version(char *out, size_t len)
{
	int major, minor;
	nvrtcResult r = nvrtcVersion(&major, &minor);

	if (r != NVRTC_SUCCESS)
		return error("cannot query the NVRTC version: %s", nvrtcGetErrorString(r));
	snprintf(out, len, "%d.%d", major, minor);
	return 0;
}

/* ------------------------------------------------------------ the cache */

/*
 * <key>.meta is written last and marks an entry complete; <key>.log always
 * exists with it, <key>.cubin only for a successful build.
 */
static char *cache_path(const char *dir, const char *key, const char *ext)
{
	return xasprintf("%s/%s.%s", dir, key, ext);
}

static int cache_lookup(const char *dir, struct compile_job *job)
{
	struct build *b = &job->result;
	char *meta_path = cache_path(dir, job->key, "meta");
	char *log_path = cache_path(dir, job->key, "log");
	char *meta = NULL, *log = NULL, *line, *save = NULL;
	char outcome[32] = "";
	struct build got = {0};
	double seconds = 0;
	int ok = 0, fields = 0;

	if (read_file(meta_path, &meta, NULL) < 0 || read_file(log_path, &log, NULL) < 0)
		goto out;
	for (line = strtok_r(meta, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		fields += sscanf(line, "outcome %31s", outcome) == 1;
		fields += sscanf(line, "regs %d", &got.regs) == 1;
		fields += sscanf(line, "spill_stores %d", &got.spill_stores) == 1;
		fields += sscanf(line, "spill_loads %d", &got.spill_loads) == 1;
		fields += sscanf(line, "static_smem %d", &got.static_smem) == 1;
		fields += sscanf(line, "stack_frame %d", &got.stack_frame) == 1;
		fields += sscanf(line, "seconds %lf", &seconds) == 1;
	}
	if (fields != 7)
		goto out;
	if (!strcmp(outcome, "ok")) {
		struct stat st;

		got.cubin_path = cache_path(dir, job->key, "cubin");
		if (stat(got.cubin_path, &st) < 0 || st.st_size == 0) {
			free(got.cubin_path);
			goto out;
		}
		got.outcome = VARIANT_OK;
		got.cubin_size = (size_t)st.st_size;
	} else if (!strcmp(outcome, "compile")) {
		got.outcome = REJECT_COMPILE;
	} else {
		goto out;
	}
	got.log = log;
	log = NULL;
	got.cached = 1;
	got.seconds = 0;
	*b = got;
	ok = 1;
out:
	free(meta);
	free(log);
	free(meta_path);
	free(log_path);
	return ok;
}

static int cache_store(const char *dir, struct compile_job *job, const void *cubin, size_t size)
{
	const struct build *b = &job->result;
	struct strbuf meta = STRBUF_INIT;
	char *path;
	int ret = 0;

	if (b->outcome == VARIANT_OK) {
		path = cache_path(dir, job->key, "cubin");
		ret = write_file_atomic(path, cubin, size);
		free(path);
	}
	if (!ret) {
		path = cache_path(dir, job->key, "log");
		ret = write_file_atomic(path, b->log, strlen(b->log));
		free(path);
	}
	if (!ret) {
		sb_addf(&meta,
		        "outcome %s\nregs %d\nspill_stores %d\nspill_loads %d\nstatic_smem %d\n"
		        "stack_frame %d\nseconds %.6f\n",
		        b->outcome == VARIANT_OK ? "ok" : "compile", b->regs, b->spill_stores,
		        b->spill_loads, b->static_smem, b->stack_frame, b->seconds);
		path = cache_path(dir, job->key, "meta");
		ret = write_file_atomic(path, meta.buf, meta.len);
		free(path);
	}
	sb_release(&meta);
	return ret;
}

/* ---------------------------------------------------------- one compile */

/* A failure of the NVRTC API itself (not of the source): REJECT_COMPILE, never cached. */
static void api_failure(struct build *b, const char *what, nvrtcResult r, const char *log)
{
	b->outcome = REJECT_COMPILE;
	b->log = xasprintf("error: %s failed: %s%s%s", what, nvrtcGetErrorString(r),
	                   log && *log ? "\n" : "", log ? log : "");
}

static char *program_log(nvrtcProgram prog)
{
	size_t n = 0;
	char *log;

	if (nvrtcGetProgramLogSize(prog, &n) != NVRTC_SUCCESS || n == 0)
		return xstrdup("");
	log = xcalloc(1, n + 1);
	if (nvrtcGetProgramLog(prog, log) != NVRTC_SUCCESS)
		log[0] = '\0';
	return log;
}

struct compile_pool {
	pthread_mutex_t lock;
	pthread_cond_t work; /* a job was queued, a key was released, or stop */
	pthread_cond_t done; /* a job finished */
	struct compile_job **queue;
	size_t nqueue, queue_alloc;
	struct compile_job **finished;
	size_t nfinished, finished_alloc;
	struct compile_job **running; /* one slot per thread: keys being compiled */
	size_t outstanding;           /* submitted and not yet returned by compile_pool_next */
	int stop;
	pthread_t *threads;
	int nthreads;
	char *cache_dir;
	char *cuda_include; /* -I<CUDA>/include */
};

static void compile_fresh(struct compile_pool *pool, struct compile_job *job)
{
	struct build *b = &job->result;
	const char **opts = xcalloc(job->noptions + 1, sizeof(*opts));
	double t0 = now_seconds();
	nvrtcProgram prog;
	nvrtcResult r;
	char *cubin = NULL;
	size_t size = 0, i, n = 0;

	memset(b, 0, sizeof(*b));
	for (i = 0; i < job->noptions; i++)
		opts[n++] = job->options[i];
	opts[n++] = pool->cuda_include;
	r = nvrtcCreateProgram(&prog, job->source, job->name ? job->name : "variant.cu", 0, NULL,
	                       NULL);
	if (r != NVRTC_SUCCESS) {
		api_failure(b, "nvrtcCreateProgram", r, NULL);
		free(opts);
		return;
	}
	r = nvrtcCompileProgram(prog, (int)n, opts);
	free(opts);
	b->log = program_log(prog);
	if (r == NVRTC_SUCCESS) {
		r = nvrtcGetCUBINSize(prog, &size);
		if (r == NVRTC_SUCCESS && size > 0) {
			cubin = xmalloc(size);
			r = nvrtcGetCUBIN(prog, cubin);
		}
		if (r == NVRTC_SUCCESS && size == 0)
			r = NVRTC_ERROR_INVALID_INPUT; /* e.g. a compute_XX target: PTX, no cubin */
		if (r != NVRTC_SUCCESS) {
			char *log = b->log;

			api_failure(b, "nvrtcGetCUBIN", r, log);
			free(log);
		}
	} else if (r == NVRTC_ERROR_COMPILATION) {
		b->outcome = REJECT_COMPILE;
	} else {
		char *log = b->log;

		api_failure(b, "nvrtcCompileProgram", r, log);
		free(log);
	}
	nvrtcDestroyProgram(&prog);
	b->seconds = now_seconds() - t0;

	if (r == NVRTC_SUCCESS) {
		b->outcome = VARIANT_OK;
		if (job->entry && compile_parse_ptxas(b->log, job->entry, b) < 0)
			warning("no ptxas report for entry '%s' in the log of '%s'", job->entry,
			        job->name ? job->name : job->key);
	}
	/* A compile error is a property of the source: cache it. An API failure may not be. */
	if (r == NVRTC_SUCCESS || r == NVRTC_ERROR_COMPILATION) {
		if (cache_store(pool->cache_dir, job, cubin, size) == 0) {
			if (b->outcome == VARIANT_OK) {
				b->cubin_path = cache_path(pool->cache_dir, job->key, "cubin");
				b->cubin_size = size;
			}
		} else if (b->outcome == VARIANT_OK) {
			/* Nothing can load a cubin that was never written. */
			char *log = b->log;

			b->outcome = REJECT_COMPILE;
			b->log = xasprintf("error: cannot write build '%s' to the cache '%s'\n%s",
			                   job->key, pool->cache_dir, log);
			free(log);
		}
	}
	free(cubin);
}

static void run_job(struct compile_pool *pool, struct compile_job *job)
{
	if (!cache_lookup(pool->cache_dir, job))
		compile_fresh(pool, job);
}

/* ------------------------------------------------------------- the pool */

static int key_running(const struct compile_pool *pool, const char *key)
{
	int i;

	for (i = 0; i < pool->nthreads; i++)
		if (pool->running[i] && !strcmp(pool->running[i]->key, key))
			return 1;
	return 0;
}

/* The first queued job whose key no other thread is compiling; NULL if none. */
static struct compile_job *take_job(struct compile_pool *pool)
{
	size_t i;

	for (i = 0; i < pool->nqueue; i++) {
		struct compile_job *job = pool->queue[i];

		if (key_running(pool, job->key))
			continue;
		memmove(&pool->queue[i], &pool->queue[i + 1],
		        (pool->nqueue - i - 1) * sizeof(*pool->queue));
		pool->nqueue--;
		return job;
	}
	return NULL;
}

struct worker_arg {
	struct compile_pool *pool;
	int slot;
};

static void *worker_main(void *arg)
{
	struct worker_arg *wa = arg;
	struct compile_pool *pool = wa->pool;
	int slot = wa->slot;
	struct compile_job *job;

	free(wa);
	pthread_mutex_lock(&pool->lock);
	for (;;) {
		job = NULL;
		while (!pool->stop && !(job = take_job(pool)))
			pthread_cond_wait(&pool->work, &pool->lock);
		if (!job)
			break;
		pool->running[slot] = job;
		pthread_mutex_unlock(&pool->lock);

		run_job(pool, job);

		pthread_mutex_lock(&pool->lock);
		pool->running[slot] = NULL;
		ALLOC_GROW(pool->finished, pool->nfinished + 1, pool->finished_alloc);
		pool->finished[pool->nfinished++] = job;
		pthread_cond_signal(&pool->done);
		/* A job with the same key may be waiting for this one. */
		pthread_cond_broadcast(&pool->work);
	}
	pthread_mutex_unlock(&pool->lock);
	return NULL;
}

struct compile_pool *compile_pool_new(int nthreads, const char *cache_dir)
{
	struct compile_pool *pool;
	const char *cuda = getenv("CUDA_HOME");
	int i;

	if (nthreads <= 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		nthreads = n > 0 ? (int)n : 1;
	}
	if (mkdir_p(cache_dir) < 0)
		return NULL;
	pool = xcalloc(1, sizeof(*pool));
	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->work, NULL);
	pthread_cond_init(&pool->done, NULL);
	pool->cache_dir = xstrdup(cache_dir);
	pool->cuda_include = xasprintf("-I%s/include", cuda && *cuda ? cuda : TUNER_CUDA_HOME);
	pool->running = xcalloc((size_t)nthreads, sizeof(*pool->running));
	pool->threads = xcalloc((size_t)nthreads, sizeof(*pool->threads));
	for (i = 0; i < nthreads; i++) {
		struct worker_arg *wa = xmalloc(sizeof(*wa));
		int e;

		wa->pool = pool;
		wa->slot = i;
		e = pthread_create(&pool->threads[i], NULL, worker_main, wa);
		if (e) {
			free(wa);
			error("cannot start compile thread: %s", strerror(e));
			break;
		}
		pool->nthreads++;
	}
	if (pool->nthreads == 0) {
		compile_pool_free(pool);
		return NULL;
	}
	return pool;
}

void compile_pool_submit(struct compile_pool *pool, struct compile_job *job)
{
	memset(&job->result, 0, sizeof(job->result));
	pthread_mutex_lock(&pool->lock);
	ALLOC_GROW(pool->queue, pool->nqueue + 1, pool->queue_alloc);
	pool->queue[pool->nqueue++] = job;
	pool->outstanding++;
	pthread_cond_signal(&pool->work);
	pthread_mutex_unlock(&pool->lock);
}

struct compile_job *compile_pool_next(struct compile_pool *pool)
{
	struct compile_job *job = NULL;

	pthread_mutex_lock(&pool->lock);
	if (pool->outstanding > 0) {
		while (pool->nfinished == 0)
			pthread_cond_wait(&pool->done, &pool->lock);
		job = pool->finished[0];
		memmove(&pool->finished[0], &pool->finished[1],
		        (pool->nfinished - 1) * sizeof(*pool->finished));
		pool->nfinished--;
		pool->outstanding--;
	}
	pthread_mutex_unlock(&pool->lock);
	return job;
}

void compile_pool_free(struct compile_pool *pool)
{
	int i;

	if (!pool)
		return;
	/* Jobs not started are dropped; jobs being compiled finish first. */
	pthread_mutex_lock(&pool->lock);
	pool->stop = 1;
	pthread_cond_broadcast(&pool->work);
	pthread_mutex_unlock(&pool->lock);
	for (i = 0; i < pool->nthreads; i++)
		pthread_join(pool->threads[i], NULL);
	pthread_cond_destroy(&pool->done);
	pthread_cond_destroy(&pool->work);
	pthread_mutex_destroy(&pool->lock);
	free(pool->queue);
	free(pool->finished);
	free(pool->running);
	free(pool->threads);
	free(pool->cache_dir);
	free(pool->cuda_include);
	free(pool);
}
