#!/bin/bash
# Batch 11, on the GPU machine, runs 2 and 3: the D=128 winners with the last key tile narrowed
# (TAIL_N keys wide) against the same builds without (TAIL_N 0; TAIL_N 00 is a second build of
# TAIL_N 0 under another name: a control of the contest's own noise), at the two large D=128
# shapes. claim.sh does the work; these runs kept the narrowed tile's P in an array of its own
# (TAIL_P=own). Run 2 had only the contest of batches 1-10 (METHODS=old); run 3 had both:
#   OUT=$OUT METHODS="new old" reports/sm90/h100/batch11-tail/tail.sh
# Run 1 built the template at ea951f7 with tail-static.patch applied (the last tile always
# peeled, at a compile-time TAIL_N: right only at that tail), configurations 128 160 2 2 1 1 3
# {132,0} 1 1 1 1 at TAIL_N 0, 96 and 128, checked and timed only at the shapes of their tail.
export BUILDS=${BUILDS:-"128 160 2 2 1 1 3 0 1 1 1 1 0
128 160 2 2 1 1 3 0 1 1 1 1 00
128 160 2 2 1 1 3 0 1 1 1 1 96
128 160 2 2 1 1 3 0 1 1 1 1 128
128 160 2 2 1 1 1 132 1 1 1 1 0
128 160 2 2 1 1 1 132 1 1 1 1 96"}
export SHAPES=${SHAPES:-"4,16,4096,128 4,32,2048,128"} TAIL_P=own METHODS=${METHODS:-old}
exec "$(dirname "$0")/claim.sh"
