/* The CUDA driver, loaded with dlopen at run time, and host helpers for device data formats. */
#ifndef TUNER_CUDA_H
#define TUNER_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

/*
 * The driver entry points tuner uses, resolved by their versioned names
 * (cuMemAlloc_v2, cuStreamBeginCapture_v2, ...). Call them as
 * cuda.MemAlloc(&p, n) once cuda_load() has succeeded.
 */
struct cuda_api {
	CUresult (*Init)(unsigned int flags);
	CUresult (*DriverGetVersion)(int *version);
	CUresult (*DeviceGet)(CUdevice *dev, int ordinal);
	CUresult (*DeviceGetCount)(int *count);
	CUresult (*DeviceGetName)(char *name, int len, CUdevice dev);
	CUresult (*DeviceGetPCIBusId)(char *id, int len, CUdevice dev);
	CUresult (*DeviceGetAttribute)(int *value, CUdevice_attribute attr, CUdevice dev);
	CUresult (*DevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice dev);
	CUresult (*DevicePrimaryCtxRelease)(CUdevice dev);
	CUresult (*CtxSetCurrent)(CUcontext ctx);
	CUresult (*CtxSynchronize)(void);
	CUresult (*ModuleLoadData)(CUmodule *mod, const void *image);
	CUresult (*ModuleUnload)(CUmodule mod);
	CUresult (*ModuleGetFunction)(CUfunction *fn, CUmodule mod, const char *name);
	CUresult (*ModuleGetGlobal)(CUdeviceptr *ptr, size_t *bytes, CUmodule mod,
	                            const char *name);
	CUresult (*FuncSetAttribute)(CUfunction fn, CUfunction_attribute attr, int value);
	CUresult (*LaunchKernel)(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
	                         unsigned by, unsigned bz, unsigned smem, CUstream stream,
	                         void **params, void **extra);
	CUresult (*MemGetInfo)(size_t *free_bytes, size_t *total_bytes);
	CUresult (*MemAlloc)(CUdeviceptr *ptr, size_t bytes);
	CUresult (*MemFree)(CUdeviceptr ptr);
	CUresult (*MemcpyHtoD)(CUdeviceptr dst, const void *src, size_t bytes);
	CUresult (*MemcpyDtoH)(void *dst, CUdeviceptr src, size_t bytes);
	CUresult (*MemcpyDtoD)(CUdeviceptr dst, CUdeviceptr src, size_t bytes);
	CUresult (*MemsetD8)(CUdeviceptr dst, unsigned char value, size_t n);
	CUresult (*MemsetD16)(CUdeviceptr dst, unsigned short value, size_t n);
	CUresult (*MemsetD32Async)(CUdeviceptr dst, unsigned int value, size_t n, CUstream stream);
	CUresult (*MemsetD8Async)(CUdeviceptr dst, unsigned char value, size_t n, CUstream stream);
	CUresult (*MemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
	                            CUstream stream);
	CUresult (*LaunchKernelEx)(const CUlaunchConfig *config, CUfunction fn, void **params,
	                           void **extra);
	CUresult (*TensorMapEncodeTiled)(CUtensorMap *map, CUtensorMapDataType type,
	                                 cuuint32_t rank, void *address, const cuuint64_t *dims,
	                                 const cuuint64_t *strides, const cuuint32_t *box,
	                                 const cuuint32_t *element_strides,
	                                 CUtensorMapInterleave interleave,
	                                 CUtensorMapSwizzle swizzle,
	                                 CUtensorMapL2promotion promotion,
	                                 CUtensorMapFloatOOBfill fill);
	CUresult (*StreamCreate)(CUstream *stream, unsigned int flags);
	CUresult (*StreamSynchronize)(CUstream stream);
	CUresult (*StreamDestroy)(CUstream stream);
	CUresult (*EventCreate)(CUevent *ev, unsigned int flags);
	CUresult (*EventRecord)(CUevent ev, CUstream stream);
	CUresult (*EventSynchronize)(CUevent ev);
	CUresult (*EventElapsedTime)(float *ms, CUevent start, CUevent end);
	CUresult (*EventDestroy)(CUevent ev);
	CUresult (*StreamBeginCapture)(CUstream stream, CUstreamCaptureMode mode);
	CUresult (*StreamEndCapture)(CUstream stream, CUgraph *graph);
	CUresult (*GraphInstantiate)(CUgraphExec *exec, CUgraph graph, unsigned long long flags);
	CUresult (*GraphLaunch)(CUgraphExec exec, CUstream stream);
	CUresult (*GraphExecDestroy)(CUgraphExec exec);
	CUresult (*GraphDestroy)(CUgraph graph);
	CUresult (*GetErrorName)(CUresult err, const char **name);
	CUresult (*GetErrorString)(CUresult err, const char **text);
};

/* The resolved table; valid after cuda_load() returned 0. */
extern struct cuda_api cuda;

/*
 * Load the driver (libcuda.so.1, or $TUNER_LIBCUDA when set), resolve the table
 * and call cuInit. Returns the number of devices (> 0), or -1 with a one-line
 * reason in why when the library is missing, cuInit fails or no device exists.
 * Prints nothing; safe to call again (the result of the first call is kept).
 */
int cuda_load(char *why, size_t whylen);

/*
 * The CUDA driver's version ("13.0", from cuDriverGetVersion, without cuInit)
 * and the NVIDIA kernel module's ("580.95.05", "" if unknown). 0, or -1 with
 * a one-line reason in why (no driver). Prints nothing.
 */
int cuda_driver_version(char *out, size_t len, char *module, size_t modlen, char *why,
                        size_t whylen);

/*
 * CU_CHECK(call): evaluate a driver call; on failure remember the error (see
 * cuda_last_error), report "FILE:LINE: CALL: CUDA_ERROR_X (text)" through
 * error() and return -1 from the enclosing function. Never exits.
 */
#define CU_CHECK(call)                                                                             \
	do {                                                                                       \
		CUresult cu_check_r_ = (call);                                                     \
		if (cu_check_r_ != CUDA_SUCCESS) {                                                 \
			cuda_check_failed(cu_check_r_, #call, __FILE__, __LINE__);                 \
			return -1;                                                                 \
		}                                                                                  \
	} while (0)

int cuda_check_failed(CUresult r, const char *call, const char *file, int line);

/* The error of the last failed CU_CHECK in this thread (CUDA_SUCCESS if none); clear resets it. */
CUresult cuda_last_error(void);
void cuda_clear_error(void);

/* "CUDA_ERROR_MISALIGNED_ADDRESS" and "misaligned address"; "CUresult 716" before cuda_load. */
const char *cuda_error_name(CUresult r);
const char *cuda_error_string(CUresult r);

/*
 * Whether an error leaves the context unusable (an illegal or misaligned
 * address, a trap, a launch failure, ...): every later call fails, so the
 * process that owns the context has to go.
 */
int cuda_error_is_sticky(CUresult r);

/* IEEE half precision on the host, round to nearest even, by hand (no CUDA runtime). */
float cuda_half_to_float(uint16_t h);
uint16_t cuda_float_to_half(float f);

#endif
