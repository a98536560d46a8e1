/* The NVRTC compile pool: one compile per core, a cubin cache, ptxas's resource report. */
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
	const char *name;       /* file name in diagnostics, e.g. "flash_fwd.cu" */
	const char *entry;      /* kernel whose ptxas report to parse */
	char **options;         /* NVRTC options (the pool adds the CUDA include path) */
	size_t noptions;
	void *user;          /* caller's cookie */
	struct build result; /* filled by the pool */
};

struct compile_pool;
/* nthreads 0 = one per online core. cache_dir is created if missing. NULL on error. */
struct compile_pool *compile_pool_new(int nthreads, const char *cache_dir);
/* Queue a job; the job must stay alive until compile_pool_next returns it. */
void compile_pool_submit(struct compile_pool *pool, struct compile_job *job);
/* Block until a queued job is done and return it (any order); NULL when none is outstanding. */
struct compile_job *compile_pool_next(struct compile_pool *pool);
void compile_pool_free(struct compile_pool *pool);

/*
 * Parse ptxas -v lines for one entry out of an NVRTC log into b's resource
 * fields; 0 when the entry's report was found, -1 otherwise.
 */
int compile_parse_ptxas(const char *log, const char *entry, struct build *b);

/* NVRTC's version as "13.0", or an error. */
int compile_nvrtc_version(char *out, size_t len);

#endif
