/* pdl_probe.cuh without griddepcontrol.wait: wrong when calls overlap under PDL. */
#define PDL_KERNEL pdl_nowait
#define PDL_WAIT   0
#include "pdl_probe.cuh"
