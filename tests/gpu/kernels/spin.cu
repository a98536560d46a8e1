/* Planted fault: an infinite loop (waits for a flag nothing sets); the watchdog must kill it. */
#include "common.cuh"

__device__ int test_never_set;

extern "C" __global__ void spin(TEST_ARGS)
{
	while (!*(volatile int *)&test_never_set)
		__nanosleep(1000);
}
