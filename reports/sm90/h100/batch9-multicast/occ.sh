#!/bin/bash
# EXPERIMENT: how many clusters of the multicast builds fit at once (cuOccupancyMaxActiveClusters).
set -u
cd "$(dirname "$0")/.."
export PATH=/usr/local/cuda/bin:$PATH
. scripts/sm90_tools.sh
W=/tmp/mc; mkdir -p $W
b() { # name src bn mcast
	build/nvrtc_compile -o $W/$1.cubin $2 --gpu-architecture=sm_90a -std=c++17 -I kernels/include \
		-DBLOCK_N=$3 -DCONSUMERS=1 -DSTAGES=2 -DPINGPONG=0 -DOVERLAP=1 -DRESCALE=0 -DPERSISTENT=0 \
		-DOCCUPANCY=1 -DSPLITS=2 -DKSPLIT=1 -DPDL=1 -DSTREAMK=0 -DSHAPE_D=64 -DMCAST=$4 \
		-DTUNER_SMEM_BYTES=$(smem 64 $3 1 2 0 1 0 0 1 2 1) >$W/$1.log 2>&1 || echo "BUILD FAILED $1"
}
b plain kernels/templates/flash_fwd_sm90.cu 256 1
b mc2 wip/mc.cu 256 2
b mc4 wip/mc.cu 256 4
s=$(smem 64 256 1 2 0 1 0 0 1 2 1)
for n in plain mc2 mc4; do
	build/sm90_dev --time --splits 2 --pdl $W/$n.cubin 256 1 $s 1,8,512,64 | grep "OCCUPANCY\|median_us" |
		sed "s|$W/||"
done
nvidia-smi -q | grep -i -A3 "gpc\|Multiprocessor" | head -20
