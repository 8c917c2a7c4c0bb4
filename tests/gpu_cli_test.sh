#!/usr/bin/env bash
# gpu_cli_test.sh: the GPU targets through the tool. Usage: gpu_cli_test.sh OPBENCH
#  - opencl (PoCL here): op runs, checks and times a conv2d and says the
#    timings are CPU timings through PoCL; tune tunes a conv2d on it; bench
#    --vs onednn compares it with oneDNN on the same CPU, and the GPU benchmark
#    (bench/gpu_resnet18.sh) runs on a small suite and says the cuDNN bar is
#    unmeasured;
#  - cuda: --build-only compiles through NVRTC and reports the launch; a
#    config over the device's launch limits is error 1, named; asked to
#    measure without a GPU, one error line suggesting --build-only;
#  - bad input: a missing OpenCL platform (an empty vendors folder), a
#    device that is not there, a CPU template for a GPU target, --vs cudnn
#    without a GPU: one `opbench: error:` line, exit 2.
# Parts that need what this machine lacks (an OpenCL platform, NVRTC, or a
# GPU for the cuda cases that run) are skipped when all of them are; each
# group checks what it can.
set -u

OB=${1:?usage: gpu_cli_test.sh path/to/opbench}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/sh_util.sh"
need python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OPBENCH_CACHE=${OPBENCH_CACHE:-$tmp/kcache}

passed=0
failed=0
skipped=0
CONV="--shape N=1,C=8,H=9,W=9,K=8,R=3,S=3 --pad 1"
BIG="--shape N=1,C=64,H=56,W=56,K=64,R=3,S=3 --pad 1"

skip() { skipped=$((skipped + 1)); echo "skip - $1"; }

# ---- what this machine has ----------------------------------------------------------
have_ocl=0
"$OB" op conv2d $CONV --target opencl --build-only >/dev/null 2>&1 && have_ocl=1
have_nvrtc=0
"$OB" op conv2d $CONV --target "cuda -arch=sm_80" --build-only >/dev/null 2>&1 && have_nvrtc=1
have_gpu=0
"$OB" op dense --shape M=1,N=8,K=8 --target cuda --repeat 1 >/dev/null 2>&1 && have_gpu=1
echo "# OpenCL platform: $have_ocl, NVRTC: $have_nvrtc, CUDA GPU: $have_gpu"

# ---- opencl ----------------------------------------------------------------------------
if [ "$have_ocl" = 1 ]; then
  good "op on opencl runs and checks" '^error +0 \(NO_ERROR\)' op conv2d $CONV --target opencl --repeat 3
  good "op on opencl names the launch" '^launch +grid [0-9]+x[0-9]+x[0-9]+, block' op conv2d $CONV --target opencl --repeat 3
  pocl=0
  grep -q "Portable Computing Language" "$tmp/out" && pocl=1
  if [ "$pocl" = 1 ]; then
    good "PoCL timings are labelled CPU timings" '^device .*CPU timings through PoCL' op conv2d $CONV --target opencl --repeat 3
    json_check "--json says cpu_timings" 'd["cpu_timings"] is True and "PoCL" in d["timing_note"] and d["error_no"] == 0' \
      op dense --shape M=1,N=16,K=32 --target opencl --repeat 3 --json
  fi
  good "dense_large_batch on opencl" '^error +0' op dense --shape M=8,N=16,K=16 --target opencl --template dense_large_batch.gpu --repeat 2
  good "depthwise on opencl" '^error +0' op depthwise_conv2d --shape N=1,C=8,H=8,W=8,R=3,S=3 --pad 1 --target opencl --repeat 2
  good "tune a conv2d on opencl" '^trials +4 of 4 \(resumed 0, measured 4' \
    tune --op conv2d $CONV --target opencl --tuner random --trials 4 --batch 2 --db "$tmp/t.db" --repeat 3
  if grep -q "Portable Computing Language" "$tmp/out"; then
    if grep -Eq '^device .*CPU timings through PoCL' "$tmp/out"; then ok "tune labels PoCL timings"; else not_ok "tune labels PoCL timings"; fi
  fi
  good "tune resumes on opencl" 'resumed 4' tune --op conv2d $CONV --target opencl --tuner random --trials 4 --db "$tmp/t.db" --repeat 3
  good "db best of the opencl target" 'conv2d_nchw.cuda' db best --op conv2d $CONV --target opencl --db "$tmp/t.db"
  printf 'conv2d N=1,C=8,H=9,W=9,K=8,R=3,S=3 1 1 2\ndense M=1,N=16,K=32 1\n' >"$tmp/small.txt"
  if [ "$pocl" = 1 ]; then
    json_check "bench --vs onednn beside PoCL" \
      'd["cpu_timings"] and d["failed"] == 0 and d["geomean_ratio_best"] > 0 and all(w["onednn_error_no"] == 0 and w["best_gflops"] > 0 for w in d["workloads"])' \
      bench --suite "$tmp/small.txt" --target opencl --vs onednn --search random:2 --repeat 2 --json
    bad "--vs onednn with opencl and --cores" "--cores cannot pin the OpenCL device's threads" \
      bench --suite "$tmp/small.txt" --target opencl --vs onednn --cores 0
    # the GPU benchmark script itself, on a two-line suite: table, ratio line, the
    # cuDNN bar said unmeasured, exit 0; a bad --bar is a usage error
    args=(bench/gpu_resnet18.sh --target opencl --suite small.txt --search random:2 --repeat 2)
    bash "$here/../bench/gpu_resnet18.sh" --opbench "$OB" --target opencl --suite "$tmp/small.txt" --search random:2 --repeat 2 \
      >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ "$rc" -eq 0 ] && grep -q '^geomean speed ratio opbench/onednn: ' "$tmp/out" &&
      grep -q '^bar (geomean >= 0.8x cuDNN at batch 1): unmeasured' "$tmp/out" &&
      tail -1 "$tmp/out" | grep -Eq '^geomean speed ratio opbench-opencl/onednn on the same CPU: [0-9.]+ '; then
      ok "bench/gpu_resnet18.sh on PoCL: table, ratio, bar unmeasured"
    else
      not_ok "bench/gpu_resnet18.sh on PoCL: table, ratio, bar unmeasured"
    fi
    args=(bench/gpu_resnet18.sh --bar x)
    bash "$here/../bench/gpu_resnet18.sh" --opbench "$OB" --bar x >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ "$rc" -eq 2 ] && grep -q "^gpu_resnet18.sh: error: --bar 'x' is not a positive ratio" "$tmp/err"; then
      ok "bench/gpu_resnet18.sh refuses a bad --bar"
    else
      not_ok "bench/gpu_resnet18.sh refuses a bad --bar"
    fi
  fi
  bad "CPU template for a GPU target" "template 'conv2d_nchw.x86' of operator 'conv2d' is for CPU targets, not for target 'opencl'" \
    op conv2d $CONV --target opencl --template conv2d_nchw.x86
  bad "GPU template for a CPU target" "is for GPU targets" op conv2d $CONV --template conv2d_nchw.cuda
  bad "opencl device that is not there" "target 'opencl -device=9': no device 9" op conv2d $CONV --target "opencl -device=9"
else
  skip "opencl: no OpenCL platform here"
fi
mkdir -p "$tmp/novendors"
if { ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null | grep -q 'libOpenCL\.so\.1 '; then
  # an empty vendors folder: the ICD loader is there, no platform behind it
  with OCL_ICD_VENDORS="$tmp/novendors" -- bad "no OpenCL platform" "target 'opencl': no OpenCL platform is installed .*novendors" \
    op conv2d $CONV --target opencl
  with OCL_ICD_VENDORS="$tmp/novendors" -- bad "no OpenCL platform (tune)" "no OpenCL platform" \
    tune --op conv2d $CONV --target opencl --trials 2 --db "$tmp/t2.db"
else
  bad "no OpenCL ICD loader" "the OpenCL ICD loader \(libOpenCL.so.1\) is not installed" op conv2d $CONV --target opencl
fi

# ---- cuda ----------------------------------------------------------------------------------
if [ "$have_nvrtc" = 1 ]; then
  good "cuda --build-only compiles through NVRTC" '^artifact .*\.ptx' op conv2d $BIG --target "cuda -arch=sm_80" --build-only
  good "cuda --build-only reports the launch" '^launch +grid 7x14x2, block 8x4x8 \(256 threads\)' \
    op conv2d $BIG --target "cuda -arch=sm_80" --build-only
  json_check "cuda --build-only --json" 'd["build_only"] and d["error_no"] == 0 and d["launch"]["block"] == [8, 4, 8] and d["artifact"].endswith(".ptx")' \
    op conv2d $BIG --target "cuda -arch=sm_80" --build-only --json
  OVER='[["tile_f","sp",[-1,1,64,1]],["tile_y","sp",[-1,1,28,2]],["tile_x","sp",[-1,1,1,56]],["tile_rc","sp",[-1,8]],["tile_ry","sp",[-1,3]],["tile_rx","sp",[-1,3]],["auto_unroll_max_step","ot",512],["unroll_explicit","ot",1]]'
  run op conv2d $BIG --target "cuda -arch=sm_80" --build-only --config "$OVER"
  if [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -Eq '^error +1 \(INSTANTIATION_ERROR\)' "$tmp/out" &&
    grep -q "error 1 (INSTANTIATION_ERROR): .*launch over the device's limits: 1792 threads per block (1 x 28 x 64) > 1024, the most cuda -arch=sm_80 allows" "$tmp/err"; then
    ok "a launch over the limits is error 1, named"
  else
    not_ok "a launch over the limits is error 1, named"
  fi
  printf 'conv2d N=1,C=64,H=56,W=56,K=64,R=3,S=3 1 1 1\ndense M=1,N=1000,K=512 1\nbatch_matmul B=2,M=16,N=16,K=16 1\n' >"$tmp/suite.txt"
  good "bench --build-only on cuda" '^3 of 3 built' bench --suite "$tmp/suite.txt" --target "cuda -arch=sm_80" --build-only
  json_check "bench --build-only --json" 'd["build_only"] and d["failed"] == 0 and len(d["workloads"]) == 3' \
    bench --suite "$tmp/suite.txt" --target "cuda -arch=sm_80" --build-only --json
  good "cuda -arch=sm_90 builds" '^artifact' op dense --shape M=1,N=64,K=64 --target "cuda -arch=sm_90" --build-only
else
  skip "cuda builds: NVRTC is not installed"
fi
bad "malformed cuda arch" "target 'cuda -arch=80': malformed -arch=80" op conv2d $CONV --target "cuda -arch=80"
if [ "$have_gpu" = 0 ]; then
  bad "cuda without a GPU asked to measure" "target 'cuda -arch=sm_[0-9]+': no GPU to run its kernels on .*--build-only" \
    op conv2d $CONV --target cuda
  bad "cuda without a GPU (bench)" "no GPU to run its kernels on .*--build-only" bench --suite resnet18 --target cuda
  bad "cuda without a GPU (tune)" "no GPU to run its kernels on" tune --op conv2d $CONV --target cuda --trials 2 --db "$tmp/t3.db"
  bad "--vs cudnn without a GPU" "no GPU to run its kernels on" bench --suite resnet18 --target cuda --vs cudnn
else
  good "op on cuda runs and checks" '^error +0 \(NO_ERROR\)' op conv2d $CONV --target cuda --repeat 3
  skip "no-GPU messages: this machine has a GPU"
fi
bad "--vs cudnn needs a cuda target" "--vs cudnn.*cuda target" bench --suite resnet18 --vs cudnn

echo "$skipped skipped"
if [ "$have_ocl" = 0 ] && [ "$have_nvrtc" = 0 ]; then
  echo "SKIP $(basename "$0"): neither an OpenCL platform nor NVRTC here"
  [ "$failed" -eq 0 ] && exit 77
fi
finish
