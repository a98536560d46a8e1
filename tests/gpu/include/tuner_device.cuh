/*
 * tuner compiles a family with -I<the sidecar's directory>/../include: for the test families
 * under tests/gpu/ (tests/gpu/faults/) that is this directory. Forward to the tree's device
 * helpers (kernels/include), so that a test kernel includes "tuner_device.cuh" as the real
 * families do. The relative path resolves both from this file's directory and from the -I.
 */
#ifndef TUNER_TESTS_GPU_INCLUDE_TUNER_DEVICE_CUH
#define TUNER_TESTS_GPU_INCLUDE_TUNER_DEVICE_CUH

#include "../../../kernels/include/tuner_device.cuh"

#endif
