import sys, statistics, math
def med(v): return statistics.median(v)
for f in sys.argv[1:]:
    rows = {}
    for line in open(f):
        if '|' not in line: continue
        name = line.split()[0]
        seeds = [int(x) for x in line.split('|')[1].split()]
        rows[name] = seeds
    out = []
    for n in (20, 40, 80):
        parts = []; g = 0; k = 0
        for name, s in rows.items():
            if len(s) < n: continue
            m = med(s[:n]); parts.append("%g/%d" % (m, max(s[:n]))); g += math.log(m); k += 1
        if k: out.append("%d: %s geo %.1f" % (n, ", ".join(parts), math.exp(g / k)))
    print(f); [print("  " + o) for o in out]
