#!/usr/bin/env python3
"""Put flash_fwd_sm90_fp8 cubins next to our fp16 flash_fwd_sm90 winner and SDPA cuDNN (fp16).

For each shape in sm90_fp8_dev's results (scripts/sm90_fp8.sh), the two fastest fp8
configurations that passed are loaded again from their cubins and checked (e4m3 inputs rounded
from the same fp16 N(0, 1) draws, against fp32 math over the e4m3 values, the problem's
rel_l2 5e-2); the fp16 winner of the shape (--fp16 B,H,S,D=NAME, a cubin named as sm90_dev.sh
names them) against fp32 math over the fp16 inputs (1e-2); then all of them and SDPA's cuDNN
backend (fp16) are timed with BENCH.md's method, interleaved as scripts/bench_sm90.py does
(its Graph, rounds and intervals): R rounds of N samples, each sample replaying every
contender's graph once in a rotating order. The table gives each contender's median µs,
TFLOP/s (4 B H S^2 D flops, the same count for every dtype) and the ratio of the fp16 winner's
and cuDNN's time over its own (median over rounds, ~95% interval).

  python3 scripts/bench_sm90_fp8.py --results R.txt --cubins DIR \
      --fp16 4,16,4096,128=d128_bn128_c2_s2_pp1_ov1_r3_pe132_o1_sp1 ... [--rounds 9]
      [--samples 20] [--json out.json]

Needs torch (the GPU machine has it). Prints a Markdown table.
"""

import argparse
import ctypes
import json
import math
import os
import re
import statistics

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from bench_sm90 import MAX_DYN_SMEM, Graph, ck, cu, fastest, load, spread

UINT8, SWIZZLE_64B, L2_256B = 0, 2, 3  # CUtensorMapDataType, CUtensorMapSwizzle, L2 promotion


class Map8:
    """A 3-D e4m3 CUtensorMap: dims and byte strides of dims 1 and 2, box {64, rows, 1}."""

    def __init__(self, t, dims, strides, rows):
        self.buf = (ctypes.c_uint8 * 192)()
        self.addr = (ctypes.addressof(self.buf) + 63) & ~63
        ck(cu.cuTensorMapEncodeTiled(
            ctypes.c_void_p(self.addr), UINT8, 3, ctypes.c_void_p(t.data_ptr()),
            (ctypes.c_uint64 * 3)(*dims), (ctypes.c_uint64 * 2)(*strides),
            (ctypes.c_uint32 * 3)(64, rows, 1), (ctypes.c_uint32 * 3)(1, 1, 1), 0, SWIZZLE_64B,
            L2_256B, 0), "cuTensorMapEncodeTiled")


class Kernel8:
    """A flash_fwd_sm90_fp8 cubin named f8_d{D}_bn{BLOCK_N}_c{C}_s{STAGES}_pp{P}_ov{O}."""

    def __init__(self, cubins, name):
        f = dict(re.findall(r"([a-z]+)(\d+)", name.replace("f8_", "")))
        d, self.bn, self.c, st = (int(f[k]) for k in ("d", "bn", "c", "s"))
        self.smem = 1024 + (64 * self.c + 2 * st * self.bn) * d + 8 * (1 + 4 * st)
        self.mod, self.fn = ctypes.c_void_p(), ctypes.c_void_p()
        ck(cu.cuModuleLoad(ctypes.byref(self.mod), os.path.join(cubins, name + ".cubin").encode()),
           "cuModuleLoad")
        ck(cu.cuModuleGetFunction(ctypes.byref(self.fn), self.mod, b"flash_fwd_sm90_fp8"),
           "cuModuleGetFunction")
        ck(cu.cuFuncSetAttribute(self.fn, MAX_DYN_SMEM, self.smem), "cuFuncSetAttribute")

    def bind(self, q8, k8, vt8, o):
        b, h, s, d = q8.shape
        sp = vt8.shape[3]
        self.maps = [Map8(q8, (d, s, b * h), (d, s * d), 64),
                     Map8(k8, (d, s, b * h), (d, s * d), self.bn),
                     Map8(vt8, (s, d, b * h), (sp, sp * d), d)]
        self.scalars = [ctypes.c_void_p(o.data_ptr()), ctypes.c_int(b), ctypes.c_int(h),
                        ctypes.c_int(s), ctypes.c_float(1.0 / math.sqrt(d))]
        ptrs = [m.addr for m in self.maps] + [ctypes.addressof(x) for x in self.scalars]
        self.params = (ctypes.c_void_p * len(ptrs))(*ptrs)
        self.grid = (-(-s // (64 * self.c)), h, b)

    def launch(self, stream):
        ck(cu.cuLaunchKernel(self.fn, *self.grid, (self.c + 1) * 128, 1, 1, self.smem,
                             ctypes.c_void_p(stream.cuda_stream), self.params, None),
           "cuLaunchKernel")


def math_ref(q, k, v, scale):
    with sdpa_kernel(SDPBackend.MATH):
        return torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(),
                                                                scale=scale)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", required=True, help="sm90_fp8_dev's timed output")
    ap.add_argument("--cubins", required=True, help="the fp8 and fp16 cubins")
    ap.add_argument("--fp16", nargs="*", default=[], help="B,H,S,D=NAME: the fp16 winner")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--json")
    args = ap.parse_args()
    fp16 = {tuple(int(x) for x in kv.split("=")[0].split(",")): kv.split("=")[1]
            for kv in args.fp16}

    torch.zeros(1, device="cuda")  # the primary context, current for the driver calls
    rows = []
    for shape, best in sorted(fastest(args.results, 2).items(), key=lambda x: x[0][::-1]):
        b, h, s, d = shape
        scale = 1.0 / math.sqrt(d)
        g = torch.Generator(device="cuda").manual_seed(1)
        q, k, v = (torch.randn(shape, generator=g, device="cuda", dtype=torch.float16)
                   for _ in range(3))
        q8, k8, v8 = (x.to(torch.float8_e4m3fn) for x in (q, k, v))
        sp = -(-s // 16) * 16
        vt8 = torch.full((b, h, d, sp), 0x7f, device="cuda", dtype=torch.uint8)  # NaN pad
        vt8[..., :s] = v8.transpose(2, 3).view(torch.uint8)
        graphs, keep, row = {}, [], {"shape": shape, "rel_l2": {}}
        ref8 = math_ref(q8, k8, v8, scale)
        for _, name in best:
            o = torch.full(shape, float("nan"), device="cuda", dtype=torch.float16)
            kern = Kernel8(args.cubins, name)
            kern.bind(q8, k8, vt8, o)
            kern.launch(torch.cuda.current_stream())
            torch.cuda.synchronize()
            rel = float((o.float() - ref8).norm() / ref8.norm())
            row["rel_l2"][name] = rel
            if rel < 5e-2:
                graphs[name] = Graph(kern.launch)
                keep.append((kern, o))
        del ref8
        if shape in fp16:
            ref = math_ref(q, k, v, scale)
            o = torch.full(shape, float("nan"), device="cuda", dtype=torch.float16)
            kern = load(args.cubins, fp16[shape])
            kern.bind(q, k, v, o)
            kern.launch(torch.cuda.current_stream())
            torch.cuda.synchronize()
            rel = float((o.float() - ref).norm() / ref.norm())
            row["rel_l2"]["fp16 " + fp16[shape]] = rel
            if rel < 1e-2:
                graphs["fp16"] = Graph(kern.launch)
                keep.append((kern, o))
            del ref

        def cudnn(_st):
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale)
        try:
            graphs["cudnn"] = Graph(cudnn)
        except RuntimeError as e:
            row["cudnn_why"] = str(e).split("\n")[0][:100]
        times = {n: [] for n in graphs}
        order = list(graphs)
        for _ in range(args.rounds):
            ts = {n: [] for n in graphs}
            for i in range(args.samples):
                for n in order[i % len(order):] + order[:i % len(order)]:
                    ts[n].append(graphs[n].once())
            for n in graphs:
                times[n].append(statistics.median(ts[n]))
        row["times"] = times
        rows.append(row)

    def flops(sh):
        return 4.0 * sh[0] * sh[1] * sh[2] ** 2 * sh[3]

    print("GPU: %s; BENCH.md method (graphs of 20 calls), %d interleaved rounds of %d samples;"
          " ratios: median over the rounds [~95%% interval]" %
          (torch.cuda.get_device_name(0), args.rounds, args.samples))
    print()
    print("| shape (B,H,S,D) | contender | rel_l2 | µs | TFLOP/s | fp16 ours / it | cuDNN / it |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        t = r["times"]
        for n in sorted(t, key=lambda n: statistics.median(t[n])):
            us = statistics.median(t[n])
            label = {"fp16": "fp16 " + fp16.get(r["shape"], ""), "cudnn": "SDPA cuDNN fp16"}.get(
                n, "fp8 " + n)
            rel = r["rel_l2"].get(n, r["rel_l2"].get(label, None))
            print("| %s | %s | %s | %.2f | %.1f | %s | %s |" % (
                "(%d,%d,%d,%d)" % r["shape"], label, "%.2e" % rel if rel is not None else "-",
                us, flops(r["shape"]) / (us * 1e-6) / 1e12,
                spread([a / b for a, b in zip(t["fp16"], t[n])]) if "fp16" in t else "-",
                spread([a / b for a, b in zip(t["cudnn"], t[n])]) if "cudnn" in t else "-"))
        failed = {n: x for n, x in r["rel_l2"].items()
                  if x >= (1e-2 if n.startswith("fp16") else 5e-2)}
        if failed:
            print("| %s | FAILED CHECK: %s | | | | | |" % ("(%d,%d,%d,%d)" % r["shape"], failed))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
