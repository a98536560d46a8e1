#!/usr/bin/env python3
"""Compare the executed SASS op mix of two kernels from `ncu --page source --print-source sass --csv`
exports (scripts/ncu_compare.sh writes them): executed instructions and stall samples per opcode.

    python3 scripts/sass_opmix.py ours.sass.csv fa2.sass.csv
"""
import csv, sys, collections
def mix(path):
    rows = list(csv.reader(open(path)))
    hdr = rows[1]; i_src = hdr.index("Source"); i_ex = hdr.index("Instructions Executed")
    i_st = hdr.index("Warp Stall Sampling (All Samples)")
    c = collections.Counter(); st = collections.Counter(); n = 0
    for r in rows[2:]:
        if len(r) <= i_ex: continue
        op = r[i_src].strip().split()
        if not op: continue
        o = op[0]
        if o.startswith("@"): o = op[1]
        o = o.split(".")[0]
        try: c[o] += int(r[i_ex]); st[o] += int(r[i_st]); n += 1
        except ValueError: pass
    return c, st, n
a, b = sys.argv[1], sys.argv[2]
ca, sa, na = mix(a); cb, sb, nb = mix(b)
print("static instrs: %d vs %d; executed total %.1fM vs %.1fM" % (na, nb, sum(ca.values())/1e6, sum(cb.values())/1e6))
print("%-10s %10s %10s %8s %8s" % ("op", "A (M)", "B (M)", "stallA", "stallB"))
for o in sorted(set(ca)|set(cb), key=lambda o: -(ca[o]+cb[o]))[:30]:
    print("%-10s %10.2f %10.2f %8d %8d" % (o, ca[o]/1e6, cb[o]/1e6, sa[o], sb[o]))
