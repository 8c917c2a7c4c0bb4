#!/usr/bin/env bash
# gpu_resnet18.sh: the GPU benchmark of issue 15. It runs
#   opbench bench --suite ResNet-18 --target cuda --vs cudnn --search random:N
# (ResNet-18's 11 distinct conv2d workloads at batch 1, each searched over its
# GPU templates, cuDNN measured side by side in the same run), prints
# opbench's table, and holds it to the bar: the geomean speed ratio
# opbench/cuDNN (cuDNN time / opbench time, best configs) at least 0.8.
#
# Where there is no CUDA GPU but an OpenCL platform (PoCL, on the CPU), it
# runs the same suite on `--target opencl` against oneDNN on the CPU cores
# PoCL runs on (the only baseline side by side on that hardware) and says
# that the cuDNN bar is unmeasured: a CPU through PoCL tells nothing about it.
#
# Usage: bench/gpu_resnet18.sh [--opbench PATH] [--target TEXT] [--search random:N|exhaustive]
#                              [--suite FILE] [--repeat N] [--quick] [--bar R]
#   --opbench  the tool (default: build/opbench, built with `make build` when missing)
#   --target   cuda, "cuda -arch=sm_XY -device=N", opencl, ... (default: cuda when a CUDA
#              GPU runs a kernel here, else opencl when an OpenCL platform builds one)
#   --search   search budget per template (default random:64 on cuda, random:8 on opencl)
#   --quick    3 workloads (the first three of the suite) and random:4 (a smoke run)
#   --bar R    the ratio the cuda run must reach (default 0.8)
# Exit: 0 the run completed (and on cuda met the bar), 1 the bar was missed or a
# workload failed, 2 bad usage, 77 neither a CUDA GPU nor an OpenCL platform here.
# The device tool runs it from the repository root: bash bench/gpu_resnet18.sh
set -u

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OB=""
target=""
search=""
suite="$root/../shared/data/resnet18_conv.txt"
repeat=""
quick=0
bar=0.8

usage() {
  sed -n '/^# Usage:/,/^# Exit:/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case "$1" in
    --opbench) OB=${2:?--opbench needs a path}; shift 2 ;;
    --target) target=${2:?--target needs a value}; shift 2 ;;
    --search) search=${2:?--search needs a value}; shift 2 ;;
    --suite) suite=${2:?--suite needs a file}; shift 2 ;;
    --repeat) repeat=${2:?--repeat needs a number}; shift 2 ;;
    --quick) quick=1; shift ;;
    --bar) bar=${2:?--bar needs a ratio}; shift 2 ;;
    -h | --help) usage ;;
    *) echo "gpu_resnet18.sh: error: unknown argument '$1'" >&2; usage ;;
  esac
done
if ! awk -v b="$bar" 'BEGIN { exit !(b + 0 > 0) }'; then
  echo "gpu_resnet18.sh: error: --bar '$bar' is not a positive ratio" >&2
  exit 2
fi

# The suite: ResNet-18's file from the shared data, else the built-in copy.
if [ ! -e "$suite" ]; then
  if [ "$suite" = "$root/../shared/data/resnet18_conv.txt" ]; then suite=resnet18
  else echo "gpu_resnet18.sh: error: --suite '$suite': no such file" >&2; exit 2; fi
fi

if [ -z "$OB" ]; then
  OB="$root/build/opbench"
  if [ ! -x "$OB" ]; then
    echo "# building opbench (make build) ..."
    make -C "$root" build >/dev/null || { echo "gpu_resnet18.sh: error: make build failed" >&2; exit 1; }
  fi
fi
[ -x "$OB" ] || { echo "gpu_resnet18.sh: error: --opbench '$OB' is not an executable" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# What runs here: a CUDA GPU (a tiny dense kernel runs and checks), else an
# OpenCL platform (a conv2d builds for it).
if [ -z "$target" ]; then
  if "$OB" op dense --shape M=1,N=8,K=8 --target cuda --repeat 1 >/dev/null 2>"$tmp/cuda.err"; then
    target=cuda
  elif "$OB" op conv2d --shape N=1,C=8,H=9,W=9,K=8,R=3,S=3 --pad 1 --target opencl --build-only \
    >/dev/null 2>"$tmp/ocl.err"; then
    target=opencl
  else
    echo "SKIP gpu_resnet18.sh: no CUDA GPU ($(cat "$tmp/cuda.err")) and no OpenCL platform ($(cat "$tmp/ocl.err"))"
    echo "bar (geomean >= ${bar}x cuDNN at batch 1): unmeasured"
    exit 77
  fi
fi
[ "$quick" = 0 ] || [ -n "$search" ] || search=random:4
case "$target" in
  cuda*) vs=cudnn; cuda=1; [ -n "$search" ] || search=random:64 ;;
  opencl*) vs=onednn; cuda=0; [ -n "$search" ] || search=random:8 ;;
  *) echo "gpu_resnet18.sh: error: --target '$target' is not a GPU target (cuda or opencl)" >&2; exit 2 ;;
esac

if [ "$quick" = 1 ]; then
  if [ "$suite" = resnet18 ]; then
    "$OB" bench --suite resnet18 --dry-run >"$tmp/dry" 2>&1 || { cat "$tmp/dry" >&2; exit 1; }
    awk '$1 ~ /^[0-9]+$/ && n < 3 { print $2, $3, $4, $5, $6; n++ }' "$tmp/dry" >"$tmp/suite.txt"
  else
    grep -Ev '^[[:space:]]*(#|$)' "$suite" | head -3 >"$tmp/suite.txt"
  fi
  suite="$tmp/suite.txt"
fi

args=(bench --suite "$suite" --target "$target" --vs "$vs" --search "$search" --threads 1)
[ -z "$repeat" ] || args+=(--repeat "$repeat")
echo "# opbench ${args[*]}"
"$OB" "${args[@]}" 2>"$tmp/err" | tee "$tmp/out"
rc=${PIPESTATUS[0]}
cat "$tmp/err" >&2

line=$(grep -E "^geomean speed ratio opbench/$vs: " "$tmp/out" | tail -1)
best=$(printf '%s\n' "$line" | awk '{ print $5 }')
dflt=$(printf '%s\n' "$line" | awk '{ gsub(/\)/, "", $7); print $7 }')
device=$(sed -n 's/^device: //p' "$tmp/out" | head -1)

echo "# ---- summary"
if [ "$rc" -ne 0 ] || [ -z "$best" ]; then
  echo "run failed (opbench exit $rc): see the table and the error above"
  echo "bar (geomean >= ${bar}x cuDNN at batch 1): unmeasured"
  exit 1
fi
if [ "$cuda" = 1 ]; then
  if awk -v r="$best" -v b="$bar" 'BEGIN { exit !(r + 0 >= b + 0) }'; then verdict=met; else verdict=missed; fi
  echo "target $target, search $search per template, cuDNN/cuBLAS side by side in the same run"
  echo "geomean speed ratio opbench/cudnn: $best (default configs: $dflt); bar >= $bar: $verdict"
  [ "$verdict" = met ] || exit 1
  exit 0
fi
echo "target $target on ${device:-its OpenCL device}, search $search per template"
echo "bar (geomean >= ${bar}x cuDNN at batch 1): unmeasured: this run's target is $target, not cuda; these are not cuDNN comparisons"
echo "geomean speed ratio opbench-opencl/onednn on the same CPU: $best (default configs: $dflt)"
exit 0
