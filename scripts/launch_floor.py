#!/usr/bin/env python3
"""What a kernel costs before it does any work, timed as BENCH.md times attention: CUDA-graph
replays of 20 calls, median of samples, per call. The floor under issue 11's mission shape
(1, 8, 512, 64): empty kernels of the mission winners' geometry (64 blocks of 256 threads; 64
and 32 blocks of 384 threads with 75 KB and 99 KB of dynamic shared memory), a kernel whose
blocks each stream one head's K and V (64 KB each at S = 512, D = 64) through registers and
write 64 rows of O, and SDPA's flash and cuDNN at the mission shape and at (1, 8, 128, 64),
all in one process, interleaved.

    python3 scripts/launch_floor.py [--samples 30] [--rounds 5]
"""
import argparse
import statistics
import warnings

import cupy
import torch

from bench_sm90 import Graph  # BENCH.md's graph of 20 calls, one replay a sample

SRC = r"""
extern "C" __global__ void empty_kernel() {}

/* Block b (64 per head, 8 heads) reads its head's K and V, [512][64] fp16 each, 16 bytes a
 * thread per step, and writes 64 rows of O: the bytes a mission block must see, no math. */
extern "C" __global__ void stream_kv(const uint4 *K, const uint4 *V, uint4 *O, int s_rows)
{
    const int head = blockIdx.x / 8, rb = blockIdx.x % 8;
    const int n = s_rows * 64 * 2 / 16; /* 16-byte chunks of one head's K */
    const uint4 *k = K + (long)head * n, *v = V + (long)head * n;
    unsigned acc = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        uint4 a = __ldg(k + i), b = __ldg(v + i);
        acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w;
    }
    const int orows = 64 * 64 * 2 / 16;
    uint4 *o = O + ((long)head * 8 + rb) * orows;
    for (int i = threadIdx.x; i < orows; i += blockDim.x)
        o[i] = make_uint4(acc, acc, acc, acc);
}
"""


def main():
    warnings.filterwarnings("ignore", category=DeprecationWarning)  # cupy.cuda.ExternalStream
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    mod = cupy.RawModule(code=SRC, options=("-std=c++17",))
    empty, stream_kv = mod.get_function("empty_kernel"), mod.get_function("stream_kv")
    K = torch.randn(1, 8, 512, 64, device="cuda", dtype=torch.float16)
    V = torch.randn_like(K)
    O = torch.empty_like(K)

    def raw(fn, grid, block, args=(), smem=0):
        if smem > 48 * 1024:
            fn.max_dynamic_shared_size_bytes = smem

        def launch(st):
            with cupy.cuda.ExternalStream(st.cuda_stream):
                fn((grid,), (block,), args, shared_mem=smem)
        return launch

    def sdpa(backend, shape):
        q, k, v = (torch.randn(*shape, device="cuda", dtype=torch.float16) for _ in range(3))

        def launch(st):
            with torch.nn.attention.sdpa_kernel(backend):
                torch.nn.functional.scaled_dot_product_attention(q, k, v)
        return launch

    B = torch.nn.attention.SDPBackend
    contenders = {
        "empty 64x256": raw(empty, 64, 256),
        "empty 64x384, 75 KB smem": raw(empty, 64, 384, smem=74832),
        "empty 32x384, 99 KB smem": raw(empty, 32, 384, smem=99408),
        "stream K,V 64x256 (no math)": raw(stream_kv, 64, 256,
                                           (K.data_ptr(), V.data_ptr(), O.data_ptr(), cupy.int32(512))),
        "SDPA flash (1,8,128,64)": sdpa(B.FLASH_ATTENTION, (1, 8, 128, 64)),
        "SDPA cudnn (1,8,128,64)": sdpa(B.CUDNN_ATTENTION, (1, 8, 128, 64)),
        "SDPA flash (1,8,512,64)": sdpa(B.FLASH_ATTENTION, (1, 8, 512, 64)),
        "SDPA cudnn (1,8,512,64)": sdpa(B.CUDNN_ATTENTION, (1, 8, 512, 64)),
    }
    graphs = {name: Graph(fn) for name, fn in contenders.items()}
    times = {name: [] for name in graphs}
    names = list(graphs)
    for r in range(a.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for _ in range(a.samples):
            for name in order:
                times[name].append(graphs[name].once())
    print("GPU: %s; CUDA graphs of 20 calls, %d interleaved rounds of %d samples, median per call"
          % (torch.cuda.get_device_name(), a.rounds, a.samples))
    print("| kernel | median µs | p10 | p90 |")
    print("|---|---|---|---|")
    for name in names:
        t = sorted(times[name])
        print("| %s | %.2f | %.2f | %.2f |" % (name, statistics.median(t), t[len(t) // 10],
                                               t[len(t) * 9 // 10]))


if __name__ == "__main__":
    main()
