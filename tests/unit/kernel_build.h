/* NVRTC builds of kernel templates for the unit tests (no GPU); include after <cmocka.h>. */
#ifndef TESTS_KERNEL_BUILD_H
#define TESTS_KERNEL_BUILD_H

#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/common.h"

/* What one NVRTC compile produced. */
struct kbuild {
	int ok;
	char *log;
	char *ptx;
	int regs;
	int spill_stores, spill_loads;
};

static const char *top(void)
{
	const char *t = getenv("TOP");

	return t && *t ? t : ".";
}

static char *slurp(const char *rel)
{
	char *path = path_join(top(), rel);
	char *text = NULL;
	size_t len;

	if (read_file(path, &text, &len))
		fail_msg("cannot read '%s'", path);
	free(path);
	return text;
}

static void parse_ptxas(struct kbuild *b)
{
	const char *p = strstr(b->log, "bytes spill stores");
	const char *u = strstr(b->log, "Used ");

	b->regs = -1;
	b->spill_stores = b->spill_loads = -1;
	if (p) {
		const char *q = p;

		/* "... N bytes stack frame, N bytes spill stores, N bytes spill loads" */
		while (q > b->log && q[-1] != ',')
			q--;
		b->spill_stores = atoi(q);
		sscanf(p, "bytes spill stores, %d bytes spill loads", &b->spill_loads);
	}
	if (u)
		sscanf(u, "Used %d registers", &b->regs);
}

static struct kbuild compile_src(const char *src, const char *name, const char *arch)
{
	struct kbuild b = {0};
	char *arch_opt = xasprintf("--gpu-architecture=%s", arch);
	char *inc_cuda = xasprintf("-I%s/include", TUNER_CUDA_HOME);
	char *inc_kern = xasprintf("-I%s/kernels/include", top());
	const char *opts[] = {"-std=c++17", arch_opt, inc_cuda, inc_kern, "-Xptxas=-v"};
	nvrtcProgram prog;
	nvrtcResult rc;
	size_t n;

	assert_int_equal(nvrtcCreateProgram(&prog, src, name, 0, NULL, NULL), NVRTC_SUCCESS);
	rc = nvrtcCompileProgram(prog, (int)ARRAY_SIZE(opts), opts);
	b.ok = rc == NVRTC_SUCCESS;
	assert_int_equal(nvrtcGetProgramLogSize(prog, &n), NVRTC_SUCCESS);
	b.log = xmalloc(n + 1);
	assert_int_equal(nvrtcGetProgramLog(prog, b.log), NVRTC_SUCCESS);
	b.log[n] = '\0';
	if (b.ok) {
		assert_int_equal(nvrtcGetPTXSize(prog, &n), NVRTC_SUCCESS);
		b.ptx = xmalloc(n + 1);
		assert_int_equal(nvrtcGetPTX(prog, b.ptx), NVRTC_SUCCESS);
		b.ptx[n] = '\0';
		parse_ptxas(&b);
	}
	nvrtcDestroyProgram(&prog);
	free(arch_opt);
	free(inc_cuda);
	free(inc_kern);
	return b;
}

static void kbuild_release(struct kbuild *b)
{
	free(b->log);
	free(b->ptx);
}

#endif
