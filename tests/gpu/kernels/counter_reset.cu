/* counter.cuh's kernel that leaves its arrival counter at zero. */
#define COUNTER_KERNEL counter_reset
#define COUNTER_RESET  1
#include "counter.cuh"
