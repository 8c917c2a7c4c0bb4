#!/usr/bin/env bash
# profile_cli_test.sh: `opbench profile` and the profiles dataset.
# Usage: profile_cli_test.sh OPBENCH
#  1. a sweep of threads and knob neighbours stores one row per planned
#     point; run again it measures nothing (every point resumed); the host's
#     limits are stored once; db export --table profiles gives a CSV with a
#     column per workload attribute and JSON lines with the same rows;
#  2. co-run (stream/full) and cache pressure points carry their partner,
#     mode, pressure and a slowdown; a model's tasks and a size grid plan;
#  3. kill -9 in the middle of a sweep: the database passes integrity_check,
#     the restart measures only what is missing and ends with every point
#     once;
#  4. bad input (an empty or impossible grid, an unknown co-run operator, a
#     pressure beyond memory, impossible threads/cores, unknown sweeps, a
#     locked database): exit 2, one `opbench: error:` line, the database
#     unchanged.
# Kernels are compiled into a fresh cache (so the sweep of 3. is slow enough
# to be killed). Prints `ok - name` / `not ok - name`, then `N passed, M failed`.
set -u

OB=${1:?usage: profile_cli_test.sh path/to/opbench}
[ -x "$OB" ] || { echo "profile_cli_test.sh: $OB is not an executable" >&2; exit 1; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/sh_util.sh"
need sqlite3
tmp=$(mktemp -d)
bgpids=()
cleanup() {
  for p in "${bgpids[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
export OPBENCH_CACHE=$tmp/kcache

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok - $1"; }
not_ok() {
  failed=$((failed + 1))
  echo "not ok - $1"
  shift
  for line in "$@"; do echo "#   $line"; done
}
check() { # check NAME CONDITION-STATUS [diagnostics...]
  local name=$1 st=$2
  shift 2
  if [ "$st" -eq 0 ]; then ok "$name"; else not_ok "$name" "$@"; fi
}
q() { sqlite3 "$1" "$2" 2>/dev/null || echo -1; }
rows() { q "$1" 'SELECT count(*) FROM profiles'; }
content() { q "$1" 'SELECT count(*), total(median_s), total(timestamp) FROM profiles'; }
FAST=(--repeat 3 --min-repeat-ms 1 --max-cv 0)
ncores=$(nproc)

# ---- 1. a sweep, resumed, exported ----------------------------------------------------
db=$tmp/p.db
DENSE=(dense --shape M=8,N=256,K=256)
threads=1
[ "$ncores" -ge 2 ] && threads=1,2
"$OB" profile "${DENSE[@]}" --threads $threads --knobs neighbours:3 --db "$db" --dry-run >"$tmp/dry.out" 2>&1
planned=$(sed -n 's/^sweep *\([0-9]*\) points.*/\1/p' "$tmp/dry.out")
check "--dry-run plans the points and writes no database" \
  $([ -n "$planned" ] && [ "$planned" -ge 4 ] && [ ! -e "$db" ]; echo $?) "$(cat "$tmp/dry.out")"
"$OB" profile "${DENSE[@]}" --threads $threads --knobs neighbours:3 --db "$db" --limits quick "${FAST[@]}" \
  >"$tmp/s1.out" 2>"$tmp/s1.err"
rc=$?
n=$(rows "$db")
check "the sweep stores one row per planned point ($n of $planned)" \
  $([ $rc -eq 0 ] && [ "$n" = "$planned" ]; echo $?) "rc=$rc" "$(tail -5 "$tmp/s1.err")"
check "the progress line counts points done / total with the time left" \
  $(grep -q "points $planned/$planned" "$tmp/s1.err" && grep -q "left" "$tmp/s1.err"; echo $?) \
  "$(head -3 "$tmp/s1.err")"
knobrows=$(q "$db" "SELECT count(*) FROM profiles WHERE knob <> '' AND sweep = 'knobs'")
check "knob neighbours are stored with the knob changed ($knobrows rows)" $([ "$knobrows" -ge 2 ]; echo $?)
bad=$(q "$db" "SELECT count(*) FROM profiles WHERE error_no = 0 AND (gflops <= 0 OR peak_pct IS NULL OR intensity IS NULL)")
check "every error-free point has GFLOPS, % of peak and intensity" $([ "$bad" = 0 ]; echo $?) "bad=$bad"
lim=$(q "$db" "SELECT count(*) FROM host_limits WHERE name = 'fma_peak'")
check "the host's FMA peak is stored ($lim rows)" $([ "$lim" -ge 1 ]; echo $?)

cv=$(q "$db" "SELECT count(*) FROM host_limits WHERE name LIKE 'cv_%' AND verified = 1")
check "the runtime's conversion rates are stored with the limits ($cv rows)" $([ "$cv" -ge 6 ]; echo $?)
# limits stored before the conversion rates were among them: a later profile
# measures those alone, keeps the others
cdb=$tmp/cv.db
cp "$db" "$cdb"
q "$cdb" "DELETE FROM host_limits WHERE name LIKE 'cv_%'" >/dev/null
peak0=$(q "$cdb" "SELECT group_concat(value) FROM host_limits WHERE name = 'fma_peak'")
"$OB" profile "${DENSE[@]}" --threads $threads --knobs neighbours:3 --db "$cdb" "${FAST[@]}" >"$tmp/cv.out" 2>&1
rc=$?
cv=$(q "$cdb" "SELECT count(*) FROM host_limits WHERE name LIKE 'cv_%' AND verified = 1")
check "an older database's limits gain the conversion rates ($cv rows), the others kept" \
  $([ $rc -eq 0 ] && [ "$cv" -ge 6 ] && grep -q "conversion rates (the database's limits predate them)" "$tmp/cv.out" &&
    [ "$(q "$cdb" "SELECT group_concat(value) FROM host_limits WHERE name = 'fma_peak'")" = "$peak0" ]; echo $?) \
  "rc=$rc" "$(head -5 "$tmp/cv.out")"

# A neighbour whose panel does not divide N pads the packed weights: its buffers
# must take the padded size (they once took the workload's, and read past it).
pdb=$tmp/pad.db
"$OB" profile dense --shape M=8,N=100,K=64 --knobs neighbours:12 --db "$pdb" --limits quick "${FAST[@]}" \
  >"$tmp/pad.out" 2>"$tmp/pad.err"
rc=$?
padded=$(q "$pdb" "SELECT knob_value FROM profiles WHERE knob = 'tile_x'" |
  awk -F'[],[]' '$3 > 0 && 100 % $3 != 0 {n++} END {print n + 0}')
perr=$(q "$pdb" "SELECT count(*) FROM profiles WHERE error_no <> 0")
check "knob neighbours with padded panels ($padded) measure without error" \
  $([ $rc -eq 0 ] && [ "$padded" -ge 1 ] && [ "$perr" = 0 ]; echo $?) "rc=$rc errors=$perr" "$(grep -i error "$tmp/pad.out" | head -3)"
before=$(content "$db")
"$OB" profile "${DENSE[@]}" --threads $threads --knobs neighbours:3 --db "$db" "${FAST[@]}" >"$tmp/s2.out" 2>&1
rc=$?
check "run again: every point resumed, nothing measured, limits read from the database" \
  $([ $rc -eq 0 ] && grep -q "0 measured, $planned already in" "$tmp/s2.out" &&
    grep -q "from the database" "$tmp/s2.out" && [ "$(rows "$db")" = "$planned" ]; echo $?) \
  "$(tail -3 "$tmp/s2.out")"
"$OB" db export --table profiles --db "$db" --out "$tmp/p.csv" 2>/dev/null
rc=$?
hdr=$(head -1 "$tmp/p.csv")
lines=$(($(wc -l <"$tmp/p.csv") - 1))
check "db export --table profiles: a CSV row per point with M, N, K columns" \
  $([ $rc -eq 0 ] && [ "$lines" = "$planned" ] && echo ",$hdr," | grep -q ',M,' &&
    echo ",$hdr," | grep -q ',K,' && echo ",$hdr," | grep -q ',threads,'; echo $?) "rc=$rc lines=$lines" "$hdr"
"$OB" db export --table profiles --format jsonl --db "$db" --out "$tmp/p.jsonl" 2>/dev/null
rc=$?
jl=$(grep -c '^{.*"K":256.*}$' "$tmp/p.jsonl")
check "db export --table profiles --format jsonl: an object per point" \
  $([ $rc -eq 0 ] && [ "$jl" = "$planned" ]; echo $?) "rc=$rc objects=$jl" "$(head -c 300 "$tmp/p.jsonl")"
after=$(content "$db")
check "resume and export leave the profiles as they were" $([ "$before" = "$after" ]; echo $?)

# ---- 2. co-run, cache pressure, sizes, a model ---------------------------------------------
"$OB" profile "${DENSE[@]}" --corun relu:N=1,C=16,H=32,W=32 --corun-mode full --cache-pressure 4 \
  --db "$db" --limits none "${FAST[@]}" >"$tmp/c.out" 2>&1
rc=$?
full=$(q "$db" "SELECT count(*) FROM profiles WHERE corun_mode = 'full' AND slowdown > 0 AND (corun_workload LIKE 'relu%' OR workload_key LIKE 'relu%')")
pres=$(q "$db" "SELECT count(*) FROM profiles WHERE pressure_mib = 4 AND slowdown > 0 AND pressure_how <> ''")
check "co-run (full) and cache pressure points carry partner, mode, pressure and slowdown" \
  $([ $rc -eq 0 ] && [ "$full" -ge 2 ] && [ "$pres" -ge 1 ]; echo $?) "rc=$rc full=$full pressure=$pres" \
  "$(tail -5 "$tmp/c.out")"
if [ "$ncores" -ge 2 ]; then
  "$OB" profile "${DENSE[@]}" --corun relu:N=1,C=16,H=32,W=32 --corun-mode stream --db "$db" --limits none \
    "${FAST[@]}" >"$tmp/st.out" 2>&1
  rc=$?
  st=$(q "$db" "SELECT count(*) FROM profiles WHERE corun_mode = 'stream' AND cores <> corun_cores")
  check "stream co-run puts the partner on disjoint cores" $([ $rc -eq 0 ] && [ "$st" -ge 2 ]; echo $?) \
    "rc=$rc rows=$st" "$(tail -3 "$tmp/st.out")"
fi
"$OB" profile conv2d --shape N=1,C=8,H=8,W=8,K=8,R=3,S=3 --pad 1 --sizes H=8:32:x2,N=1/2 --dry-run \
  >"$tmp/sz.out" 2>&1
rc=$?
check "a size grid H=8:32:x2,N=1/2 plans 6 workloads" \
  $([ $rc -eq 0 ] && grep -q "6 points over 6 workloads" "$tmp/sz.out" && grep -q "N2C8H32W8" "$tmp/sz.out"; echo $?) \
  "$(head -5 "$tmp/sz.out")"
"$OB" profile --modelsource simple --modelname simple --threads 1 --dry-run >"$tmp/m.out" 2>&1
rc=$?
check "a model's tasks plan (simple)" $([ $rc -eq 0 ] && grep -q "^model *simple: [1-9]" "$tmp/m.out"; echo $?) \
  "$(head -3 "$tmp/m.out")"
"$OB" profile "${DENSE[@]}" --core-types --dry-run >"$tmp/ct.out" 2>&1
rc=$?
check "--core-types names the kinds of core, or says there is one" \
  $([ $rc -eq 0 ] && grep -q "^core type" "$tmp/ct.out"; echo $?) "$(head -3 "$tmp/ct.out")"

# ---- 3. kill -9 mid-sweep, then resume --------------------------------------------------
kdb=$tmp/kill.db
export OPBENCH_CACHE=$tmp/kcache2 # fresh: every point compiles, the sweep is slow enough
KARGS=(conv2d --shape N=1,C=8,H=8,W=8,K=16,R=3,S=3 --pad 1 --sizes H=8:64:x2 --knobs neighbours:2
  --db "$kdb" --limits none "${FAST[@]}")
total=$("$OB" profile "${KARGS[@]}" --dry-run 2>/dev/null | sed -n 's/^sweep *\([0-9]*\) points.*/\1/p')
"$OB" profile "${KARGS[@]}" >"$tmp/k1.out" 2>"$tmp/k1.err" &
pid=$!
bgpids+=("$pid")
n=0
for _ in $(seq 1 3000); do # until 2 points land (a loaded machine: up to 300 s)
  n=$(rows "$kdb")
  [ "$n" -ge 2 ] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$pid" 2>/dev/null; then
  kill -9 "$pid"
  wait "$pid" 2>/dev/null
  killed=1
else
  wait "$pid" 2>/dev/null
  killed=0
fi
kb=$(rows "$kdb")
check "the sweep was killed mid-run ($kb of $total points stored)" \
  $([ "$killed" -eq 1 ] && [ "$kb" -ge 2 ] && [ "$kb" -lt "$total" ]; echo $?) "killed=$killed rows=$kb" \
  "$(tail -3 "$tmp/k1.err")"
ic=$(sqlite3 "$kdb" 'PRAGMA integrity_check' 2>&1)
check "integrity_check after kill -9" $([ "$ic" = ok ]; echo $?) "$ic"
"$OB" profile "${KARGS[@]}" >"$tmp/k2.out" 2>"$tmp/k2.err"
rc=$?
ka=$(rows "$kdb")
dups=$(q "$kdb" "SELECT count(*) FROM (SELECT count(*) c FROM profiles GROUP BY workload_key, template, config_index, resources, corun_workload, corun_mode, pressure_mib HAVING c > 1)")
check "the restart measures only what is missing: $total points, each once" \
  $([ $rc -eq 0 ] && [ "$ka" = "$total" ] && [ "$dups" = 0 ] &&
    grep -q "$((total - kb)) measured, $kb already in" "$tmp/k2.out"; echo $?) \
  "rc=$rc rows=$ka dups=$dups" "$(tail -2 "$tmp/k2.out")" "$(tail -2 "$tmp/k2.err")"
export OPBENCH_CACHE=$tmp/kcache

# ---- 4. bad input ------------------------------------------------------------------------
sum=$(md5sum <"$db")
bad_case() { # bad_case NAME EXPECTED-TEXT ARGS...
  local name=$1 want=$2
  shift 2
  "$OB" "$@" >"$tmp/bad.out" 2>"$tmp/bad.err"
  local rc=$? nl
  nl=$(wc -l <"$tmp/bad.err")
  check "$name: exit 2, one error line naming it" \
    $([ $rc -eq 2 ] && [ "$nl" -eq 1 ] && grep -q "^opbench: error: .*$want" "$tmp/bad.err" &&
      [ "$(md5sum <"$db")" = "$sum" ]; echo $?) "rc=$rc lines=$nl" "$(cat "$tmp/bad.err")"
}
bad_case "empty grid" "H=9:2:x2" profile conv2d --shape N=1,C=8,H=8,W=8,K=8,R=3,S=3 --sizes H=9:2:x2 --db "$db"
bad_case "grid of factor 1" "H=8:16:x1" profile conv2d --shape N=1,C=8,H=8,W=8,K=8,R=3,S=3 --sizes H=8:16:x1 --db "$db"
bad_case "malformed grid" "H=a" profile conv2d --shape N=1,C=8,H=8,W=8,K=8,R=3,S=3 --sizes H=a --db "$db"
bad_case "grid of an impossible shape" "K=0" profile "${DENSE[@]}" --sizes K=0 --db "$db"
bad_case "grid over a dimension the operator lacks" "Q" profile "${DENSE[@]}" --sizes Q=1/2 --db "$db"
bad_case "unknown co-run operator" "nosuch" profile "${DENSE[@]}" --corun nosuch:M=1 --db "$db"
bad_case "co-run of a bad shape" "corun" profile "${DENSE[@]}" --corun dense:M=0,N=1,K=1 --db "$db"
bad_case "--corun-mode without a partner" "corun-mode" profile "${DENSE[@]}" --corun-mode full --db "$db"
bad_case "unknown --corun-mode" "sideways" profile "${DENSE[@]}" --corun tasks --corun-mode sideways --db "$db"
bad_case "cache pressure beyond memory" "memory" profile "${DENSE[@]}" --cache-pressure 1e12 --db "$db"
bad_case "negative cache pressure" "-4" profile "${DENSE[@]}" --cache-pressure -4 --db "$db"
bad_case "more threads than cores" "99" profile "${DENSE[@]}" --threads 1,99 --db "$db"
bad_case "a core this machine lacks" "cores" profile "${DENSE[@]}" --cores 0/4000 --db "$db"
bad_case "unknown knob sweep" "sideways" profile "${DENSE[@]}" --knobs sideways --db "$db"
bad_case "random without a count" "random" profile "${DENSE[@]}" --knobs random --db "$db"
bad_case "unknown --limits" "sometimes" profile "${DENSE[@]}" --limits sometimes --db "$db"
bad_case "unknown operator" "nosuch" profile nosuch --shape M=1 --db "$db"
bad_case "no workload" "needs one of" profile --threads 1 --db "$db"
bad_case "two workload sources" "needs one of" profile "${DENSE[@]}" --suite resnet18 --db "$db"
bad_case "unknown model" "nosuchmodel" profile --modelname nosuchmodel --db "$db"
bad_case "export jsonl of measurements" "jsonl" db export --format jsonl --db "$db" --out "$tmp/x.jsonl"
bad_case "unknown export table" "nosuch" db export --table nosuch --db "$db"
printf 'this is not a database, just text that happens to be long enough\n%.0s' $(seq 1 40) >"$tmp/corrupt.db"
csum=$(md5sum <"$tmp/corrupt.db")
bad_case "corrupt database" "corrupt.db" profile "${DENSE[@]}" --db "$tmp/corrupt.db" --limits none
check "a corrupt database is left untouched" $([ "$(md5sum <"$tmp/corrupt.db")" = "$csum" ]; echo $?)
# a second connection holds the write lock until the profile has given up
# (its busy timeout); the profile starts only once the lock is seen held, and
# the lock is let go only after it, so no timing decides the outcome
mkfifo "$tmp/release"
(
  echo ".timeout 5000"
  echo "BEGIN EXCLUSIVE;"
  read -r _ <"$tmp/release"
  echo "COMMIT;"
) | sqlite3 "$db" &
lockpid=$!
bgpids+=("$lockpid")
for _ in $(seq 1 3000); do
  sqlite3 "$db" "BEGIN IMMEDIATE; ROLLBACK;" >/dev/null 2>&1 || break
  sleep 0.1
done
bad_case "locked database" "locked" profile "${DENSE[@]}" --knobs neighbours:4 --remeasure --db "$db" --limits none "${FAST[@]}"
echo >"$tmp/release"
wait "$lockpid"
check "nothing lost in the bad runs" \
  $([ "$(md5sum <"$db")" = "$sum" ] && [ "$(q "$db" 'PRAGMA integrity_check')" = ok ]; echo $?)

finish
