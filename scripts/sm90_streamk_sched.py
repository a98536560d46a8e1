#!/usr/bin/env python3
"""Check flash_fwd_sm90's stream-K schedule on the CPU (no GPU): sk_begin, sk_owner, sk_slot,
sk_items and sk_item transliterated from the kernel (32-bit ints, sk_owner's float estimate as
float32), over many (units U, blocks G, key tiles per unit nt). For every case: each (unit,
tile) is taken by exactly one block; a block's g0 (its ring's tile count) runs on without a gap;
sk_items is the number of items; a block's partial segments have distinct slots; and the list of
(block, slot) that the merger of a tail unit computes (sk_owner .. sk_owner, blocks with an empty
range skipped) is exactly the partial segments that arrive at that unit's counter.

  python3 scripts/sm90_streamk_sched.py [--random N] [--seed S]

Exit status 1 on the first mismatch (printed).
"""

import argparse
import random
import struct
import sys


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def sk_begin(c, r, nt, g):
    cr = c * r
    return cr // g * nt + cr % g * nt // g


def sk_owner(i, r, nt, g):
    est = f32(f32(f32(float(i)) + 1.0) * float(g)) / f32(float(r) * float(nt))
    c = min(g - 1, int(f32(est)))
    while c > 0 and sk_begin(c, r, nt, g) > i:
        c -= 1
    while c + 1 < g and sk_begin(c + 1, r, nt, g) <= i:
        c += 1
    return c


def sk_slot(c, tu, r, nt, g):
    return 2 * c + (0 if sk_begin(c, r, nt, g) // nt == tu else 1)


def sk_items(first, stride, units, nt):
    whole = units // stride
    r = units - whole * stride
    i0, i1 = sk_begin(first, r, nt, stride), sk_begin(first + 1, r, nt, stride)
    return whole + ((i1 - 1) // nt - i0 // nt + 1 if i0 < i1 else 0)


def sk_item(it, first, stride, units, nt):
    """(u, kb, ke, g0) of item it."""
    whole = units // stride
    if it < whole:
        return first + it * stride, 0, nt, it * nt
    r = units - whole * stride
    i0, i1 = sk_begin(first, r, nt, stride), sk_begin(first + 1, r, nt, stride)
    tu = i0 // nt + (it - whole)
    b, e = max(i0, tu * nt), min(i1, (tu + 1) * nt)
    return whole * stride + tu, b - tu * nt, e - tu * nt, whole * nt + b - i0


def check(units, persistent, nt):
    g = min(persistent, units)  # the sidecar's grid
    r = units % g
    owner, arrivals = {}, {}
    for c in range(g):
        slots, g_next = set(), 0
        for it in range(sk_items(c, g, units, nt)):
            u, kb, ke, g0 = sk_item(it, c, g, units, nt)
            if not 0 <= kb < ke <= nt or g0 != g_next:
                return "block %d item %d: tiles [%d, %d) g0 %d (expected %d)" % (
                    c, it, kb, ke, g0, g_next)
            g_next += ke - kb
            for k in range(kb, ke):
                if (u, k) in owner:
                    return "unit %d tile %d taken by blocks %d and %d" % (u, k, owner[u, k], c)
                owner[u, k] = c
            if kb > 0 or ke < nt:
                tu = u - units // g * g
                slot = sk_slot(c, tu, r, nt, g)
                if slot in slots:
                    return "block %d: slot %d twice" % (c, slot)
                slots.add(slot)
                arrivals.setdefault(tu, []).append((c, slot))
    if len(owner) != units * nt:
        return "%d of %d (unit, tile) taken" % (len(owner), units * nt)
    for tu, got in arrivals.items():
        c0, c1 = sk_owner(tu * nt, r, nt, g), sk_owner((tu + 1) * nt - 1, r, nt, g)
        want = [(b, sk_slot(b, tu, r, nt, g)) for b in range(c0, c1 + 1)
                if sk_begin(b, r, nt, g) < sk_begin(b + 1, r, nt, g)]
        if sorted(got) != want:
            return "tail unit %d: merger reads %s, segments are %s" % (tu, want, sorted(got))
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--random", type=int, default=300, help="random cases after the fixed ones")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    # The suite's shapes on 132 blocks (units of 128 rows: 2048; 192 rows at wide: 1408; long:
    # 256 and 176), the device batch's (134 units of 2 tiles: T < G; 133 of 1), and a sweep.
    cases = [(u, 132, nt) for u in list(range(1, 300)) + [2048, 1408, 4096, 133, 134, 176, 256]
             for nt in (1, 2, 3, 5, 8, 16, 25, 32, 33, 64)]
    cases += [(rng.randint(1, 3000), rng.randint(1, 200), rng.randint(1, 70))
              for _ in range(args.random)]
    for units, persistent, nt in cases:
        why = check(units, persistent, nt)
        if why:
            print("FAIL U=%d PERSISTENT=%d nt=%d: %s" % (units, persistent, nt, why))
            return 1
    print("ok: %d cases" % len(cases))
    return 0


if __name__ == "__main__":
    sys.exit(main())
