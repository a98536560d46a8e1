/* pdl_probe.cuh with griddepcontrol.wait: right under PDL too. */
#define PDL_KERNEL pdl_wait
#define PDL_WAIT   1
#include "pdl_probe.cuh"
