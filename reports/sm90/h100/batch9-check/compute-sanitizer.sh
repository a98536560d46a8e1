#!/bin/bash
# compute-sanitizer (memcheck, synccheck) on the split-KV builds.
set -u
cd "$(dirname "$0")/.."
export PATH=/usr/local/cuda/bin:$PATH
. scripts/sm90_tools.sh
W=/tmp/cs; mkdir -p $W
b() { # name D BN C ST OV SP KS
	build/nvrtc_compile -o $W/$1.cubin kernels/templates/flash_fwd_sm90.cu --gpu-architecture=sm_90a \
		-std=c++17 -I kernels/include -DBLOCK_N=$3 -DCONSUMERS=$4 -DSTAGES=$5 -DPINGPONG=0 \
		-DOVERLAP=$6 -DRESCALE=0 -DPERSISTENT=0 -DOCCUPANCY=1 -DSPLITS=$7 -DKSPLIT=$8 -DPDL=1 \
		-DSTREAMK=0 -DSHAPE_D=$2 -DTUNER_SMEM_BYTES=$(smem $2 $3 $4 $5 0 $6 0 0 1 $7 $8) >$W/$1.log 2>&1 ||
		echo "BUILD FAILED $1"
}
b c1 64 256 1 2 1 2 1
b ks2 64 128 2 2 0 2 2
b d128 128 128 1 2 1 2 1
for t in memcheck synccheck racecheck; do
	for n in c1 ks2 d128; do
		set -- $(case $n in c1) echo 64 256 1 2 1 2 1;; ks2) echo 64 128 2 2 0 2 2;; d128) echo 128 128 1 2 1 2 1;; esac)
		s=$(smem $1 $2 $3 $4 0 $5 0 0 1 $6 $7)
		sh=$([ $1 = 64 ] && echo "1,8,512,64 2,3,257,64 1,2,100,64" || echo "1,8,512,128 2,3,257,128")
		timeout 120 compute-sanitizer --tool $t --error-exitcode 9 build/sm90_dev --splits $6 --ksplit $7 --pdl \
			$W/$n.cubin $2 $3 $s $sh >$W/$t-$n.log 2>&1
		echo "$t $n rc $? $(grep -c '^PASS' $W/$t-$n.log) PASS; $(grep -m1 'ERROR SUMMARY\|RACECHECK SUMMARY' $W/$t-$n.log)"
	done
done
