/* Load the CUDA driver with dlopen at run time, so that tuner starts on machines without a GPU. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuner/common.h"
#include "tuner/cuda.h"

struct cuda_api cuda;

/* ---------------------------------------------------------------- loading */

/* Where each entry point lives in the table, and the symbol the driver exports for it. */
struct cuda_sym {
	const char *name;
	const char *fallback; /* an older name with the same signature, or NULL */
	size_t offset;
};

#define SYM(field, name)                                                                           \
	{                                                                                          \
		name, NULL, offsetof(struct cuda_api, field)                                       \
	}
#define SYM2(field, name, old)                                                                     \
	{                                                                                          \
		name, old, offsetof(struct cuda_api, field)                                        \
	}

static const struct cuda_sym cuda_syms[] = {
    SYM(Init, "cuInit"),
    SYM(DriverGetVersion, "cuDriverGetVersion"),
    SYM(DeviceGet, "cuDeviceGet"),
    SYM(DeviceGetCount, "cuDeviceGetCount"),
    SYM(DeviceGetName, "cuDeviceGetName"),
    SYM(DeviceGetPCIBusId, "cuDeviceGetPCIBusId"),
    SYM(DeviceGetAttribute, "cuDeviceGetAttribute"),
    SYM(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    SYM(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    SYM(CtxSetCurrent, "cuCtxSetCurrent"),
    SYM(CtxSynchronize, "cuCtxSynchronize"),
    SYM(ModuleLoadData, "cuModuleLoadData"),
    SYM(ModuleUnload, "cuModuleUnload"),
    SYM(ModuleGetFunction, "cuModuleGetFunction"),
    SYM(ModuleGetGlobal, "cuModuleGetGlobal_v2"),
    SYM(FuncSetAttribute, "cuFuncSetAttribute"),
    SYM(LaunchKernel, "cuLaunchKernel"),
    SYM(MemGetInfo, "cuMemGetInfo_v2"),
    SYM(MemAlloc, "cuMemAlloc_v2"),
    SYM(MemFree, "cuMemFree_v2"),
    SYM(MemcpyHtoD, "cuMemcpyHtoD_v2"),
    SYM(MemcpyDtoH, "cuMemcpyDtoH_v2"),
    SYM(MemcpyDtoD, "cuMemcpyDtoD_v2"),
    SYM(MemsetD8, "cuMemsetD8_v2"),
    SYM(MemsetD16, "cuMemsetD16_v2"),
    SYM(MemsetD32Async, "cuMemsetD32Async"),
    SYM(MemsetD8Async, "cuMemsetD8Async"),
    SYM(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"),
    SYM(LaunchKernelEx, "cuLaunchKernelEx"),
    SYM(TensorMapEncodeTiled, "cuTensorMapEncodeTiled"),
    SYM(StreamCreate, "cuStreamCreate"),
    SYM(StreamSynchronize, "cuStreamSynchronize"),
    SYM(StreamDestroy, "cuStreamDestroy_v2"),
    SYM(EventCreate, "cuEventCreate"),
    SYM(EventRecord, "cuEventRecord"),
    SYM(EventSynchronize, "cuEventSynchronize"),
    /* _v2 since CUDA 12.8; drivers before that export only the first version. */
    SYM2(EventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime"),
    SYM(EventDestroy, "cuEventDestroy_v2"),
    SYM(StreamBeginCapture, "cuStreamBeginCapture_v2"),
    SYM(StreamEndCapture, "cuStreamEndCapture"),
    SYM(GraphInstantiate, "cuGraphInstantiateWithFlags"),
    SYM(GraphLaunch, "cuGraphLaunch"),
    SYM(GraphExecDestroy, "cuGraphExecDestroy"),
    SYM(GraphDestroy, "cuGraphDestroy"),
    SYM(GetErrorName, "cuGetErrorName"),
    SYM(GetErrorString, "cuGetErrorString"),
};

static int load_state; /* 0: not tried, 1: loaded, -1: failed */
static int load_devices;
static char load_why[256];
static void *load_handle;

static int load_fail(const char *fmt, const char *a, const char *b)
{
	snprintf(load_why, sizeof(load_why), fmt, a, b);
	if (load_handle)
		dlclose(load_handle);
	load_handle = NULL;
	memset(&cuda, 0, sizeof(cuda));
	load_state = -1;
	return -1;
}

/* dlerror() text is often several lines long; keep the first. */
static const char *first_line(const char *s, char *buf, size_t len)
{
	size_t n = strcspn(s ? s : "unknown error", "\n");

	if (!s)
		s = "unknown error";
	if (n >= len)
		n = len - 1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return buf;
}

static int load_once(void)
{
	const char *lib = getenv("TUNER_LIBCUDA");
	char line[200], num[32];
	const char *name;
	size_t i;
	CUresult r;

	if (!lib || !*lib)
		lib = "libcuda.so.1";
	load_handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!load_handle)
		return load_fail("cannot load the CUDA driver '%s': %s", lib,
		                 first_line(dlerror(), line, sizeof(line)));
	for (i = 0; i < ARRAY_SIZE(cuda_syms); i++) {
		void *fn = dlsym(load_handle, cuda_syms[i].name);

		if (!fn && cuda_syms[i].fallback)
			fn = dlsym(load_handle, cuda_syms[i].fallback);
		if (!fn)
			return load_fail("the CUDA driver '%s' lacks '%s' (too old?)", lib,
			                 cuda_syms[i].name);
		/* POSIX guarantees that a data pointer from dlsym converts to a function pointer.
		 */
		memcpy((char *)&cuda + cuda_syms[i].offset, &fn, sizeof(fn));
	}
	r = cuda.Init(0);
	if (r != CUDA_SUCCESS) {
		name = NULL;
		if (cuda.GetErrorName(r, &name) != CUDA_SUCCESS || !name) {
			snprintf(num, sizeof(num), "CUresult %d", (int)r);
			name = num;
		}
		snprintf(line, sizeof(line), "%s", name);
		return load_fail("cuInit failed: %s%s", line,
		                 r == CUDA_ERROR_NO_DEVICE ? " (no CUDA device)" : "");
	}
	r = cuda.DeviceGetCount(&load_devices);
	if (r != CUDA_SUCCESS || load_devices <= 0)
		return load_fail("no CUDA device found%s%s", "", "");
	load_state = 1;
	return load_devices;
}

int cuda_load(char *why, size_t whylen)
{
	if (!load_state)
		load_once();
	if (load_state < 0) {
		if (why && whylen)
			snprintf(why, whylen, "%s", load_why);
		return -1;
	}
	return load_devices;
}

/*
 * The installed NVIDIA kernel module's version from /proc/driver/nvidia/version
 * ("... Kernel Module  580.95.05  ..."); "" when there is none.
 */
static void kernel_module_version(char *out, size_t len)
{
	char line[512], *p;
	FILE *f = fopen("/proc/driver/nvidia/version", "r");

	*out = '\0';
	if (!f)
		return;
	if (fgets(line, sizeof(line), f) && (p = strstr(line, "Kernel Module")))
		sscanf(p + strlen("Kernel Module"), " %63s", out);
	out[len - 1] = '\0';
	fclose(f);
}

int cuda_driver_version(char *out, size_t len, char *module, size_t modlen, char *why,
                        size_t whylen)
{
	const char *lib = getenv("TUNER_LIBCUDA");
	CUresult (*get)(int *) = NULL;
	char line[200];
	void *h, *sym;
	int v = 0, rc = -1;

	*module = '\0';
	if (!lib || !*lib)
		lib = "libcuda.so.1";
	/* Its own handle: no cuInit, so a machine without a device still says which driver. */
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(why, whylen, "cannot load '%s': %s", lib,
		         first_line(dlerror(), line, sizeof(line)));
		return -1;
	}
	sym = dlsym(h, "cuDriverGetVersion");
	if (sym)
		memcpy(&get, &sym, sizeof(get));
	if (!get)
		snprintf(why, whylen, "'%s' has no cuDriverGetVersion", lib);
	else if (get(&v) != CUDA_SUCCESS || v <= 0)
		snprintf(why, whylen, "'%s' does not say its version", lib);
	else {
		snprintf(out, len, "%d.%d", v / 1000, v % 1000 / 10);
		kernel_module_version(module, modlen);
		rc = 0;
	}
	dlclose(h);
	return rc;
}

/* ----------------------------------------------------------------- errors */

static _Thread_local CUresult last_error;

int cuda_check_failed(CUresult r, const char *call, const char *file, int line)
{
	last_error = r;
	return error("%s:%d: %s: %s (%s)", file, line, call, cuda_error_name(r),
	             cuda_error_string(r));
}

CUresult cuda_last_error(void)
{
	return last_error;
}

void cuda_clear_error(void)
{
	last_error = CUDA_SUCCESS;
}

const char *cuda_error_name(CUresult r)
{
	static _Thread_local char buf[32];
	const char *s = NULL;

	if (load_state > 0 && cuda.GetErrorName(r, &s) == CUDA_SUCCESS && s)
		return s;
	snprintf(buf, sizeof(buf), "CUresult %d", (int)r);
	return buf;
}

const char *cuda_error_string(CUresult r)
{
	const char *s = NULL;

	if (load_state > 0 && cuda.GetErrorString(r, &s) == CUDA_SUCCESS && s)
		return s;
	return "unknown error";
}

/*
 * Errors that describe a bad request rather than a broken context: the call
 * failed, the context still works. Everything else from a launch or a
 * synchronisation (700-series faults, ECC, unknown) is treated as sticky.
 */
int cuda_error_is_sticky(CUresult r)
{
	switch (r) {
	case CUDA_SUCCESS:
	case CUDA_ERROR_INVALID_VALUE:
	case CUDA_ERROR_OUT_OF_MEMORY:
	case CUDA_ERROR_INVALID_IMAGE:
	case CUDA_ERROR_NO_BINARY_FOR_GPU:
	case CUDA_ERROR_INVALID_PTX:
	case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
	case CUDA_ERROR_JIT_COMPILER_NOT_FOUND:
	case CUDA_ERROR_INVALID_SOURCE:
	case CUDA_ERROR_FILE_NOT_FOUND:
	case CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND:
	case CUDA_ERROR_INVALID_HANDLE:
	case CUDA_ERROR_NOT_FOUND:
	case CUDA_ERROR_NOT_READY:
	case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
	case CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE:
	case CUDA_ERROR_NOT_SUPPORTED:
	case CUDA_ERROR_INVALID_CLUSTER_SIZE:
	case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
	case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
		return 0;
	default:
		return 1;
	}
}

/* ------------------------------------------------------------------- half */

float cuda_half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f;
	uint32_t mant = h & 0x3ff;
	uint32_t bits;
	float f;

	if (exp == 0) {
		/* zero or subnormal: mant * 2^-24, exact in float */
		f = ldexpf((float)mant, -24);
		return sign ? -f : f;
	}
	if (exp == 31)
		bits = sign | 0x7f800000u | (mant << 13); /* inf, or NaN keeping its payload */
	else
		bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
	memcpy(&f, &bits, sizeof(f));
	return f;
}

uint16_t cuda_float_to_half(float f)
{
	uint32_t x, ax, sign, h, mant, rem, halfway;
	int shift;

	memcpy(&x, &f, sizeof(x));
	sign = (x >> 16) & 0x8000;
	ax = x & 0x7fffffffu;
	if (ax >= 0x7f800000u) /* inf stays inf; NaN stays a quiet NaN */
		return (uint16_t)(sign | 0x7c00 |
		                  (ax > 0x7f800000u ? 0x200 | ((ax >> 13) & 0x3ff) : 0));
	if (ax >= 0x477ff000u) /* 65520 and above round to inf */
		return (uint16_t)(sign | 0x7c00);
	if (ax >= 0x38800000u) { /* a normal half: 2^-14 and above */
		h = ((((ax >> 23) - 127 + 15) << 10) | ((ax & 0x7fffff) >> 13));
		rem = ax & 0x1fff;
		if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
			h++; /* a carry into the exponent is the right answer */
		return (uint16_t)(sign | h);
	}
	if (ax < 0x33000000u) /* below 2^-25 (and 2^-25 itself, a tie) rounds to zero */
		return (uint16_t)sign;
	/* a subnormal half: units of 2^-24 */
	mant = (ax & 0x7fffff) | 0x800000;
	shift = 126 - (int)(ax >> 23);
	h = mant >> shift;
	rem = mant & ((1u << shift) - 1);
	halfway = 1u << (shift - 1);
	if (rem > halfway || (rem == halfway && (h & 1)))
		h++;
	return (uint16_t)(sign | h);
}
