/* The GPU worker: a disposable child process per GPU that checks and times one variant a job. */
#ifndef TUNER_WORKER_H
#define TUNER_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "tuner/common.h"
#include "tuner/outcome.h"

#define WORKER_MAX_SHAPES       96 /* the suite and the ragged shapes derived from it */
#define WORKER_MAX_BUFS         16
#define WORKER_MAX_CALLS        8
#define WORKER_MAX_ARGS         32
#define WORKER_MAX_TMAPS        8
#define WORKER_PROTOCOL_VERSION 2

/*
 * A job is plain data: the orchestrator has resolved every expression of the
 * problem for each shape, so the worker knows no problem by name and evaluates
 * nothing. Numbers are the enums of tuner/problem.h (dtype, buf_role,
 * fill_kind, arg_kind).
 */
struct worker_buf {
	char name[32];
	int dtype;
	int role;
	unsigned long long count; /* elements */
	int fill;                 /* inputs: the data; scratch: zeros or poison */
	double fa, fb;            /* the fill's parameters */
	int ref_dtype;            /* outputs: what the reference writes */
	double rel_l2, max_abs;   /* outputs: tolerances; NaN or Inf never passes */
	double cosine;            /* outputs: the least cosine similarity, <= 0: not checked */
};

struct worker_arg {
	int kind;
	int index;               /* a buffer, or a tensor map */
	unsigned long long bits; /* scalars: the value's bytes, little end first */
};

/* A TMA tensor map over a buffer, innermost dim first (cuTensorMapEncodeTiled). */
struct worker_tmap {
	int buffer, rank, swizzle;              /* swizzle: 0, 32, 64 or 128 bytes */
	unsigned long long dims[5], strides[5]; /* strides[k]: bytes between steps of dim k >= 1 */
	unsigned box[5];
};

struct worker_call {
	char kernel[64];
	unsigned grid[3], block[3], cluster[3]; /* cluster 0 0 0: none */
	unsigned smem;                          /* dynamic shared memory; > 48 KB is opted into */
	unsigned pdl;                           /* 1: programmatic stream serialization */
	size_t nargs;
	struct worker_arg args[WORKER_MAX_ARGS];
};

/* One shape of a job: its buffers and the launches of one call, candidate's and reference's. */
struct worker_shape_job {
	char name[48];
	char dims[128]; /* "rows=4096,cols=4096": names it in messages and keys the input cache */
	int check_only; /* a derived (ragged) shape: checked, never timed */
	size_t nbufs;
	struct worker_buf bufs[WORKER_MAX_BUFS];
	size_t ntmaps;
	struct worker_tmap tmaps[WORKER_MAX_TMAPS];
	size_t ncalls;
	struct worker_call calls[WORKER_MAX_CALLS];
	size_t nref;
	struct worker_call ref[WORKER_MAX_CALLS];
};

struct worker_job {
	const char *cubin_path;     /* the candidate */
	const char *ref_cubin_path; /* the reference kernel(s) */
	const char *support_path;   /* kernels/support/tuner_support.cu, built for the GPU */
	size_t nshapes;
	struct worker_shape_job *shapes; /* worker_job_shape() adds one */
	size_t shapes_alloc;
	int check_seeds; /* fresh random inputs per shape (at least 1) */
	unsigned long long seed;
	int warmup;      /* launches before the first sample */
	int repeats;     /* samples per shape, at most */
	int min_repeats; /* samples before the adaptive stop may end a shape (0: all repeats) */
	double rel_ci; /* stop once the median's 95% interval is within this fraction (0: never) */
	int launches;  /* calls per sample, captured in one CUDA graph */
	int l2_hot;    /* 0: rotate input sets past the L2 size and flush it before each sample */
	double timeout_s; /* watchdog: the longest any one phase may run; <= 0 for 60 s */
	int sanitize; /* a TUNER_SANITIZE build: run once per shape, read tuner_san_log, no timing
	               */
	int check;    /* check every shape first (0: an earlier job checked them) */
	int time_it;  /* 0: check only */
};

/* A zeroed shape appended to the job. */
struct worker_shape_job *worker_job_shape(struct worker_job *job);
void worker_job_release(struct worker_job *job);

struct worker_shape_result {
	int outcome; /* enum outcome */
	char reason[256];
	double rel_l2, max_abs; /* the worst over the seeds and outputs checked */
	double *samples_us;     /* µs per call, one per sample, raw; NULL when not timed */
	size_t nsamples;
	/* while it was timed (NVML; 0 when not watched): SM clock, temperature, power, and
	 * the throttle reasons seen; retaken: the samples were taken again after throttling */
	double sm_mhz, temp_c, power_w;
	unsigned long long throttle;
	int retaken;
};

/*
 * outcome is the first failing shape's (VARIANT_OK when all passed), reason its
 * explanation. Shapes are checked in order and checking stops at the first
 * failure, so nshapes counts the shapes that have a verdict: all of them when
 * the outcome is VARIANT_OK, the failing one last otherwise (0 when the whole
 * job failed before any shape, e.g. a watchdog timeout while loading).
 */
/*
 * The reason of a passing sanitize job whose build has no 'tuner_san_log': the
 * kernel's accesses are not instrumented, so the dynamic alignment gate did not apply.
 */
#define WORKER_SAN_ABSENT "not instrumented"

struct worker_result {
	int outcome;
	int died; /* the worker ended without a result (outcome REJECT_RUNTIME_FAULT) */
	char reason[512];
	size_t nshapes;
	struct worker_shape_result shapes[WORKER_MAX_SHAPES];
};

struct worker;

/*
 * Spawn the worker for GPU 0 (worker_start) or for one ordinal: the tuner binary
 * re-executed as `tuner __worker`. -1 with a one-line why when there is no driver
 * or no GPU, or the child cannot be started; the caller carries on without a GPU.
 * The child dies with the thread that starts it (PR_SET_PDEATHSIG): start and use
 * a worker from a thread that outlives it, such as the main thread.
 */
int worker_start(struct worker **out, char *why, size_t whylen);
int worker_start_on(struct worker **out, int device, char *why, size_t whylen);

/* What the worker found when it started: "NVIDIA H100 80GB HBM3", driver API "13.0", ... */
int worker_device(struct worker *w, char *name, size_t namelen, char *driver, size_t driverlen,
                  int *sm_count, long long *smem_optin);
/* Its GPU's ordinal. */
int worker_ordinal(const struct worker *w);
/* Its compute capability times ten (90 for sm_90), 0 when unknown. */
int worker_cc(const struct worker *w);

/*
 * Check, then (job->time_it) time one variant. Returns 0 with res filled for
 * every verdict about the variant, also when the child faulted, hung (killed by
 * the watchdog after job->timeout_s: REJECT_TIMEOUT) or died (REJECT_RUNTIME_FAULT
 * "worker died: signal N"); a dead child is replaced on the next call. Returns
 * -1 with an error() when the evaluation itself failed: the worker cannot be
 * restarted, the reference kernel does not load or faults.
 * Release res with worker_result_release in both cases.
 */
int worker_eval(struct worker *w, const struct worker_job *job, struct worker_result *res);
void worker_result_release(struct worker_result *res);

/* Ask the child to exit (SIGKILL after a grace period) and free w; NULL is fine. */
void worker_stop(struct worker *w);

/* The child's process id, 0 while none is running (restarted lazily by worker_eval). */
long worker_pid(const struct worker *w);

/*
 * The child's entry point (`tuner __worker --fd=N --device=N`): owns the CUDA
 * context, serves jobs from fd N until it is closed. Returns the exit status.
 *
 * Testing hook: with TUNER_WORKER_FAKE=1 in the environment the child loads no
 * driver and answers each job by the first call's kernel name: "hang" never
 * answers, "crash" aborts, "fault" reports a sticky CUDA error and exits, "fds"
 * reports the file descriptors it inherited, anything else passes every shape.
 */
int worker_main(int argc, char **argv);

/* ------------------------------------------------------ compute-sanitizer */

/* Where NVIDIA's compute-sanitizer is ($TUNER_COMPUTE_SANITIZER, the toolkit's bin, PATH). */
int worker_tool_path(char *out, size_t len);
/*
 * Run job (a check) in a one-off worker on device under compute-sanitizer
 * --tool tool (memcheck, racecheck, synccheck), the support and reference
 * kernels excluded. 0 clean, 1 with report naming the first problem the tool
 * found (or the check's own failure under it), 2 with report when it gave no
 * verdict (the tool could not start, ran out of time or died, having found
 * nothing, or its log cannot be read), -1 with why when its log cannot be made.
 */
int worker_tool_check(int device, const char *path, const char *tool, const struct worker_job *job,
                      char *report, size_t len, char *why, size_t whylen);

/* ------------------------------------------------------------- protocol */

/*
 * A message is a header line "tuner-worker/2 LLLLLLLL\n" (the version, then the
 * body's length in 8 hex digits) and a body of "key=value\n" lines, the first
 * "type=hello|job|tick|result|quit"; values escape '\' and newline as \\ and \n.
 * Exposed for tests (tuner/worker-wire.c).
 */
enum { WORKER_RESULT_FATAL = 1, WORKER_RESULT_ERROR = 2 };

void worker_job_encode(const struct worker_job *job, struct strbuf *out);
/* Decode in place: the job's strings point into msg, which must outlive it. */
int worker_job_decode(char *msg, size_t len, struct worker_job *job);
/* flags: WORKER_RESULT_FATAL (the child exits next), WORKER_RESULT_ERROR (not the variant's fault)
 */
void worker_result_encode(const struct worker_result *res, unsigned flags, struct strbuf *out);
int worker_result_decode(char *msg, size_t len, struct worker_result *res, unsigned *flags);

#endif
