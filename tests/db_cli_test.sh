#!/usr/bin/env bash
# db_cli_test.sh: `opbench db best|top|stats|export|import` and
# `opbench tune --remeasure` on a real database.
# Usage: db_cli_test.sh OPBENCH
#  1. a short tuning run fills a database; best (text and JSON), top, stats
#     and the CSV export agree with what sqlite3 finds in the file;
#  2. an AutoTVM export imported into a fresh database gives the same best
#     (the round trip), a second import stores nothing new, and a log with
#     broken lines imports the good ones and names the bad lines;
#  3. --remeasure measures again and replaces (history keeps the old rows);
#     --reconfirm measures nothing new and confirms the stored best again;
#     records of another --target are kept apart (own trials, own best);
#  4. bad input: each is exit 2 with one `opbench: error:` line, and no
#     database file is created or changed by a query.
# Prints `ok - name` / `not ok - name`, then `N passed, M failed`.
set -u
OB=${1:?usage: db_cli_test.sh path/to/opbench}
[ -x "$OB" ] || { echo "db_cli_test.sh: $OB is not an executable" >&2; exit 1; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/sh_util.sh"
need sqlite3
tmp=$(mktemp -d /tmp/opbench_db_cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export OPBENCH_CACHE=$tmp/kcache

passed=0
failed=0
check() { # check NAME STATUS [diagnostics...]
  local name=$1 st=$2
  shift 2
  if [ "$st" -eq 0 ]; then
    passed=$((passed + 1))
    echo "ok - $name"
  else
    failed=$((failed + 1))
    echo "not ok - $name"
    for line in "$@"; do echo "#   $line"; done
  fi
}
q() { sqlite3 "$1" "$2" 2>&1; }

W=(--op conv2d --shape N=1,C=16,H=14,W=14,K=32,R=3,S=3 --pad 1)
db=$tmp/a.db

# ---- 1. queries of a tuned workload -------------------------------------------------
"$OB" tune "${W[@]}" --tuner random --trials 12 --batch 4 --db "$db" >"$tmp/tune.out" 2>&1
check "tune fills the database" $? "$(tail -3 "$tmp/tune.out")"

ccv=$(q "$db" "SELECT compiler_version FROM hosts")
want=$(${OPBENCH_CC:-cc} --version | head -1)
check "the host row records the compiler and its version" \
  $([ -n "$ccv" ] && [ "$ccv" = "$want" ]; echo $?) "stored '$ccv', cc says '$want'"

"$OB" db best "${W[@]}" --db "$db" >"$tmp/best.out" 2>"$tmp/best.err"
rc=$?
# the fastest error-free median in the file, for this host and setting
best_idx=$(q "$db" "SELECT config_index FROM measurements WHERE error_no = 0
  AND resources = 'threads=1;cores=0' ORDER BY median_s, config_index LIMIT 1")
check "db best names the fastest record and the confirmed best" \
  $([ $rc -eq 0 ] && grep -Eq "^best +conv2d_NCHWc.x86 #$best_idx .*GFLOPS" "$tmp/best.out" &&
    grep -q "^confirmed  #" "$tmp/best.out" && grep -q "^resources  threads=1;cores=0" "$tmp/best.out"
  echo $?) "exit $rc, sqlite3 says #$best_idx" "$(cat "$tmp/best.out" "$tmp/best.err")"

"$OB" db best "${W[@]}" --db "$db" --json >"$tmp/best.json" 2>&1
check "db best --json" \
  $(grep -q "\"config_index\":[[:space:]]*$best_idx," "$tmp/best.json" &&
    grep -q '"confirmed"' "$tmp/best.json"; echo $?) "$(head -12 "$tmp/best.json")"

"$OB" db top "${W[@]}" --db "$db" --top 3 >"$tmp/top.out" 2>&1
rc=$?
nrank=$(grep -Ec '^ +[0-9]+ conv2d_NCHWc.x86 ' "$tmp/top.out")
first=$(grep -E '^ +1 conv2d' "$tmp/top.out" | awk '{print $3}')
check "db top --top 3: three rows, the best first" \
  $([ $rc -eq 0 ] && [ "$nrank" -eq 3 ] && [ "$first" = "$best_idx" ]; echo $?) "$(cat "$tmp/top.out")"

key=$(q "$db" "SELECT DISTINCT workload_key FROM measurements")
"$OB" db top --workload "$key" --db "$db" --top 1 >"$tmp/topk.out" 2>&1
check "db top --workload KEY rebuilds the configs from the stored attributes" \
  $(grep -Eq "^ +1 conv2d_NCHWc.x86 +$best_idx .* tile_ic=\[" "$tmp/topk.out"; echo $?) \
  "$(cat "$tmp/topk.out")"

"$OB" db stats --db "$db" >"$tmp/stats.out" 2>&1
rc=$?
n=$(q "$db" "SELECT count(*) FROM measurements")
check "db stats counts every record" \
  $([ $rc -eq 0 ] && grep -Eq "^total +$n +$n " "$tmp/stats.out" &&
    grep -q "^records    $n of 1 workloads" "$tmp/stats.out" &&
    grep -q "^conv2d (1 workloads)" "$tmp/stats.out"; echo $?) "$(cat "$tmp/stats.out")"

# issue 17: the stored number is the one the runner used (adaptive: a 14x14
# conv takes microseconds, so more than one call per repeat), with the floor,
# the cache state and the timer overhead; stats counts the noisy records
used=$(q "$db" "SELECT min(number) || ' ' || min(min_repeat_ms) || ' ' || max(flush) || ' ' ||
  (min(timer_overhead_s) > 0) FROM measurements WHERE error_no = 0")
check "records store the number used, the floor, the cache state and the timer overhead" \
  $(set -- $used; [ "${1:-0}" -gt 1 ] && [ "$2" = "2.0" ] && [ "$3" = "0" ] && [ "$4" = "1" ]; echo $?) \
  "sqlite3: number, floor, flush, overhead > 0: $used"
# --cache: records are selected by the cache state they were timed in (one
# record of a copy restated as cold-weights, flush = 2)
dbc=$tmp/cache.db
cp "$db" "$dbc"
slow_idx=$(q "$dbc" "SELECT config_index FROM measurements WHERE error_no = 0
  AND resources = 'threads=1;cores=0' ORDER BY median_s DESC, config_index LIMIT 1")
q "$dbc" "UPDATE measurements SET flush = 2 WHERE config_index = $slow_idx" >/dev/null
"$OB" db best "${W[@]}" --db "$dbc" --cache cold-weights >"$tmp/bc.out" 2>&1
rc=$?
check "db best --cache cold-weights takes the one cold-weights record" \
  $([ $rc -eq 0 ] && grep -Eq "^best +conv2d_NCHWc.x86 #$slow_idx " "$tmp/bc.out"; echo $?) "$(cat "$tmp/bc.out")"
"$OB" db top "${W[@]}" --db "$dbc" --cache warm --top 1000 >"$tmp/tc.out" 2>&1
rc=$?
nwarm=$(q "$dbc" "SELECT count(*) FROM measurements WHERE error_no = 0 AND flush = 0
  AND resources = 'threads=1;cores=0'")
check "db top --cache warm leaves the cold-weights record out" \
  $([ $rc -eq 0 ] && [ "$(grep -Ec '^ +[0-9]+ conv2d_NCHWc.x86 ' "$tmp/tc.out")" -eq "$nwarm" ] &&
    ! grep -Eq "^ +[0-9]+ conv2d_NCHWc.x86 +$slow_idx " "$tmp/tc.out" && grep -q "^cache      warm" "$tmp/tc.out"
  echo $?) "sqlite3: $nwarm warm" "$(cat "$tmp/tc.out")"
"$OB" db best "${W[@]}" --db "$dbc" --cache cold >"$tmp/bcc.out" 2>&1
rc=$?
check "db best --cache cold without cold records: exit 2, says how to widen" \
  $([ $rc -eq 2 ] && grep -q "cache cold.*--cache any" "$tmp/bcc.out"; echo $?) "exit $rc" "$(cat "$tmp/bcc.out")"
"$OB" db stats --db "$dbc" --cache warm >"$tmp/sc.out" 2>&1
rc=$?
check "db stats --cache is refused" \
  $([ $rc -eq 2 ] && grep -q "applies to db best, top and export" "$tmp/sc.out"; echo $?) "exit $rc" "$(cat "$tmp/sc.out")"
"$OB" db best "${W[@]}" --db "$dbc" --cache lukewarm >"$tmp/bl.out" 2>&1
rc=$?
check "db best --cache with an unknown state" \
  $([ $rc -eq 2 ] && grep -q "lukewarm" "$tmp/bl.out"; echo $?) "exit $rc" "$(cat "$tmp/bl.out")"
"$OB" db export --db "$dbc" --cache cold-weights --out "$tmp/c.csv" >"$tmp/ec.out" 2>&1
rc=$?
check "db export --cache cold-weights writes that record only" \
  $([ $rc -eq 0 ] && [ "$(($(wc -l <"$tmp/c.csv") - 1))" -eq 1 ]; echo $?) "exit $rc" "$(cat "$tmp/ec.out")" \
  "$(head -3 "$tmp/c.csv")"

nnoisy=$(q "$db" "SELECT count(*) FROM measurements WHERE error_no = 0 AND noisy")
check "db stats counts the noisy records" \
  $(grep -Eq "^noisy +$nnoisy error-free records" "$tmp/stats.out"; echo $?) \
  "sqlite3 says $nnoisy" "$(tail -2 "$tmp/stats.out")"
q "$db" "UPDATE measurements SET noisy = 1 WHERE id = (SELECT min(id) FROM measurements WHERE error_no = 0 AND noisy = 0)" >/dev/null
"$OB" db stats --db "$db" --json >"$tmp/stats.json" 2>&1
check "db stats --json counts a record marked noisy" \
  $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d['total']['noisy'] == $nnoisy + 1 else 1)" "$tmp/stats.json"; echo $?) \
  "$(head -20 "$tmp/stats.json")"

"$OB" db export --db "$db" >"$tmp/all.csv" 2>"$tmp/exp.err"
rc=$?
check "db export: CSV with a header and one line per record" \
  $([ $rc -eq 0 ] && head -1 "$tmp/all.csv" | grep -q '^host,workload,op,' &&
    [ "$(($(wc -l <"$tmp/all.csv") - 1))" -eq "$n" ] &&
    grep -q "exported $n records as CSV to stdout" "$tmp/exp.err"; echo $?) \
  "exit $rc, $(wc -l <"$tmp/all.csv") lines for $n records" "$(cat "$tmp/exp.err")"

# ---- 2. AutoTVM round trip and broken lines ------------------------------------------
"$OB" db export --db "$db" --format autotvm --out "$tmp/log.json" 2>"$tmp/exp2.err"
rc=$?
check "db export --format autotvm --out FILE" \
  $([ $rc -eq 0 ] && [ "$(wc -l <"$tmp/log.json")" -eq "$n" ]; echo $?) "$(cat "$tmp/exp2.err")"

db2=$tmp/b.db
"$OB" db import "$tmp/log.json" --db "$db2" --host this >"$tmp/imp.out" 2>&1
rc=$?
"$OB" db best "${W[@]}" --db "$db2" --resources any >"$tmp/best2.out" 2>&1
check "import of the export gives back the same best" \
  $([ $rc -eq 0 ] && grep -q "$n records stored, 0 already stored" "$tmp/imp.out" &&
    grep -Eq "^best +conv2d_NCHWc.x86 #$best_idx " "$tmp/best2.out"; echo $?) \
  "$(cat "$tmp/imp.out" "$tmp/best2.out")"

"$OB" db import "$tmp/log.json" --db "$db2" --host this >"$tmp/imp2.out" 2>&1
check "a second import stores nothing new" \
  $(grep -q "0 records stored, $n already stored (kept)" "$tmp/imp2.out" &&
    [ "$(q "$db2" 'SELECT count(*) FROM measurements')" -eq "$n" ]; echo $?) "$(cat "$tmp/imp2.out")"

{
  sed -n 1,2p "$tmp/log.json"
  echo '{"input": ["llvm", broken'
  sed -n 3,4p "$tmp/log.json"
  echo 'this line is not JSON'
  echo '{"input":["llvm","conv2d_NCHWc.x86",[],{}],"config":{"index":1},"result":"x"}'
} >"$tmp/broken.json"
db3=$tmp/c.db
"$OB" db import "$tmp/broken.json" --db "$db3" >"$tmp/imp3.out" 2>"$tmp/imp3.err"
rc=$?
check "broken lines are skipped, counted and named; the good ones stored" \
  $([ $rc -eq 0 ] && grep -q "7 lines, 4 records stored, 0 already stored (kept), 3 broken" "$tmp/imp3.out" &&
    grep -q "^skipped    line 3: " "$tmp/imp3.out" && grep -q "^skipped    line 6: " "$tmp/imp3.out" &&
    grep -q "^skipped    line 7: " "$tmp/imp3.out" && grep -q "^host       unknown" "$tmp/imp3.out" &&
    [ "$(q "$db3" 'SELECT count(*) FROM measurements')" -eq 4 ]; echo $?) \
  "exit $rc" "$(cat "$tmp/imp3.out")"

# ---- 3. --remeasure --------------------------------------------------------------------
h0=$(q "$db" "SELECT count(*) FROM measurements_history")
"$OB" tune "${W[@]}" --tuner random --trials 12 --batch 4 --db "$db" --remeasure >"$tmp/re.out" 2>&1
rc=$?
h1=$(q "$db" "SELECT count(*) FROM measurements_history")
check "tune --remeasure measures again and keeps the old rows in history" \
  $([ $rc -eq 0 ] && grep -q "(resumed 0, measured 12, " "$tmp/re.out" &&
    [ "$(q "$db" 'SELECT count(*) FROM measurements')" -eq "$n" ] && [ "$h1" -ge $((h0 + 12)) ]
  echo $?) "exit $rc, history $h0 -> $h1" "$(grep trials "$tmp/re.out")"
"$OB" tune "${W[@]}" --tuner random --trials 12 --batch 4 --db "$db" >"$tmp/re2.out" 2>&1
check "without --remeasure the same run resumes" \
  $(grep -q "(resumed 12, measured 0, " "$tmp/re2.out"; echo $?) "$(grep trials "$tmp/re2.out")"
c0=$(q "$db" "SELECT timestamp FROM confirmed")
"$OB" tune "${W[@]}" --tuner random --trials 12 --batch 4 --db "$db" --reconfirm >"$tmp/rc.out" 2>&1
rc=$?
c1=$(q "$db" "SELECT timestamp FROM confirmed")
check "tune --reconfirm measures nothing new but confirms the stored best again" \
  $([ $rc -eq 0 ] && grep -q "(resumed 12, measured 0, " "$tmp/rc.out" && grep -q "^confirmed .*best of [56] re-measured" "$tmp/rc.out" &&
    grep -q "^timing " "$tmp/rc.out" && ! grep -q "^timing " "$tmp/re2.out" && [ "$c0" != "$c1" ] &&
    [ "$(q "$db" 'SELECT count(*) FROM measurements')" -eq "$n" ]
  echo $?) "exit $rc, confirmed at $c0 -> $c1" "$(grep -E '^(trials|confirmed|timing)' "$tmp/rc.out")"

# ---- 3b. targets are kept apart -------------------------------------------------------------
dbt=$tmp/t.db
cp "$db" "$dbt"
AVX2="c -isa=avx2"
"$OB" tune "${W[@]}" --tuner random --trials 6 --batch 3 --db "$dbt" --target "$AVX2" >"$tmp/tt.out" 2>&1
rc=$?
check "tune --target files its trials under the target, resuming none of the default's" \
  $([ $rc -eq 0 ] && grep -q "(resumed 0, measured 6, " "$tmp/tt.out" && grep -q "^target     $AVX2" "$tmp/tt.out" &&
    [ "$(q "$dbt" "SELECT count(*) FROM measurements WHERE target = '$AVX2'")" -eq 6 ] &&
    [ "$(q "$dbt" "SELECT count(*) FROM measurements WHERE target = 'llvm -mcpu=native'")" -eq "$n" ]
  echo $?) "exit $rc" "$(grep -E 'trials|target' "$tmp/tt.out")"
dflt_idx=$(q "$dbt" "SELECT config_index FROM measurements WHERE error_no = 0 AND target = 'llvm -mcpu=native'
  AND resources = 'threads=1;cores=0' ORDER BY median_s, config_index LIMIT 1")
"$OB" db best "${W[@]}" --db "$dbt" >"$tmp/tb.out" 2>&1
check "db best defaults to the default target" \
  $(grep -Eq "^best +conv2d_NCHWc.x86 #$dflt_idx " "$tmp/tb.out" && grep -q "^target     llvm -mcpu=native" "$tmp/tb.out"
  echo $?) "sqlite3 says #$dflt_idx" "$(cat "$tmp/tb.out")"
avx2_idx=$(q "$dbt" "SELECT config_index FROM measurements WHERE error_no = 0 AND target = '$AVX2'
  ORDER BY median_s, config_index LIMIT 1")
"$OB" db best "${W[@]}" --db "$dbt" --target "$AVX2" >"$tmp/tb2.out" 2>&1
check "db best --target picks that target's records, configs in its space" \
  $(grep -Eq "^best +conv2d_NCHWc.x86 #$avx2_idx .*tile_oc=\[-1,(4|8|16)\]" "$tmp/tb2.out" &&
    grep -q "^target     $AVX2" "$tmp/tb2.out"; echo $?) "sqlite3 says #$avx2_idx" "$(cat "$tmp/tb2.out")"
"$OB" db top "${W[@]}" --db "$dbt" --target any --top 1000 --json >"$tmp/tt.json" 2>&1
check "db top --target any lists both targets" \
  $(python3 -c 'import json,sys; d=json.load(sys.stdin); t=set(r["target"] for r in d); sys.exit(0 if t == {"llvm -mcpu=native", "c -isa=avx2"} else 1)' <"$tmp/tt.json"
  echo $?) "$(head -5 "$tmp/tt.json")"
bad0() { "$OB" db "$@" >"$tmp/bad.out" 2>"$tmp/bad.err"; }
bad0 best "${W[@]}" --db "$dbt" --target "c -isa=nope"
check "db best --target with an unknown ISA" \
  $([ $? -eq 2 ] && grep -q "^opbench: error: --target: target 'c -isa=nope': unknown ISA 'nope'" "$tmp/bad.err"
  echo $?) "$(cat "$tmp/bad.err")"

# ---- 4. bad input ------------------------------------------------------------------------
bad() { # bad NAME PATTERN ARGS...
  local name=$1 pattern=$2
  shift 2
  "$OB" db "$@" >"$tmp/bad.out" 2>"$tmp/bad.err"
  local rc=$?
  [ $rc -eq 2 ] && [ "$(wc -l <"$tmp/bad.err")" -eq 1 ] &&
    grep -q '^opbench: error: ' "$tmp/bad.err" && grep -Eq -- "$pattern" "$tmp/bad.err"
  check "$name" $? "exit $rc" "$(head -3 "$tmp/bad.err")"
}
sum0=$(md5sum <"$db")
bad "no action" "needs an action" --db "$db"
bad "unknown action" "unknown action 'frobnicate'" frobnicate --db "$db"
bad "best without a workload" "needs the workload" best --db "$db"
bad "best of an operator without a shape" "needs the workload's --shape" best --op conv2d --db "$db"
bad "unknown operator" "unknown operator 'conv9d'" stats --op conv9d --db "$db"
bad "a setting with no records says how to widen" "try --host any --target any --resources any" \
  best "${W[@]}" --threads 2 --db "$db"
bad "a workload with no records" "holds no record of" \
  best --op conv2d --shape N=1,C=8,H=8,W=8,K=8,R=3,S=3 --db "$db"
bad "unknown export format" "unknown format 'xml'" export --format xml --db "$db"
bad "top 0" "--top: bad value '0'" top "${W[@]}" --top 0 --db "$db"
bad "import without a file" "needs the AutoTVM log" import --db "$db"
bad "import of a missing file" "cannot read AutoTVM log" import "$tmp/none.json" --db "$db2"
bad "import --host any" "--host any" import "$tmp/log.json" --host any --db "$db2"
bad "a missing database is not created by a query" "does not exist" stats --db "$tmp/none.db"
check "the query left no file behind" $([ ! -e "$tmp/none.db" ]; echo $?)
printf 'plain text, no database here\n%.0s' $(seq 1 60) >"$tmp/corrupt.db"
c0=$(md5sum <"$tmp/corrupt.db")
bad "a corrupt database" "(not an SQLite database|corrupt)" stats --db "$tmp/corrupt.db"
check "the corrupt file is untouched" $([ "$(md5sum <"$tmp/corrupt.db")" = "$c0" ]; echo $?)
check "queries left the database unchanged" $([ "$(md5sum <"$db")" = "$sum0" ]; echo $?)

finish
