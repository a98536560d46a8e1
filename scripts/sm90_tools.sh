# Sourced by the flash_fwd_sm90 device scripts (sm90_dev.sh, sm90_ksplit.sh, sm90_streamk.sh):
# builds their two tools into build/, NVRTC as tuner compiles (build/nvrtc_compile) and the
# check-and-time driver (build/sm90_dev); exits the script when either does not build.
CUDA=${CUDA_HOME:-/usr/local/cuda}
mkdir -p build
cc -std=c11 -O2 -I"$CUDA/include" scripts/nvrtc_compile.c -L"$CUDA/lib64" -lnvrtc \
	-Wl,-rpath,"$CUDA/lib64" -o build/nvrtc_compile || exit 1
"$CUDA/bin/nvcc" -O2 -std=c++17 -gencode=arch=compute_90a,code=sm_90a scripts/sm90_dev.cu \
	-lcuda -o build/sm90_dev || exit 1
