/*
 * A correct, simple attention kernel with fp16 output (one thread per query row, online
 * softmax): the candidate that must pass. Grid (ceil(S/128), H, B), 128 threads.
 */
#include "attn_rows.cuh"

extern "C" __global__ void attn_half(TEST_ARGS)
{
	attn_half_rows(Q, K, V, O, B, H, S, softmax_scale);
}
