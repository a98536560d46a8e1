#!/usr/bin/env python3
"""Where the warps of one profiled kernel wait, from the CSV of ncu's source page
(`ncu --import R --page source --csv --print-source sass`, scripts/mission_ncu_sass.sh): the
sampled stall reasons over the whole kernel, then per stretch of code between two of the given
opcodes' first and last occurrences (a loop's softmax: MUFU.EX2; its GEMMs: HGMMA), then the
instructions with the most samples.

    sass_stalls.py FILE.csv [--top N]
"""
import collections
import csv
import sys


def main():
    path = sys.argv[1]
    top = int(sys.argv[sys.argv.index("--top") + 1]) if "--top" in sys.argv else 30
    rows = list(csv.reader(open(path)))
    start = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
    hdr, data = rows[start], [r for r in rows[start + 1:] if len(r) == len(rows[start])]
    ix = {h: i for i, h in enumerate(hdr)}
    stalls = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]

    def samples(r, h="Warp Stall Sampling (All Samples)"):
        return int(r[ix[h]] or 0)

    total = sum(samples(r) for r in data)
    print(f"{path}: {len(data)} instructions, {total} samples")

    def summary(rs, title):
        n = sum(samples(r) for r in rs)
        c = collections.Counter()
        for r in rs:
            for h in stalls:
                c[h] += samples(r, h)
        ops = collections.Counter()
        for r in rs:
            ops[r[1].split()[0] if not r[1].startswith("@") else r[1].split()[1]] += samples(r)
        print(f"{title}: {n} samples ({100 * n / max(total, 1):.1f}%), {len(rs)} instructions; "
              + ", ".join(f"{h[6:]} {100 * v / max(n, 1):.0f}%" for h, v in c.most_common(6) if v))
        print("   by opcode: " + ", ".join(f"{o} {v}" for o, v in ops.most_common(8)))

    summary(data, "whole kernel")
    op = lambda r: r[1].split()[1] if r[1].startswith("@") else r[1].split()[0]
    for name, key in (("softmax (first to last MUFU.EX2)", "MUFU.EX2"),
                      ("GEMMs (first to last HGMMA)", "HGMMA")):
        at = [i for i, r in enumerate(data) if op(r).startswith(key)]
        if at:
            summary(data[at[0]:at[-1] + 1], name)
    print(f"top {top} instructions by samples:")
    for r in sorted(data, key=lambda r: -samples(r))[:top]:
        d = sorted(((h, samples(r, h)) for h in stalls), key=lambda x: -x[1])[:3]
        print(f"  {r[0][-5:]} {samples(r):6d}  {r[1][:58]:58s} "
              + " ".join(f"{h[6:]}={v}" for h, v in d if v))


if __name__ == "__main__":
    main()
