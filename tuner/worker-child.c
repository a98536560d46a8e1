/* The GPU worker's child: owns the CUDA context, checks and times one variant a job. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tuner/common.h"
#include "tuner/cuda.h"
#include "tuner/nvml.h"
#include "tuner/problem.h"
#include "tuner/wire.h"
#include "tuner/worker.h"

#include "../kernels/include/tuner_sanitize.h"

#define WORKER_TAG "tuner-worker"

#define GUARD_BYTES   (64u << 10) /* before and after each buffer a candidate is checked on */
#define GUARD_PATTERN 0xa5

/* What tuner_compare accumulates (kernels/support/tuner_support.cu, struct tuner_cmp). */
struct worker_cmp {
	double sum_d2, sum_r2, sum_o2, sum_or;
	unsigned long long max_abs_bits;
	unsigned long long nonfinite, first_nonfinite, worst;
};

/* One device allocation. */
struct dbuf {
	CUdeviceptr p;
	size_t bytes;
};

/*
 * The inputs and the reference outputs of one (shape, seed), kept on the
 * device across jobs: in[k] holds buffer k's data when it is an input (in or
 * inout), ref[k] the reference's output when it is an output (out or inout),
 * cks[k] the checksum of an input, so that a kernel writing into it is seen.
 */
struct ref_entry {
	char key[HASH_HEX_LEN];
	struct dbuf in[WORKER_MAX_BUFS], ref[WORKER_MAX_BUFS];
	CUdeviceptr in_p[WORKER_MAX_BUFS]; /* an input's data, between its guard zones */
	size_t in_bytes[WORKER_MAX_BUFS];
	unsigned long long cks[WORKER_MAX_BUFS];
	size_t bytes;
	unsigned long long used; /* LRU stamp */
};

/* The candidate's view of one shape's buffers: what each argument points at. */
struct views {
	CUdeviceptr p[WORKER_MAX_BUFS];    /* between guard zones, except inputs (the entry's) */
	struct dbuf own[WORKER_MAX_BUFS];  /* outputs, inout copies, scratch */
	struct dbuf prev[WORKER_MAX_BUFS]; /* outputs of the first run */
};

/* Kernel arguments for one call: the values and the pointers cuLaunchKernel wants. */
struct argset {
	void *params[WORKER_MAX_ARGS];
	unsigned long long val[WORKER_MAX_ARGS];
	CUtensorMap tmap[WORKER_MAX_TMAPS];
};

struct child {
	int fd;
	int device;
	CUdevice dev;
	CUcontext ctx;
	CUstream stream;
	CUevent ev[2];
	int have_ctx, have_stream, nev;
	int sm_count;
	long long l2_bytes;
	size_t cache_budget;
	/* the support and reference modules stay loaded while jobs name the same ones */
	char *sup_path, *ref_path;
	CUmodule sup_mod, ref_mod;
	CUfunction f_fill, f_convert, f_compare, f_worst, f_diff, f_checksum;
	struct ref_entry *cache;
	size_t ncache, cache_alloc, cache_bytes;
	unsigned long long clock;
	struct dbuf stats, flush, arena;
	struct dbuf guard_ref; /* GUARD_BYTES of GUARD_PATTERN, what a guard zone must still hold */
	struct views views;    /* the candidate's buffers, kept across jobs and grown as needed */
	struct nvml_gpu *nvml; /* NULL: clocks are not watched */
	struct ref_entry *spoiled; /* a candidate wrote into it: dropped after the shape */
	/* the job in flight */
	CUmodule mod;
	CUdeviceptr san;
	CUgraph graph;
	CUgraphExec exec;
	int blame;       /* a failure now is the candidate's */
	char where[200]; /* the phase, as last announced */
};

static char child_err[512]; /* the last error() message, for results */

static void TUNER_PRINTF(3, 4) set_text(char *dst, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(dst, len, fmt, ap);
	va_end(ap);
}

static void child_capture(const char *prefix, const char *msg)
{
	snprintf(child_err, sizeof(child_err), "%s", msg);
	if (getenv("TUNER_WORKER_VERBOSE"))
		fprintf(stderr, "worker: %s%s\n", prefix, msg);
}

static void child_send(int fd, const struct strbuf *body)
{
	/* A lost orchestrator ends us (PR_SET_PDEATHSIG); nothing to do about a failed send. */
	if (wire_send(fd, WORKER_TAG, WORKER_PROTOCOL_VERSION, body) < 0 &&
	    getenv("TUNER_WORKER_VERBOSE"))
		fprintf(stderr, "worker: cannot answer: %s\n", strerror(errno));
}

/* Announce a phase: the orchestrator's watchdog restarts its clock, and names it on a timeout. */
static void TUNER_PRINTF(3, 4) tick(int fd, char *where, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(where, 200, fmt, ap);
	va_end(ap);
	sb_adds(&sb, "type=tick\n");
	wire_kv_str(&sb, "phase", where);
	child_send(fd, &sb);
	sb_release(&sb);
}

static void send_hello(int fd, int ok, const char *reason, const char *name, const char *driver,
                       int sm_count, int cc, long long smem_optin, long long l2_bytes)
{
	struct strbuf sb = STRBUF_INIT;

	sb_addf(&sb, "type=hello\nok=%d\n", ok);
	wire_kv_str(&sb, "reason", reason);
	wire_kv_str(&sb, "name", name);
	wire_kv_str(&sb, "driver", driver);
	sb_addf(&sb, "sm_count=%d\ncc=%d\nsmem_optin=%lld\nl2_bytes=%lld\n", sm_count, cc,
	        smem_optin, l2_bytes);
	child_send(fd, &sb);
	sb_release(&sb);
}

/* ----------------------------------------------------------- buffers */

static int dbuf_alloc(struct dbuf *b, size_t bytes)
{
	if (b->p && b->bytes >= bytes)
		return 0;
	if (b->p)
		cuda.MemFree(b->p);
	b->p = 0;
	b->bytes = 0;
	CU_CHECK(cuda.MemAlloc(&b->p, bytes ? bytes : 1));
	b->bytes = bytes;
	return 0;
}

static void dbuf_free(struct dbuf *b)
{
	if (b->p)
		cuda.MemFree(b->p);
	b->p = 0;
	b->bytes = 0;
}

static size_t buf_bytes(const struct worker_buf *b)
{
	return (size_t)b->count * dtype_size((enum dtype)b->dtype);
}

static size_t ref_bytes(const struct worker_buf *b)
{
	return (size_t)b->count * dtype_size((enum dtype)b->ref_dtype);
}

static int is_input(const struct worker_buf *b)
{
	return b->role == ROLE_IN || b->role == ROLE_INOUT;
}

static int is_output(const struct worker_buf *b)
{
	return b->role == ROLE_OUT || b->role == ROLE_INOUT;
}

/* --------------------------------------------------- support kernels */

static unsigned sup_grid(const struct child *c, unsigned long long n)
{
	unsigned long long blocks = (n + 255) / 256, cap = (unsigned long long)c->sm_count * 8;

	if (cap < 64)
		cap = 64;
	return (unsigned)(blocks < 1 ? 1 : blocks > cap ? cap : blocks);
}

static int sup_launch(struct child *c, CUfunction fn, unsigned long long n, void **params)
{
	CU_CHECK(
	    cuda.LaunchKernel(fn, sup_grid(c, n), 1, 1, 256, 1, 1, 0, c->stream, params, NULL));
	return 0;
}

/* A 64-bit key per (seed, buffer name): each input draws its own numbers. */
static unsigned long long fill_key(unsigned long long seed, const char *name)
{
	unsigned long long h = 0xcbf29ce484222325ULL;

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 0x100000001b3ULL;
	return seed * 0x9e3779b97f4a7c15ULL ^ h;
}

static int fill(struct child *c, CUdeviceptr p, const struct worker_buf *b, int dtype, int kind,
                unsigned long long key, int salt)
{
	unsigned long long n = b->count;
	double fa = b->fa, fb = b->fb;
	void *params[] = {&p, &n, &dtype, &kind, &fa, &fb, &key, &salt};

	if (kind == FILL_ZEROS_ONCE) /* zeros to the fill kernel: when is the caller's business */
		kind = FILL_ZEROS;

	return sup_launch(c, c->f_fill, n, params);
}

static int poison(struct child *c, CUdeviceptr p, const struct worker_buf *b, int dtype, int salt)
{
	return fill(c, p, b, dtype, FILL_POISON, 0, salt);
}

static int convert(struct child *c, CUdeviceptr src, int sdt, CUdeviceptr dst, int ddt,
                   unsigned long long n)
{
	void *params[] = {&src, &sdt, &dst, &ddt, &n};

	return sup_launch(c, c->f_convert, n, params);
}

static int checksum(struct child *c, CUdeviceptr p, size_t bytes, unsigned long long *out)
{
	unsigned long long n = bytes;
	CUdeviceptr s = c->stats.p;
	void *params[] = {&p, &n, &s};

	CU_CHECK(cuda.MemsetD8(c->stats.p, 0, sizeof(unsigned long long)));
	if (sup_launch(c, c->f_checksum, (n + 7) / 8, params) < 0)
		return -1;
	CU_CHECK(cuda.StreamSynchronize(c->stream));
	CU_CHECK(cuda.MemcpyDtoH(out, c->stats.p, sizeof(*out)));
	return 0;
}

/* Elements that differ bitwise between a and b: the count, and the first one. */
static int diff(struct child *c, CUdeviceptr a, CUdeviceptr b, unsigned long long n, int size,
                unsigned long long *count, unsigned long long *first)
{
	unsigned long long r[2] = {0, ~0ULL};
	CUdeviceptr s = c->stats.p;
	void *params[] = {&a, &b, &n, &size, &s};

	CU_CHECK(cuda.MemcpyHtoD(c->stats.p, r, sizeof(r)));
	if (sup_launch(c, c->f_diff, n, params) < 0)
		return -1;
	CU_CHECK(cuda.StreamSynchronize(c->stream));
	CU_CHECK(cuda.MemcpyDtoH(r, c->stats.p, sizeof(r)));
	*count = r[0];
	*first = r[1];
	return 0;
}

/*
 * Guard zones: GUARD_BYTES of a known pattern before and after every buffer a
 * candidate is checked on, so that a write past an end is seen even where it
 * faults nothing (rows past S, a padded stride).
 */
static int guard_fill(struct child *c, CUdeviceptr p, size_t bytes)
{
	CU_CHECK(cuda.MemsetD8(p - GUARD_BYTES, GUARD_PATTERN, GUARD_BYTES));
	CU_CHECK(cuda.MemsetD8(p + bytes, GUARD_PATTERN, GUARD_BYTES));
	return 0;
}

/* Bytes written into the guards of [p, p + bytes): *before and *after, and the first offset. */
static int guard_check(struct child *c, CUdeviceptr p, size_t bytes, unsigned long long *before,
                       unsigned long long *after, long long *first)
{
	unsigned long long f1, f2;

	if (diff(c, p - GUARD_BYTES, c->guard_ref.p, GUARD_BYTES, 1, before, &f1) < 0 ||
	    diff(c, p + bytes, c->guard_ref.p, GUARD_BYTES, 1, after, &f2) < 0)
		return -1;
	*first = *before ? -(long long)(GUARD_BYTES - f1) : (long long)f2;
	return 0;
}

/* 1 (sr filled) when buffer k's guards were written, 0 when not, -1 on an error. */
static int guards_intact(struct child *c, const struct worker_shape_job *sh, size_t k,
                         CUdeviceptr p, const char *when, struct worker_shape_result *sr)
{
	unsigned long long before, after;
	long long first;

	if (guard_check(c, p, buf_bytes(&sh->bufs[k]), &before, &after, &first) < 0)
		return -1;
	if (!before && !after)
		return 0;
	sr->outcome = REJECT_WRONG;
	set_text(sr->reason, sizeof(sr->reason),
	         "shape '%s'%s: writes out of bounds of '%s': %llu bytes %s (the first at byte "
	         "%+lld from its %s)",
	         sh->name, when, sh->bufs[k].name, before + after,
	         before && after ? "before its start and after its end"
	         : before        ? "before its start"
	                         : "past its end",
	         first, first < 0 ? "start" : "end");
	return 1;
}

/* The candidate's output against the reference's, on the GPU. */
struct comparison {
	double rel_l2, max_abs, cosine;
	unsigned long long nonfinite, first_nonfinite, worst;
	double worst_out, worst_ref;
};

static int read_element(struct child *c, CUdeviceptr p, int dtype, unsigned long long i,
                        double *out)
{
	unsigned long long one = 1;
	CUdeviceptr tmp = c->stats.p + 256;

	/* convert the one element to f64 in the scratch slot, then read it */
	if (convert(c, p + i * dtype_size((enum dtype)dtype), dtype, tmp, DT_F64, one) < 0)
		return -1;
	CU_CHECK(cuda.StreamSynchronize(c->stream));
	CU_CHECK(cuda.MemcpyDtoH(out, tmp, sizeof(*out)));
	return 0;
}

static int compare(struct child *c, CUdeviceptr out, int odt, CUdeviceptr ref, int rdt,
                   unsigned long long n, struct comparison *cmp)
{
	struct worker_cmp w;
	CUdeviceptr s = c->stats.p;
	void *params[] = {&out, &odt, &ref, &rdt, &n, &s};
	double dn;

	memset(&w, 0, sizeof(w));
	w.first_nonfinite = w.worst = ~0ULL;
	CU_CHECK(cuda.MemcpyHtoD(c->stats.p, &w, sizeof(w)));
	if (sup_launch(c, c->f_compare, n, params) < 0 || sup_launch(c, c->f_worst, n, params) < 0)
		return -1;
	CU_CHECK(cuda.StreamSynchronize(c->stream));
	CU_CHECK(cuda.MemcpyDtoH(&w, c->stats.p, sizeof(w)));
	memset(cmp, 0, sizeof(*cmp));
	memcpy(&cmp->max_abs, &w.max_abs_bits, sizeof(double));
	cmp->rel_l2 = w.sum_r2 > 0 ? sqrt(w.sum_d2 / w.sum_r2) : w.sum_d2 > 0 ? INFINITY : 0;
	dn = sqrt(w.sum_o2) * sqrt(w.sum_r2);
	cmp->cosine = dn > 0 ? w.sum_or / dn : (w.sum_o2 == w.sum_r2 ? 1 : 0);
	cmp->nonfinite = w.nonfinite;
	cmp->first_nonfinite = w.first_nonfinite;
	cmp->worst = w.worst;
	if (w.worst != ~0ULL && (read_element(c, out, odt, w.worst, &cmp->worst_out) < 0 ||
	                         read_element(c, ref, rdt, w.worst, &cmp->worst_ref) < 0))
		return -1;
	return 0;
}

/* --------------------------------------------------------- launching */

static CUtensorMapDataType tmap_type(int dtype)
{
	switch (dtype) {
	case DT_F16:
		return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
	case DT_BF16:
		return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
	case DT_F32:
		return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
	case DT_F64:
		return CU_TENSOR_MAP_DATA_TYPE_FLOAT64;
	case DT_I32:
		return CU_TENSOR_MAP_DATA_TYPE_INT32;
	case DT_I64:
		return CU_TENSOR_MAP_DATA_TYPE_INT64;
	default:
		return CU_TENSOR_MAP_DATA_TYPE_UINT8; /* i8, u8 and the fp8 types: bytes */
	}
}

static int encode_tmap(const struct worker_shape_job *sh, const struct worker_tmap *t,
                       CUdeviceptr base, CUtensorMap *out)
{
	const struct worker_buf *b = &sh->bufs[t->buffer];
	cuuint64_t dims[5], strides[4];
	cuuint32_t box[5], estr[5] = {1, 1, 1, 1, 1};
	size_t esize = dtype_size((enum dtype)b->dtype);
	CUtensorMapSwizzle sw = t->swizzle == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
	                        : t->swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
	                        : t->swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
	                                           : CU_TENSOR_MAP_SWIZZLE_NONE;
	cuuint64_t packed = esize;
	int k;

	for (k = 0; k < t->rank; k++) {
		dims[k] = t->dims[k];
		box[k] = t->box[k];
		if (k > 0)
			strides[k - 1] = t->strides[k] ? t->strides[k] : packed;
		packed *= t->dims[k];
	}
	CU_CHECK(cuda.TensorMapEncodeTiled(
	    out, tmap_type(b->dtype), (cuuint32_t)t->rank, (void *)(uintptr_t)base, dims, strides,
	    box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE, sw, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
	    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
	return 0;
}

/* Arguments of one call, its buffers at p[]. */
static int build_args(const struct worker_shape_job *sh, const struct worker_call *call,
                      const CUdeviceptr *p, struct argset *a)
{
	size_t i, ntm = 0;

	for (i = 0; i < call->nargs; i++) {
		const struct worker_arg *g = &call->args[i];

		if (g->kind == ARG_BUFFER) {
			a->val[i] = p[g->index];
			a->params[i] = &a->val[i];
		} else if (g->kind == ARG_TENSORMAP) {
			const struct worker_tmap *t = &sh->tmaps[g->index];

			if (ntm == WORKER_MAX_TMAPS)
				return error("more than %d tensor maps in one call",
				             WORKER_MAX_TMAPS);
			if (encode_tmap(sh, t, p[t->buffer], &a->tmap[ntm]) < 0)
				return -1;
			a->params[i] = &a->tmap[ntm++];
		} else {
			a->val[i] = g->bits; /* little-endian: the low bytes are an i32 or f32 */
			a->params[i] = &a->val[i];
		}
	}
	return 0;
}

static int launch(struct child *c, CUfunction fn, const struct worker_call *call, struct argset *a)
{
	if (call->cluster[0] || call->pdl) {
		CUlaunchAttribute attr[2];
		CUlaunchConfig cfg;
		unsigned n = 0;

		memset(&cfg, 0, sizeof(cfg));
		memset(attr, 0, sizeof(attr));
		cfg.gridDimX = call->grid[0];
		cfg.gridDimY = call->grid[1];
		cfg.gridDimZ = call->grid[2];
		cfg.blockDimX = call->block[0];
		cfg.blockDimY = call->block[1];
		cfg.blockDimZ = call->block[2];
		cfg.sharedMemBytes = call->smem;
		cfg.hStream = c->stream;
		if (call->cluster[0]) {
			attr[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
			attr[n].value.clusterDim.x = call->cluster[0];
			attr[n].value.clusterDim.y = call->cluster[1];
			attr[n].value.clusterDim.z = call->cluster[2];
			n++;
		}
		if (call->pdl) { /* back-to-back calls may overlap (the kernel waits) */
			attr[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
			attr[n].value.programmaticStreamSerializationAllowed = 1;
			n++;
		}
		cfg.attrs = attr;
		cfg.numAttrs = n;
		CU_CHECK(cuda.LaunchKernelEx(&cfg, fn, a->params, NULL));
		return 0;
	}
	CU_CHECK(cuda.LaunchKernel(fn, call->grid[0], call->grid[1], call->grid[2], call->block[0],
	                           call->block[1], call->block[2], call->smem, c->stream, a->params,
	                           NULL));
	return 0;
}

static int function(CUmodule mod, const struct worker_call *call, CUfunction *fn)
{
	CU_CHECK(cuda.ModuleGetFunction(fn, mod, call->kernel));
	if (call->smem > 48 * 1024)
		CU_CHECK(cuda.FuncSetAttribute(*fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
		                               (int)call->smem));
	return 0;
}

/* The calls of one problem call, in order, on the buffers at p[]. */
static int run_calls(struct child *c, CUmodule mod, const struct worker_shape_job *sh,
                     const struct worker_call *calls, size_t ncalls, const CUdeviceptr *p)
{
	struct argset *a = xcalloc(1, sizeof(*a));
	CUfunction fn;
	size_t i;
	int r = 0;

	for (i = 0; !r && i < ncalls; i++) {
		r = function(mod, &calls[i], &fn);
		if (!r)
			r = build_args(sh, &calls[i], p, a);
		if (!r)
			r = launch(c, fn, &calls[i], a);
	}
	free(a);
	return r;
}

/* ------------------------------------------------- the reference cache */

static void entry_free(struct ref_entry *e)
{
	size_t k;

	for (k = 0; k < WORKER_MAX_BUFS; k++) {
		dbuf_free(&e->in[k]);
		dbuf_free(&e->ref[k]);
	}
	memset(e, 0, sizeof(*e));
}

static void cache_drop(struct child *c, size_t i)
{
	c->cache_bytes -= c->cache[i].bytes;
	entry_free(&c->cache[i]);
	c->cache[i] = c->cache[--c->ncache];
}

static void cache_evict_lru(struct child *c)
{
	size_t i, lru = 0;

	for (i = 1; i < c->ncache; i++)
		if (c->cache[i].used < c->cache[lru].used)
			lru = i;
	cache_drop(c, lru);
}

static void cache_clear(struct child *c)
{
	while (c->ncache)
		cache_drop(c, c->ncache - 1);
}

static unsigned long long seed_of(const struct worker_job *job, int index)
{
	return job->seed + 0x9e3779b97f4a7c15ULL * (unsigned long long)(index + 1);
}

/* What makes an entry: the reference, the shape's buffers and reference calls, the seed. */
static void entry_key(const struct child *c, const struct worker_shape_job *sh,
                      unsigned long long seed, char out[HASH_HEX_LEN])
{
	struct hasher *h = hasher_new();
	struct strbuf sb = STRBUF_INIT;
	size_t k, j, a;

	hasher_adds(h, c->ref_path);
	hasher_adds(h, sh->dims);
	hasher_add(h, &seed, sizeof(seed));
	for (k = 0; k < sh->nbufs; k++) {
		const struct worker_buf *b = &sh->bufs[k];

		sb_reset(&sb);
		sb_addf(&sb, "%s %d %d %llu %d %.17g %.17g %d", b->name, b->dtype, b->role,
		        b->count, b->fill, b->fa, b->fb, b->ref_dtype);
		hasher_adds(h, sb.buf);
	}
	for (j = 0; j < sh->nref; j++) {
		const struct worker_call *r = &sh->ref[j];

		sb_reset(&sb);
		sb_addf(&sb, "%s %u %u %u %u %u %u %u", r->kernel, r->grid[0], r->grid[1],
		        r->grid[2], r->block[0], r->block[1], r->block[2], r->smem);
		for (a = 0; a < r->nargs; a++)
			sb_addf(&sb, " %d:%d:%llx", r->args[a].kind, r->args[a].index,
			        r->args[a].bits);
		hasher_adds(h, sb.buf);
	}
	sb_release(&sb);
	hasher_final_hex(h, out);
}

static int entry_alloc(const struct worker_shape_job *sh, struct ref_entry *e)
{
	size_t k;

	for (k = 0; k < sh->nbufs; k++) {
		const struct worker_buf *b = &sh->bufs[k];

		if (is_input(b)) {
			if (dbuf_alloc(&e->in[k], buf_bytes(b) + 2 * GUARD_BYTES) < 0)
				return -1;
			e->in_p[k] = e->in[k].p + GUARD_BYTES;
			e->in_bytes[k] = buf_bytes(b);
			e->bytes += buf_bytes(b) + 2 * GUARD_BYTES;
		}
		if (is_output(b)) {
			if (dbuf_alloc(&e->ref[k], ref_bytes(b)) < 0)
				return -1;
			e->bytes += ref_bytes(b);
		}
	}
	return 0;
}

/* Fill the inputs of a new entry and run the reference on them. */
static int entry_fill(struct child *c, const struct worker_shape_job *sh, struct ref_entry *e,
                      int index, unsigned long long seed)
{
	CUdeviceptr p[WORKER_MAX_BUFS];
	struct dbuf scratch[WORKER_MAX_BUFS];
	size_t k;
	int r = 0;

	memset(scratch, 0, sizeof(scratch));
	tick(c->fd, c->where, "shape '%s' seed %d: inputs", sh->name, index);
	for (k = 0; k < sh->nbufs; k++) {
		const struct worker_buf *b = &sh->bufs[k];

		p[k] = 0;
		if (is_input(b) && guard_fill(c, e->in_p[k], buf_bytes(b)) < 0)
			return -1;
		if (is_input(b) &&
		    fill(c, e->in_p[k], b, b->dtype, b->fill, fill_key(seed, b->name), 0) < 0)
			return -1;
		if (b->role == ROLE_OUT && poison(c, e->ref[k].p, b, b->ref_dtype, 0) < 0)
			return -1;
		if (b->role == ROLE_INOUT &&
		    convert(c, e->in_p[k], b->dtype, e->ref[k].p, b->ref_dtype, b->count) < 0)
			return -1;
		p[k] = is_output(b) ? e->ref[k].p : e->in_p[k];
	}
	for (k = 0; r == 0 && k < sh->nbufs; k++) {
		const struct worker_buf *b = &sh->bufs[k];

		if (b->role != ROLE_SCRATCH)
			continue;
		r = dbuf_alloc(&scratch[k], buf_bytes(b));
		if (!r)
			r = fill(c, scratch[k].p, b, b->dtype, b->fill, 0, 0);
		p[k] = scratch[k].p;
	}
	tick(c->fd, c->where, "shape '%s' seed %d: reference", sh->name, index);
	if (!r)
		r = run_calls(c, c->ref_mod, sh, sh->ref, sh->nref, p);
	if (!r && cuda.StreamSynchronize(c->stream) != CUDA_SUCCESS)
		r = error("the reference kernel failed on shape '%s'", sh->name);
	for (k = 0; k < sh->nbufs; k++)
		dbuf_free(&scratch[k]);
	for (k = 0; !r && k < sh->nbufs; k++)
		if (sh->bufs[k].role == ROLE_IN)
			r = checksum(c, e->in_p[k], e->in_bytes[k], &e->cks[k]);
	return r;
}

/* The entry for (shape, seed index): made on first use (inputs filled, reference run), then reused.
 */
static struct ref_entry *cache_get(struct child *c, const struct worker_job *job,
                                   const struct worker_shape_job *sh, int index)
{
	unsigned long long seed = seed_of(job, index);
	struct ref_entry e;
	size_t i;

	memset(&e, 0, sizeof(e));
	entry_key(c, sh, seed, e.key);
	for (i = 0; i < c->ncache; i++) {
		if (!strcmp(c->cache[i].key, e.key)) {
			c->cache[i].used = ++c->clock;
			return &c->cache[i];
		}
	}
	for (i = 0; i < sh->nbufs; i++)
		e.bytes += (is_input(&sh->bufs[i]) ? buf_bytes(&sh->bufs[i]) : 0) +
		           (is_output(&sh->bufs[i]) ? ref_bytes(&sh->bufs[i]) : 0);
	while (c->ncache && c->cache_bytes + e.bytes > c->cache_budget)
		cache_evict_lru(c);
	e.bytes = 0;
	if (entry_alloc(sh, &e) < 0) {
		entry_free(&e);
		if (cuda_last_error() != CUDA_ERROR_OUT_OF_MEMORY || !c->ncache)
			return NULL;
		/* the timing buffers hold the rest: start over with an empty cache */
		cache_clear(c);
		cuda_clear_error();
		if (entry_alloc(sh, &e) < 0) {
			entry_free(&e);
			return NULL;
		}
	}
	if (entry_fill(c, sh, &e, index, seed) < 0) {
		if (!cuda_error_is_sticky(cuda_last_error()))
			entry_free(&e);
		return NULL;
	}
	e.used = ++c->clock;
	ALLOC_GROW(c->cache, c->ncache + 1, c->cache_alloc);
	c->cache[c->ncache] = e;
	c->cache_bytes += e.bytes;
	return &c->cache[c->ncache++];
}

/* ----------------------------------------------------------- modules */

static int load_module(const char *path, CUmodule *mod)
{
	char *image;
	CUresult r;

	if (read_file(path, &image, NULL) < 0)
		return error("cannot read '%s': %s", path, strerror(errno));
	r = cuda.ModuleLoadData(mod, image);
	free(image);
	if (r != CUDA_SUCCESS)
		return cuda_check_failed(r, "cuModuleLoadData", __FILE__, __LINE__);
	return 0;
}

/* A module that stays loaded while jobs name the same path. */
static int keep_loaded(const char *path, char **have, CUmodule *mod)
{
	if (*mod && !strcmp(*have, path))
		return 0;
	if (*mod)
		cuda.ModuleUnload(*mod);
	*mod = NULL;
	free(*have);
	*have = xstrdup(path);
	return load_module(path, mod);
}

static int support_load(struct child *c, const struct worker_job *job)
{
	if (!job->support_path)
		return error("the job names no support kernels");
	if (c->sup_mod && !strcmp(c->sup_path, job->support_path))
		return 0;
	if (keep_loaded(job->support_path, &c->sup_path, &c->sup_mod) < 0)
		return -1;
	CU_CHECK(cuda.ModuleGetFunction(&c->f_fill, c->sup_mod, "tuner_fill"));
	CU_CHECK(cuda.ModuleGetFunction(&c->f_convert, c->sup_mod, "tuner_convert"));
	CU_CHECK(cuda.ModuleGetFunction(&c->f_compare, c->sup_mod, "tuner_compare"));
	CU_CHECK(cuda.ModuleGetFunction(&c->f_worst, c->sup_mod, "tuner_find_worst"));
	CU_CHECK(cuda.ModuleGetFunction(&c->f_diff, c->sup_mod, "tuner_diff"));
	CU_CHECK(cuda.ModuleGetFunction(&c->f_checksum, c->sup_mod, "tuner_checksum"));
	if (dbuf_alloc(&c->guard_ref, GUARD_BYTES) < 0)
		return -1;
	CU_CHECK(cuda.MemsetD8(c->guard_ref.p, GUARD_PATTERN, GUARD_BYTES));
	return dbuf_alloc(&c->stats, 4096);
}

static int ref_load(struct child *c, const struct worker_job *job)
{
	if (!job->ref_cubin_path)
		return error("the job names no reference kernel");
	if (c->ref_mod && !strcmp(c->ref_path, job->ref_cubin_path))
		return 0;
	cache_clear(c);
	return keep_loaded(job->ref_cubin_path, &c->ref_path, &c->ref_mod);
}

static int candidate_load(struct child *c, const struct worker_job *job)
{
	size_t bytes = 0;

	/* an unreadable cubin is the orchestrator's error; one the driver refuses is the variant's
	 */
	if (access(job->cubin_path, R_OK) < 0)
		return error("cannot read '%s': %s", job->cubin_path, strerror(errno));
	c->blame = 1;
	if (load_module(job->cubin_path, &c->mod) < 0)
		return -1;
	if (job->sanitize) {
		/* a kernel that does not include tuner_device.cuh has nothing that checks its
		 * accesses: the job checks it as a plain one, and says the gate did not apply */
		if (cuda.ModuleGetGlobal(&c->san, &bytes, c->mod, "tuner_san_log") !=
		    CUDA_SUCCESS) {
			c->san = 0;
			cuda_clear_error();
			return 0;
		}
		if (bytes < sizeof(struct tuner_san_log))
			return error("'tuner_san_log' in '%s' is %zu bytes, expected %zu",
			             job->cubin_path, bytes, sizeof(struct tuner_san_log));
	}
	c->blame = 0;
	return 0;
}

/* --------------------------------------------------------- sanitizer */

static const char *san_what(unsigned kind, unsigned is_write, unsigned long n)
{
	static const char *const what[TUNER_SAN_KINDS][2][2] = {
	    [TUNER_SAN_CP_ASYNC] = {{"misaligned cp.async read", "misaligned cp.async reads"},
	                            {"misaligned cp.async write", "misaligned cp.async writes"}},
	    [TUNER_SAN_LDMATRIX] = {{"misaligned ldmatrix read", "misaligned ldmatrix reads"},
	                            {"misaligned ldmatrix read", "misaligned ldmatrix reads"}},
	    [TUNER_SAN_VEC_LOAD] = {{"misaligned vector load", "misaligned vector loads"},
	                            {"misaligned vector load", "misaligned vector loads"}},
	    [TUNER_SAN_VEC_STORE] = {{"misaligned vector store", "misaligned vector stores"},
	                             {"misaligned vector store", "misaligned vector stores"}},
	    [TUNER_SAN_BOUNDS] = {{"out-of-bounds shared read", "out-of-bounds shared reads"},
	                          {"out-of-bounds shared write", "out-of-bounds shared writes"}},
	};

	return what[kind][!!is_write][n != 1];
}

/* "12 misaligned cp.async writes; first: thread (1,0,0) block (0,0,0), shared address 0x82" */
static int san_report(const struct tuner_san_log *log, char *buf, size_t len)
{
	struct strbuf sb = STRBUF_INIT;
	unsigned k, i,
	    n = log->nrecords < TUNER_SAN_MAX_RECORDS ? log->nrecords : TUNER_SAN_MAX_RECORDS;
	int any = 0;

	for (k = 0; k < TUNER_SAN_KINDS; k++) {
		unsigned is_write = k == TUNER_SAN_CP_ASYNC || k == TUNER_SAN_VEC_STORE;

		if (!log->count[k])
			continue;
		for (i = 0; i < n; i++) /* the direction of the first record of this kind */
			if (log->first[i].kind == k) {
				is_write = log->first[i].is_write;
				break;
			}
		sb_addf(&sb, "%s%u %s", any ? ", " : "", log->count[k],
		        san_what(k, is_write, log->count[k]));
		any = 1;
	}
	if (any && n) {
		const struct tuner_san_record *r = &log->first[0];

		sb_addf(&sb, "; first: thread (%u,%u,%u) block (%u,%u,%u), %s address 0x%llx",
		        r->thread[0], r->thread[1], r->thread[2], r->block[0], r->block[1],
		        r->block[2], r->space == TUNER_SAN_SHARED ? "shared" : "global", r->addr);
	}
	snprintf(buf, len, "%s", sb.buf ? sb.buf : "");
	sb_release(&sb);
	return any;
}

/* ------------------------------------------------------------- check */

static void views_free(struct views *v)
{
	size_t k;

	for (k = 0; k < WORKER_MAX_BUFS; k++) {
		dbuf_free(&v->own[k]);
		dbuf_free(&v->prev[k]);
	}
}

/* The candidate's buffers for one shape: inputs are the entry's, the rest its own. */
static int views_init(const struct worker_shape_job *sh, const struct ref_entry *e, int runs,
                      struct views *v)
{
	size_t k;

	for (k = 0; k < sh->nbufs; k++) {
		const struct worker_buf *b = &sh->bufs[k];

		if (b->role == ROLE_IN) {
			v->p[k] = e->in_p[k];
			continue;
		}
		if (dbuf_alloc(&v->own[k], buf_bytes(b) + 2 * GUARD_BYTES) < 0)
			return -1;
		v->p[k] = v->own[k].p + GUARD_BYTES;
		if (runs == 2 && is_output(b) && dbuf_alloc(&v->prev[k], buf_bytes(b)) < 0)
			return -1;
	}
	return 0;
}

/* Before a run: inout buffers get their input again, outputs and scratch are poisoned. */
static int views_prepare(struct child *c, const struct worker_shape_job *sh,
                         const struct ref_entry *e, const struct views *v, int run)
{
	size_t k;

	for (k = 0; k < sh->nbufs; k++) {
		const struct worker_buf *b = &sh->bufs[k];

		if (b->role != ROLE_IN && guard_fill(c, v->p[k], buf_bytes(b)) < 0)
			return -1;
		if (b->role == ROLE_INOUT)
			CU_CHECK(cuda.MemcpyDtoD(v->p[k], e->in_p[k], buf_bytes(b)));
		else if (b->role == ROLE_OUT && poison(c, v->p[k], b, b->dtype, run) < 0)
			return -1;
		else if (b->role == ROLE_SCRATCH &&
		         fill(c, v->p[k], b, b->dtype, b->fill, 0, run) < 0)
			return -1;
	}
	return 0;
}

/* An output against its reference: 1 when it fails (sr filled), 0 when it passes, -1 error. */
static int judge_output(struct child *c, const struct worker_shape_job *sh,
                        const struct worker_buf *b, CUdeviceptr out, CUdeviceptr ref,
                        const char *when, struct worker_shape_result *sr)
{
	struct comparison cmp;
	const char *sep = sh->nbufs > 1 ? " " : "";

	if (compare(c, out, b->dtype, ref, b->ref_dtype, b->count, &cmp) < 0)
		return -1;
	if (cmp.rel_l2 > sr->rel_l2 || isnan(sr->rel_l2))
		sr->rel_l2 = cmp.rel_l2;
	if (cmp.max_abs > sr->max_abs || isnan(sr->max_abs))
		sr->max_abs = cmp.max_abs;
	if (cmp.nonfinite) {
		sr->outcome = REJECT_WRONG;
		set_text(sr->reason, sizeof(sr->reason),
		         "shape '%s'%s: %s%s%llu of %llu outputs are NaN or Inf (first at %llu); "
		         "rel_l2 %.3g, max_abs %.3g over the rest",
		         sh->name, when, b->name, sep, cmp.nonfinite, b->count, cmp.first_nonfinite,
		         cmp.rel_l2, cmp.max_abs);
		return 1;
	}
	if (!(cmp.rel_l2 <= b->rel_l2) || !(cmp.max_abs <= b->max_abs) ||
	    (b->cosine > 0 && !(cmp.cosine >= b->cosine))) {
		sr->outcome = REJECT_WRONG;
		set_text(sr->reason, sizeof(sr->reason),
		         "shape '%s'%s: %s%srel_l2 %.3g (tolerance %.3g), max_abs %.3g (tolerance "
		         "%.3g)%s at %llu: %.6g, expected %.6g",
		         sh->name, when, b->name, *sep ? ": " : "", cmp.rel_l2, b->rel_l2,
		         cmp.max_abs, b->max_abs,
		         b->cosine > 0 && !(cmp.cosine >= b->cosine) ? ", cosine below tolerance"
		                                                     : "",
		         cmp.worst, cmp.worst_out, cmp.worst_ref);
		return 1;
	}
	return 0;
}

/* Inputs must come out as they went in. 1 when one changed (sr filled). */
static int inputs_unchanged(struct child *c, const struct worker_shape_job *sh, struct ref_entry *e,
                            const char *when, struct worker_shape_result *sr)
{
	unsigned long long now;
	size_t k;
	int r;

	for (k = 0; k < sh->nbufs; k++) {
		if (sh->bufs[k].role != ROLE_IN)
			continue;
		if (checksum(c, e->in_p[k], e->in_bytes[k], &now) < 0)
			return -1;
		if (now != e->cks[k] || (r = guards_intact(c, sh, k, e->in_p[k], when, sr)) != 0) {
			/* the entry's data is no longer the reference's: nobody else may use it */
			c->spoiled = e;
			if (now == e->cks[k])
				return r;
			sr->outcome = REJECT_WRONG;
			set_text(
			    sr->reason, sizeof(sr->reason),
			    "shape '%s'%s: the kernel wrote into its input '%s' (declared 'in'; "
			    "a buffer it may write is 'inout')",
			    sh->name, when, sh->bufs[k].name);
			return 1;
		}
	}
	return 0;
}

/*
 * Check the candidate on one shape: for each seed, fresh inputs, two runs on
 * poisoned outputs (they must agree bit for bit), the inputs unchanged, then
 * each output against the reference. 0 with a verdict in sr, -1 on an error
 * (the caller decides whose).
 */
static int check_shape(struct child *c, const struct worker_job *job,
                       const struct worker_shape_job *sh, struct worker_shape_result *sr)
{
	/* a ragged shape is checked on one seed: the suite shapes carry the rest */
	int seeds =
	    job->sanitize || sh->check_only ? 1 : (job->check_seeds > 0 ? job->check_seeds : 1);
	int runs = job->sanitize ? 1 : 2, seed, run, r = 0;
	unsigned long long count, first;
	struct tuner_san_log log;
	struct ref_entry *e;
	struct views *v = &c->views;
	char why[256];
	size_t k;

	sr->rel_l2 = sr->max_abs = NAN;
	for (seed = 0; seed < seeds; seed++) {
		if (!(e = cache_get(c, job, sh, seed)))
			return -1;
		if (views_init(sh, e, runs, v) < 0)
			goto fail;
		for (run = 0; run < runs; run++) {
			tick(c->fd, c->where, "shape '%s' seed %d: candidate run %d", sh->name,
			     seed, run + 1);
			if (views_prepare(c, sh, e, v, run) < 0)
				goto fail;
			if (job->sanitize && c->san &&
			    cuda.MemsetD8(c->san, 0, sizeof(log)) != CUDA_SUCCESS)
				goto fail;
			c->blame = 1;
			if (run_calls(c, c->mod, sh, sh->calls, sh->ncalls, v->p) < 0)
				goto fail;
			if (cuda.StreamSynchronize(c->stream) != CUDA_SUCCESS) {
				cuda_check_failed(cuda.CtxSynchronize(), "cuStreamSynchronize",
				                  __FILE__, __LINE__);
				goto fail;
			}
			c->blame = 0;
			if (job->sanitize && c->san) {
				if (cuda.MemcpyDtoH(&log, c->san, sizeof(log)) != CUDA_SUCCESS)
					goto fail;
				if (san_report(&log, why, sizeof(why))) {
					sr->outcome = REJECT_ALIGN;
					set_text(sr->reason, sizeof(sr->reason), "shape '%s': %s",
					         sh->name, why);
					goto verdict;
				}
			}
			/* inputs and every guard zone, after each run: a write is seen at once */
			if ((r = inputs_unchanged(c, sh, e, "", sr)) != 0)
				goto done;
			for (k = 0; k < sh->nbufs; k++)
				if (sh->bufs[k].role != ROLE_IN &&
				    (r = guards_intact(c, sh, k, v->p[k], "", sr)) != 0)
					goto done;
			for (k = 0; run == 0 && runs == 2 && k < sh->nbufs; k++)
				if (v->prev[k].p &&
				    cuda.MemcpyDtoD(v->prev[k].p, v->p[k],
				                    buf_bytes(&sh->bufs[k])) != CUDA_SUCCESS)
					goto fail;
		}
		for (k = 0; runs == 2 && k < sh->nbufs; k++) {
			const struct worker_buf *b = &sh->bufs[k];

			if (!v->prev[k].p)
				continue;
			if (diff(c, v->prev[k].p, v->p[k], b->count,
			         (int)dtype_size((enum dtype)b->dtype), &count, &first) < 0)
				goto fail;
			if (count) {
				sr->outcome = REJECT_RACE;
				set_text(
				    sr->reason, sizeof(sr->reason),
				    "shape '%s' seed %d: two runs on the same inputs differ in "
				    "%llu "
				    "of %llu outputs of '%s' (first at %llu)%s",
				    sh->name, seed, count, b->count, b->name, first,
				    dtype_is_float((enum dtype)b->dtype)
					? ""
					: "; integer outputs are poisoned differently in each run, "
					  "so unwritten elements differ too");
				goto verdict;
			}
		}
		for (k = 0; k < sh->nbufs; k++) {
			if (!is_output(&sh->bufs[k]))
				continue;
			r = judge_output(c, sh, &sh->bufs[k], v->p[k], e->ref[k].p, "", sr);
			if (r)
				goto done;
		}
	}
	sr->outcome = VARIANT_OK;
	return 0;
verdict:
	r = 1;
done:
	if (c->spoiled) {
		cache_drop(c, (size_t)(c->spoiled - c->cache));
		c->spoiled = NULL;
	}
	return r < 0 ? -1 : 0;
fail:
	return -1;
}

/* -------------------------------------------------------------- time */

static size_t round_up(size_t n, size_t to)
{
	return (n + to - 1) / to * to;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * Whether the median of n samples is known well enough: its distribution-free
 * 95% interval (order statistics n/2 -+ 0.98 sqrt(n)) within rel_ci of it.
 */
static int settled(const double *s, size_t n, double rel_ci)
{
	double *v, med, lo, hi;
	long j, k;
	int ok;

	if (rel_ci <= 0 || n < 5)
		return 0;
	v = xmalloc(n * sizeof(*v));
	memcpy(v, s, n * sizeof(*v));
	qsort(v, n, sizeof(*v), cmp_double);
	med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	j = (long)floor((double)n / 2 - 0.98 * sqrt((double)n)) - 1;
	k = (long)ceil((double)n / 2 + 0.98 * sqrt((double)n));
	if (j < 0)
		j = 0;
	if (k > (long)n - 1)
		k = (long)n - 1;
	lo = v[j];
	hi = v[k];
	ok = med > 0 && (hi - lo) / 2 <= rel_ci * med;
	free(v);
	return ok;
}

/* The input sets that timing rotates through, and their arguments. */
struct timing_sets {
	size_t n;
	CUdeviceptr (*p)[WORKER_MAX_BUFS];
	struct argset (*args)[WORKER_MAX_CALLS];
	CUfunction fn[WORKER_MAX_CALLS];
	struct dbuf scratch[WORKER_MAX_BUFS];
};

static void sets_free(struct timing_sets *ts)
{
	size_t k;

	for (k = 0; k < WORKER_MAX_BUFS; k++)
		dbuf_free(&ts->scratch[k]);
	free(ts->p);
	free(ts->args);
	memset(ts, 0, sizeof(*ts));
}

/*
 * Lay out nsets copies of the shape's inputs and outputs in the arena (set 0
 * reads the cache entry's inputs), one scratch shared by all, and each set's
 * arguments.
 */
static int sets_init(struct child *c, const struct worker_job *job,
                     const struct worker_shape_job *sh, const struct ref_entry *e,
                     struct timing_sets *ts)
{
	int launches = job->launches > 0 ? job->launches : 1;
	size_t set_bytes = 0, k, s, off, i;

	for (k = 0; k < sh->nbufs; k++)
		if (sh->bufs[k].role != ROLE_SCRATCH)
			set_bytes += round_up(buf_bytes(&sh->bufs[k]), 256);
	if (!set_bytes) /* job_resolve_shape: every problem has an output of 1 element or more */
		BUG("shape '%s': no input or output to time", sh->name);
	ts->n = 1;
	if (!job->l2_hot && c->l2_bytes > 0) {
		ts->n =
		    (size_t)((2 * c->l2_bytes + (long long)set_bytes - 1) / (long long)set_bytes);
		ts->n = ts->n < 1 ? 1 : ts->n > (size_t)launches ? (size_t)launches : ts->n;
		if (dbuf_alloc(&c->flush, (size_t)c->l2_bytes * 2) < 0)
			return -1;
	}
	if (dbuf_alloc(&c->arena, ts->n * set_bytes) < 0)
		return -1;
	ts->p = xcalloc(ts->n, sizeof(*ts->p));
	ts->args = xcalloc(ts->n, sizeof(*ts->args));
	for (k = 0; k < sh->nbufs; k++) {
		const struct worker_buf *b = &sh->bufs[k];

		if (b->role != ROLE_SCRATCH)
			continue;
		if (dbuf_alloc(&ts->scratch[k], buf_bytes(b)) < 0 ||
		    fill(c, ts->scratch[k].p, b, b->dtype, b->fill, 0, 0) < 0)
			return -1;
	}
	for (s = 0; s < ts->n; s++) {
		off = s * set_bytes;
		for (k = 0; k < sh->nbufs; k++) {
			const struct worker_buf *b = &sh->bufs[k];

			if (b->role == ROLE_SCRATCH) {
				ts->p[s][k] = ts->scratch[k].p;
				continue;
			}
			ts->p[s][k] = c->arena.p + off;
			off += round_up(buf_bytes(b), 256);
			if (b->role == ROLE_IN && s == 0)
				ts->p[s][k] = e->in_p[k];
			else if (is_input(b))
				CU_CHECK(cuda.MemcpyDtoD(ts->p[s][k], e->in_p[k], buf_bytes(b)));
		}
		for (i = 0; i < sh->ncalls; i++)
			if (build_args(sh, &sh->calls[i], ts->p[s], &ts->args[s][i]) < 0)
				return -1;
	}
	for (i = 0; i < sh->ncalls; i++)
		if (function(c->mod, &sh->calls[i], &ts->fn[i]) < 0)
			return -1;
	return 0;
}

/* One problem call on set s: scratch that starts at zero is zeroed first, then every launch. */
static int call_on_set(struct child *c, const struct worker_shape_job *sh, struct timing_sets *ts,
                       size_t s)
{
	size_t k, i;

	for (k = 0; k < sh->nbufs; k++)
		if (sh->bufs[k].role == ROLE_SCRATCH && sh->bufs[k].fill == FILL_ZEROS)
			CU_CHECK(cuda.MemsetD8Async(ts->scratch[k].p, 0, buf_bytes(&sh->bufs[k]),
			                            c->stream));
	for (i = 0; i < sh->ncalls; i++)
		if (launch(c, ts->fn[i], &sh->calls[i], &ts->args[s][i]) < 0)
			return -1;
	return 0;
}

/*
 * Scratch declared 'init: zeros-once' was zeroed before the timed calls only: every call must
 * leave it at zero (or the next starts from stale counters). 1 when one is not (sr filled).
 */
static int left_at_zero(struct child *c, const struct worker_shape_job *sh,
                        const struct timing_sets *ts, struct worker_shape_result *sr)
{
	unsigned char *host;
	size_t k, i, bytes;

	for (k = 0; k < sh->nbufs; k++) {
		if (sh->bufs[k].role != ROLE_SCRATCH || sh->bufs[k].fill != FILL_ZEROS_ONCE)
			continue;
		bytes = buf_bytes(&sh->bufs[k]);
		host = xmalloc(bytes);
		if (cuda.MemcpyDtoH(host, ts->scratch[k].p, bytes) != CUDA_SUCCESS) {
			free(host);
			return error("cuMemcpyDtoH of scratch '%s' failed", sh->bufs[k].name);
		}
		for (i = 0; i < bytes && !host[i]; i++)
			;
		free(host);
		if (i < bytes) {
			sr->outcome = REJECT_WRONG;
			set_text(
			    sr->reason, sizeof(sr->reason),
			    "shape '%s' (after timing): scratch '%s' (init: zeros-once) was not "
			    "left at zero (byte %zu): each call starts from the one before's "
			    "values",
			    sh->name, sh->bufs[k].name, i);
			return 1;
		}
	}
	return 0;
}

/*
 * What was timed is what was checked: poison every set's outputs, replay the
 * graph once more (the kernel has now run warm-up and every sample), and
 * compare each set's outputs with the reference and the inputs with their
 * checksums. 1 when something is off (sr filled).
 */
static int verify_timed(struct child *c, const struct worker_shape_job *sh, struct ref_entry *e,
                        struct timing_sets *ts, struct worker_shape_result *sr)
{
	char when[64];
	size_t s, k;
	int r;

	for (s = 0; s < ts->n; s++)
		for (k = 0; k < sh->nbufs; k++)
			if (sh->bufs[k].role == ROLE_OUT &&
			    poison(c, ts->p[s][k], &sh->bufs[k], sh->bufs[k].dtype, 0) < 0)
				return -1;
	tick(c->fd, c->where, "shape '%s': verifying the timed launches", sh->name);
	c->blame = 1;
	CU_CHECK(cuda.GraphLaunch(c->exec, c->stream));
	CU_CHECK(cuda.StreamSynchronize(c->stream));
	c->blame = 0;
	for (s = 0; s < ts->n; s++) {
		snprintf(when, sizeof(when), " (the timed launches, input set %zu)", s);
		for (k = 0; k < sh->nbufs; k++) {
			/* an inout buffer was rewritten by every launch: nothing to compare */
			if (sh->bufs[k].role != ROLE_OUT)
				continue;
			r = judge_output(c, sh, &sh->bufs[k], ts->p[s][k], e->ref[k].p, when, sr);
			if (r) {
				if (r > 0) {
					size_t n = strlen(sr->reason);

					snprintf(
					    sr->reason + n, sizeof(sr->reason) - n,
					    "; it passed its checks before timing: results change "
					    "from launch to launch");
				}
				return r;
			}
		}
	}
	r = left_at_zero(c, sh, ts, sr);
	return r ? r : inputs_unchanged(c, sh, e, " (after timing)", sr);
}

/*
 * Time the candidate on one shape: rotate through enough input sets that they
 * outgrow the L2 (unless l2_hot), capture `launches` calls in a graph, flush
 * the L2 before each sample, time each replay with events; stop early once the
 * median is settled. Then verify the timed launches' outputs.
 */
static int time_shape(struct child *c, const struct worker_job *job,
                      const struct worker_shape_job *sh, struct worker_shape_result *sr)
{
	int launches = job->launches > 0 ? job->launches : 1;
	int repeats = job->repeats > 0 ? job->repeats : 1, i, r, attempt;
	int min_repeats =
	    job->min_repeats > 0 && job->min_repeats < repeats ? job->min_repeats : repeats;
	struct timing_sets ts;
	struct ref_entry *e;
	float ms;

	memset(&ts, 0, sizeof(ts));
	if (!(e = cache_get(c, job, sh, 0)))
		return -1;
	if (sets_init(c, job, sh, e, &ts) < 0)
		goto fail;
	tick(c->fd, c->where, "shape '%s': timing (%zu input sets)", sh->name, ts.n);
	c->blame = 1;
	for (i = 0; i < job->warmup; i++)
		if (call_on_set(c, sh, &ts, (size_t)i % ts.n) < 0)
			goto fail;
	if (cuda.StreamSynchronize(c->stream) != CUDA_SUCCESS)
		goto fail_sync;
	if (cuda.StreamBeginCapture(c->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != CUDA_SUCCESS)
		goto fail_sync;
	for (i = 0; i < launches; i++) {
		if (call_on_set(c, sh, &ts, (size_t)i % ts.n) < 0) {
			CUgraph g = NULL;

			if (cuda.StreamEndCapture(c->stream, &g) == CUDA_SUCCESS && g)
				cuda.GraphDestroy(g);
			goto fail;
		}
	}
	if (cuda.StreamEndCapture(c->stream, &c->graph) != CUDA_SUCCESS ||
	    cuda.GraphInstantiate(&c->exec, c->graph, 0) != CUDA_SUCCESS ||
	    cuda.GraphLaunch(c->exec, c->stream) != CUDA_SUCCESS || /* uploads the graph */
	    cuda.StreamSynchronize(c->stream) != CUDA_SUCCESS)
		goto fail_sync;
	sr->samples_us = xmalloc((size_t)repeats * sizeof(double));
	for (attempt = 0; attempt < 2; attempt++) {
		struct nvml_state before, after;
		int watched = c->nvml && nvml_read(c->nvml, &before) == 0;

		sr->nsamples = 0;
		for (i = 0; i < repeats; i++) {
			if (!job->l2_hot && c->flush.bytes &&
			    cuda.MemsetD32Async(c->flush.p, (unsigned)i, c->flush.bytes / 4,
			                        c->stream) != CUDA_SUCCESS)
				goto fail_sync;
			if (cuda.EventRecord(c->ev[0], c->stream) != CUDA_SUCCESS ||
			    cuda.GraphLaunch(c->exec, c->stream) != CUDA_SUCCESS ||
			    cuda.EventRecord(c->ev[1], c->stream) != CUDA_SUCCESS ||
			    cuda.EventSynchronize(c->ev[1]) != CUDA_SUCCESS ||
			    cuda.EventElapsedTime(&ms, c->ev[0], c->ev[1]) != CUDA_SUCCESS)
				goto fail_sync;
			sr->samples_us[i] = (double)ms * 1000.0 / launches;
			sr->nsamples = (size_t)i + 1;
			if (i + 1 >= min_repeats &&
			    settled(sr->samples_us, sr->nsamples, job->rel_ci))
				break;
		}
		if (!watched || nvml_read(c->nvml, &after) < 0)
			break;
		sr->sm_mhz = (before.sm_mhz + after.sm_mhz) / 2.0;
		sr->temp_c = after.temp_c;
		sr->power_w = after.power_w;
		sr->throttle = before.throttle | after.throttle;
		if (!sr->throttle || attempt)
			break;
		/* slowed down while timed: the samples are not the kernel's, take them again */
		sr->retaken = 1;
		tick(c->fd, c->where, "shape '%s': throttled, timing again", sh->name);
	}
	c->blame = 0;
	r = verify_timed(c, sh, e, &ts, sr);
	if (c->spoiled) {
		cache_drop(c, (size_t)(c->spoiled - c->cache));
		c->spoiled = NULL;
	}
	sets_free(&ts);
	return r < 0 ? -1 : 0;
fail_sync:
	cuda_check_failed(cuda.CtxSynchronize(), "timing", __FILE__, __LINE__);
fail:
	sets_free(&ts);
	return -1;
}

/* -------------------------------------------------------------- jobs */

/* Free what timing one shape made; broken: the context is gone, make no CUDA calls. */
static void timing_cleanup(struct child *c, int broken)
{
	if (!broken) {
		if (c->exec)
			cuda.GraphExecDestroy(c->exec);
		if (c->graph)
			cuda.GraphDestroy(c->graph);
	}
	c->exec = NULL;
	c->graph = NULL;
}

/* Free what one job made: modules are unloaded after every job. */
static void job_cleanup(struct child *c, int broken)
{
	timing_cleanup(c, broken);
	if (!broken && c->mod)
		cuda.ModuleUnload(c->mod);
	c->mod = NULL;
	c->san = 0;
}

/* Turn the error that stopped a job into its result: the candidate's fault, or the evaluation's. */
static void job_failed(struct child *c, struct worker_result *res, struct worker_shape_result *sr,
                       unsigned *flags)
{
	CUresult e = cuda_last_error();

	if (e != CUDA_SUCCESS && cuda_error_is_sticky(e))
		*flags |= WORKER_RESULT_FATAL;
	else if (c->have_ctx && cuda.CtxSynchronize() != CUDA_SUCCESS)
		*flags |= WORKER_RESULT_FATAL; /* a "harmless" error that left the context broken */
	res->outcome = REJECT_RUNTIME_FAULT;
	if (!c->blame)
		*flags |= WORKER_RESULT_ERROR;
	if (c->blame && e != CUDA_SUCCESS)
		set_text(res->reason, sizeof(res->reason), "%s (%s) in %s", cuda_error_name(e),
		         cuda_error_string(e), c->where);
	else
		set_text(res->reason, sizeof(res->reason), "%s (in %s)", child_err, c->where);
	if (sr) {
		sr->outcome = res->outcome;
		set_text(sr->reason, sizeof(sr->reason), "%s", res->reason);
	}
}

static int job_validate(const struct worker_job *job)
{
	size_t i, j, k;

	if (!job->cubin_path)
		return error("the job names no candidate");
	if (!job->nshapes)
		return error("the job has no shapes");
	for (i = 0; i < job->nshapes; i++) {
		const struct worker_shape_job *s = &job->shapes[i];

		if (!s->ncalls || !s->nref)
			return error("shape '%s': no launches", s->name);
		for (j = 0; j < s->ncalls + s->nref; j++) {
			const struct worker_call *call =
			    j < s->ncalls ? &s->calls[j] : &s->ref[j - s->ncalls];

			for (k = 0; k < 3; k++)
				if (!call->grid[k] || !call->block[k])
					return error("shape '%s': empty launch geometry for '%s'",
					             s->name, call->kernel);
		}
		for (k = 0; k < s->nbufs; k++)
			if (s->bufs[k].dtype < 0 || s->bufs[k].dtype >= DT_COUNT ||
			    s->bufs[k].ref_dtype < 0 || s->bufs[k].ref_dtype >= DT_COUNT ||
			    s->bufs[k].role < ROLE_IN || s->bufs[k].role > ROLE_SCRATCH)
				return error("shape '%s': buffer '%s' is malformed", s->name,
				             s->bufs[k].name);
	}
	return 0;
}

static void child_job(struct child *c, const struct worker_job *job, struct worker_result *res,
                      unsigned *flags)
{
	struct worker_shape_result *sr = NULL;
	size_t i;

	memset(res, 0, sizeof(*res));
	*flags = 0;
	c->blame = 0;
	child_err[0] = '\0';
	cuda_clear_error();
	tick(c->fd, c->where, "loading '%s'", job->cubin_path ? job->cubin_path : "?");
	if (job_validate(job) < 0 || support_load(c, job) < 0 || ref_load(c, job) < 0 ||
	    candidate_load(c, job) < 0)
		goto failed;
	for (i = 0; job->check && i < job->nshapes; i++) {
		sr = &res->shapes[i];
		res->nshapes = i + 1;
		if (check_shape(c, job, &job->shapes[i], sr) < 0)
			goto failed;
		if (sr->outcome != VARIANT_OK) {
			res->outcome = sr->outcome;
			set_text(res->reason, sizeof(res->reason), "%s", sr->reason);
			job_cleanup(c, 0);
			return;
		}
	}
	for (i = 0; job->time_it && !job->sanitize && i < job->nshapes; i++) {
		if (job->shapes[i].check_only)
			continue;
		sr = &res->shapes[i];
		res->nshapes = res->nshapes > i + 1 ? res->nshapes : i + 1;
		sr->outcome = VARIANT_OK;
		if (time_shape(c, job, &job->shapes[i], sr) < 0)
			goto failed;
		timing_cleanup(c, 0);
		if (sr->outcome != VARIANT_OK) {
			res->outcome = sr->outcome;
			set_text(res->reason, sizeof(res->reason), "%s", sr->reason);
			job_cleanup(c, 0);
			return;
		}
	}
	res->outcome = VARIANT_OK;
	if (job->sanitize && !c->san)
		set_text(res->reason, sizeof(res->reason), "%s",
		         WORKER_SAN_ABSENT " (the kernel does not include tuner_device.cuh)");
	job_cleanup(c, 0);
	return;
failed:
	job_failed(c, res, sr, flags);
	job_cleanup(c, (*flags & WORKER_RESULT_FATAL) != 0);
}

/* ---------------------------------------------------------- lifetime */

static int child_open(struct child *c, char *name, size_t namelen, char *driver, size_t driverlen,
                      int *cc, long long *smem_optin)
{
	int v, major = 0, minor = 0, version = 0;
	size_t free_bytes = 0, total = 0;

	CU_CHECK(cuda.DeviceGet(&c->dev, c->device));
	CU_CHECK(cuda.DeviceGetName(name, (int)namelen, c->dev));
	CU_CHECK(cuda.DriverGetVersion(&version));
	snprintf(driver, driverlen, "%d.%d", version / 1000, version % 1000 / 10);
	CU_CHECK(cuda.DeviceGetAttribute(&c->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
	                                 c->dev));
	CU_CHECK(
	    cuda.DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, c->dev));
	CU_CHECK(
	    cuda.DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, c->dev));
	*cc = major * 10 + minor;
	CU_CHECK(cuda.DeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
	                                 c->dev));
	*smem_optin = v;
	CU_CHECK(cuda.DeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, c->dev));
	c->l2_bytes = v;
	CU_CHECK(cuda.DevicePrimaryCtxRetain(&c->ctx, c->dev));
	c->have_ctx = 1;
	CU_CHECK(cuda.CtxSetCurrent(c->ctx));
	CU_CHECK(cuda.StreamCreate(&c->stream, CU_STREAM_DEFAULT));
	c->have_stream = 1;
	for (c->nev = 0; c->nev < 2; c->nev++)
		CU_CHECK(cuda.EventCreate(&c->ev[c->nev], CU_EVENT_DEFAULT));
	{
		char bus[32], why[200];

		if (cuda.DeviceGetPCIBusId(bus, sizeof(bus), c->dev) == CUDA_SUCCESS)
			c->nvml = nvml_open(bus, why, sizeof(why));
		if (!c->nvml && getenv("TUNER_WORKER_VERBOSE"))
			fprintf(stderr, "worker: %s\n", why);
	}
	CU_CHECK(cuda.MemGetInfo(&free_bytes, &total));
	/* inputs and references of the shape suite stay resident up to a third of the free memory
	 */
	c->cache_budget = free_bytes / 3;
	return 0;
}

static void child_close(struct child *c, int broken)
{
	int i;

	job_cleanup(c, broken);
	if (!broken && c->have_ctx) {
		cache_clear(c);
		views_free(&c->views);
		dbuf_free(&c->stats);
		dbuf_free(&c->guard_ref);
		dbuf_free(&c->flush);
		dbuf_free(&c->arena);
		if (c->ref_mod)
			cuda.ModuleUnload(c->ref_mod);
		if (c->sup_mod)
			cuda.ModuleUnload(c->sup_mod);
		for (i = 0; i < c->nev; i++)
			cuda.EventDestroy(c->ev[i]);
		if (c->have_stream)
			cuda.StreamDestroy(c->stream);
	}
	if (!broken && c->have_ctx)
		cuda.DevicePrimaryCtxRelease(c->dev);
	free(c->cache);
	free(c->ref_path);
	free(c->sup_path);
	nvml_close(c->nvml);
}

static int child_main(int fd, int device)
{
	struct strbuf msg = STRBUF_INIT, out = STRBUF_INIT;
	char name[128] = "", driver[32] = "", why[256];
	int cc = 0, status = 0, r;
	long long smem_optin = 0;
	struct child c;

	memset(&c, 0, sizeof(c));
	c.fd = fd;
	c.device = device;
	set_error_routine(child_capture);
	if (cuda_load(why, sizeof(why)) < 0) {
		send_hello(fd, 0, why, NULL, NULL, 0, 0, 0, 0);
		return EX_UNAVAILABLE;
	}
	if (child_open(&c, name, sizeof(name), driver, sizeof(driver), &cc, &smem_optin) < 0) {
		set_text(why, sizeof(why), "GPU %d: %s", device, child_err);
		send_hello(fd, 0, why, NULL, NULL, 0, 0, 0, 0);
		child_close(&c, 1);
		return EX_UNAVAILABLE;
	}
	send_hello(fd, 1, NULL, name, driver, c.sm_count, cc, smem_optin, c.l2_bytes);
	while ((r = wire_recv(fd, WORKER_TAG, WORKER_PROTOCOL_VERSION, &msg, 0)) == 1) {
		struct worker_job job;
		struct worker_result res;
		unsigned flags = 0;

		if (wire_is(&msg, "quit"))
			break;
		if (worker_job_decode(msg.buf, msg.len, &job) < 0) {
			status = EX_PROTOCOL;
			break;
		}
		child_job(&c, &job, &res, &flags);
		worker_job_release(&job);
		worker_result_encode(&res, flags, &out);
		child_send(fd, &out);
		worker_result_release(&res);
		if (flags & WORKER_RESULT_FATAL) {
			child_close(&c, 1);
			sb_release(&msg);
			sb_release(&out);
			return 0;
		}
	}
	if (r < 0)
		status = EX_PROTOCOL;
	child_close(&c, 0);
	sb_release(&msg);
	sb_release(&out);
	return status;
}

/* --------------------------------------------------- test-only child */

/* "fds 0 1 2 3": the descriptors this process holds, for the O_CLOEXEC test. */
static void list_fds(char *buf, size_t len)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	size_t used;

	snprintf(buf, len, "fds");
	if (!d)
		return;
	while ((de = readdir(d))) {
		used = strlen(buf);
		if (de->d_name[0] != '.' && atoi(de->d_name) != dirfd(d) && used < len)
			snprintf(buf + used, len - used, " %s", de->d_name);
	}
	closedir(d);
}

/*
 * TUNER_WORKER_FAKE_MS=N: each shape of a job takes N ms, as a GPU would take
 * its time, so that the pipeline's scheduling can be measured without one.
 */
static void fake_delay(const struct worker_job *job)
{
	const char *env = getenv("TUNER_WORKER_FAKE_MS");
	double ms = env ? atof(env) * (double)job->nshapes : 0;
	struct timespec ts;

	if (!(ms > 0))
		return;
	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)((ms - 1000.0 * (double)ts.tv_sec) * 1e6);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* TUNER_WORKER_FAKE: the protocol and the orchestrator's watchdog, exercised without a GPU. */
static int fake_main(int fd)
{
	struct strbuf msg = STRBUF_INIT, out = STRBUF_INIT;
	char where[200];

	send_hello(fd, 1, NULL, "fake GPU (TUNER_WORKER_FAKE)", "0.0", 1, 0, 49152, 0);
	while (wire_recv(fd, WORKER_TAG, WORKER_PROTOCOL_VERSION, &msg, 0) == 1) {
		struct worker_job job;
		struct worker_result res;
		const char *kernel;
		unsigned flags = 0;
		size_t i, j;

		if (wire_is(&msg, "quit") || worker_job_decode(msg.buf, msg.len, &job) < 0)
			break;
		kernel = job.nshapes && job.shapes[0].ncalls ? job.shapes[0].calls[0].kernel : "";
		tick(fd, where, "fake job '%s'", kernel);
		fake_delay(&job);
		memset(&res, 0, sizeof(res));
		if (!strcmp(kernel, "hang"))
			for (;;)
				pause();
		if (!strcmp(kernel, "crash"))
			abort();
		if (!strcmp(kernel, "fault")) {
			res.outcome = REJECT_RUNTIME_FAULT;
			snprintf(res.reason, sizeof(res.reason),
			         "CUDA_ERROR_ILLEGAL_ADDRESS (fake) in %s", where);
			flags = WORKER_RESULT_FATAL;
		} else if (!strcmp(kernel, "fds")) {
			list_fds(res.reason, sizeof(res.reason));
		}
		res.nshapes = res.outcome == VARIANT_OK ? job.nshapes : 0;
		for (i = 0; i < res.nshapes && job.time_it; i++) {
			if (job.shapes[i].check_only)
				continue;
			res.shapes[i].samples_us = xmalloc((size_t)job.repeats * sizeof(double));
			res.shapes[i].nsamples = (size_t)job.repeats;
			for (j = 0; j < (size_t)job.repeats; j++)
				res.shapes[i].samples_us[j] = (double)(i + 1);
		}
		worker_job_release(&job);
		worker_result_encode(&res, flags, &out);
		child_send(fd, &out);
		worker_result_release(&res);
		if (flags & WORKER_RESULT_FATAL)
			break;
	}
	sb_release(&msg);
	sb_release(&out);
	return 0;
}

int worker_main(int argc, char **argv)
{
	int fd = -1, device = 0, i;

	for (i = 1; i < argc; i++) {
		if (!strncmp(argv[i], "--fd=", 5))
			fd = atoi(argv[i] + 5);
		else if (!strncmp(argv[i], "--device=", 9))
			device = atoi(argv[i] + 9);
		else {
			error("__worker: unknown argument '%s'", argv[i]);
			return EX_USAGE;
		}
	}
	if (fd < 0) {
		error("__worker is tuner's GPU child process; tuner starts it itself");
		return EX_USAGE;
	}
	if (getenv("TUNER_WORKER_FAKE"))
		return fake_main(fd);
	return child_main(fd, device);
}
