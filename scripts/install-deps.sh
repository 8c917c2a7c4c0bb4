#!/usr/bin/env bash
# install-deps.sh: installs the Debian packages that opbench needs and that
# are missing; packages already installed are left alone. Uses sudo only when
# not run as root. python3 (the CLI test's JSON check) and sqlite3 (the CLI
# database tests) are for the tests only; clang and libclang-rt-14-dev
# (libFuzzer and clang's sanitizer runtimes) only for the fuzz targets (make
# fuzz; make test replays their corpora in its gcc builds). The aarch64 cross compiler, its C
# library and qemu-user build and run the kernels of the target
# `c -isa=neon -triple=aarch64-linux-gnu` (under emulation); gnuplot-nox draws
# schedule timelines (opbench schedule --timeline) and the plots of opbench
# report; chromium (headless) is for the report test only (the page in a real
# browser); binutils (objdump) checks the FMA peak kernel of opbench profile.
# libhiredis-dev and libpq-dev are the fleet's broker client and the shared
# record store's; redis-server and postgresql are the servers `make test`
# starts for the tests of its own (scripts/test-servers.sh) and a fleet
# needs; stunnel4 carries the broker's connections over TLS (README: "The
# device fleet"); openssl (the command) signs jobs by hand in the fleet test
# (forged, altered and replayed jobs). The OpenCL ICD loader
# (ocl-icd-opencl-dev), its headers (opencl-c-headers) and PoCL
# (pocl-opencl-icd: OpenCL on the CPU) run the `opencl` target's kernels;
# clinfo lists the platforms. The CUDA toolkit (NVRTC, cuDNN, cuBLAS) is not
# a Debian package here: opbench loads it with dlopen from
# $OPBENCH_CUDA_HOME or /usr/local/cuda where present.
set -euo pipefail

PACKAGES="build-essential cmake pkg-config libcjson-dev libhwloc-dev libsqlite3-dev libdnnl-dev libxgboost-dev libprotobuf-c-dev protobuf-c-compiler libonnx-dev libcurl4-openssl-dev libssl-dev python3 sqlite3 clang libclang-rt-14-dev gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user gnuplot-nox chromium binutils libhiredis-dev libpq-dev redis-server postgresql stunnel4 openssl ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd clinfo"

missing=()
for p in $PACKAGES; do
  if dpkg -s "$p" >/dev/null 2>&1; then
    echo "install-deps: $p is installed"
  else
    echo "install-deps: $p is missing"
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: nothing to install"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "install-deps: need root or sudo to install: ${missing[*]}" >&2
    exit 1
  fi
  SUDO="sudo"
fi
echo "install-deps: apt-get update"
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update
echo "install-deps: apt-get install -y --no-install-recommends ${missing[*]}"
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
