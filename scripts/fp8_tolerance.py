#!/usr/bin/python3
"""Measure the error of the FP8 attention kernel's arithmetic against a float64 reference.

The tolerances of kernels/problems/attention_tma_fp8.yaml come from here, not from a guess.
Inputs are what the tuner's fill makes: N(0, 1) draws rounded to e4m3 (round to nearest even,
saturating at 448). The kernel (flash_fwd_sm90_fp8.cu) is emulated with its roundings:
S = Q K^T in fp32 (e4m3 products are exact in fp32), online softmax by key tiles of BLOCK_N in
fp32 with exp2 and the scale folded in, P rounded to e4m3 before P V, fp32 accumulation of
O, l summed from the unrounded P, O / l rounded to fp16. The reference is softmax(Q K^T
scale) V in float64 over the same e4m3 inputs (what attention_fp8_ref.cu computes). For each
shape a few heads and a sample of query rows are computed (every key of the row: the error
depends on S); the worst rel_l2 and max_abs over shapes, BLOCK_N and seeds are printed, and
the tolerance is a stated multiple of them.

  /usr/bin/python3 scripts/fp8_tolerance.py [--rows 512] [--heads 2] [--seeds 2]
  /usr/bin/python3 scripts/fp8_tolerance.py --check-permutation

--check-permutation walks pack_p's quad shuffles (the kernel's header comment) over 32 lanes
and checks that every A-fragment byte holds the key the wgmma wants. Needs python3-numpy.
"""

import argparse
import sys

import numpy as np

# The suite (configs/h100-sm90-fp8.yaml) and the dev script's ragged lengths.
SHAPES = [(1, 8, 512, 64), (2, 8, 512, 64), (2, 8, 2048, 64), (8, 16, 2048, 64),
          (8, 16, 4096, 64), (4, 16, 4096, 128), (2, 4, 1000, 128), (2, 4, 257, 64),
          (1, 2, 100, 64), (1, 2, 130, 128), (1, 2, 17, 64)]
BLOCK_NS = [64, 128, 256]


def to_e4m3(x):
    """Round to the nearest e4m3 value (ties to even), saturating at +-448 (__NV_SATFINITE)."""
    x = np.asarray(x, dtype=np.float64)
    a = np.abs(x)
    with np.errstate(divide="ignore"):
        e = np.floor(np.log2(np.where(a > 0, a, 1.0)))
    e = np.maximum(e, -6.0)  # below 2^-6 the subnormal step 2^-9
    step = np.exp2(e - 3.0)
    r = np.minimum(np.round(a / step) * step, 448.0)
    return np.sign(x) * r


def kernel_emulation(q, k, v, scale, block_n):
    """O (fp16) as the kernel computes it for rows q against keys k, values v (float64 arrays)."""
    f32 = np.float32
    s_all = q.astype(f32) @ k.T.astype(f32)
    scale_log2 = f32(scale) * f32(1.4426950408889634)
    rows, d = q.shape[0], v.shape[1]
    m = np.full((rows, 1), -np.inf, dtype=f32)
    l = np.zeros((rows, 1), dtype=f32)
    o = np.zeros((rows, d), dtype=f32)
    for j in range(0, k.shape[0], block_n):
        s = s_all[:, j:j + block_n]
        mx = np.maximum(m, s.max(axis=1, keepdims=True))
        with np.errstate(invalid="ignore"):
            alpha = np.exp2((m - mx) * scale_log2).astype(f32)
        alpha[np.isnan(alpha)] = 0.0
        p = np.exp2(s * scale_log2 - mx * scale_log2).astype(f32)
        l = l * alpha + p.sum(axis=1, keepdims=True, dtype=f32)
        pe = to_e4m3(p).astype(f32)
        o = o * alpha + pe @ v[j:j + block_n].astype(f32)
        m = mx
    return (o / l).astype(np.float16)


def reference(q, k, v, scale):
    s = (q @ k.T) * float(np.float32(scale))
    s -= s.max(axis=1, keepdims=True)
    p = np.exp(s)
    return (p @ v) / p.sum(axis=1, keepdims=True)


def measure(args):
    worst = {"rel_l2": 0.0, "max_abs": 0.0}
    print("| B,H,S,D | BLOCK_N | seed | rows x heads | rel_l2 | max_abs | max |ref| |")
    print("|---|---|---|---|---|---|---|")
    for shape in SHAPES:
        b, h, s_len, d = shape
        scale = np.float32(1.0 / np.sqrt(d))
        for seed in range(args.seeds):
            rng = np.random.default_rng(1000 * seed + s_len + d)
            heads = []
            for _ in range(min(args.heads, b * h)):
                q = to_e4m3(rng.standard_normal((s_len, d)))
                k = to_e4m3(rng.standard_normal((s_len, d)))
                v = to_e4m3(rng.standard_normal((s_len, d)))
                rows = rng.choice(s_len, size=min(args.rows, s_len), replace=False)
                heads.append((q[rows], k, v, reference(q[rows], k, v, scale)))
            for bn in BLOCK_NS:
                d2 = r2 = mab = mref = 0.0
                for q, k, v, ref in heads:
                    out = kernel_emulation(q, k, v, scale, bn).astype(np.float64)
                    d2 += float(((out - ref) ** 2).sum())
                    r2 += float((ref ** 2).sum())
                    mab = max(mab, float(np.abs(out - ref).max()))
                    mref = max(mref, float(np.abs(ref).max()))
                rel = (d2 / r2) ** 0.5
                worst["rel_l2"] = max(worst["rel_l2"], rel)
                worst["max_abs"] = max(worst["max_abs"], mab)
                print("| %s | %d | %d | %d x %d | %.3e | %.3e | %.3f |" % (
                    ",".join(map(str, shape)), bn, seed, heads[0][0].shape[0], len(heads), rel,
                    mab, mref))
    print()
    print("worst: rel_l2 %.3e, max_abs %.3e" % (worst["rel_l2"], worst["max_abs"]))
    print("tolerance (x%g rel_l2, x%g max_abs): rel_l2 %.2e, max_abs %.2e" % (
        args.rel_factor, args.abs_factor, args.rel_factor * worst["rel_l2"],
        args.abs_factor * worst["max_abs"]))
    return 0


def check_permutation():
    """pack_p's shuffles over one warp: every A byte must hold the key the fragment wants."""
    bad = 0
    # Accumulator: lane l, slot i (n8 block 4 kt + i) holds keys 8 i + 2 (l % 4) + {0, 1} of
    # rows l / 4 (r = 0) and l / 4 + 8 (r = 1); a byte is (row, key) of one k32 step.
    for r in range(2):
        words = {}
        for lane in range(32):
            q = lane % 4
            pr = [((lane // 4 + 8 * r, 8 * i + 2 * q), (lane // 4 + 8 * r, 8 * i + 2 * q + 1))
                  for i in range(4)]
            ew, ow = pr[0] + pr[2], pr[1] + pr[3]  # 4 bytes each, low byte first
            words[lane] = (ew, ow)
        for lane in range(32):
            q = lane % 4
            src1 = (lane & ~3) | (2 * (q % 2) + q // 2)
            src2 = src1 ^ 1
            # Source t sends Ow in round 1 when t is odd, else Ew; the other word in round 2.
            v1 = words[src1][1] if src1 % 2 else words[src1][0]
            v2 = words[src2][0] if src2 % 2 else words[src2][1]
            e, o = (v1, v2) if q < 2 else (v2, v1)
            a_lo = e[0:2] + o[0:2]   # prmt(e, o, 0x5410)
            a_hi = e[2:4] + o[2:4]   # prmt(e, o, 0x7632)
            row = lane // 4 + 8 * r
            want_lo = [(row, 4 * q + x) for x in range(4)]
            want_hi = [(row, 16 + 4 * q + x) for x in range(4)]
            if list(a_lo) != want_lo or list(a_hi) != want_hi:
                bad += 1
                print("lane %d r %d: got %s %s want %s %s" % (lane, r, a_lo, a_hi, want_lo,
                                                              want_hi))
    print("permutation: %s (64 lane-rows, 8 bytes each)" % ("ok" if not bad else "%d BAD" % bad))
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=512, help="query rows sampled per head")
    ap.add_argument("--heads", type=int, default=2, help="heads per shape")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--rel-factor", type=float, default=2.0)
    ap.add_argument("--abs-factor", type=float, default=3.0)
    ap.add_argument("--check-permutation", action="store_true")
    args = ap.parse_args()
    if args.check_permutation:
        return check_permutation()
    return measure(args)


if __name__ == "__main__":
    sys.exit(main())
