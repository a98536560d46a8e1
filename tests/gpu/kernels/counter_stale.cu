/* counter.cuh's kernel that leaves its arrival counter behind (a count of its blocks). */
#define COUNTER_KERNEL counter_stale
#define COUNTER_RESET  0
#include "counter.cuh"
