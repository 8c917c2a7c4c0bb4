#!/usr/bin/env bash
# cli_test.sh: end-to-end tests of the `opbench` tool. Usage: cli_test.sh OPBENCH
# Runs each case, checks its exit status and output, prints `ok - name` or
# `not ok - name` per case and at the end one line `N passed, M failed`;
# exits 1 if any failed. Shapes are tiny so the whole script takes seconds.
set -u

OB=${1:?usage: cli_test.sh path/to/opbench}
if [ ! -x "$OB" ]; then
  echo "cli_test.sh: $OB is not an executable" >&2
  exit 1
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/sh_util.sh"
need python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OPBENCH_CACHE=${OPBENCH_CACHE:-$tmp/kcache}

passed=0
failed=0
CONV="--shape N=1,C=8,H=10,W=10,K=8,R=3,S=3"
DENSE="--shape M=4,N=32,K=16"


# run ARGS...: runs opbench (in the environment `with` sets); leaves rc,
# $tmp/out and $tmp/err.



# bad NAME PATTERN ARGS...: exit 2, stdout empty, stderr exactly one line
# `opbench: error: ...` that matches PATTERN (the input at fault).

# json_check NAME PYTHON-EXPR ARGS...: exit 0, stdout is one JSON object d
# for which PYTHON-EXPR is true.

# ---- informational commands --------------------------------------------------
good "ops lists conv2d" '^conv2d ' ops
good "ops lists dense" '^dense ' ops
good "ops lists relu" '^relu ' ops
good "--help" 'usage: opbench' --help
good "op --help" '--config-index' op --help
good "bench --help" '--suite' bench --help
good "--version" '^opbench [0-9]+\.[0-9]+' --version

# ---- op ----------------------------------------------------------------------------
good "op dense: error class 0" '^error +0 \(NO_ERROR\)' op dense $DENSE
good "op dense: GFLOPS" '^GFLOPS +[0-9]' op dense $DENSE
json_check "op dense --json parses, error_no 0" \
  'd["error_no"] == 0 and d["gflops"] > 0 and d["median_ms"] > 0 and len(d["costs_ms"]) == 5 and all(k in d for k in ("op","workload","template","config","config_index","error","message","mean_ms","cv","threads","build_s"))' \
  op dense $DENSE --json
# issue 17: --json says how it was timed; every kept repeat lasts the 2 ms floor
json_check "op --json: the protocol used (adaptive number, floor, cache, overhead, flags)" \
  'd["number"] >= 1 and d["repeats_kept"] == 5 and d["repeat"] == 5 + d["extra_repeats"] and d["min_repeat_ms"] == 2 and d["cache"] == "warm" and not d["flush"] and d["timer_overhead_ns"] > 0 and d["noisy"] in (True, False) and d["below_resolution"] in (True, False) and d["max_cv"] == 0.05 and all(c * d["number"] >= 1.999 for c in d["costs_ms"])' \
  op dense $DENSE --json
json_check "op --number 3: fixed, no floor" 'd["number"] == 3 and d["min_repeat_ms"] == 0' \
  op dense $DENSE --number 3 --json
json_check "op --number 2 --min-repeat-ms 2: number grows to the floor" \
  'd["number"] > 2 and d["min_repeat_ms"] == 2 and all(c * d["number"] >= 1.999 for c in d["costs_ms"])' \
  op dense $DENSE --number 2 --min-repeat-ms 2 --repeat 3 --json
json_check "op --flush: cold caches in the record" 'd["cache"] == "cold" and d["flush"]' \
  op dense $DENSE --flush --repeat 3 --json
json_check "op --flush-weights: cold weights, the first input kept warm" 'd["cache"] == "cold-weights" and d["flush_keep_first"]' \
  op dense $DENSE --flush-weights --repeat 3 --json
json_check "op --flush: every input flushed" 'd["flush"] and not d["flush_keep_first"]' op dense $DENSE --flush --repeat 3 --json
good "op --flush-weights says what it flushes" '^flush +every input but the first' op dense $DENSE --flush-weights --repeat 3
bad "tune --fleet --flush-weights: the fleet's workers flush every input" '--flush-weights is measured here' \
  tune --op dense --shape M=4,N=16,K=16 --fleet http://127.0.0.1:1 --device-key k --flush-weights
bad "profile --flush-weights: not a profile flag" "unknown flag '--flush-weights'" profile --op dense --shape M=4,N=16,K=16 --flush-weights
json_check "op --max-cv 0: no stability rule (only preempted repeats retaken)" 'd["extra_repeats"] == d["retaken"] and d["max_cv"] == 0 and not d["noisy"]' \
  op dense $DENSE --max-cv 0 --json
json_check "op --max-cv 2.5%" 'd["max_cv"] == 0.025' op dense $DENSE --max-cv 2.5% --repeat 3 --json
json_check "op: the off-CPU rule's default is 1 %" 'd["max_offcpu"] == 0.01 and d["retaken"] >= 0' op dense $DENSE --repeat 3 --json
json_check "op --max-offcpu 0: no retakes" 'd["max_offcpu"] == 0 and d["retaken"] == 0' \
  op dense $DENSE --max-offcpu 0 --repeat 3 --json
bad "op --max-offcpu 150: out of range" '--max-offcpu: bad value' op dense $DENSE --max-offcpu 150
good "op prints the protocol" '^timing +threads 1, number [0-9]+ \(adaptive\), repeat [0-9]+, min_repeat_ms 2, warm caches, timer overhead' \
  op dense $DENSE
good "op relu 16x4x4 is flagged below the timer resolution" '^resolution median .* below 10x the timer overhead' \
  op relu --shape N=1,C=16,H=4,W=4 --max-cv 0
good "op conv2d --print-source prints C with ob_krt" 'ob_krt' \
  op conv2d $CONV --stride 1 --pad 1 --print-source
good "op conv2d --print-ir prints the loop nest" '^ *(for|parallel) ' \
  op conv2d $CONV --stride 1 --pad 1 --print-ir
good "op conv2d --config-index 0" '^config +#0 ' op conv2d $CONV --config-index 0
json_check "op conv2d stride/pad/dilation pairs" \
  'd["error_no"] == 0 and "/s2,1/p1,0,1,0/d1,2/" in d["workload"]' \
  op conv2d $CONV --stride 2,1 --pad 1,0,1,0 --dilation 1,2 --json
json_check "op conv2d --epilogue bias,relu --threads 2" \
  'd["error_no"] == 0 and d["threads"] == 2 and "bias,relu" in d["workload"]' \
  op conv2d $CONV --pad 1 --epilogue bias,relu --threads 2 --json
good "op relu" '^error +0 ' op relu --shape N=1,C=4,H=5,W=6
# The JSON of a config, fed back through --config, names the same config.
run op conv2d $CONV --config-index 7 --json
cfg=$(python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["config"]))' <"$tmp/out" 2>/dev/null)
json_check "op --config JSON round trip" 'd["config_index"] == 7 and d["error_no"] == 0' \
  op conv2d $CONV --config "$cfg" --json
good "space conv2d" '^space size [0-9]+' space conv2d $CONV --pad 1
good "space dense shows the default" '^default +#[0-9]+' space dense $DENSE

# ---- bench ---------------------------------------------------------------------------
cat >"$tmp/suite.txt" <<'EOF'
# a tiny suite: op shape [stride pad] count
conv2d N=1,C=8,H=10,W=10,K=8,R=3,S=3  1 1 2   # trailing comment

dense  M=4,N=32,K=16                  3
EOF
run bench --suite "$tmp/suite.txt"
if [ "$rc" -eq 0 ] && tail -n 1 "$tmp/out" | grep -Eq '^geomean GFLOPS \(default configs\): [0-9]+\.[0-9]+$' &&
  grep -Eq 'total weighted latency' "$tmp/out" && [ "$(grep -Ec ' (conv2d|dense) ' "$tmp/out")" -eq 2 ]; then
  ok "bench on a suite file"
else
  not_ok "bench on a suite file"
fi
json_check "bench --json" 'len(d["workloads"]) == 2 and d["geomean_gflops"] > 0 and d["failed"] == 0 and d["number"] == 0 and d["min_repeat_ms"] == 2 and all(w["number"] >= 1 and w["cache"] == "warm" and w["timer_overhead_ns"] > 0 and "noisy" in w and "below_resolution" in w for w in d["workloads"])' \
  bench --suite "$tmp/suite.txt" --json
# templates: --template narrows the operators it names templates of; --no-winograd
json_check "bench --template: the listed default, other operators keep theirs" \
  'd["workloads"][0]["template"] == "conv2d_nchw.x86" and d["workloads"][1]["template"] == "dense_pack.x86"' \
  bench --suite "$tmp/suite.txt" --template conv2d_nchw.x86 --json
bad "bench --template: unknown name" "--template: unknown template 'conv2d_fast.x86'" \
  bench --suite "$tmp/suite.txt" --template conv2d_NCHWc.x86,conv2d_fast.x86
bad "bench --template: malformed list" "--template: malformed list" \
  bench --suite "$tmp/suite.txt" --template conv2d_NCHWc.x86,
bad "bench --template Winograd only with --no-winograd" "leave no template for conv2d" \
  bench --suite "$tmp/suite.txt" --template conv2d_winograd.x86 --no-winograd
# --vs onednn: oneDNN direct and Winograd columns, the worst layers, both
# geomeans last (vendor best, then oneDNN direct)
run bench --suite "$tmp/suite.txt" --vs onednn --search random:2
if [ "$rc" -eq 0 ] && tail -n 2 "$tmp/out" | head -n 1 | grep -Eq '^geomean speed ratio opbench/vendor-best: [0-9]+\.[0-9]+' &&
  tail -n 1 "$tmp/out" | grep -Eq '^geomean speed ratio opbench/onednn: [0-9]+\.[0-9]+ \(default: [0-9]+\.[0-9]+\)' &&
  grep -q '^worst layer vs vendor best: ' "$tmp/out" && grep -q 'dnn-wino' "$tmp/out" &&
  grep -q "count the direct convolution's nominal FLOPs" "$tmp/out" &&
  grep -q "random:2 per template (each template's default among them, re-measured beside the best 3 in 3 rounds, each its fastest)" "$tmp/out" &&
  grep -q "^final figures: 9 interleaved rounds per workload" "$tmp/out" && grep -q "^on the rounds' medians instead of their fastest: " "$tmp/out"; then
  ok "bench --vs onednn: Winograd column, worst layers, both geomeans last"
else
  not_ok "bench --vs onednn: Winograd column, worst layers, both geomeans last"
fi
# without --rounds: at least 9 rounds, more (up to 27) for short kernels
json_check "bench --vs onednn --json: oneDNN Winograd where it applies; 9 to 27 rounds each" \
  '"onednn_winograd_error_no" in d["workloads"][0] and "onednn_winograd_error_no" not in d["workloads"][1] and d["geomean_ratio_vendor_best"] > 0 and d["rounds"] == 9 and all(9 <= w["rounds"] <= 27 and len(w["round_ms"]["best"]) == w["rounds"] for w in d["workloads"])' \
  bench --suite "$tmp/suite.txt" --vs onednn --json
# --rounds: each side's final figure is its fastest interleaved round, and
# the best is never slower than the default measured in the same rounds
json_check "bench --vs onednn --rounds 3: each side's fastest of 3 interleaved rounds" \
  'd["rounds"] == 3 and all(w["rounds"] == 3 and len(w["round_ms"]["best"]) == 3 and len(w["round_ms"]["baseline"]) == 3 and abs(min(w["round_ms"]["best"]) - w["best_median_ms"]) < 1e-9 and abs(min(w["round_ms"]["baseline"]) - w["onednn_median_ms"]) < 1e-9 and w["best_median_ms"] <= w["median_ms"] + 1e-9 and isinstance(w["default_kept"], bool) for w in d["workloads"]) and len(d["workloads"][0]["round_ms"].get("baseline_winograd", [])) in (0, 3) and d["geomean_ratio_best_round_medians"] > 0' \
  bench --suite "$tmp/suite.txt" --vs onednn --search random:2 --rounds 3 --json
bad "bench --rounds without --vs" "--rounds 3: the rounds interleave opbench with a baseline; give --vs too" \
  bench --suite "$tmp/suite.txt" --rounds 3
bad "bench --rounds above 64" "--rounds 65: at most 64 for bench" \
  bench --suite "$tmp/suite.txt" --vs onednn --rounds 65
bad "bench --rounds 0" "--rounds" bench --suite "$tmp/suite.txt" --vs onednn --rounds 0
json_check "bench --search --json: every searched template's default re-measured" \
  'all(w["templates_searched"] >= 1 and w["defaults_remeasured"] == w["templates_searched"] for w in d["workloads"])' \
  bench --suite "$tmp/suite.txt" --search random:2 --json
run bench --suite resnet18 --dry-run
if [ "$rc" -eq 0 ] && [ "$(grep -Ec '^ *[0-9]+ conv2d ' "$tmp/out")" -eq 11 ]; then
  ok "built-in suite resnet18 has 11 workloads"
else
  not_ok "built-in suite resnet18 has 11 workloads"
fi
shared="$here/../../shared/data/resnet18_conv.txt"
if [ -f "$shared" ]; then
  cp "$tmp/out" "$tmp/builtin"
  run bench --suite "$shared" --dry-run
  if [ "$rc" -eq 0 ] && cmp -s "$tmp/out" "$tmp/builtin"; then
    ok "built-in resnet18 equals shared/data/resnet18_conv.txt"
  else
    not_ok "built-in resnet18 equals shared/data/resnet18_conv.txt"
  fi
fi

# ---- bad input: exit 2 and one line naming the culprit ------------------------------
bad "unknown operator" "conv3x" op conv3x --shape N=1
bad "unknown command" "frobnicate" frobnicate
bad "unknown flag" "--frob" op dense $DENSE --frob
bad "unknown shape name" "'Q'" op conv2d --shape N=1,Q=3
bad "malformed shape" "N=1,C=" op conv2d --shape N=1,C=
bad "missing operator" "operator" op --shape M=1
bad "unknown knob in --config" "bogus" op conv2d $CONV --config '{"entity": [["bogus", "sp", [-1, 2]]]}'
bad "config index outside the space" "--config-index 1000000000000" op conv2d $CONV --config-index 1000000000000
bad "malformed --config JSON" "--config" op conv2d $CONV --config '{"entity": [['
bad "--config and --config-index together" "--config-index" op conv2d $CONV --config 0 --config-index 0
bad "--threads 0" "--threads" op dense $DENSE --threads 0
bad "non-numeric --repeat" "--repeat.*abc" op dense $DENSE --repeat abc
bad "non-numeric --max-cv" "--max-cv.*abc" op dense $DENSE --max-cv abc
bad "negative --max-cv" "--max-cv.*-1" op dense $DENSE --max-cv -1
bad "--number 0" "--number" op dense $DENSE --number 0
bad "non-numeric --stability-budget" "--stability-budget" op dense $DENSE --stability-budget soon
bad "bad --pad form" "--pad '1,2,3'" op conv2d $CONV --pad 1,2,3
bad "--stride on dense" "stride" op dense $DENSE --stride 2
bad "unknown template" "nope" op dense $DENSE --template nope
bad "unknown epilogue" "sigmoidx" op dense $DENSE --epilogue sigmoidx
bad "missing compiler" "/nonexistent/cc" op dense $DENSE --cc /nonexistent/cc
bad "bench: missing compiler" "/nonexistent/cc" bench --suite "$tmp/suite.txt" --cc /nonexistent/cc

# A failing compiler is a measured error: class 2 (COMPILE_HOST), exit 2.
run op dense $DENSE --cc /bin/false
if [ "$rc" -eq 2 ] && grep -q '^opbench: error: .*error 2 (COMPILE_HOST)' "$tmp/err" &&
  grep -Eq '^error +2 \(COMPILE_HOST\)' "$tmp/out"; then
  ok "--cc /bin/false: compile error class 2"
else
  not_ok "--cc /bin/false: compile error class 2"
fi
run op dense $DENSE --cc /bin/false --json
if [ "$rc" -eq 2 ] && python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["error_no"] == 2 else 1)' <"$tmp/out" 2>/dev/null; then
  ok "--cc /bin/false --json: error_no 2"
else
  not_ok "--cc /bin/false --json: error_no 2"
fi

# A kernel that runs past its time limit is error class 7 (RUN_TIMEOUT), exit 2.
run op conv2d --shape N=1,C=64,H=28,W=28,K=64,R=3,S=3 --pad 1 --timeout 0.001
if [ "$rc" -eq 2 ] && grep -q '^opbench: error: .*error 7 (RUN_TIMEOUT)' "$tmp/err"; then
  ok "--timeout 0.001: run timeout class 7"
else
  not_ok "--timeout 0.001: run timeout class 7"
fi

# ---- targets ---------------------------------------------------------------------------
NEON="c -isa=neon -triple=aarch64-linux-gnu"
json_check "op --target c -isa=avx2: verified, target in --json" \
  'd["error_no"] == 0 and d["target"] == "c -isa=avx2"' op conv2d $CONV --pad 1 --target "c -isa=avx2" --json
json_check "op: the default target in --json" 'd["target"] == "llvm -mcpu=native"' op dense $DENSE --json
with OPBENCH_TARGET="c -isa=scalar" -- json_check "\$OPBENCH_TARGET picks the default" \
  'd["target"] == "c -isa=scalar" and d["error_no"] == 0' op dense $DENSE --json
good "op --print-source --target c -isa=avx2: 8-lane vectors" 'vector_size\(32\)' \
  op conv2d $CONV --pad 1 --target "c -isa=avx2" --print-source
good "space --target c -isa=avx2: the target's facts" \
  '^target +c -isa=avx2 \(avx2: 8 float lanes, 16 vector registers, 14 for accumulators\)' \
  space conv2d $CONV --pad 1 --target "c -isa=avx2"
with OPBENCH_AARCH64_CC=/nonexistent/gcc OPBENCH_AARCH64_QEMU=/nonexistent/qemu -- \
  good "space of a cross target needs no tools" '^target +c -isa=neon' space conv2d $CONV --target "$NEON"
json_check "bench --target in --json" 'd["target"] == "c -isa=avx2" and d["failed"] == 0' \
  bench --suite "$tmp/suite.txt" --target "c -isa=avx2" --json
bad "unknown ISA" "--target: target 'c -isa=sse9': unknown ISA 'sse9'" op dense $DENSE --target "c -isa=sse9"
bad "unknown triple" "unknown triple 'riscv64-linux-gnu'" op dense $DENSE --target "c -isa=neon -triple=riscv64-linux-gnu"
bad "unknown target kind" "unknown target kind 'tvm'" bench --suite "$tmp/suite.txt" --target tvm
bad "unknown target option" "unknown option '-mattr'" tune --op dense $DENSE --target "llvm -mattr=+avx2"
bad "malformed cuda arch" "target 'cuda -arch=80': malformed -arch=80" op dense $DENSE --target "cuda -arch=80"
bad "unknown opencl option" "unknown option '-arch' for opencl" space dense $DENSE --target "opencl -arch=sm_80"
bad "empty --target" "--target: empty target" op dense $DENSE --target ""
bad "neon without a triple" "-triple=aarch64-linux-gnu" op dense $DENSE --target "c -isa=neon"
with OPBENCH_TARGET="c -isa=nope" -- \
  bad "bad \$OPBENCH_TARGET" '\$OPBENCH_TARGET: target .c -isa=nope.: unknown ISA' op dense $DENSE
# what is missing to build or run a cross target's kernels, named with the target
with PATH=/nonexistent -- bad "cross compiler missing (PATH)" \
  "target '$NEON': the cross compiler 'aarch64-linux-gnu-gcc' is not installed" op conv2d $CONV --target "$NEON"
with OPBENCH_AARCH64_CC=/nonexistent/aarch64-gcc -- bad "cross compiler missing (override)" \
  "target '$NEON': the cross compiler '/nonexistent/aarch64-gcc' is not installed" \
  bench --suite "$tmp/suite.txt" --target "$NEON"
with OPBENCH_AARCH64_SYSROOT=/nonexistent/sysroot -- bad "cross C library missing" \
  "target '$NEON': the aarch64 C library headers are not installed" op conv2d $CONV --target "$NEON"
if command -v aarch64-linux-gnu-gcc >/dev/null && [ -f /usr/aarch64-linux-gnu/include/stdlib.h ]; then
  with OPBENCH_AARCH64_QEMU=/nonexistent/qemu-aarch64 -- bad "emulator missing" \
    "target '$NEON': its kernels need the emulator '/nonexistent/qemu-aarch64', which is not installed" \
    op conv2d $CONV --target "$NEON"
  with OPBENCH_AARCH64_QEMU=/nonexistent/qemu-aarch64 -- bad "tune: emulator missing" "qemu-user" \
    tune --op conv2d $CONV --target "$NEON" --db "$tmp/t.db"
  bad "--vs onednn with a target oneDNN cannot run" "onednn: target '$NEON' does not run natively" \
    bench --suite "$tmp/suite.txt" --target "$NEON" --vs onednn
else
  echo "skip - emulator missing, --vs onednn with neon (no cross compiler: scripts/install-deps.sh)"
fi
# NEON kernels: cross-compiled, run under qemu-aarch64 through the emulator
# runner's harness, verified against the reference; times marked emulated
if command -v aarch64-linux-gnu-gcc >/dev/null && [ -f /usr/aarch64-linux-gnu/include/stdlib.h ] &&
  command -v qemu-aarch64 >/dev/null && [ -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ]; then
  run op conv2d $CONV --pad 1 --target "$NEON"
  if [ "$rc" -eq 0 ] && grep -Eq '^error +0 \(NO_ERROR\)' "$tmp/out" &&
    grep -Eq '^emulated +timed under the target.s emulator: .* not performance figures' "$tmp/out"; then
    ok "op --target neon: built, run under the emulator, verified, said to be emulated"
  else
    not_ok "op --target neon: built, run under the emulator, verified, said to be emulated"
  fi
  json_check "op --target neon --json: verified, emulated" \
    "d['error_no'] == 0 and d['emulated'] is True and d['target'] == '$NEON' and d['number'] >= 1" \
    op dense $DENSE --target "$NEON" --json
  json_check "op --target neon --threads 2: parallel loops under the emulator" \
    "d['error_no'] == 0 and d['emulated'] is True and d['threads'] == 2" \
    op conv2d $CONV --pad 1 --target "$NEON" --threads 2 --json
  good "tune --target neon: a few trials, under the emulator" '^emulated +timed under' \
    tune --op conv2d $CONV --pad 1 --target "$NEON" --tuner random --trials 3 --db "$tmp/neon.db"
  json_check "db stats: the tuned trials are recorded as emulated" \
    "d['total']['records'] >= 3 and d['total']['emulated'] == d['total']['ok'] and d['total']['ok'] >= 3" \
    db stats --db "$tmp/neon.db" --json
  json_check "db top: emulated records, keyed by the neon target" \
    "all(r['emulated'] is True and r['target'] == '$NEON' for r in d) and len(d) >= 1" \
    db top --op conv2d $CONV --pad 1 --target "$NEON" --db "$tmp/neon.db" --json
  good "bench --suite --target neon: flag emu" "^emulated: 2 workload\(s\) ran under the target's emulator" \
    bench --suite "$tmp/suite.txt" --target "$NEON"
  # a harness of this cache still running (its command line names the cache)
  harness_left() {
    local f
    for f in /proc/[0-9]*/cmdline; do
      tr '\0' ' ' <"$f" 2>/dev/null | grep -Eq "opbench_harness__[0-9a-f]+ $OPBENCH_CACHE/" && return 0
    done
    return 1
  }
  run op conv2d --shape N=1,C=32,H=28,W=28,K=32,R=3,S=3 --pad 1 --target "$NEON" --timeout 0.2
  if [ "$rc" -eq 2 ] && grep -q '^opbench: error: .*error 7 (RUN_TIMEOUT).*under the emulator' "$tmp/err" &&
    ! harness_left; then
    ok "run timeout under the emulator: error 7, the emulated process killed"
  else
    not_ok "run timeout under the emulator: error 7, the emulated process killed"
  fi
else
  echo "skip - neon kernels under qemu-aarch64 (cross compiler, C library or qemu-user missing: scripts/install-deps.sh)"
fi
# a native target this CPU cannot run: built, never run
if ! grep -qw amx_tile /proc/cpuinfo; then
  bad "a CPU this host is not" "target 'llvm -mcpu=sapphirerapids': this CPU lacks .*amx_tile" \
    op dense $DENSE --target "llvm -mcpu=sapphirerapids"
elif ! grep -qw avx512f /proc/cpuinfo; then
  bad "a CPU this host is not" "target 'c -isa=avx512': this CPU lacks avx512f" op dense $DENSE --target "c -isa=avx512"
else
  echo "skip - a CPU this host is not (this CPU has AMX and AVX-512)"
fi

printf '# header\n\ndense M=4,N=32,K=16 1\nconv2d N=1,C=8,H=,W=10,K=8,R=3,S=3 1 1 1\n' >"$tmp/bad1.txt"
bad "suite: malformed shape at FILE:LINE" "bad1.txt:4: " bench --suite "$tmp/bad1.txt"
printf 'dense M=4,N=32,K=16 1\nconv3x N=1 1\n' >"$tmp/bad2.txt"
bad "suite: unknown operator at FILE:LINE" "bad2.txt:2: .*conv3x" bench --suite "$tmp/bad2.txt"
printf 'conv2d N=1,C=8,H=10,W=10,K=8,R=3,S=3 1 1\n' >"$tmp/bad3.txt"
bad "suite: wrong number of columns at FILE:LINE" "bad3.txt:1: .*columns" bench --suite "$tmp/bad3.txt"
printf 'dense M=4,N=32,K=16 many\n' >"$tmp/bad4.txt"
bad "suite: bad count at FILE:LINE" "bad4.txt:1: .*many" bench --suite "$tmp/bad4.txt"
bad "suite: missing file" "no-such-suite" bench --suite "$tmp/no-such-suite.txt"

# ---- out of memory: a status all the way up, never an abort -------------------
# OPBENCH_TEST_ALLOC_LIMIT=N fails every allocation of the te, schedule,
# lower and codegen arenas and strings after the Nth (tests/test_nomem.c
# sweeps N in the library); these land in each of the four.
for lim in 0 40 400 2500; do
  OPBENCH_TEST_ALLOC_LIMIT=$lim bad "out of memory after $lim allocations" "out of memory" \
    op conv2d $CONV --pad 1 --print-source
done

finish
