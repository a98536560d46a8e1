#!/usr/bin/env python3
"""The executed-instruction mix of one or two kernels from ncu's per-instruction SASS counters.

Input: `ncu --import X.ncu-rep --page source --print-source sass --csv > X.sass.csv` of a report
taken with `--section SourceCounters` (scripts/sm90_dev.sh does this for our kernel). Per opcode
(the SASS mnemonic without its modifiers or predicate) it sums the "Instructions Executed" (warp
instructions) and the warp stall samples, and with --scores also divides the executed count by
the attention scores of the shape (B H S S) times 1/32, i.e. thread-instructions per score:
cuDNN's d128 kernel does ~2 FADD, ~2 FMUL, ~1 FMNMX and ~1 MUFU per score.

  python3 scripts/sass_opmix.py A.sass.csv [B.sass.csv] [--scores B,H,S (of both)] [--top 30]
"""

import argparse
import collections
import csv


def mix(path):
    """opcode -> (warp instructions executed, stall samples); and the static count."""
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    # The header is the first row that names both columns (ncu prints a title line first).
    h = next(i for i, r in enumerate(rows) if "Source" in r and "Instructions Executed" in r)
    hdr = rows[h]
    i_src, i_ex = hdr.index("Source"), hdr.index("Instructions Executed")
    i_st = hdr.index("Warp Stall Sampling (All Samples)") \
        if "Warp Stall Sampling (All Samples)" in hdr else None
    ex, st, n = collections.Counter(), collections.Counter(), 0
    for r in rows[h + 1:]:
        if len(r) <= i_ex:
            continue
        words = r[i_src].split()
        if not words:
            continue
        op = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
        op = op.split(".")[0]
        try:
            ex[op] += int(r[i_ex].replace(",", ""))
            if i_st is not None:
                st[op] += int(r[i_st].replace(",", "") or 0)
            n += 1
        except ValueError:
            pass
    return ex, st, n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv", nargs="+", help="one or two .sass.csv files")
    ap.add_argument("--scores", help="B,H,S of the shape: also print per-score counts")
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args()
    mixes = [mix(p) for p in args.csv[:2]]
    per = None
    if args.scores:
        b, h, s = (int(x) for x in args.scores.split(","))
        per = b * h * s * s / 32.0  # warp instructions per score
    print("static instructions: %s; executed: %s" % (
        " vs ".join(str(m[2]) for m in mixes),
        " vs ".join("%.1fM" % (sum(m[0].values()) / 1e6) for m in mixes)))
    ops = collections.Counter()
    for m in mixes:
        ops.update(m[0])
    head = "%-10s" % "op" + "".join(" %10s" % ("exec(M)" + "AB"[i]) for i in range(len(mixes)))
    if per:
        head += "".join(" %9s" % ("/score" + "AB"[i]) for i in range(len(mixes)))
    head += "".join(" %8s" % ("stall" + "AB"[i]) for i in range(len(mixes)))
    print(head)
    for op, _ in ops.most_common(args.top):
        line = "%-10s" % op + "".join(" %10.2f" % (m[0][op] / 1e6) for m in mixes)
        if per:
            line += "".join(" %9.3f" % (m[0][op] / per) for m in mixes)
        line += "".join(" %8d" % m[1][op] for m in mixes)
        print(line)


if __name__ == "__main__":
    main()
