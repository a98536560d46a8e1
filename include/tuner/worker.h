/* The GPU worker: a disposable child process per GPU that checks and times one variant a job. */
#ifndef TUNER_WORKER_H
#define TUNER_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "tuner/common.h"
#include "tuner/outcome.h"

#define WORKER_MAX_SHAPES       32
#define WORKER_MAX_DIMS         8
#define WORKER_PROTOCOL_VERSION 1

/* One shape of a job: the problem's dims and the launch geometry of the candidate on it. */
struct worker_shape_job {
	char name[32];
	long long dims[WORKER_MAX_DIMS]; /* in the problem's dim order (B H S D for attention) */
	unsigned grid[3], block[3];
	unsigned smem; /* dynamic shared memory in bytes; > 48 KB is opted into per kernel */
};

struct worker_job {
	const char *cubin_path; /* the candidate */
	const char *kernel;
	const char *problem;        /* "attention": selects the GPU half (struct worker_problem) */
	const char *ref_cubin_path; /* the reference kernel */
	const char *ref_kernel;
	size_t nshapes;
	struct worker_shape_job shapes[WORKER_MAX_SHAPES];
	double rel_l2, max_abs; /* tolerances; NaN or Inf never passes */
	int check_seeds;        /* fresh random inputs per shape (at least 1) */
	unsigned long long seed;
	int warmup;   /* launches before the first sample */
	int repeats;  /* samples per shape */
	int launches; /* launches per sample, captured in one CUDA graph */
	int l2_hot;   /* 0: rotate input sets past the L2 size and flush it before each sample */
	double timeout_s; /* watchdog: the longest any one phase may run; <= 0 for 60 s */
	int sanitize; /* a TUNER_SANITIZE build: run once per shape, read tuner_san_log, no timing
	               */
	int time_it;  /* 0: check only */
};

struct worker_shape_result {
	int outcome; /* enum outcome */
	char reason[256];
	double rel_l2, max_abs; /* the worst over the seeds checked */
	double *samples_us;     /* µs per launch, one per sample, raw; NULL when not timed */
	size_t nsamples;
};

/*
 * outcome is the first failing shape's (VARIANT_OK when all passed), reason its
 * explanation. Shapes are checked in order and checking stops at the first
 * failure, so nshapes counts the shapes that have a verdict: all of them when
 * the outcome is VARIANT_OK, the failing one last otherwise (0 when the whole
 * job failed before any shape, e.g. a watchdog timeout while loading).
 */
struct worker_result {
	int outcome;
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

/*
 * Check, then (job->time_it) time one variant. Returns 0 with res filled for
 * every verdict about the variant, also when the child faulted, hung (killed by
 * the watchdog after job->timeout_s: REJECT_TIMEOUT) or died (REJECT_RUNTIME_FAULT
 * "worker died: signal N"); a dead child is replaced on the next call. Returns
 * -1 with an error() when the evaluation itself failed: the worker cannot be
 * restarted, the reference kernel does not load or faults, an unknown problem.
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
 * driver and answers each job by its kernel name: "hang" never answers, "crash"
 * aborts, "fault" reports a sticky CUDA error and exits, "fds" reports the file
 * descriptors it inherited, anything else passes every shape.
 */
int worker_main(int argc, char **argv);

/* ------------------------------------------------------------- protocol */

/*
 * A message is a header line "tuner-worker/1 LLLLLLLL\n" (the version, then the
 * body's length in 8 hex digits) and a body of "key=value\n" lines, the first
 * "type=hello|job|tick|result|quit"; values escape '\' and newline as \\ and \n.
 * Exposed for tests.
 */
enum { WORKER_RESULT_FATAL = 1, WORKER_RESULT_ERROR = 2 };

void worker_job_encode(const struct worker_job *job, struct strbuf *out);
/* Decode in place: the job's strings point into msg, which must outlive it. */
int worker_job_decode(char *msg, size_t len, struct worker_job *job);
/* flags: WORKER_RESULT_FATAL (the child exits next), WORKER_RESULT_ERROR (not the variant's fault)
 */
void worker_result_encode(const struct worker_result *res, unsigned flags, struct strbuf *out);
int worker_result_decode(char *msg, size_t len, struct worker_result *res, unsigned *flags);

/* ------------------------------------------------- problems, GPU half */

#define WORKER_MAX_INPUTS 4
#define WORKER_MAX_ARGS   16

/* Kernel arguments for cuLaunchKernel: values and the pointers to them. */
struct worker_args {
	size_t n;
	union worker_arg {
		unsigned long long ptr; /* a CUdeviceptr */
		int i;
		float f;
	} v[WORKER_MAX_ARGS];
	void *params[WORKER_MAX_ARGS];
};
void worker_args_init(struct worker_args *a);
void worker_args_ptr(struct worker_args *a, unsigned long long p);
void worker_args_int(struct worker_args *a, int i);
void worker_args_float(struct worker_args *a, float f);

/* An output against the reference output. */
struct worker_compare {
	double rel_l2;    /* ||out - ref|| / ||ref|| over the finite outputs */
	double max_abs;   /* max |out - ref| */
	size_t nonfinite; /* outputs (or reference values) that are NaN or Inf */
	size_t first_nonfinite;
	size_t worst; /* index of max_abs */
	double worst_out, worst_ref;
};

/*
 * What the generic worker needs to know about a problem on the GPU: input
 * buffers and how to fill them, the candidate's and the reference's kernel
 * arguments, and how to compare. Each problem module defines one; the worker
 * finds it by the name the job carries.
 */
struct worker_problem {
	const char *name;
	size_t ninputs;            /* at most WORKER_MAX_INPUTS */
	size_t in_size;            /* bytes per element of each input */
	size_t out_size;           /* bytes per element of the candidate's output (even) */
	size_t ref_size;           /* bytes per element of the reference output */
	unsigned short out_poison; /* 16-bit pattern written over the output before every run */
	/* Elements of each input and of the output (the reference has as many); -1 + why if
	 * unsupported. */
	int (*elems)(const long long *dims, size_t *in_elems, size_t *out_elems, char *why,
	             size_t whylen);
	/*
	 * Fill elements [begin, end) of input `input` (host points at element 0).
	 * Each element depends only on (seed, input, index): any split of the range
	 * gives the same data, so the worker fills in parallel.
	 */
	void (*fill)(unsigned long long seed, size_t input, void *host, size_t begin, size_t end);
	void (*args)(const long long *dims, const unsigned long long *in, unsigned long long out,
	             struct worker_args *a);
	void (*ref_args)(const long long *dims, const unsigned long long *in,
	                 unsigned long long ref, struct worker_args *a, unsigned grid[3],
	                 unsigned block[3]);
	void (*compare)(const void *out, const void *ref, size_t n, struct worker_compare *c);
};

const struct worker_problem *worker_problem_find(const char *name);

#endif
