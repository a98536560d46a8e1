/* The tuned flash_fwd at head dim 128 (see flash_fwd_build.cuh). */
#define SHAPE_D 128
#define flash_fwd flash_fwd_d128
#define FLASH_FWD_EXT_LAUNCH flash_fwd_ext_launch_d128
#include "flash_fwd_build.cuh"
