/* The tuned flash_fwd at head dim 64 (see flash_fwd_build.cuh). */
#define SHAPE_D 64
#define flash_fwd flash_fwd_d64
#define FLASH_FWD_EXT_LAUNCH flash_fwd_ext_launch_d64
#include "flash_fwd_build.cuh"
