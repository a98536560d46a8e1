#!/usr/bin/env python3
"""Put flash_fwd_sm90 cubins next to PyTorch SDPA (flash and cuDNN), timed the same way.

For each shape in sm90_dev's results (scripts/sm90_dev.sh), the fastest configuration that
passed is loaded again from its cubin, checked against SDPA's math backend in fp32, and timed
with BENCH.md's method next to SDPA: CUDA-graph replays of 20 calls, median of 30 samples,
divided by 20, warm L2, the same fp16 [B, H, S, D] inputs. The tensor maps are made here through
the driver (ctypes: cuTensorMapEncodeTiled), as kernels/problems/attention_tma.yaml describes.

  python3 scripts/bench_sm90.py --results build/sm90_dev/results.txt \
      --cubins build/sm90_dev/cubin [--json out.json]

Needs torch (the GPU machine has it). Prints a Markdown table.
"""

import argparse
import ctypes
import json
import math
import os
import re

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

cu = ctypes.CDLL("libcuda.so.1")
F16, SWIZZLE_128B, L2_256B = 6, 3, 3  # CUtensorMapDataType, CUtensorMapSwizzle, ...L2promotion
MAX_DYN_SMEM = 8  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES


def ck(r, what):
    if r != 0:
        raise RuntimeError("%s failed: CUresult %d" % (what, r))


class TensorMap:
    """A CUtensorMap (128 bytes, 64-byte aligned) over a [B, H, S, D] fp16 tensor."""

    def __init__(self, t, rows):
        b, h, s, d = t.shape
        self.buf = (ctypes.c_uint8 * 192)()
        self.addr = (ctypes.addressof(self.buf) + 63) & ~63
        dims = (ctypes.c_uint64 * 3)(d, s, b * h)
        strides = (ctypes.c_uint64 * 2)(d * 2, s * d * 2)
        box = (ctypes.c_uint32 * 3)(64, rows, 1)
        estr = (ctypes.c_uint32 * 3)(1, 1, 1)
        ck(cu.cuTensorMapEncodeTiled(ctypes.c_void_p(self.addr), F16, 3,
                                     ctypes.c_void_p(t.data_ptr()), dims, strides, box, estr,
                                     0, SWIZZLE_128B, L2_256B, 0), "cuTensorMapEncodeTiled")


class Kernel:
    def __init__(self, cubin, block_n, consumers, smem, persistent=0):
        self.mod, self.fn = ctypes.c_void_p(), ctypes.c_void_p()
        ck(cu.cuModuleLoad(ctypes.byref(self.mod), cubin.encode()), "cuModuleLoad")
        ck(cu.cuModuleGetFunction(ctypes.byref(self.fn), self.mod, b"flash_fwd_sm90"),
           "cuModuleGetFunction")
        ck(cu.cuFuncSetAttribute(self.fn, MAX_DYN_SMEM, smem), "cuFuncSetAttribute")
        self.block_n, self.consumers, self.smem = block_n, consumers, smem
        self.persistent = persistent

    def bind(self, q, k, v, o):
        b, h, s, d = q.shape
        self.maps = [TensorMap(q, 64), TensorMap(k, self.block_n), TensorMap(v, self.block_n),
                     TensorMap(o, 64)]
        self.scalars = [ctypes.c_int(b), ctypes.c_int(h), ctypes.c_int(s),
                        ctypes.c_float(1.0 / math.sqrt(d))]
        ptrs = [m.addr for m in self.maps] + [ctypes.addressof(x) for x in self.scalars]
        self.params = (ctypes.c_void_p * 8)(*ptrs)
        self.grid = (-(-s // (64 * self.consumers)), h, b)
        if self.persistent:  # the sidecar's flat grid of at most PERSISTENT blocks
            self.grid = (min(self.persistent, self.grid[0] * h * b), 1, 1)

    def launch(self, stream):
        ck(cu.cuLaunchKernel(self.fn, *self.grid, (self.consumers + 1) * 128, 1, 1, self.smem,
                             ctypes.c_void_p(stream.cuda_stream), self.params, None),
           "cuLaunchKernel")


def time_graph(launch, reps=20, samples=30, warm=3):
    """BENCH.md: median µs per call of CUDA-graph replays of `reps` calls, warm."""
    st = torch.cuda.Stream()
    with torch.cuda.stream(st):
        for _ in range(warm):
            launch(st)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=st):
        for _ in range(reps):
            launch(st)
    g.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(samples):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1000.0 / reps)
    ts.sort()
    return ts[len(ts) // 2]


def fastest(results):
    """shape -> (µs, cubin name) of the fastest passing configuration in sm90_dev's output."""
    best = {}
    pat = re.compile(r"^PASS (\S+) B,H,S,D=(\S+) .* median_us ([\d.]+)")
    with open(results) as fh:
        for line in fh:
            m = pat.match(line)
            if m:
                shape, us = tuple(int(x) for x in m.group(2).split(",")), float(m.group(3))
                if shape not in best or us < best[shape][0]:
                    best[shape] = (us, os.path.basename(m.group(1))[:-len(".cubin")])
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", required=True)
    ap.add_argument("--cubins", required=True)
    ap.add_argument("--json")
    args = ap.parse_args()

    torch.zeros(1, device="cuda")  # the primary context, current for the driver calls
    rows = []
    for shape, (_, name) in sorted(fastest(args.results).items(), key=lambda x: x[0][::-1]):
        # d64_bn128_c3_s4_pp1_ov1_r2_pe132_o1: D, BLOCK_N, CONSUMERS, STAGES, PERSISTENT
        # (PINGPONG, OVERLAP, RESCALE, OCCUPANCY: the launch does not depend on them).
        f = dict(re.findall(r"([a-z]+)(\d+)", name))
        d, bn, c, st, pe = (int(f[k]) for k in ("d", "bn", "c", "s", "pe"))
        smem = 1024 + (64 * c * (1 + (pe > 0)) + 2 * st * bn) * d * 2 + 8 * (2 + 4 * st)
        g = torch.Generator(device="cuda").manual_seed(1)
        q, k, v = (torch.randn(shape, generator=g, device="cuda", dtype=torch.float16)
                   for _ in range(3))
        o = torch.full(shape, float("nan"), device="cuda", dtype=torch.float16)
        scale = 1.0 / math.sqrt(shape[3])
        kern = Kernel(os.path.join(args.cubins, name + ".cubin"), bn, c, smem, pe)
        kern.bind(q, k, v, o)
        kern.launch(torch.cuda.current_stream())
        torch.cuda.synchronize()
        with sdpa_kernel(SDPBackend.MATH):
            ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(),
                                                                   v.float(), scale=scale)
        rel = float((o.float() - ref).norm() / ref.norm())
        del ref
        row = {"shape": shape, "config": name, "rel_l2": rel,
               "ours": time_graph(kern.launch) if rel < 1e-2 else None}
        for backend, key in ((SDPBackend.FLASH_ATTENTION, "flash"),
                             (SDPBackend.CUDNN_ATTENTION, "cudnn")):
            def launch(_st, backend=backend):
                with sdpa_kernel(backend):
                    torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale)
            try:
                row[key] = time_graph(launch)
            except RuntimeError as e:
                row[key], row[key + "_why"] = None, str(e).split("\n")[0][:100]
        flops = 4.0 * shape[0] * shape[1] * shape[2] * shape[2] * shape[3]
        row["tflops"] = flops / (row["ours"] * 1e-6) / 1e12 if row["ours"] else None
        rows.append(row)

    def f(x):
        return "%.2f" % x if x else "-"

    print("GPU: %s; BENCH.md method (graph of 20 calls, median of 30, warm)" %
          torch.cuda.get_device_name(0))
    print()
    print("| shape (B,H,S,D) | config | ours µs | TFLOP/s | SDPA flash µs | SDPA cuDNN µs |"
          " vs flash | vs cuDNN | rel_l2 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        vf = r["flash"] / r["ours"] if r["ours"] and r.get("flash") else None
        vc = r["cudnn"] / r["ours"] if r["ours"] and r.get("cudnn") else None
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %.2g |" % (
            "(%d,%d,%d,%d)" % r["shape"], r["config"], f(r["ours"]), f(r["tflops"]),
            f(r.get("flash")), f(r.get("cudnn")), "%.2fx" % vf if vf else "-",
            "%.2fx" % vc if vc else "-", r["rel_l2"]))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
