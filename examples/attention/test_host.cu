/*
 * The launchers without torch: links every family build gen_builds.py wrote with dispatch.cuh
 * into one program (the renamed entries must not collide) and checks what needs no GPU: each
 * build has its launcher, tuned dims are served exactly by the build the header names, the
 * scratch follows SPLITS, and a dims no family serves is refused before any CUDA call. With a
 * GPU it also runs each tuned shape once and reports the CUDA status (check.py checks values).
 *
 *   nvcc -std=c++17 -Igen -I. -o gen/test_host test_host.cu gen/flash_attn_0.o ...  (every build)
 */
#include <stdio.h>
#include <string.h>

#include "dispatch.cuh"

static int fails;
#define CHECK(c)                                                                                   \
	do {                                                                                       \
		if (!(c)) {                                                                        \
			printf("FAIL: line %d: %s\n", __LINE__, #c);                               \
			fails++;                                                                   \
		}                                                                                  \
	} while (0)

/* The tuned shapes, as the header's dispatch knows them: each exact, each family's build. */
static void check_tuned(long long B, long long H, long long S, long long D, long long causal)
{
	struct attention_choice c = attention_select(B, H, S, D, causal);

	printf("%lld,%lld,%lld,%lld,%lld: %s build %d (shape %s, exact %d)\n", B, H, S, D, causal,
	       c.family_name, c.config, c.shape_name, c.exact);
	CHECK(c.family >= 0 && c.exact == 1 && c.config >= 0);
#ifdef ATTENTION_FLASH_ATTN
	if (c.family == ATTENTION_FLASH_ATTN) {
		CHECK(c.config < FLASH_ATTN_NCONFIGS && flash_attn_builds[c.config]);
		CHECK((attention_scratch_floats(&c, B, H, S, D) > 0) == (c.flash_attn.splits > 1));
	}
#endif
#ifdef ATTENTION_FLASH_FWD_SM90
	if (c.family == ATTENTION_FLASH_FWD_SM90) {
		CHECK(c.config < FLASH_FWD_SM90_NCONFIGS && flash_fwd_sm90_builds[c.config]);
		CHECK((attention_scratch_floats(&c, B, H, S, D) > 0) == (c.flash_fwd_sm90.streamk == 1));
		CHECK(causal == 0);
	}
#endif
}

int main(void)
{
	struct attention_choice none = attention_select(1, 8, 512, 96, 0); /* D=96: no template */
	struct attention_io io;
	int n, gpu = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;

	memset(&io, 0, sizeof(io));
	CHECK(none.family == -1 && none.config == -1);
	CHECK(attention_dispatch(&none, &io, 0) == cudaErrorInvalidValue);
	check_tuned(1, 8, 512, 64, 0);
	check_tuned(2, 8, 2048, 64, 1);
	check_tuned(4, 16, 4096, 128, 0);
	check_tuned(1, 1, 8192, 64, 0);
	/* Misaligned pointers are refused before a launch. */
	{
		struct attention_choice c = attention_select(1, 8, 512, 64, 0);

		io.q = io.k = io.v = (const void *)8;
		io.o = (void *)8;
		CHECK(attention_dispatch(&c, &io, 0) == cudaErrorInvalidValue);
	}
	if (gpu) {
		/* One call per tuned shape on real buffers: the status of the launches. */
		static const long long dims[][5] = {{1, 8, 512, 64, 0},
		                                    {2, 8, 2048, 64, 1},
		                                    {4, 16, 4096, 128, 0},
		                                    {1, 1, 8192, 64, 0}};
		size_t i;

		for (i = 0; i < sizeof(dims) / sizeof(dims[0]); i++) {
			const long long *d = dims[i];
			struct attention_choice c = attention_select(d[0], d[1], d[2], d[3], d[4]);
			size_t bytes = (size_t)d[0] * d[1] * d[2] * d[3] * 2;
			size_t nscr = attention_scratch_floats(&c, d[0], d[1], d[2], d[3]);
			void *q, *k, *v, *o, *scr = NULL;
			int rc;

			cudaMalloc(&q, bytes);
			cudaMalloc(&k, bytes);
			cudaMalloc(&v, bytes);
			cudaMalloc(&o, bytes);
			if (nscr)
				cudaMalloc(&scr, nscr * sizeof(float));
			cudaMemset(q, 0, bytes);
			cudaMemset(k, 0, bytes);
			cudaMemset(v, 0, bytes);
			io.q = q;
			io.k = k;
			io.v = v;
			io.o = o;
			io.scratch = (float *)scr;
			io.B = d[0];
			io.H = d[1];
			io.S = d[2];
			io.D = d[3];
			io.causal = d[4];
			io.scale = 0.125f;
			rc = attention_dispatch(&c, &io, 0);
			if (rc == cudaSuccess)
				rc = (int)cudaDeviceSynchronize();
			printf("run %s build %d: %s\n", c.family_name, c.config,
			       cudaGetErrorString((cudaError_t)rc));
			CHECK(rc == cudaSuccess);
			cudaFree(q);
			cudaFree(k);
			cudaFree(v);
			cudaFree(o);
			cudaFree(scr);
		}
	} else {
		printf("no GPU: the launches are not run\n");
	}
	printf("%d failure(s)\n", fails);
	return fails != 0;
}
