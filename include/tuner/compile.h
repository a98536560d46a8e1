/* The NVRTC compile pool: compile processes with a time limit, a cubin cache, ptxas's report. */
#ifndef TUNER_COMPILE_H
#define TUNER_COMPILE_H

#include <stddef.h>

#include "tuner/common.h"
#include "tuner/outcome.h"

/* What one compile unit produced. */
struct build {
	enum outcome outcome; /* VARIANT_OK, or REJECT_COMPILE (a compile error is a result, not a
	                         failure) */
	char *log;            /* NVRTC's log, ptxas -v report included */
	int regs;             /* registers per thread of the entry */
	int spill_stores;     /* bytes */
	int spill_loads;      /* bytes */
	int static_smem;      /* bytes of static shared memory of the entry */
	int stack_frame;      /* bytes */
	double seconds;       /* compile wall time (0 when cached) */
	int cached;           /* served from the cubin cache */
	char *cubin_path;     /* the cached cubin; NULL on REJECT_COMPILE */
	size_t cubin_size;
};
void build_release(struct build *b);

struct compile_job {
	char key[HASH_HEX_LEN]; /* cache key (template_build_key) */
	char *source;           /* full source; the pool does not free it */
	const char *name;       /* file name in diagnostics, e.g. "transpose.cu" */
	const char *entry;      /* kernel whose ptxas report to parse */
	char **options;         /* NVRTC options (the pool adds the CUDA include path) */
	size_t noptions;
	void *user;          /* caller's cookie */
	int background;      /* compiled only while no other job waits (work done ahead) */
	struct build result; /* filled by the pool */
};

/*
 * NVRTC runs in compile processes, never in tuner's own: one per pool thread,
 * the tuner binary re-executed as `tuner __compile`, started at the thread's
 * first job that the cache does not answer and kept for the next. A compile
 * that crashes its process (NVRTC 13.0 segfaults on some sm_90a code) or runs
 * past the timeout (the process is killed) is a REJECT_COMPILE whose log names
 * the signal or the timeout, and is not cached; the next job gets a fresh
 * process. A test binary that uses the pool dispatches "__compile" in its main
 * to compile_child_main, as tests/unit/test_compile.c does.
 */
struct compile_pool;
#define COMPILE_DEFAULT_TIMEOUT 120.0 /* seconds */
/* nthreads 0 = one per online core. cache_dir is created if missing. NULL on error. */
struct compile_pool *compile_pool_new(int nthreads, const char *cache_dir);
/* The most seconds one fresh compile may take (the config's compile.timeout); <= 0: the default. */
void compile_pool_set_timeout(struct compile_pool *pool, double seconds);
/* Queue a job; the job must stay alive until compile_pool_next returns it. */
void compile_pool_submit(struct compile_pool *pool, struct compile_job *job);
/*
 * Take back a job no compile has started on (work done ahead that is no
 * longer wanted): 1 when withdrawn (compile_pool_next never returns it), 0
 * when it is being compiled or is done (it is returned as usual).
 */
int compile_pool_withdraw(struct compile_pool *pool, struct compile_job *job);
/* Block until a queued job is done and return it (any order); NULL when none is outstanding. */
struct compile_job *compile_pool_next(struct compile_pool *pool);
/* A job that is done, without waiting: NULL when none is. */
struct compile_job *compile_pool_poll(struct compile_pool *pool);
void compile_pool_free(struct compile_pool *pool);

/*
 * Parse ptxas -v lines for one entry out of an NVRTC log into b's resource
 * fields; 0 when the entry's report was found, -1 otherwise.
 */
int compile_parse_ptxas(const char *log, const char *entry, struct build *b);

/*
 * The cache key of a kernel built besides the candidates (what: "reference kernel", ...):
 * its source, its options but the include paths, and the NVRTC version.
 */
void compile_aux_key(const char *what, const char *src, char **opts, size_t nopts,
                     char key[HASH_HEX_LEN]);

/* NVRTC's version as "13.0", or an error. */
int compile_nvrtc_version(char *out, size_t len);

/*
 * The compile process's entry point (`tuner __compile --fd=N`): answers the
 * pool's jobs on fd N until it is closed. Returns the exit status.
 *
 * Testing hook: with TUNER_TEST_COMPILE_CRASH=TEXT in the environment, the
 * compile process aborts on a source that contains TEXT, as NVRTC 13.0 crashes
 * on some sm_90a code (which needs an architecture the config does not offer).
 */
int compile_child_main(int argc, char **argv);

#endif
