#!/usr/bin/env python3
"""Put flash_fwd_sm90 cubins next to PyTorch SDPA (flash and cuDNN), timed the same way.

For each shape in sm90_dev's results (scripts/sm90_dev.sh), the two fastest configurations
that passed are loaded again from their cubins, checked against SDPA's math backend in fp32, and
timed with BENCH.md's method next to SDPA: CUDA-graph replays of 20 calls, median of the
samples, divided by 20, warm L2, the same fp16 [B, H, S, D] inputs. The timings are interleaved
so that clock and thermal drift hit every contender alike: R rounds (--rounds, 9) of N samples
(--samples, 20); each sample replays every contender's graph once, in an order shuffled from
sample to sample (seeded), so that no contender always follows the same one. Each round begins
with fresh output buffers for ours and fresh graphs for every contender (SDPA's outputs come
from its graph's own pool), the earlier ones kept alive, so that each round places every output
anew: a contender is not tied to one placement for the whole run. (--order rotate --no-fresh is
the method before batch 11: the order rotated, which keeps each contender behind the same one,
and every contender kept one output buffer; two builds of the same code then differed by up to
2.6%, reports/sm90/batch11.md.) A round gives the ratios flash / ours and cuDNN / ours (medians
of its samples); the table shows their median over the rounds with a distribution-free ~95%
interval of that median (order statistics of the rounds' ratios: [x(2), x(8)] of 9, 96.1%).

Clocks: when NVML is there (libnvidia-ml through ctypes), a thread samples the SM clock, the
instantaneous board power and the clock-event (throttle) reasons every ~2 ms, tagged with the
contender whose graph is replaying; the table gives each contender's mean SM MHz and W. Then,
per shape, our best and cuDNN run alone back to back for --sustain seconds (0.6) each, and the
last half of that gives µs, MHz, W and the throttle reasons: whether one of them runs at a
lower clock because it draws more power. The tensor maps are made here through the driver
(ctypes: cuTensorMapEncodeTiled), as kernels/problems/attention_tma.yaml describes.

  python3 scripts/bench_sm90.py --results build/sm90_dev/results.txt \
      --cubins build/sm90_dev/cubin [--rounds 9] [--samples 20] [--sustain 0.6] [--json out.json]
      [--order shuffle|rotate] [--no-fresh] [--seed 1]
      [--contest _ks2] [--every] [--shapes 4,16,4096,128 ...] [--dtype f16|bf16]

--contest S: the two of ours per shape are the fastest whose name contains S and the fastest
whose name does not (a new variant against the best of the rest), not the two fastest.
--every puts every configuration that passed at a shape in the rounds (not only the two fastest)
and prints each one's time and ratios, and for each STREAMK=1 build (name ..._sk1) the time of
its STREAMK=0 twin (..._sk0) over its own, per round; --shapes limits the shapes.

--dtype bf16: SDPA runs on bf16 inputs (the same N(0, 1) draws as the fp16 ones, rounded to
bf16), and "ours" in the table are the bf16 builds (SM90_BF16, name ..._bf16: bf16 tensor
maps); with --every the fp16 builds that passed are in the same rounds, and each bf16 build's
fp16 twin (the name without _bf16) gives the time of the twin over its own, per round. Each of
ours is checked against SDPA's math backend over its own type's inputs (rel_l2 < 1e-2 for
fp16, 2e-2 for bf16).

Needs torch (the GPU machine has it). Prints a Markdown table.
"""

import argparse
import ctypes
import json
import math
import os
import random
import re
import statistics
import threading
import time

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

cu = ctypes.CDLL("libcuda.so.1")
F16, BF16, SWIZZLE_128B, L2_256B = 6, 9, 3, 3  # CUtensorMapDataType, ...Swizzle, ...L2promotion
MAX_DYN_SMEM = 8  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES


def ck(r, what):
    if r != 0:
        raise RuntimeError("%s failed: CUresult %d" % (what, r))


class Nvml:
    """SM clock (MHz), instantaneous power (W) and clock-event reasons, sampled by a thread
    and tagged with what runs (self.tag); None of it when libnvidia-ml cannot be loaded."""

    SM_CLOCK, POWER_INSTANT = 1, 186  # NVML_CLOCK_SM, NVML_FI_DEV_POWER_INSTANT
    # nvmlClocksEventReasons bits worth naming (the rest: printed as hex).
    REASONS = {0x4: "sw_power_cap", 0x8: "hw_slowdown", 0x20: "sw_thermal", 0x40: "hw_thermal",
               0x80: "hw_power_brake"}

    class Field(ctypes.Structure):
        _fields_ = [("fieldId", ctypes.c_uint), ("scopeId", ctypes.c_uint),
                    ("timestamp", ctypes.c_longlong), ("latencyUsec", ctypes.c_longlong),
                    ("valueType", ctypes.c_int), ("nvmlReturn", ctypes.c_int),
                    ("value", ctypes.c_ulonglong)]

    def __init__(self):
        self.tag, self.samples, self.ok = None, [], False
        try:
            self.lib = ctypes.CDLL("libnvidia-ml.so.1")
            ck(self.lib.nvmlInit_v2(), "nvmlInit")
            self.h = ctypes.c_void_p()
            uuid = str(getattr(torch.cuda.get_device_properties(0), "uuid", ""))
            if not uuid or self.lib.nvmlDeviceGetHandleByUUID(
                    ("GPU-" + uuid).encode(), ctypes.byref(self.h)) != 0:
                ck(self.lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(self.h)), "nvml handle")
            self.ok = self.read() is not None
        except (OSError, RuntimeError):
            self.ok = False
        if self.ok:
            self.run = True
            self.thread = threading.Thread(target=self.loop, daemon=True)
            self.thread.start()

    def read(self):
        mhz, mw, why = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_ulonglong()
        if self.lib.nvmlDeviceGetClockInfo(self.h, self.SM_CLOCK, ctypes.byref(mhz)) != 0:
            return None
        f = self.Field(fieldId=self.POWER_INSTANT)
        if self.lib.nvmlDeviceGetFieldValues(self.h, 1, ctypes.byref(f)) == 0 and \
                f.nvmlReturn == 0:
            w = (f.value & 0xffffffff) / 1000.0
        elif self.lib.nvmlDeviceGetPowerUsage(self.h, ctypes.byref(mw)) == 0:
            w = mw.value / 1000.0  # an average over a second or so, not instantaneous
        else:
            w = float("nan")
        self.lib.nvmlDeviceGetCurrentClocksThrottleReasons(self.h, ctypes.byref(why))
        return mhz.value, w, why.value

    def loop(self):
        while self.run:
            tag = self.tag
            if tag is not None:
                r = self.read()
                if r is not None and tag == self.tag:
                    self.samples.append((tag,) + r)
            time.sleep(0.002)

    def take(self):
        """The samples so far, as {tag: (mean MHz, mean W, OR of reasons, n)}; cleared."""
        by = {}
        for tag, mhz, w, why in self.samples:
            by.setdefault(tag, []).append((mhz, w, why))
        self.samples = []
        out = {}
        for tag, xs in by.items():
            why = 0
            for x in xs:
                why |= x[2]
            out[tag] = (statistics.mean(x[0] for x in xs), statistics.mean(x[1] for x in xs),
                        why, len(xs))
        return out

    @classmethod
    def reasons(cls, bits):
        names = [n for b, n in cls.REASONS.items() if bits & b]
        rest = bits & ~sum(cls.REASONS) & ~0x1  # 0x1: GPU idle
        return ",".join(names + (["0x%x" % rest] if rest else [])) or "none"


class TensorMap:
    """A CUtensorMap (128 bytes, 64-byte aligned) over a [B, H, S, D] fp16 or bf16 tensor."""

    def __init__(self, t, rows):
        b, h, s, d = t.shape
        self.buf = (ctypes.c_uint8 * 192)()
        self.addr = (ctypes.addressof(self.buf) + 63) & ~63
        dims = (ctypes.c_uint64 * 3)(d, s, b * h)
        strides = (ctypes.c_uint64 * 2)(d * 2, s * d * 2)
        box = (ctypes.c_uint32 * 3)(64, rows, 1)
        estr = (ctypes.c_uint32 * 3)(1, 1, 1)
        dtype = BF16 if t.dtype == torch.bfloat16 else F16
        ck(cu.cuTensorMapEncodeTiled(ctypes.c_void_p(self.addr), dtype, 3,
                                     ctypes.c_void_p(t.data_ptr()), dims, strides, box, estr,
                                     0, SWIZZLE_128B, L2_256B, 0), "cuTensorMapEncodeTiled")


class LaunchAttribute(ctypes.Structure):
    """CUlaunchAttribute: an id, padding, and a 64-byte value union (its first int used here)."""
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_int), ("value", ctypes.c_int),
                ("rest", ctypes.c_uint8 * 60)]


class LaunchConfig(ctypes.Structure):
    """CUlaunchConfig (cuda.h)."""
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
                ("smem", ctypes.c_uint), ("stream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(LaunchAttribute)), ("nattrs", ctypes.c_uint)]


PROGRAMMATIC_STREAM_SERIALIZATION = 6  # CUlaunchAttributeID


class Kernel:
    def __init__(self, cubin, block_n, consumers, smem, persistent=0, splits=1, streamk=0,
                 ksplit=1, pdl=0):
        self.mod, self.fn = ctypes.c_void_p(), ctypes.c_void_p()
        ck(cu.cuModuleLoad(ctypes.byref(self.mod), cubin.encode()), "cuModuleLoad")
        ck(cu.cuModuleGetFunction(ctypes.byref(self.fn), self.mod, b"flash_fwd_sm90"),
           "cuModuleGetFunction")
        ck(cu.cuFuncSetAttribute(self.fn, MAX_DYN_SMEM, smem), "cuFuncSetAttribute")
        self.block_n, self.consumers, self.smem = block_n, consumers, smem
        self.persistent, self.splits, self.streamk = persistent, splits, streamk
        self.ksplit, self.pdl = ksplit, pdl
        self.attr = LaunchAttribute(PROGRAMMATIC_STREAM_SERIALIZATION, 0, 1)

    def bind(self, q, k, v, o):
        b, h, s, d = q.shape
        self.maps = [TensorMap(q, 64), TensorMap(k, self.block_n), TensorMap(v, self.block_n),
                     TensorMap(o, 64 // self.splits)]
        # The problem's stream-K scratch (attention_tma.yaml: one element each without it).
        rows = 2 * self.persistent * 64 * self.consumers if self.streamk else 1
        self.scratch = [torch.full((rows * (d if self.streamk else 1),), float("nan"),
                                   device=q.device),
                        torch.full((rows,), float("nan"), device=q.device),
                        torch.zeros((self.persistent * self.consumers if self.streamk else 1,),
                                    device=q.device, dtype=torch.int32)]
        self.scalars = [ctypes.c_void_p(t.data_ptr()) for t in self.scratch] + [
            ctypes.c_int(b), ctypes.c_int(h), ctypes.c_int(s), ctypes.c_float(1.0 / math.sqrt(d))]
        ptrs = [m.addr for m in self.maps] + [ctypes.addressof(x) for x in self.scalars]
        self.params = (ctypes.c_void_p * len(ptrs))(*ptrs)
        self.grid = (-(-s // (64 * self.consumers // self.ksplit)) * self.splits, h, b)
        if self.persistent:  # the sidecar's flat grid of at most PERSISTENT blocks
            self.grid = (min(self.persistent, self.grid[0] * h * b), 1, 1)

    def launch(self, stream):
        if self.pdl:  # PDL=1: programmatic stream serialization (cuLaunchKernelEx)
            cfg = LaunchConfig((ctypes.c_uint * 3)(*self.grid),
                               (ctypes.c_uint * 3)((self.consumers + 1) * 128, 1, 1), self.smem,
                               ctypes.c_void_p(stream.cuda_stream), ctypes.pointer(self.attr), 1)
            ck(cu.cuLaunchKernelEx(ctypes.byref(cfg), self.fn, self.params, None),
               "cuLaunchKernelEx")
            return
        ck(cu.cuLaunchKernel(self.fn, *self.grid, (self.consumers + 1) * 128, 1, 1, self.smem,
                             ctypes.c_void_p(stream.cuda_stream), self.params, None),
           "cuLaunchKernel")


class Graph:
    """BENCH.md: a CUDA graph of `reps` calls, warm; sample() is the median µs per call."""

    def __init__(self, launch, reps=20, warm=3):
        self.g, self.reps = capture(launch, reps, warm), reps

    def once(self):
        """One replay: µs per call."""
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        self.g.replay()
        b.record()
        b.synchronize()
        return a.elapsed_time(b) * 1000.0 / self.reps

    def sample(self, samples):
        return statistics.median(self.once() for _ in range(samples))


def capture(launch, reps, warm):
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
    return g


def fastest(results, n=2, contest=None):
    """shape -> the n fastest passing configurations in sm90_dev's output, as (µs, name)
    (n None: all of them); with contest, the fastest whose name has that string and the fastest
    whose name has not."""
    by_shape = {}
    pat = re.compile(r"^PASS (\S+) B,H,S,D=(\S+) .* median_us ([\d.]+)")
    with open(results) as fh:
        for line in fh:
            m = pat.match(line)
            if m:
                shape, us = tuple(int(x) for x in m.group(2).split(",")), float(m.group(3))
                by_shape.setdefault(shape, {})[os.path.basename(m.group(1))[:-len(".cubin")]] = us
    if contest:
        return {shape: [min(x) for x in ([(us, nm) for nm, us in cfgs.items() if contest in nm],
                                         [(us, nm) for nm, us in cfgs.items() if contest not in nm])
                        if x]
                for shape, cfgs in by_shape.items()}
    return {shape: sorted((us, name) for name, us in cfgs.items())[:n or None]
            for shape, cfgs in by_shape.items()}


def load(cubins, name):
    """The kernel of a configuration name (d64_bn128_c3_s4_pp1_ov1_r2_pe132_o1_sp2, with _sk1
    where STREAMK is 1, _ks2 where KSPLIT is 2, _pdl1 where PDL is 1 and _bf16 for an SM90_BF16
    build)."""
    # D, BLOCK_N, CONSUMERS, STAGES, PERSISTENT, SPLITS, STREAMK, KSPLIT: what the launch depends on.
    f = dict(re.findall(r"([a-z]+)(\d+)", name))
    d, bn, c, st, pe = (int(f[k]) for k in ("d", "bn", "c", "s", "pe"))
    ks, sp = int(f.get("ks", 1)), int(f.get("sp", 1))
    smem = 1024 + (64 * c // ks * (1 + (pe > 0)) + 2 * st * bn) * d * 2 + \
        (ks > 1) * (d // 8 + 1) * 2048 + \
        (sp > 1) * (c // ks * (sp - 1) * (d // 8 + 1) * 2048 // sp + 8 * c // ks) + 8 * (2 + 4 * st)
    return Kernel(os.path.join(cubins, name + ".cubin"), bn, c, smem, pe, sp,
                  int(f.get("sk", 0)), ks, int(f.get("pdl", 0)))


def is_bf16(name):
    """Whether a configuration name is an SM90_BF16 build's (..._bf16)."""
    return name.endswith("_bf16")


def interval(xs):
    """A distribution-free interval of the median of xs: order statistics (1-based) k and
    n + 1 - k with k the largest whose binomial coverage is still >= 95% (n >= 6), else
    min-max."""
    xs, n = sorted(xs), len(xs)
    k = 1
    while k + 1 <= n // 2:
        cover = sum(math.comb(n, i) for i in range(k + 1, n - k)) / 2.0 ** n
        if cover < 0.95:
            break
        k += 1
    return xs[k - 1], xs[n - k]


def spread(xs):
    """median [~95% interval of the median] of a list of ratios."""
    if not xs:
        return "-"
    lo, hi = interval(xs)
    return "%.3fx [%.3f-%.3f]" % (statistics.median(xs), lo, hi)


def clocks(c):
    """mean SM MHz / mean W of one contender's NVML samples."""
    return "%.0f MHz %.0f W" % (c[0], c[1]) if c else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", required=True)
    ap.add_argument("--cubins", required=True)
    ap.add_argument("--json")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--sustain", type=float, default=0.6)
    ap.add_argument("--order", choices=("shuffle", "rotate"), default="shuffle",
                    help="each sample's order of the contenders: shuffled (seeded) or rotated")
    ap.add_argument("--no-fresh", dest="fresh", action="store_false",
                    help="keep each contender's output buffer and graph for every round")
    ap.add_argument("--seed", type=int, default=1, help="the shuffles' seed")
    ap.add_argument("--contest", help="ours: the fastest with this in its name and the rest's")
    ap.add_argument("--every", action="store_true",
                    help="time every passing configuration of a shape, not the two fastest")
    ap.add_argument("--shapes", nargs="*", help="only these shapes (B,H,S,D)")
    ap.add_argument("--dtype", choices=("f16", "bf16"), default="f16",
                    help="SDPA's inputs and the table's builds of ours (bf16: name ..._bf16)")
    args = ap.parse_args()
    only = {tuple(int(x) for x in sh.split(",")) for sh in args.shapes or []}

    torch.zeros(1, device="cuda")  # the primary context, current for the driver calls
    nvml = Nvml()
    rows = []
    picked = fastest(args.results, None if args.every else 2, contest=args.contest)
    for shape, best in sorted(picked.items(), key=lambda x: x[0][::-1]):
        if only and shape not in only:
            continue
        g = torch.Generator(device="cuda").manual_seed(1)
        x32 = [torch.randn(shape, generator=g, device="cuda") for _ in range(3)]
        # Inputs and a reference per type (the reference over that type's rounded inputs).
        inputs = {dt: [x.to(dt) for x in x32] for dt in (torch.float16, torch.bfloat16)}
        del x32
        sdpa_dt = torch.bfloat16 if args.dtype == "bf16" else torch.float16
        q, k, v = inputs[sdpa_dt]
        scale = 1.0 / math.sqrt(shape[3])
        refs = {}
        for dt, (qq, kk, vv) in inputs.items():
            if any((dt == torch.bfloat16) == is_bf16(n) for _, n in best):
                with sdpa_kernel(SDPBackend.MATH):
                    refs[dt] = torch.nn.functional.scaled_dot_product_attention(
                        qq.float(), kk.float(), vv.float(), scale=scale)
        # keep: our kernels and outputs, which the graphs use, alive until the shape is done.
        # makers: a fresh graph of each contender (ours on a fresh output).
        graphs, keep, makers, row = {}, [], {}, {"shape": shape, "rel_l2": {}}
        for _, name in best:
            dt = torch.bfloat16 if is_bf16(name) else torch.float16
            o = torch.full(shape, float("nan"), device="cuda", dtype=dt)
            kern = load(args.cubins, name)
            kern.bind(*inputs[dt], o)
            kern.launch(torch.cuda.current_stream())
            torch.cuda.synchronize()
            ref = refs[dt]
            rel = float((o.float() - ref).norm() / ref.norm())
            row["rel_l2"][name] = rel
            if rel < (2e-2 if is_bf16(name) else 1e-2):
                def fresh(kern=kern, dt=dt):
                    out = torch.empty(shape, device="cuda", dtype=dt)
                    kern.bind(*inputs[dt], out)
                    keep.append(out)
                    return Graph(kern.launch)
                makers[name] = fresh
                graphs[name] = Graph(kern.launch)
                keep.append((kern, o))
        del ref, refs
        for backend, key in ((SDPBackend.FLASH_ATTENTION, "flash"),
                             (SDPBackend.CUDNN_ATTENTION, "cudnn")):
            def launch(_st, backend=backend):
                with sdpa_kernel(backend):
                    torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale)
            try:
                graphs[key] = Graph(launch)
                makers[key] = lambda launch=launch: Graph(launch)
            except RuntimeError as e:
                row[key + "_why"] = str(e).split("\n")[0][:100]
        # Interleaved rounds: each sample replays every contender once, in a shuffled order.
        times = {name: [] for name in graphs}
        order = list(graphs)
        rng = random.Random(args.seed)
        for rnd in range(args.rounds):
            if args.fresh and rnd > 0:
                # New outputs and graphs, made in a shuffled order; the old ones stay alive
                # (keep), so that nothing lands where it was.
                for name in rng.sample(order, len(order)):
                    keep.append(graphs[name])
                    graphs[name] = makers[name]()
            ts = {name: [] for name in graphs}
            for i in range(args.samples):
                if args.order == "shuffle":
                    now = rng.sample(order, len(order))
                else:
                    now = order[i % len(order):] + order[:i % len(order)]
                for name in now:
                    nvml.tag = name
                    ts[name].append(graphs[name].once())
                    nvml.tag = None
            for name in graphs:
                times[name].append(statistics.median(ts[name]))
        row["clocks"] = nvml.take() if nvml.ok else {}
        ours = [n for n in graphs if n not in ("flash", "cudnn")]
        row["times"] = times
        # The table's "ours": the builds of SDPA's type (the others are twins in the rounds).
        mine = [n for n in ours if is_bf16(n) == (args.dtype == "bf16")]
        if mine:
            top = min(mine, key=lambda n: statistics.median(times[n]))
            row["config"], row["us"] = top, statistics.median(times[top])
            for key in ("flash", "cudnn"):
                if key in times:
                    row[key] = statistics.median(times[key])
                    row["vs_" + key] = [a / b for a, b in zip(times[key], times[top])]
            if len(mine) > 1:
                other = [n for n in mine if n != top][0]
                row["runner_up"] = other
                row["vs_runner_up"] = [a / b for a, b in zip(times[other], times[top])]
            # Sustained: ours, then cuDNN, alone for args.sustain s each; the last half counts.
            row["sustain"] = {}
            for name in (top, "cudnn"):
                if name not in graphs:
                    continue
                gr, ts, t0 = graphs[name], [], time.time()
                while time.time() - t0 < args.sustain:
                    half = time.time() - t0 > args.sustain / 2
                    nvml.tag = name if half else None
                    t = gr.once()
                    if half:
                        ts.append(t)
                nvml.tag = None
                c = nvml.take().get(name) if nvml.ok else None
                row["sustain"][name] = (statistics.median(ts) if ts else None, c)
        row["ours"] = {n: statistics.median(times[n]) for n in ours}
        row["vs_cudnn_each"] = {n: [a / b for a, b in zip(times["cudnn"], times[n])]
                                for n in ours if "cudnn" in times}
        row["vs_sk0"] = {n: [a / b for a, b in zip(times[n.replace("_sk1", "_sk0")], times[n])]
                         for n in ours if n.endswith("_sk1") and n.replace("_sk1", "_sk0") in times}
        row["vs_f16"] = {n: [a / b for a, b in zip(times[n.replace("_bf16", "")], times[n])]
                         for n in ours if is_bf16(n) and n.replace("_bf16", "") in times}
        flops = 4.0 * shape[0] * shape[1] * shape[2] * shape[2] * shape[3]
        row["tflops"] = flops / (row["us"] * 1e-6) / 1e12 if row.get("us") else None
        rows.append(row)

    def f(x):
        return "%.2f" % x if x else "-"

    print("GPU: %s; %s; BENCH.md method (graphs of 20 calls), %d interleaved rounds of %d samples"
          " (each sample: every contender once, %s order%s); ratios: median over the rounds"
          " [~95%% interval of the median, order statistics]; clocks: NVML %s" %
          (torch.cuda.get_device_name(0), "bf16" if args.dtype == "bf16" else "fp16",
           args.rounds, args.samples,
           "shuffled (seed %d)" % args.seed if args.order == "shuffle" else "rotating",
           "; fresh outputs and graphs each round" if args.fresh else "",
           "mean SM clock and instantaneous power while each ran" if nvml.ok else "not there"))
    print()
    print("| shape (B,H,S,D) | config | ours µs | TFLOP/s | SDPA flash µs | SDPA cuDNN µs |"
          " vs flash | vs cuDNN | runner-up (its time / ours) | ours clock | cuDNN clock |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        ck_ = r.get("clocks", {})
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            "(%d,%d,%d,%d)" % r["shape"], r.get("config", "- (no correct config)"),
            f(r.get("us")), f(r["tflops"]), f(r.get("flash")), f(r.get("cudnn")),
            spread(r.get("vs_flash")), spread(r.get("vs_cudnn")),
            "%s %s" % (r["runner_up"], spread(r["vs_runner_up"])) if "runner_up" in r else "-",
            clocks(ck_.get(r.get("config"))), clocks(ck_.get("cudnn"))))
    print()
    print("Sustained (each alone, back to back, %.1f s; the last half): µs, mean SM MHz, mean W,"
          " clock-event reasons seen" % args.sustain)
    print()
    print("| shape (B,H,S,D) | ours µs | ours MHz | ours W | ours reasons | cuDNN µs | cuDNN MHz |"
          " cuDNN W | cuDNN reasons | cuDNN / ours |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        su = r.get("sustain", {})
        o, c = su.get(r.get("config"), (None, None)), su.get("cudnn", (None, None))

        def cells(x):
            if not x[1]:
                return [f(x[0]), "-", "-", "-"]
            return [f(x[0]), "%.0f" % x[1][0], "%.0f" % x[1][1], Nvml.reasons(x[1][2])]
        print("| %s | %s | %s |" % ("(%d,%d,%d,%d)" % r["shape"],
                                    " | ".join(cells(o) + cells(c)),
                                    "%.3fx" % (c[0] / o[0]) if o[0] and c[0] else "-"))
    if args.every:
        print()
        print("Every configuration of ours in the rounds: median µs, TFLOP/s, cuDNN's time over its"
              " own, for a STREAMK=1 build its STREAMK=0 twin's time over its own (> 1: stream-K"
              " faster), for a bf16 build its fp16 twin's time over its own (> 1: bf16 faster),"
              " each the median over the rounds [~95% interval]; mean SM clock")
        print()
        print("| shape (B,H,S,D) | config | µs | TFLOP/s | vs cuDNN | sk0 / sk1 | f16 / bf16 |"
              " clock |")
        print("|---|---|---|---|---|---|---|---|")
        for r in rows:
            flops = 4.0 * r["shape"][0] * r["shape"][1] * r["shape"][2] ** 2 * r["shape"][3]
            for n, us in sorted(r.get("ours", {}).items()):
                print("| %s | %s | %.2f | %.1f | %s | %s | %s | %s |" % (
                    "(%d,%d,%d,%d)" % r["shape"], n, us, flops / (us * 1e-6) / 1e12,
                    spread(r["vs_cudnn_each"].get(n)), spread(r["vs_sk0"].get(n)),
                    spread(r["vs_f16"].get(n)), clocks(r.get("clocks", {}).get(n))))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
