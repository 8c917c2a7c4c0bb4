#!/usr/bin/env bash
# report_test.sh: `opbench report` renders its page, checked in a real browser.
# Usage: report_test.sh OPBENCH
#  1. a database with every kind of data (a profile sweep of threads, sizes,
#     knob neighbours, co-runs in both modes, the host's limits; a tuning run)
#     and a schedule timeline give a page with every plot, each SVG holding
#     plotted data (gnuplot's first plot group is not empty);
#  2. headless Chromium loads the page: every plot decoded (the page's own
#     marks: data-plots-loaded = the plots, data-plots-broken = 0) and a
#     screenshot of it is taken; a page with a damaged plot is caught (the
#     check can fail);
#  3. bad input: a database without profiles or tuning runs, a missing
#     database, --out a file, a --schedule that is not an SVG, gnuplot
#     missing: exit 2, one `opbench: error:` line, nothing written or changed.
# Prints `ok - name` / `not ok - name`, then `N passed, M failed`.
set -u

OB=${1:?usage: report_test.sh path/to/opbench}
[ -x "$OB" ] || { echo "report_test.sh: $OB is not an executable" >&2; exit 1; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/sh_util.sh"
need sqlite3 gnuplot chromium
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
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
browser() { # browser ARGS... URL: headless Chromium, its own profile folder, no GPU
  timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
    --user-data-dir="$tmp/chrome" --virtual-time-budget=10000 "$@" 2>>"$tmp/chrome.log"
}
FAST=(--repeat 3 --min-repeat-ms 1 --max-cv 0)

# ---- 1. the page --------------------------------------------------------------------------
db=$tmp/r.db
ncores=$(nproc)
want="tuning sizes knobs roofline corun_full timeline1"
threads=1
if [ "$ncores" -ge 2 ]; then # a second core: thread scaling and stream co-runs
  threads=1,2
  want="$want threads corun_stream"
fi
"$OB" profile dense --shape M=8,N=128,K=256 --sizes N=128:256:x2 --threads $threads --knobs neighbours:2 \
  --corun tasks --db "$db" --limits quick "${FAST[@]}" >"$tmp/p.out" 2>&1
rc1=$?
"$OB" tune --op dense --shape M=8,N=128,K=256 --tuner random --trials 6 --db "$db" "${FAST[@]}" \
  >"$tmp/t.out" 2>&1
rc2=$?
"$OB" schedule --modelsource simple --modelname simple --timeline "$tmp/timeline.svg" >"$tmp/s.out" 2>&1
rc3=$?
check "the data: a profile sweep, a tuning run, a timeline" $([ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] && [ $rc3 -eq 0 ]; echo $?) \
  "rc=$rc1/$rc2/$rc3" "$(tail -3 "$tmp/p.out")" "$(tail -3 "$tmp/t.out")" "$(tail -3 "$tmp/s.out")"
dbsum=$(md5sum <"$db")
out=$tmp/report
"$OB" report --db "$db" --out "$out" --schedule "$tmp/timeline.svg" >"$tmp/r.out" 2>&1
rc=$?
check "opbench report writes index.html" $([ $rc -eq 0 ] && [ -s "$out/index.html" ]; echo $?) "rc=$rc" \
  "$(cat "$tmp/r.out")"
check "the report leaves the database as it was" $([ "$(md5sum <"$db")" = "$dbsum" ]; echo $?)
nplots=0
for p in $want; do
  nplots=$((nplots + 1))
  svg=$out/$p.svg
  # gnuplot's SVG puts each plotted series in <g id="gnuplot_plot_N">: the first
  # one must draw something (a path, a point symbol)
  drawn=$(awk '/id="gnuplot_plot_1"/ { on = 1 } on' "$svg" 2>/dev/null | grep -c '<path\|<use\|<image')
  [ "$p" = timeline1 ] && drawn=$(grep -c '<path\|<rect\|<polygon' "$svg" 2>/dev/null)
  check "plot $p: on the page, its SVG beside it, with data drawn" \
    $(grep -q "id=\"plot-$p\"" "$out/index.html" && grep -q "</svg>" "$svg" && [ "${drawn:-0}" -ge 1 ]; echo $?) \
    "drawn=$drawn" "$(grep "$p" "$tmp/r.out")"
done
check "no plot left out for want of data" $(! grep -q "Plots left out" "$out/index.html"; echo $?) \
  "$(sed -n '/Plots left out/,/<\/ul>/p' "$out/index.html")"
check "self-contained: every plot embedded as a data URI, no other file fetched" \
  $([ "$(grep -c 'src="data:image/svg+xml;base64,' "$out/index.html")" -eq $nplots ] &&
    ! grep -q 'src="http\|src="file' "$out/index.html"; echo $?)

# ---- 2. in the browser ------------------------------------------------------------------------
browser --dump-dom "file://$out/index.html" >"$tmp/dom.html"
body=$(grep -o '<body[^>]*>' "$tmp/dom.html" | head -1)
check "Chromium decodes every plot ($nplots loaded, none broken)" \
  $(echo "$body" | grep -q "data-plots-loaded=\"$nplots\"" && echo "$body" | grep -q 'data-plots-broken="0"'; echo $?) \
  "body: $body" "$(tail -3 "$tmp/chrome.log")"
browser --window-size=1100,5000 --screenshot="$tmp/shot.png" "file://$out/index.html" >/dev/null
dims=$(file "$tmp/shot.png" 2>/dev/null)
size=$(stat -c %s "$tmp/shot.png" 2>/dev/null || echo 0)
check "a screenshot of the page (PNG 1100 x 5000, $size bytes)" \
  $(echo "$dims" | grep -q 'PNG image data, 1100 x 5000' && [ "$size" -gt 50000 ]; echo $?) "$dims"
# the check can fail: a plot whose data is damaged is reported broken
sed '0,/src="data:image\/svg+xml;base64,/s//src="data:image\/svg+xml;base64,AAAA/' "$out/index.html" \
  >"$tmp/damaged.html"
browser --dump-dom "file://$tmp/damaged.html" >"$tmp/dom2.html"
body2=$(grep -o '<body[^>]*>' "$tmp/dom2.html" | head -1)
check "a damaged plot is caught (data-plots-broken=\"1\")" \
  $(echo "$body2" | grep -q 'data-plots-broken="1"'; echo $?) "body: $body2"

# ---- 3. bad input -----------------------------------------------------------------------------
bad_case() { # bad_case NAME EXPECTED-TEXT ARGS...
  local name=$1 want=$2
  shift 2
  "$OB" "$@" >"$tmp/bad.out" 2>"$tmp/bad.err"
  local rc=$? nl
  nl=$(wc -l <"$tmp/bad.err")
  check "$name: exit 2, one error line naming it" \
    $([ $rc -eq 2 ] && [ "$nl" -eq 1 ] && grep -q "^opbench: error: .*$want" "$tmp/bad.err"; echo $?) \
    "rc=$rc lines=$nl" "$(cat "$tmp/bad.err")"
}
empty=$tmp/empty.db
cp "$db" "$empty"
sqlite3 "$empty" 'DELETE FROM profiles; DELETE FROM tuning_runs;'
esum=$(md5sum <"$empty")
bad_case "a database without profiles" "no profiles" report --db "$empty" --out "$tmp/r2"
check "nothing written for it, the database unchanged" \
  $([ ! -e "$tmp/r2" ] && [ "$(md5sum <"$empty")" = "$esum" ]; echo $?)
bad_case "a missing database" "nosuch.db" report --db "$tmp/nosuch.db" --out "$tmp/r3"
check "the missing database is not created" $([ ! -e "$tmp/nosuch.db" ] && [ ! -e "$tmp/r3" ]; echo $?)
touch "$tmp/afile"
bad_case "--out a file" "afile" report --db "$db" --out "$tmp/afile"
echo '{"not": "svg"}' >"$tmp/sched.json"
bad_case "--schedule that is not an SVG" "sched.json" report --db "$db" --out "$tmp/r4" --schedule "$tmp/sched.json"
bad_case "--schedule missing" "nosuch.svg" report --db "$db" --out "$tmp/r5" --schedule "$tmp/nosuch.svg"
check "nothing written for the bad schedules" $([ ! -e "$tmp/r4" ] && [ ! -e "$tmp/r5" ]; echo $?)
bad_case "no --out" "--out" report --db "$db"
mkdir -p "$tmp/nognuplot"
ln -s "$(command -v sh)" "$tmp/nognuplot/sh"
PATH=$tmp/nognuplot "$OB" report --db "$db" --out "$tmp/r6" >"$tmp/bad.out" 2>"$tmp/bad.err"
rc=$?
check "gnuplot missing: exit 2, one error line naming it" \
  $([ $rc -eq 2 ] && [ "$(wc -l <"$tmp/bad.err")" -eq 1 ] && grep -q '^opbench: error: .*gnuplot' "$tmp/bad.err" &&
    [ ! -e "$tmp/r6/index.html" ]; echo $?) "rc=$rc" "$(cat "$tmp/bad.err")"
check "the database survived the bad runs" $([ "$(md5sum <"$db")" = "$dbsum" ]; echo $?)

finish
