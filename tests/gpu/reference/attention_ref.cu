/*
 * tuner compiles the problem's reference kernel from <the sidecar's directory>/../reference/
 * (for the attention problem, reference/attention_ref.cu): for the test families under
 * tests/gpu/ (tests/gpu/faults/) that is this file. It is the tree's reference kernel; the
 * path resolves both from this file's directory and from the -I of tests/gpu/include.
 */
#include "../../../kernels/reference/attention_ref.cu"
