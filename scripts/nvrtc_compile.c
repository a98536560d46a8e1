/*
 * Compile one CUDA source file through libnvrtc the way tuner's compile stage does, for
 * checking templates outside tuner (NVRTC can crash or reject where nvcc does not).
 *
 *   cc -std=c11 -O2 -I/usr/local/cuda/include scripts/nvrtc_compile.c \
 *      -L/usr/local/cuda/lib64 -lnvrtc -Wl,-rpath,/usr/local/cuda/lib64 -o build/nvrtc_compile
 *   build/nvrtc_compile [-o out.cubin] FILE [NVRTC options...]
 *
 * The options are passed as given, followed by -I<CUDA>/include (CUDA from $CUDA_HOME, else
 * /usr/local/cuda), as tuner appends it. The program log (ptxas -v report included) goes to
 * stdout. Exit status: 0 compiled, 1 compile error, 2 usage, an API failure or no cubin.
 */
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) < 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0) {
		fclose(f);
		return NULL;
	}
	buf = malloc((size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	if (buf)
		buf[n] = '\0';
	fclose(f);
	return buf;
}

int main(int argc, char **argv)
{
	const char *out = NULL, *cuda = getenv("CUDA_HOME");
	const char **opts;
	char inc[4096], *src, *log, *cubin;
	size_t nlog = 0, ncubin = 0;
	nvrtcProgram prog;
	nvrtcResult r;
	int i = 1, n = 0;

	if (argc > 2 && !strcmp(argv[1], "-o")) {
		out = argv[2];
		i = 3;
	}
	if (i >= argc) {
		fprintf(stderr, "usage: nvrtc_compile [-o out.cubin] FILE [options...]\n");
		return 2;
	}
	src = read_file(argv[i]);
	if (!src) {
		fprintf(stderr, "nvrtc_compile: cannot read '%s'\n", argv[i]);
		return 2;
	}
	snprintf(inc, sizeof(inc), "-I%s/include", cuda ? cuda : "/usr/local/cuda");
	opts = calloc((size_t)argc + 1, sizeof(*opts));
	if (!opts)
		return 2;
	for (int k = i + 1; k < argc; k++)
		opts[n++] = argv[k];
	opts[n++] = inc;

	if (nvrtcCreateProgram(&prog, src, argv[i], 0, NULL, NULL) != NVRTC_SUCCESS) {
		fprintf(stderr, "nvrtc_compile: nvrtcCreateProgram failed\n");
		return 2;
	}
	r = nvrtcCompileProgram(prog, n, opts);
	if (nvrtcGetProgramLogSize(prog, &nlog) == NVRTC_SUCCESS && nlog > 1) {
		log = malloc(nlog);
		if (log && nvrtcGetProgramLog(prog, log) == NVRTC_SUCCESS)
			fputs(log, stdout);
		free(log);
	}
	if (r != NVRTC_SUCCESS) {
		fprintf(stderr, "nvrtc_compile: %s\n", nvrtcGetErrorString(r));
		return r == NVRTC_ERROR_COMPILATION ? 1 : 2;
	}
	if (nvrtcGetCUBINSize(prog, &ncubin) != NVRTC_SUCCESS || ncubin == 0) {
		fprintf(stderr, "nvrtc_compile: no cubin (is the target a real architecture?)\n");
		return 2;
	}
	if (out) {
		FILE *f;

		cubin = malloc(ncubin);
		if (!cubin || nvrtcGetCUBIN(prog, cubin) != NVRTC_SUCCESS) {
			fprintf(stderr, "nvrtc_compile: nvrtcGetCUBIN failed\n");
			return 2;
		}
		f = fopen(out, "wb");
		if (!f || fwrite(cubin, 1, ncubin, f) != ncubin || fclose(f) != 0) {
			fprintf(stderr, "nvrtc_compile: cannot write '%s'\n", out);
			return 2;
		}
		free(cubin);
	}
	nvrtcDestroyProgram(&prog);
	free(opts);
	free(src);
	return 0;
}
