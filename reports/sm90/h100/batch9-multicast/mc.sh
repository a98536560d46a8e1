#!/bin/bash
# EXPERIMENT: K/V multicast across the row blocks of a split (wip/mc.cu) against the template.
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
for bn in 128 256; do
	b plain$bn kernels/templates/flash_fwd_sm90.cu $bn 1
	b mc2_$bn wip/mc.cu $bn 2
	b mc4_$bn wip/mc.cu $bn 4
done
for bn in 128 256; do
	s=$(smem 64 $bn 1 2 0 1 0 0 1 2 1)
	chk="1,8,512,64 2,8,512,64 1,4,256,64 3,5,512,64"
	[ $bn = 256 ] && chk="$chk 1,8,1024,64"
	for v in plain mc2_ mc4_; do
		n=$v$bn; [ $v = plain ] && n=plain$bn
		timeout 60 build/sm90_dev --repeat 3 --splits 2 --pdl $W/$n.cubin $bn 1 $s $chk | grep -c '^PASS' | sed "s/^/$n checks passed: /"
		timeout 60 build/sm90_dev --repeat 3 --splits 2 --pdl $W/$n.cubin $bn 1 $s $chk | grep '^FAIL' | head -2
	done
	for rep in 1 2; do
		for v in plain mc2_ mc4_; do
			n=$v$bn; [ $v = plain ] && n=plain$bn
			timeout 60 build/sm90_dev --time --splits 2 --pdl $W/$n.cubin $bn 1 $s 1,8,512,64 2,8,512,64 |
				grep median_us | awk -v n=$n '{for(i=1;i<=NF;i++) if($i=="median_us") print n, $3, $(i+1)}'
		done
	done
done
