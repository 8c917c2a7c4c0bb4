#!/usr/bin/env bash
# hostile_test.sh: `opbench` against hostile but realistic input, one
# section per class of issue 16, each with the reported example and its
# neighbours. Usage: hostile_test.sh OPBENCH
#  1. sizes that overflow: absurd shapes, padding, dilation, products of
#     valid attributes, shapes arriving through an imported AutoTVM log, and
#     buffers over the memory budget: one error line naming the limit;
#  2. files that are not files: directories, /dev/zero, /dev/urandom, pipes
#     without end, FIFOs, devices as --suite, --log, --db and import logs;
#     tune --log /dev/stdout into a pipe finishes;
#  3. exports that destroy: --out naming the database (also through a
#     symbolic or hard link, its -wal file, or stdout redirected onto it) is
#     refused and the database survives; devices and FIFOs are written, not
#     replaced; a link to a regular file keeps the link;
#  4. silent misparse: a stride or pad column too long for its field;
#  5. an import line with costs [1e308, 1e308] or an infinite timestamp is
#     skipped and listed, the others stored;
#  6. one line per error: a failed integrity check, a damaged schema with
#     the xgb tuner (no transfer warning first), a file name with a newline.
# Every failing command must exit 2 with exactly one `opbench: error:` line
# and nothing on stdout. Prints `ok - name` / `not ok - name`, then
# `N passed, M failed`.
set -u
OB=${1:?usage: hostile_test.sh path/to/opbench}
[ -x "$OB" ] || { echo "hostile_test.sh: $OB is not an executable" >&2; exit 1; }
command -v sqlite3 >/dev/null || { echo "hostile_test.sh: needs the sqlite3 CLI" >&2; exit 1; }
tmp=$(mktemp -d /tmp/opbench_hostile.XXXXXX)
bgpids=()
cleanup() {
  for p in "${bgpids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$tmp"
}
trap cleanup EXIT
export OPBENCH_CACHE=$tmp/kcache
# ASan reserves terabytes of address space: ulimit -v cases run only in a
# build without it
asan=0
if ldd "$OB" 2>/dev/null | grep -q libasan || nm "$OB" 2>/dev/null | grep -q __asan_init; then asan=1; fi

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
# run ARGS...: opbench with a time limit (a hang fails the case); leaves rc,
# $tmp/out and $tmp/err
run() {
  args=("$@")
  timeout 120 "$OB" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  rc=$?
}
diag() { echo "opbench ${args[*]}"; echo "exit $rc"; head -c 600 "$tmp/out"; head -c 600 "$tmp/err"; }
# bad NAME PATTERN ARGS...: exit 2, stdout empty, stderr one line that
# starts with `opbench: error: ` and matches PATTERN
bad() {
  local name=$1 pattern=$2
  shift 2
  run "$@"
  [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && [ ! -s "$tmp/out" ] &&
    grep -q '^opbench: error: ' "$tmp/err" && grep -Eq -- "$pattern" "$tmp/err"
  check "$name" $? "$(diag)"
}
# good NAME PATTERN ARGS...: exit 0 and stdout matches PATTERN
good() {
  local name=$1 pattern=$2
  shift 2
  run "$@"
  [ "$rc" -eq 0 ] && grep -Eq -- "$pattern" "$tmp/out"
  check "$name" $? "$(diag)"
}
md5() { md5sum <"$1" | cut -d' ' -f1; }
count() { sqlite3 "$1" 'SELECT count(*) FROM measurements' 2>&1; }

TINY=(--op conv2d --shape N=1,C=8,H=10,W=10,K=8,R=3,S=3)
BIG=4611686018427387904 # 2^62
LIM='more than the limit of 2147483648 \(2\^31\) elements per tensor'

# ---- 1. sizes that overflow ------------------------------------------------------------
bad "conv2d N=2^62 (was SIGSEGV in NCHWc packing)" "conv2d: N = $BIG is out of range.*2147483647" \
  op conv2d --shape N=$BIG,C=4,H=1,W=1,K=4,R=1,S=1
bad "relu N=2^62 (was exit 0, GFLOPS 0.00)" "relu: N = $BIG is out of range" \
  op relu --shape N=$BIG,C=4,H=1,W=1
bad "--pad 2147483647 (was accepted, the worker aborted)" "conv2d output.*$LIM" \
  op conv2d --shape N=1,C=4,H=1,W=1,K=4,R=1,S=1 --pad 2147483647
bad "--pad 2147483648 is outside the flag's range" "--pad '2147483648'" \
  op conv2d --shape N=1,C=4,H=1,W=1,K=4,R=1,S=1 --pad 2147483648
bad "padded data over the limit while data and output fit" "conv2d padded data.*$LIM" \
  op conv2d --shape N=1,C=1,H=1,W=1,K=1,R=40000,S=40000 --pad 40000
bad "--dilation 2147483647 on a tall input" "empty output|$LIM" \
  op conv2d --shape N=1,C=1,H=2147483647,W=1,K=1,R=2,S=1 --dilation 2147483647
bad "stride 2 with a window larger than the input (was a wrong answer)" "empty output" \
  op conv2d --shape N=1,C=1,H=2,W=2,K=1,R=3,S=3 --stride 2
bad "depthwise_conv2d: the same window" "empty output" \
  op depthwise_conv2d --shape N=1,C=1,H=2,W=2,R=3,S=3 --stride 2
bad "a product of valid attributes: relu 65536 x 65536" "relu x.*65536 x 65536 x 1 x 1.*$LIM" \
  op relu --shape N=65536,C=65536,H=1,W=1
bad "dense M=2^31-1, N=2" "dense C \(M x N\).*$LIM" op dense --shape M=2147483647,N=2,K=1
bad "batch_matmul" "batch_matmul A.*$LIM" op batch_matmul --shape B=65536,M=65536,N=1,K=2
bad "pool2d" "pool2d data.*$LIM" op pool2d --shape N=65536,C=65536,H=1,W=1,R=1,S=1
bad "global_avg_pool" "global_avg_pool data.*$LIM" op global_avg_pool --shape N=65536,C=65536,H=2,W=2
bad "softmax" "softmax x.*$LIM" op softmax --shape M=2147483647,N=2147483647
bad "layer_norm" "layer_norm x.*$LIM" op layer_norm --shape M=65536,N=65537
bad "batch_norm" "batch_norm x.*$LIM" op batch_norm --shape N=2,C=65536,H=65536,W=1
bad "concat: C1 + C2 beyond int32" "concat output.*$LIM" \
  op concat --shape N=1,C1=2147483647,C2=2147483647,H=1,W=1
bad "to_nchwc" "to_nchwc x.*$LIM" op to_nchwc --shape N=65536,C=65536,H=1,W=1,cb=1
bad "elementwise add" "add x.*$LIM" op add --shape N=65536,C=65536,H=1,W=1
bad "clip lo below -(2^31-1)" "clip: lo = -2147483648 is out of range" \
  op clip --shape N=1,C=1,H=1,W=1,lo=-2147483648,hi=1
bad "space: the same checks" "$LIM" space dense --shape M=2147483647,N=2147483647,K=1
bad "tune: the same checks, before any database is made" "$LIM" \
  tune --op relu --shape N=65536,C=65536,H=1,W=1 --db "$tmp/never.db"
check "tune made no database for a refused shape" $([ ! -e "$tmp/never.db" ]; echo $?)
good "a small workload still runs" "GFLOPS" op relu --shape N=1,C=4,H=3,W=3
good "the largest attribute value is accepted where the tensors fit" "default" \
  space relu --shape N=2147483647,C=1,H=1,W=1
if [ $asan -eq 0 ]; then
  # buffers of 2 x 4 GiB against a 4 GiB address space: refused up front
  (ulimit -v 4000000; timeout 120 "$OB" op relu --shape N=1,C=1,H=32768,W=32768 >"$tmp/out" 2>"$tmp/err")
  rc=$?
  args=(op relu --shape N=1,C=1,H=32768,W=32768 "(ulimit -v 4000000)")
  [ $rc -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] &&
    grep -Eq '^opbench: error: .*buffers need 8.00 GiB, more than half of the address-space limit' "$tmp/err"
  check "buffers over the memory budget: one error line (out of memory), exit 2" $? "$(diag)"
fi

# shapes that arrive through an AutoTVM log's arguments
cat >"$tmp/huge.json" <<'EOF'
{"input": ["llvm", "conv2d_NCHWc.x86", [["TENSOR", [4611686018427387904, 4, 1, 1], "float32"], ["TENSOR", [4, 4, 1, 1], "float32"], [1, 1], [0, 0], [1, 1], "NCHW", "NCHW", "float32"], {}], "config": {"index": 1, "entity": []}, "result": [[0.001], 0, 0.1, 1600000000], "version": 0.2}
{"input": ["llvm", "conv2d_nchw.x86", [["TENSOR", [1, 4, 1, 1], "float32"], ["TENSOR", [4, 4, 1, 1], "float32"], [1, 1], [2147483647, 2147483647], [1, 1], "float32"], {}], "config": {"index": 2, "entity": []}, "result": [[0.001], 0, 0.1, 1600000000], "version": 0.2}
{"input": ["llvm", "dense_nopack.x86", [["TENSOR", [2147483647, 2147483647], "float32"], ["TENSOR", [2147483647, 2147483647], "float32"], null, "float32"], {}], "config": {"index": 3, "entity": []}, "result": [[0.001], 0, 0.1, 1600000000], "version": 0.2}
{"input": ["llvm", "dense_nopack.x86", [["TENSOR", [1, 64], "float32"], ["TENSOR", [32, 64], "float32"], null, "float32"], {}], "config": {"index": 4, "entity": [["tile_y", "sp", [-1, 1]]]}, "result": [[0.001], 0, 0.1, 1600000000], "version": 0.2}
EOF
good "import: absurd shapes in a log's arguments are stored under their AutoTVM key" \
  "4 records stored.*" db import "$tmp/huge.json" --db "$tmp/huge.db"
check "import: only the valid dense workload became an opbench workload" \
  $([ "$(sqlite3 "$tmp/huge.db" "SELECT count(*) FROM measurements WHERE workload_key LIKE 'autotvm:%'")" = 3 ] &&
    [ "$(sqlite3 "$tmp/huge.db" "SELECT workload_key FROM measurements WHERE config_index = 4")" = dense/f32/M1N32K64 ]
  echo $?) "$(sqlite3 "$tmp/huge.db" 'SELECT workload_key FROM measurements' 2>&1 | cut -c1-100)"
good "stats of the imported absurd shapes" "records +4 " db stats --db "$tmp/huge.db"
good "export of the imported absurd shapes" "input" db export --format autotvm --db "$tmp/huge.db"

# ---- 2. files that are not files, and files without end ---------------------------------
db=$tmp/t.db
run tune "${TINY[@]}" --tuner random --trials 4 --db "$db"
check "a tuning run fills a database" $rc "$(diag)"
n0=$(count "$db")
m0=$(md5 "$db")

timeout 120 "$OB" tune "${TINY[@]}" --tuner random --trials 4 --db "$db" --log /dev/stdout 2>"$tmp/err" |
  cat >"$tmp/out"
st=("${PIPESTATUS[@]}")
args=(tune --log /dev/stdout "| cat")
rc=${st[0]}
[ "${st[0]}" -eq 0 ] && grep -q '"input"' "$tmp/out" && grep -q '^log  *\/dev\/stdout' "$tmp/out"
check "tune --log /dev/stdout into a pipe finishes (was blocked reading its own pipe)" $? "$(diag)"
good "tune --log /dev/zero appends and reads nothing back" "^log +/dev/zero" \
  tune "${TINY[@]}" --tuner random --trials 4 --db "$db" --log /dev/zero
bad "tune --log a directory, refused before any trial" "--log '$tmp': it is a directory" \
  tune "${TINY[@]}" --tuner random --trials 8 --db "$db" --log "$tmp"
check "... and no trial was run for it" $([ "$(count "$db")" = "$n0" ]; echo $?)
mkfifo "$tmp/fifo"
bad "tune --log a FIFO nobody reads: an error before the run, not a hang" \
  "no process reads that pipe" tune "${TINY[@]}" --tuner random --trials 4 --db "$db" --log "$tmp/fifo"
(timeout 60 cat "$tmp/fifo" >"$tmp/fifo.out") &
bgpids+=($!)
sleep 0.3
good "tune --log a FIFO with a reader" "^log +" \
  tune "${TINY[@]}" --tuner random --trials 4 --db "$db" --log "$tmp/fifo"
wait "${bgpids[-1]}"
check "... the reader got the log lines" $(grep -q '"input"' "$tmp/fifo.out"; echo $?)
check "the FIFO is still a FIFO" $([ -p "$tmp/fifo" ]; echo $?)

bad "db import /dev/zero (was 3.4 GB in 7 s)" "/dev/zero:1: a NUL byte: not a text file" \
  db import /dev/zero --db "$db"
bad "db import /dev/urandom" "/dev/urandom:[0-9]+: a NUL byte: not a text file" \
  db import /dev/urandom --db "$db"
bad "db import the database itself" "a NUL byte: not a text file" db import "$db" --db "$db"
bad "--suite the database" "a NUL byte: not a text file" bench --suite "$db" --dry-run
bad "db import a directory" "cannot read AutoTVM log '$tmp': it is a directory" \
  db import "$tmp" --db "$db"
printf '%s\n' "$(head -c 2000000 /dev/zero | tr '\0' 'x')" >"$tmp/longline.json"
sed -n 4p "$tmp/huge.json" >>"$tmp/longline.json"
good "db import: a line over 1 MiB is skipped as broken, the next one read" \
  "2 lines, 1 records stored.*1 broken lines skipped" db import "$tmp/longline.json" --db "$tmp/long.db"
check "... and listed by number" $(grep -q 'line 1: longer than the limit of 1048576 bytes' "$tmp/out"; echo $?) "$(diag)"
sed -n 4p "$tmp/huge.json" >"$tmp/one.json"
# run() reads /dev/null on stdin; these need their own
cat "$tmp/one.json" | timeout 60 "$OB" db import /dev/stdin --db "$tmp/pipe.db" >"$tmp/out" 2>"$tmp/err"
rc=$?
args=(db import /dev/stdin "(cat one.json |)")
[ $rc -eq 0 ] && grep -q "1 records stored" "$tmp/out"
check "db import through a pipe (a stream, read once)" $? "$(diag)"
timeout 60 "$OB" db import /dev/stdin --db "$tmp/pipe2.db" <"$tmp/one.json" >"$tmp/out" 2>"$tmp/err"
rc=$?
args=(db import /dev/stdin "< one.json")
[ $rc -eq 0 ] && grep -q "1 records stored" "$tmp/out"
check "db import /dev/stdin from a file" $? "$(diag)"
check "the database survived every refused import" $([ "$(count "$db")" -ge "$n0" ] &&
  [ "$(sqlite3 "$db" 'PRAGMA integrity_check')" = ok ]; echo $?)

bad "--suite a directory (was: Input/output error)" "cannot read suite '$tmp': it is a directory" \
  bench --suite "$tmp" --dry-run
bad "--suite /dev/zero" "/dev/zero:1: a NUL byte" bench --suite /dev/zero --dry-run
bad "--suite /dev/urandom" "/dev/urandom:[0-9]+: a NUL byte" bench --suite /dev/urandom --dry-run
yes "conv2d N=1,C=8,H=10,W=10,K=8,R=3,S=3 1" | timeout 60 "$OB" bench --suite /dev/stdin --dry-run \
  >"$tmp/out" 2>"$tmp/err"
rc=$?
args=(bench --suite /dev/stdin "(yes | ...)")
[ $rc -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] &&
  grep -q 'more than 16777216 bytes, the limit for this input' "$tmp/err"
check "--suite from an endless pipe (was SIGABRT, out of memory)" $? "$(diag)"
(yes | tr -d '\n') | timeout 60 "$OB" bench --suite /dev/stdin --dry-run >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 2 ] && grep -q 'line longer than the limit of 65536 bytes' "$tmp/err"
check "--suite: an endless line" $? "$(diag)"
for i in $(seq 10001); do echo "relu N=1,C=1,H=1,W=$i 1"; done >"$tmp/many.txt"
bad "--suite with more than 10000 workloads" "many.txt:10001: more than 10000 workloads" \
  bench --suite "$tmp/many.txt" --dry-run
head -10000 "$tmp/many.txt" >"$tmp/most.txt"
good "--suite with 10000 workloads" "10000 workloads" bench --suite "$tmp/most.txt" --dry-run
bad "--db /dev/null" "database '/dev/null' is a pipe or character device" \
  tune "${TINY[@]}" --trials 2 --db /dev/null
bad "--db a directory" "database '$tmp' is a directory" db stats --db "$tmp"
bad "--db a FIFO" "is a pipe or character device" db stats --db "$tmp/fifo"

# ---- 3. exports that destroy ----------------------------------------------------------------
m0=$(md5 "$db")
n0=$(count "$db")
bad "db export --out the database (was: every record lost)" "output '$db' is '$db'.*destroy" \
  db export --db "$db" --out "$db"
ln -s "$db" "$tmp/link.db"
bad "--out a symbolic link to the database" "output '$tmp/link.db' is '$db'" \
  db export --db "$db" --out "$tmp/link.db"
ln "$db" "$tmp/hard.db"
bad "--out a hard link to the database" "output '$tmp/hard.db' is '$db'" \
  db export --db "$db" --out "$tmp/hard.db"
bad "--db through a link, --out the database itself" "output '$db' is '$tmp/link.db'" \
  db export --db "$tmp/link.db" --out "$db" --format autotvm
timeout 60 "$OB" db export --db "$db" >>"$db" 2>"$tmp/err"
rc=$?
args=(db export ">>" "$db")
[ $rc -eq 2 ] && grep -q "stdout is redirected to '$db'" "$tmp/err"
check "stdout redirected (>>) onto the database" $? "$(diag)"
check "the database survived every refused export" \
  $([ "$(md5 "$db")" = "$m0" ] && [ "$(count "$db")" = "$n0" ] &&
    [ "$(sqlite3 "$db" 'PRAGMA integrity_check')" = ok ]; echo $?)
run db export --db "$db" --out /dev/null
[ $rc -eq 0 ] && grep -q "exported $n0 records as CSV to /dev/null" "$tmp/err"
check "db export --out /dev/null works" $? "$(diag)"
check "/dev/null is still a character device" $([ -c /dev/null ]; echo $?)
bad "--out a directory" "cannot write '$tmp': it is a directory" db export --db "$db" --out "$tmp"
rm -f "$tmp/fifo"
mkfifo "$tmp/fifo"
bad "--out a FIFO nobody reads: an error, not a hang" "no process reads that pipe" \
  db export --db "$db" --out "$tmp/fifo"
(timeout 60 cat "$tmp/fifo" >"$tmp/fifo.out") &
bgpids+=($!)
sleep 0.3
run db export --db "$db" --out "$tmp/fifo" --format autotvm
wait "${bgpids[-1]}"
[ $rc -eq 0 ] && [ -p "$tmp/fifo" ] && [ "$(wc -l <"$tmp/fifo.out")" -eq "$n0" ]
check "--out a FIFO with a reader: written directly, the FIFO stays" $? "$(diag)"
echo old >"$tmp/real.csv"
chmod 640 "$tmp/real.csv"
ln -s real.csv "$tmp/csv.link"
run db export --db "$db" --out "$tmp/csv.link"
[ $rc -eq 0 ] && [ -L "$tmp/csv.link" ] && grep -q '^host,workload' "$tmp/real.csv" &&
  [ "$(stat -c %a "$tmp/real.csv")" = 640 ]
check "--out a link to a regular file: the file is replaced (mode kept), the link kept" $? "$(diag)"
ln -s "$tmp/nowhere" "$tmp/dangling"
bad "--out a dangling link" "a symbolic link to nothing" db export --db "$db" --out "$tmp/dangling"
check "no temporary files are left behind" $(! ls "$tmp" | grep -q '\.tmp\.'; echo $?) "$(ls "$tmp")"

# ---- 4. silent misparse ---------------------------------------------------------------------------
printf 'conv2d N=1,C=8,H=10,W=10,K=8,R=3,S=3 000000000000000000000002 1 1\n' >"$tmp/s24.txt"
bad "a 24-character stride column (was dropped: measured with stride 1)" \
  "s24.txt:1: stride column longer than 23 characters" bench --suite "$tmp/s24.txt" --dry-run
printf 'conv2d N=1,C=8,H=10,W=10,K=8,R=3,S=3 1 0000000000000000000000000000001 1\n' >"$tmp/p24.txt"
bad "a 31-character pad column" "p24.txt:1: pad column longer than 23 characters" \
  bench --suite "$tmp/p24.txt" --dry-run
printf 'conv2d N=1,C=8,H=10,W=10,K=8,R=3,S=3 00000000000000000000002 1 1\n' >"$tmp/s23.txt"
good "a 23-character stride column is read in full" '"workload":.*/s2,2/p1,1,1,1/' \
  bench --suite "$tmp/s23.txt" --json --repeat 1
printf 'conv2d N=1,C=8,H=10,W=10,K=8,R=3,S=3,stride_h=000000000000000000000000000000002 1\n' \
  >"$tmp/sh.txt"
good "a long number inside the shape column is read in full" '"workload":.*/s2,1/' \
  bench --suite "$tmp/sh.txt" --json --repeat 1

# ---- 5. import that gives up ------------------------------------------------------------------------
cat >"$tmp/costs.json" <<'EOF'
{"input": ["llvm", "dense_nopack.x86", [["TENSOR", [1, 64], "float32"], ["TENSOR", [32, 64], "float32"], null, "float32"], {}], "config": {"index": 3, "entity": [["tile_y", "sp", [-1, 1]]]}, "result": [[0.0001, 0.0002], 0, 1.0, 1600000000.0], "version": 0.2}
{"input": ["llvm", "dense_nopack.x86", [["TENSOR", [1, 64], "float32"], ["TENSOR", [32, 64], "float32"], null, "float32"], {}], "config": {"index": 4, "entity": [["tile_y", "sp", [-1, 1]]]}, "result": [[1e308, 1e308], 0, 1.0, 1600000000.0], "version": 0.2}
{"input": ["llvm", "dense_nopack.x86", [["TENSOR", [1, 64], "float32"], ["TENSOR", [32, 64], "float32"], null, "float32"], {}], "config": {"index": 5, "entity": [["tile_y", "sp", [-1, 1]]]}, "result": [[0.0001], 0, 1.0, 1e999], "version": 0.2}
{"input": ["llvm", "dense_nopack.x86", [["TENSOR", [1, 64], "float32"], ["TENSOR", [32, 64], "float32"], null, "float32"], {}], "config": {"index": 6, "entity": [["tile_y", "sp", [-1, 1]]]}, "result": [[8e307, 9e307], 0, 1.0, 1600000000.0], "version": 0.2}
{"input": ["llvm", "dense_nopack.x86", [["TENSOR", [1, 64], "float32"], ["TENSOR", [32, 64], "float32"], null, "float32"], {}], "config": {"index": 7, "entity": [["tile_y", "sp", [-1, 1]]]}, "result": [[0.0003], 0, 1.0, 1600000000.0], "version": 0.2}
EOF
good "import: costs [1e308, 1e308] (was: the whole import ended, 0 stored)" \
  "5 lines, 2 records stored.*3 broken lines skipped" db import "$tmp/costs.json" --db "$tmp/costs.db"
check "... each broken line listed with its number" \
  $(grep -q 'line 2: cost 1 of an error-free result is 1e+308 s, not a measurement' "$tmp/out" &&
    grep -q "line 3: 'result' has a timestamp that is not a finite number" "$tmp/out" &&
    grep -q 'line 4: cost 1 of an error-free result is 8e+307 s' "$tmp/out"; echo $?) "$(diag)"
timeout 60 "$OB" db export --format autotvm --db "$tmp/costs.db" >"$tmp/back.json" 2>/dev/null
run db import "$tmp/back.json" --db "$tmp/costs.db"
[ $rc -eq 0 ] && grep -q "0 records stored, 2 already stored" "$tmp/out"
check "... and the stored ones export and read back as the same records" $? "$(diag)"

# ---- 6. one line per error -------------------------------------------------------------------------
cp "$db" "$tmp/ic.db"
sqlite3 "$tmp/ic.db" 'PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE' >/dev/null
root=$(sqlite3 "$tmp/ic.db" "SELECT rootpage FROM sqlite_master WHERE name = 'measurements_best'")
psz=$(sqlite3 "$tmp/ic.db" 'PRAGMA page_size')
# garbage over the cells of one index page: a multi-line integrity report
head -c 300 /dev/zero | tr '\0' '\007' |
  dd of="$tmp/ic.db" bs=1 seek=$(( (root - 1) * psz + psz - 600 )) conv=notrunc 2>/dev/null
[ "$(sqlite3 "$tmp/ic.db" 'PRAGMA integrity_check' | wc -l)" -gt 1 ]
check "(the damaged database fails SQLite's integrity check on several lines)" $?
bad "a failed integrity check is one line" "ic.db' failed its integrity check: .*missing from index" \
  tune "${TINY[@]}" --trials 6 --db "$tmp/ic.db"
cp "$db" "$tmp/noms.db"
sqlite3 "$tmp/noms.db" 'DROP TABLE measurements'
bad "xgb on a database without its measurements table: one line, no transfer warning first" \
  "lacks the table 'measurements'" tune "${TINY[@]}" --tuner xgb --trials 4 --db "$tmp/noms.db"
bad "db stats on that database" "lacks the table 'measurements'" db stats --db "$tmp/noms.db"
nl=$'a\nb'
bad "a file name with a newline stays on one line" "a b': No such file" \
  bench --suite "$tmp/$nl" --dry-run

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
