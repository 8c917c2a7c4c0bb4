#!/usr/bin/env bash
# tune_kill_test.sh: `opbench tune` survives kill -9 and shares its database.
# Usage: tune_kill_test.sh OPBENCH
#  1. tune a small conv2d in the background, SIGKILL it mid-run, check the
#     database (PRAGMA integrity_check, rows stored so far), restart with the
#     same arguments: it resumes, measures only what is missing, ends with
#     exactly --trials rows, and its --log holds every record once;
#  2. two tune processes on different workloads write one database at once;
#     then xgb on a third shape transfers from the database (and not with
#     --no-transfer);
#  3. bad input: an unknown tuner, a budget of 0, a corrupt and a locked
#     database: exit 2, one `opbench: error:` line, nothing lost.
# Kernels are compiled into a fresh cache, so the tuning run is slow enough
# to be killed in the middle. Prints `ok - name` / `not ok - name`, then
# `N passed, M failed`; exits 1 if any failed.
set -u

OB=${1:?usage: tune_kill_test.sh path/to/opbench}
[ -x "$OB" ] || { echo "tune_kill_test.sh: $OB is not an executable" >&2; exit 1; }
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
rows() { sqlite3 "$1" 'SELECT count(*) FROM measurements' 2>/dev/null || echo -1; }
integrity() { sqlite3 "$1" 'PRAGMA integrity_check' 2>&1; }

CONV=(--op conv2d --shape N=1,C=16,H=14,W=14,K=32,R=3,S=3 --pad 1)
TRIALS=40

# ---- 1. kill -9 mid-run, then resume ------------------------------------------------
db=$tmp/kill.db
log=$tmp/kill.json
args=("${CONV[@]}" --tuner random --trials $TRIALS --batch 4 --db "$db" --log "$log" --seed 3)
"$OB" tune "${args[@]}" >"$tmp/run1.out" 2>"$tmp/run1.err" &
pid=$!
bgpids+=("$pid")
n=0
for _ in $(seq 1 3000); do # until 6 trials land (a loaded machine: up to 300 s)
  n=$(rows "$db")
  [ "$n" -ge 6 ] && break
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
before=$(rows "$db")
check "the run was killed mid-run ($before of $TRIALS trials stored)" \
  $([ "$killed" -eq 1 ] && [ "$before" -ge 6 ] && [ "$before" -lt $TRIALS ]; echo $?) \
  "killed=$killed rows=$before" "$(tail -3 "$tmp/run1.err")"
ic=$(integrity "$db")
check "integrity_check after kill -9" $([ "$ic" = ok ]; echo $?) "$ic"

"$OB" tune "${args[@]}" >"$tmp/run2.out" 2>"$tmp/run2.err"
rc=$?
after=$(rows "$db")
check "the restart completes the budget" \
  $([ $rc -eq 0 ] && [ "$after" -eq $TRIALS ]; echo $?) "exit $rc, rows $after" \
  "$(tail -3 "$tmp/run2.err")"
check "the restart resumes what was stored and measures only the rest" \
  $(grep -Eq "trials +$TRIALS of $TRIALS \(resumed $before, measured $((TRIALS - before)), " \
    "$tmp/run2.out"; echo $?) "$(grep trials "$tmp/run2.out")"
dup=$(sqlite3 "$db" "SELECT count(*) FROM (SELECT config_index FROM measurements GROUP BY config_index HAVING count(*) > 1)")
check "no config measured twice" $([ "$dup" = 0 ]; echo $?) "duplicates: $dup"
check "a confirmed best is stored" \
  $([ "$(sqlite3 "$db" 'SELECT count(*) FROM confirmed')" = 1 ]; echo $?)
nl=$(wc -l <"$log" 2>/dev/null || echo 0)
nidx=$(grep -o '"index":[0-9]*' "$log" 2>/dev/null | sort -u | wc -l)
check "the log holds every trial" $([ "$nidx" -eq $TRIALS ] && [ "$nl" -ge $TRIALS ]; echo $?) \
  "lines $nl, distinct configs $nidx"
grep -q '^\[Task 1/1\] Current/Best: .* GFLOPS | Progress: ([0-9]*/'$TRIALS') | [0-9.]* s$' \
  "$tmp/run2.out"
check "progress lines in AutoTVM's form" $? "$(head -2 "$tmp/run2.out")"

"$OB" tune "${args[@]}" >"$tmp/run3.out" 2>"$tmp/run3.err"
rc=$?
check "a third run measures nothing" \
  $([ $rc -eq 0 ] && grep -q "(resumed $TRIALS, measured 0, " "$tmp/run3.out" &&
    [ "$(rows "$db")" -eq $TRIALS ] && [ "$(wc -l <"$log")" -eq "$nl" ]; echo $?) \
  "$(grep trials "$tmp/run3.out")"

# ---- 2. two writers, one file ---------------------------------------------------------
db2=$tmp/shared.db
"$OB" tune --op dense --shape M=8,N=64,K=64 --tuner random --trials 24 --batch 4 --db "$db2" \
  >"$tmp/w1.out" 2>"$tmp/w1.err" &
p1=$!
bgpids+=("$p1")
"$OB" tune "${CONV[@]}" --tuner ga --trials 24 --batch 4 --db "$db2" \
  >"$tmp/w2.out" 2>"$tmp/w2.err" &
p2=$!
bgpids+=("$p2")
wait "$p1"
r1=$?
wait "$p2"
r2=$?
n2=$(rows "$db2")
nw=$(sqlite3 "$db2" 'SELECT count(DISTINCT workload_key) FROM measurements')
check "two concurrent tune processes on one database" \
  $([ $r1 -eq 0 ] && [ $r2 -eq 0 ] && [ "$n2" -eq 48 ] && [ "$nw" -eq 2 ]; echo $?) \
  "exits $r1 $r2, rows $n2, workloads $nw" "$(tail -2 "$tmp/w1.err")" "$(tail -2 "$tmp/w2.err")"
ic=$(integrity "$db2")
check "integrity_check after concurrent writers" $([ "$ic" = ok ]; echo $?) "$ic"

# ---- transfer: records of other conv2d shapes seed the xgb model by default ------------
db3=$tmp/transfer.db
sqlite3 "$db" ".backup '$db3'"
"$OB" tune --op conv2d --shape N=1,C=32,H=14,W=14,K=16,R=3,S=3 --pad 1 --tuner random \
  --trials 28 --batch 4 --db "$db3" >"$tmp/tl1.out" 2>"$tmp/tl1.err"
r0=$?
XGB=(--op conv2d --shape N=1,C=32,H=7,W=7,K=32,R=3,S=3 --pad 1 --tuner xgb --trials 8 --batch 4)
"$OB" tune "${XGB[@]}" --db "$db3" >"$tmp/tl2.out" 2>"$tmp/tl2.err"
r1=$?
ntl=$(sed -n 's/^transfer   base model from \([0-9]*\) records of conv2d.*/\1/p' "$tmp/tl2.out")
check "xgb transfers from the other shapes' records in --db" \
  $([ $r0 -eq 0 ] && [ $r1 -eq 0 ] && [ "${ntl:-0}" -ge 64 ]; echo $?) \
  "exits $r0 $r1, transfer '${ntl}'" "$(tail -2 "$tmp/tl1.err")" "$(tail -2 "$tmp/tl2.err")"
"$OB" tune "${XGB[@]}" --trials 12 --no-transfer --db "$db3" >"$tmp/tl3.out" 2>"$tmp/tl3.err"
r2=$?
check "--no-transfer starts cold (and resumes the 8 trials)" \
  $([ $r2 -eq 0 ] && ! grep -q '^transfer' "$tmp/tl3.out" &&
    grep -q "(resumed 8, measured 4, " "$tmp/tl3.out"; echo $?) "exit $r2" "$(cat "$tmp/tl3.out")"

# ---- 3. bad input -----------------------------------------------------------------------
# bad NAME PATTERN ARGS...: exit 2, one stderr line `opbench: error: ...` matching PATTERN
bad() {
  local name=$1 pattern=$2
  shift 2
  "$OB" tune "$@" >"$tmp/bad.out" 2>"$tmp/bad.err"
  local rc=$?
  [ $rc -eq 2 ] && [ "$(wc -l <"$tmp/bad.err")" -eq 1 ] &&
    grep -q '^opbench: error: ' "$tmp/bad.err" && grep -Eq -- "$pattern" "$tmp/bad.err"
  check "$name" $? "exit $rc" "$(head -3 "$tmp/bad.err")"
}
sum_before=$(sqlite3 "$db" 'SELECT count(*), sum(config_index) FROM measurements')
bad "unknown tuner" "unknown tuner 'annealing'.*gridsearch" "${CONV[@]}" --tuner annealing --db "$db"
bad "a trial budget of 0" "a trial budget of 0" "${CONV[@]}" --trials 0 --db "$db"
bad "no operator" "needs --op" --shape N=1 --db "$db"
printf 'this is not a database, just text that happens to be long enough\n%.0s' $(seq 1 40) \
  >"$tmp/corrupt.db"
md5a=$(md5sum <"$tmp/corrupt.db")
bad "corrupt database" "corrupt.db.*(not an SQLite database|corrupt)" "${CONV[@]}" --trials 4 \
  --db "$tmp/corrupt.db"
check "a corrupt database is left untouched" $([ "$(md5sum <"$tmp/corrupt.db")" = "$md5a" ]; echo $?)
# a second connection holds the write lock until the tune has given up (its
# 5 s busy timeout); the tune starts only once the lock is seen held, and the
# lock is let go only after it, so no timing decides the outcome
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
bad "locked database" "locked" "${CONV[@]}" --tuner random --trials $((TRIALS + 4)) --db "$db"
echo >"$tmp/release"
wait "$lockpid"
check "nothing lost in the bad runs" \
  $([ "$(sqlite3 "$db" 'SELECT count(*), sum(config_index) FROM measurements')" = "$sum_before" ] &&
    [ "$(integrity "$db")" = ok ]; echo $?)

finish
