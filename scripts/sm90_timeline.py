#!/usr/bin/env python3
"""Summarise the stamps of a timeline build of flash_fwd_sm90 (scripts/sm90_timeline.patch,
written by sm90_dev --timeline).

Per warpgroup, the median clock64 cycles since the block's entry at each numbered point (over
the blocks of the calls read); then, by globaltimer (ns), how back-to-back calls follow one
another: a call's blocks start while the call before runs (PDL), wait in griddepcontrol.wait
until it has completed, and run; so the period of a call is its life after the wait plus the
hand-off from the last block of the call before to the wait's return.

    sm90_timeline.py FILE.bin [FIRST_CALL [CALLS]]

Calls 23..42 by default: sm90_median_us's first timed graph replay (3 warm-up launches and a
first replay of 20 come before it).
"""
import struct
import sys

import numpy as np

NAMES = {1: "barriers initialised", 2: "after griddepcontrol.wait", 3: "producer: Q issued",
         4: "producer: every load issued", 5: "consumer: Q landed", 25: "last P V done",
         26: "key-split merge", 27: "epilogue: O staged", 28: "epilogue: barrier",
         29: "epilogue: store read", 33: "split: partial pushed (a sender)",
         34: "split: partials landed (an owner)", 35: "split: merged (an owner)"}
# (the overlapped loop stamps S of tile t with P V of tile t - 1: "P V done" is the latter's)
for t in range(4):
    for k, what in enumerate(["K landed", "S done", "softmax done", "V landed", "P V done"]):
        NAMES[6 + 5 * t + k] = f"tile {t}: {what}"
CALLS, BLOCKS, SLOTS = 48, 128, 40


def main():
    path = sys.argv[1]
    first = int(sys.argv[2]) if len(sys.argv) > 2 else 23
    ncalls = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    raw = open(path, "rb").read()
    gx, gy, gz, n = struct.unpack("4i", raw[:16])
    if n != CALLS * BLOCKS * 4 * SLOTS:
        sys.exit(f"{path}: {n} stamps, not the patch's {CALLS} x {BLOCKS} x 4 x {SLOTS}: "
                 "a build patched by another version of scripts/sm90_timeline.patch")
    tl = np.frombuffer(raw[16:], dtype=np.uint64).astype(np.int64).reshape(
        CALLS, BLOCKS, 4, SLOTS)
    blocks = min(gx * gy * gz, BLOCKS)
    sel = tl[first:first + ncalls, :blocks]
    print(f"{path}: grid {gx}x{gy}x{gz}, calls {first}..{first + ncalls - 1}, {blocks} blocks")
    print(f"{'point':32s} {'producer':>9s} {'consumer0':>9s} {'consumer1':>9s} (median cycles)")
    for k in [k for k in range(1, SLOTS) if k not in (30, 31, 32)]:
        row = []
        for wg in range(3):
            v = sel[:, :, wg, k].ravel()
            v = v[v > 0]
            row.append(f"{int(np.median(v)):9d}" if len(v) else f"{'-':>9s}")
        if any(r.strip() != "-" for r in row):
            print(f"{NAMES.get(k, str(k)):32s} {' '.join(row)}")

    def per_call(slot, how):
        v = sel[:, :, :3, slot].astype(float)
        v[v == 0] = np.nan
        return how(how(v, axis=2), axis=1)

    entry = per_call(0, np.nanmin)
    waited = per_call(32, np.nanmin)
    waited_last = per_call(32, np.nanmax)
    done = per_call(31, np.nanmax)
    med = lambda x: f"{np.nanmedian(x):6.0f}"
    print("back-to-back calls, ns (median over the calls):")
    print(f"  period (wait to wait)                        {med(np.diff(waited))}")
    print(f"  life after the wait (first wait to last exit) {med(done - waited)}")
    print(f"  hand-off (last exit to the next first wait)  {med(waited[1:] - done[:-1])}")
    print(f"  spread of the wait's return over the blocks  {med(waited_last - waited)}")
    print(f"  first entry before the call's wait returns   {med(waited - entry)}")
    print(f"  SMs used: {len(np.unique(sel[:, :, 0, 30]))}")
    # Where a call's blocks ran: two of one call on an SM share its tensor cores and SFUs.
    doubled = [int(np.sum(np.bincount(sel[c, :, 0, 30].astype(np.int64)) >= 2))
               for c in range(sel.shape[0])]
    print(f"  SMs running two or more blocks of one call: median {np.median(doubled):.0f}, "
          f"max {max(doubled)} (of {blocks} blocks)")


if __name__ == "__main__":
    main()
