#!/usr/bin/env bash
# fuzz.sh: builds the libFuzzer targets (fuzz/, clang with
# -fsanitize=fuzzer,address,undefined,float-cast-overflow) in a build folder of their own and
# runs each for a bounded time from its seed corpus fuzz/corpus/<target>/.
#
#   scripts/fuzz.sh            what `make fuzz` runs: FUZZ_SECONDS (default
#                              300) per target; inputs that reach new code
#                              are kept in BUILD/corpus/<target>/ for the
#                              next run, crashes saved as BUILD/crashes/<target>-*
#   scripts/fuzz.sh --quick    a short pass: FUZZ_SECONDS (default 8) per
#                              target, nothing kept (make test replays the
#                              corpora instead: fuzz/replay.c)
#   scripts/fuzz.sh --merge    after a run: minimizes BUILD/corpus/<target>/
#                              into the committed fuzz/corpus/<target>/
#   --build-dir DIR            build folder (default build-fuzz)
#   FUZZ_TARGETS="shape suite" only these targets (default: all of fuzz/CMakeLists.txt)
#
# Prints one line per target (executions, executions/s, corpus files, new
# inputs, crashes) and the totals. Exits 1 when a target crashed (the input
# is in the crashes folder: add it to fuzz/corpus/<target>/ and a test),
# 77 when clang is not installed (CI installs it: scripts/install-deps.sh).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mode=long
bdir=$root/build-fuzz
while [ $# -gt 0 ]; do
  case $1 in
  --quick) mode=quick ;;
  --merge) mode=merge ;;
  --build-dir) bdir=$2; shift ;;
  *) echo "fuzz.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
if ! command -v clang >/dev/null 2>&1; then
  echo "fuzz.sh: clang is not installed; skipping the fuzz targets (scripts/install-deps.sh installs it)"
  exit 77
fi
secs=${FUZZ_SECONDS:-$([ $mode = quick ] && echo 8 || echo 300)}

echo "fuzz.sh: building the fuzz targets in $bdir"
mkdir -p "$bdir"
if ! { cmake -S "$root" -B "$bdir" -DCMAKE_C_COMPILER=clang -DOB_FUZZ=ON \
         -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
       cmake --build "$bdir" -j"${JOBS:-2}" --target ob_fuzz; } >"$bdir/build.log" 2>&1; then
  tail -40 "$bdir/build.log"
  echo "fuzz.sh: the fuzz build failed (log: $bdir/build.log)" >&2
  exit 1
fi
targets=${FUZZ_TARGETS:-$(cat "$bdir/fuzz_targets.txt" | tr ';' ' ')}

if [ $mode = merge ]; then
  for t in $targets; do
    [ -d "$bdir/corpus/$t" ] || continue
    before=$(ls "$root/fuzz/corpus/$t" | wc -l)
    "$bdir/fuzz_$t" -merge=1 -close_fd_mask=3 "$root/fuzz/corpus/$t" "$bdir/corpus/$t" \
      >"$bdir/merge-$t.log" 2>&1
    echo "$t: committed corpus $before -> $(ls "$root/fuzz/corpus/$t" | wc -l) files"
  done
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$bdir/crashes"
printf '%-12s %12s %10s %8s %6s %8s\n' target executions exec/s corpus new crashes
total=0
crashed=0
for t in $targets; do
  if [ $mode = quick ]; then
    out=$work/corpus-$t # new inputs die with the run
  else
    out=$bdir/corpus/$t
  fi
  mkdir -p "$out"
  dict=()
  [ -f "$root/fuzz/$t.dict" ] && dict=(-dict="$root/fuzz/$t.dict")
  log=$bdir/fuzz-$t.log
  set +e
  (cd "$work" && "$bdir/fuzz_$t" "${dict[@]}" -max_total_time="$secs" -timeout=10 \
     -rss_limit_mb=2048 -close_fd_mask=3 -print_final_stats=1 -error_exitcode=1 \
     -timeout_exitcode=1 -artifact_prefix="$bdir/crashes/$t-" "$out" "$root/fuzz/corpus/$t") \
    >"$log" 2>&1
  rc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  new=$(sed -n 's/^stat::new_units_added: *//p' "$log" | tail -1)
  ncorpus=$(( $(ls "$out" | wc -l) + $(ls "$root/fuzz/corpus/$t" | wc -l) ))
  crashes=0
  if [ $rc -ne 0 ]; then
    crashes=1
    crashed=1
  fi
  total=$((total + ${execs:-0}))
  printf '%-12s %12s %10s %8s %6s %8s\n' "$t" "${execs:-?}" "${rate:-?}" "$ncorpus" "${new:-?}" "$crashes"
  if [ $rc -ne 0 ]; then
    grep -E 'ERROR|runtime error|fuzz property|Test unit written|SUMMARY' "$log" | head -20 | sed 's/^/    /'
  fi
done
printf '%-12s %12s\n' total "$total"
if [ $crashed -ne 0 ]; then
  echo "fuzz.sh: a target crashed; logs in $bdir/fuzz-<target>.log, inputs in $bdir/crashes/" >&2
  exit 1
fi
