/* tuner serve: one lane per GPU taking jobs from the queue in the database until SIGTERM. */
#ifndef TUNER_SERVE_H
#define TUNER_SERVE_H

#include <stddef.h>

#include "tuner/roots.h"

struct serve_options {
	const char *db_path; /* a SQLite file or a postgresql:// URL */
	const int *gpus;     /* the GPU ordinals to own, or NULL: every visible one */
	size_t ngpus;
	struct roots roots;    /* where jobs may be read from; at least one */
	const char *log_path;  /* NULL: stderr */
	const char *cache_dir; /* the cubin cache */
	double heartbeat; /* seconds between heartbeats; a server silent 5 times that is dead */
	size_t batch;     /* candidates per claim */
	int jobs;         /* parallel compiles per lane, 0: the cores shared out */
};

/*
 * Serve until SIGTERM or SIGINT: register in the database, start a worker per
 * GPU (all of one model), and let each lane take jobs: the queued ones in
 * order of priority, then age, spreading lanes evenly over the jobs of the
 * highest priority, and sharing a job's generations with every lane and host
 * that works on it through claims. SIGTERM drains: each lane finishes its
 * variant and commits, claims go back, jobs become interrupted (resumable);
 * a second SIGTERM or SIGINT exits at once. SIGHUP reopens the log. Returns
 * an exit code.
 */
int serve_main(const struct serve_options *o);

#endif
