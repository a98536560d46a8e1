#!/bin/bash
# Ad hoc (batch 8): O stored straight from consumer 0's registers after the key-split merge, instead of
# staged and stored by TMA. Ran from wip/ with wip/direct.cu and wip/sm90_dev_direct.cu, the
# template and sm90_dev.cu with direct-o.patch and direct-o-sm90_dev.patch applied; output in direct-o.out.
cd "$(dirname "$0")/.."
. scripts/sm90_tools.sh
nvcc -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a wip/sm90_dev_direct.cu -lcuda -o build/sdd || exit 1
W=/tmp/direct; mkdir -p $W
for cfg in "128 2 0 0" "128 4 0 0" "256 2 0 0"; do
	set -- $cfg; bn=$1 st=$2
	s=$(smem 64 $bn 2 $st 0 0 0 0 1 1 2)
	for d in 0 1; do
		n=bn${bn}_s${st}_direct$d
		build/nvrtc_compile -o $W/$n.cubin wip/direct.cu --gpu-architecture=sm_90a -std=c++17 -I kernels/include \
			-DBLOCK_N=$bn -DCONSUMERS=2 -DSTAGES=$st -DPINGPONG=0 -DOVERLAP=0 -DRESCALE=0 -DPERSISTENT=0 -DOCCUPANCY=1 \
			-DSPLITS=1 -DSTREAMK=0 -DKSPLIT=2 -DPDL=1 -DDIRECT_O=$d -DSHAPE_D=64 -DTUNER_SMEM_BYTES=$s || { echo BUILD FAILED $n; continue; }
		a="--pdl --ksplit 2"; [ $d = 1 ] && a="$a --direct-o"
		build/sdd --repeat 3 $a $W/$n.cubin $bn 2 $s 1,1,1,64 1,2,100,64 2,3,257,64 1,2,640,64 1,8,512,64 2,4,1000,64 | grep -v ^PASS
		echo "$n $(build/sdd --time $a $W/$n.cubin $bn 2 $s 1,8,512,64 2,8,512,64 1,8,1024,64 | grep -o 'median_us [0-9.]*' | tr '\n' ' ')"
	done
done
# the same again, in reverse order (drift)
for cfg in "256 2" "128 4" "128 2"; do
	set -- $cfg; bn=$1 st=$2; s=$(smem 64 $bn 2 $st 0 0 0 0 1 1 2)
	for d in 1 0; do
		n=bn${bn}_s${st}_direct$d; a="--pdl --ksplit 2"; [ $d = 1 ] && a="$a --direct-o"
		echo "$n $(build/sdd --time $a $W/$n.cubin $bn 2 $s 1,8,512,64 2,8,512,64 1,8,1024,64 | grep -o 'median_us [0-9.]*' | tr '\n' ' ')"
	done
done
