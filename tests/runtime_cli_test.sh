#!/usr/bin/env bash
# runtime_cli_test.sh: `opbench run` and `opbench tune --modelname` (the
# collector) end to end on the small CNN: the checked and timed run, the
# profile, oneDNN kernels, --input/--save-output, the vm executor reusing a
# shape, a short tuning run whose records the next run applies, records of
# another host not applied (said once), and every bad input: one
# `opbench: error:` line and exit 2. Usage: runtime_cli_test.sh OPBENCH.
set -u
. "$(dirname "$0")/sh_util.sh"

OB=${1:?usage: runtime_cli_test.sh path/to/opbench}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# kernels through the build's cache when ctest gives one
export OPBENCH_CACHE=${OPBENCH_CACHE:-$tmp/cache}

passed=0
failed=0
# bad cases: exit 2 and exactly one line on stderr, the `opbench: error:` line
# matching PATTERN (progress lines on stdout before a failure are allowed:
# they are what happened).
bad_stdout_ok=1
check() { if eval "$2"; then ok "$1"; else failed=$((failed + 1)); echo "not ok - $1"; fi; }

S=(--modelsource simple --modelname simple)
T=(--repeat 3 --max-cv 0)

# ---- opbench run ---------------------------------------------------------------------
good "run: checked against the reference" 'against the naive reference: ok' run "${S[@]}" --kernels default "${T[@]}"
check "run: whole-model latency with the kernels' protocol" "grep -Eq '^latency +median [0-9.]+ ms, mean [0-9.]+ ms, CV' '$tmp/out'"
check "run: the memory plan's peak against the sum" "grep -Eq '^memory +activations: peak [0-9.]+ MB .* for all [0-9]+ buffers' '$tmp/out'"
check "run: every task at its default, said" "grep -Eq '5 tasks \(0 tuned, 5 default configs\)' '$tmp/out'"
good "run --profile: the steps' sum beside the end-to-end time" '^profile +sum of the steps [0-9.]+ ms; measured end to end' \
  run "${S[@]}" --kernels default --profile "${T[@]}"
check "run --profile: each kernel step alone beside its time in the run" \
  "grep -Eq '^ +[0-9]+ kernel +conv2d +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ ' '$tmp/out' &&
   grep -Eq '^profile +kernel steps [0-9.]+ ms in the run, [0-9.]+ ms alone \(x[0-9.]+\)' '$tmp/out'"
good "run --kernels onednn" 'compiled .* [1-9][0-9]* oneDNN' run "${S[@]}" --kernels onednn "${T[@]}"
good "run with a missing --db: defaults, said" 'does not exist: every task runs its default config' \
  run "${S[@]}" --db "$tmp/none.db" "${T[@]}"
if [ "$(nproc)" -ge 2 ]; then
  good "run --threads 2" '2 threads on cores 0,1' run "${S[@]}" --kernels default --threads 2 "${T[@]}"
fi

# --save-output / --input: NumPy files; the same input gives the same output
good "run --save-output" '^saved +' run "${S[@]}" --kernels default --save-output "$tmp/o1.npy" "${T[@]}"
check "--save-output writes a .npy of the output's shape" \
  "head -c 6 '$tmp/o1.npy' | od -c | grep -q 'N   U   M   P   Y' && head -c 128 '$tmp/o1.npy' | grep -aq \"'shape': (1, 10)\""
good "run-reference --save-io writes the seeded input" 'reference +simple' run-reference "${S[@]}" --save-io "$tmp/io"
good "run --input FILE.npy" 'against the naive reference: ok' \
  run "${S[@]}" --kernels default --input "$tmp/io/input0.npy" --save-output "$tmp/o2.npy" "${T[@]}"
check "the seeded input given as .npy gives the output of the seeded run" "cmp -s '$tmp/o1.npy' '$tmp/o2.npy'"
head -c $((3 * 32 * 32 * 4)) /dev/zero >"$tmp/zeros.f32"
good "run --input raw float32 of the input's size" 'against the naive reference: ok' \
  run "${S[@]}" --kernels default --input "$tmp/zeros.f32" --save-output "$tmp/o3.npy" "${T[@]}"
run run "${S[@]}" --kernels default --input "$tmp/zeros.f32" --save-output "$tmp/o4.npy" "${T[@]}"
check "the same --input gives the same output" "cmp -s '$tmp/o3.npy' '$tmp/o4.npy'"
check "another input gives another output" "! cmp -s '$tmp/o1.npy' '$tmp/o3.npy'"

# ---- the vm executor: a shape compiled once, reused -------------------------------
good "run --executor vm: three requests, two shapes" 'vm +2 shape\(s\) compiled for 3 request' \
  run "${S[@]}" --kernels default --executor vm --batchsize 1,2,1 "${T[@]}"
check "vm: the repeated shape is served from what was compiled" \
  "grep -Eq '^ +3 +1 +- +cached ' '$tmp/out' && grep -Eq '^ +2 +2 +- +yes ' '$tmp/out'"

# ---- the collector: tune, then compare untuned, tuned and oneDNN -------------------
db=$tmp/t.db
# 7 tasks; the three 3x3 stride-1 convolutions under conv2d_winograd.x86 too, the dense
# under dense.x86 too: 11 task-template pairs
good "tune --modelname: AutoTVM's per-task progress" '^\[Task 1/11\] Current/Best' \
  tune "${S[@]}" --trials 4 --db "$db" --iftune true --ifcompare true --tuner random "${T[@]}"
check "tune --modelname: the trials measured with the weights cold, the activation warm (the default)" \
  "grep -Eq '^tasks .*weights flushed before every call, the activation warm' '$tmp/out'"
check "  ...and their records say cold weights (flush 2), none warm or all cold" \
  "[ \$(sqlite3 '$db' 'select count(*) from measurements where flush in (0, 1)') = 0 ] && [ \$(sqlite3 '$db' 'select count(*) from measurements where flush = 2') -gt 0 ]"
check "tune --modelname: Winograd tuned beside the blocked direct template" \
  "grep -Eq '^tuned +7 tasks \(11 task-template pairs\)' '$tmp/out'"
check "tune --ifcompare: untuned, tuned and oneDNN, and the speedups" \
  "grep -Eq '^  untuned +[0-9.]+ +[0-9.]+' '$tmp/out' && grep -Eq '^  onednn +[0-9.]+' '$tmp/out' && grep -Eq '^speedup +tuned over untuned' '$tmp/out' && grep -Eq '^speedup +tuned over oneDNN kernels' '$tmp/out'"
check "tune --ifcompare: per task" "grep -q '^per task ' '$tmp/out' && grep -Eq '^ +1 +1 +[0-9.]+ +[0-9.]+ +[0-9.]+ .*conv2d' '$tmp/out'"
check "tune --ifcompare: the host's conversion rates measured and stored for the plan" \
  "grep -q '^limits .*conversion rates measured and stored' '$tmp/out' && [ \$(sqlite3 '$db' \"select count(*) from host_limits where name like 'cv_%' and verified = 1\") -ge 6 ] && grep -q '^layout .*this host.s measured copy rates' '$tmp/out'"
check "tune --ifcompare: the three timed in interleaved rounds" \
  "[ \$(grep -Ec '^ +3 interleaved rounds; round medians [0-9.]+ / [0-9.]+ / [0-9.]+ ms' '$tmp/out') = 3 ]"
good "run applies the database's records" 'tasks \([1-9] tuned' run "${S[@]}" --db "$db" "${T[@]}"
check "run: the layout plan priced at the stored conversion rates, none measured again" \
  "grep -q '^layout .*this host.s measured copy rates' '$tmp/out' && ! grep -q 'conversion rates measured' '$tmp/out'"
check "run: the database's latencies beside the measured one" "grep -q '^db sum ' '$tmp/out'"
if [ "$(nproc)" -ge 2 ]; then
  # the oneDNN runtime checks its cores against the calling thread's mask, which the
  # other runtimes' pools narrow while they are alive
  good "tune --ifcompare --threads 2: all three alive at once" '^speedup +tuned over oneDNN kernels' \
    tune "${S[@]}" --db "$db" --iftune false --ifcompare true --threads 2 "${T[@]}"
fi
# in-graph step records: a run of their own stores them, the next run of the plan sums them
good "run --record-steps: every step's in-graph latency stored" '^recorded +in-graph latencies of [0-9]+ steps' \
  run "${S[@]}" --db "$db" --record-steps "${T[@]}"
good "run: the in-graph records of every step summed beside the measured latency" \
  '^db in-graph +the database.s in-graph records of all [0-9]+ steps of this plan' run "${S[@]}" --db "$db" "${T[@]}"
good "tune --ifcompare: the tuned plan's in-graph records summed" '^db in-graph +the database.s in-graph records of all' \
  tune "${S[@]}" --db "$db" --iftune false --ifcompare true "${T[@]}"
good "run at 2 threads: another plan, none of the 1-thread records" '^db in-graph +in-graph records of 0 of' \
  run "${S[@]}" --db "$db" --threads 2 "${T[@]}"
# the comparison records the tuned plan's steps in its own process and sums them
good "tune --ifcompare --record-steps: the tuned plan's steps recorded in the comparison" \
  '^recorded +in-graph latencies of [0-9]+ steps' \
  tune "${S[@]}" --db "$db" --iftune false --ifcompare true --threads 2 --record-steps "${T[@]}"
check "  ...and summed: all of this plan's steps" "grep -Eq '^db in-graph +the database.s in-graph records of all' '$tmp/out'"
bad "tune --record-steps without the comparison" 'needs a model and --ifcompare true' \
  tune "${S[@]}" --db "$db" --iftune false --ifcompare false --record-steps
bad "tune --op --record-steps" 'needs a model and --ifcompare true' \
  tune --op dense --shape M=1,N=8,K=8 --db "$db" --record-steps
bad "run --record-steps with --executor vm" 'record-steps records the steps of the graph executor' \
  run "${S[@]}" --db "$db" --record-steps --executor vm --batchsize 1,2
good "tune --iftune false --ifcompare false: tasks listed only" '^tasks +7 distinct workloads' \
  tune "${S[@]}" --db "$db" --iftune false --ifcompare false
check "  ...and nothing run" "! grep -q '^summary' '$tmp/out'"
cp "$db" "$tmp/other.db"
sqlite3 "$tmp/other.db" "UPDATE measurements SET host='another-host'; UPDATE confirmed SET host='another-host'; UPDATE hosts SET fingerprint='another-host'" 2>/dev/null
good "records of another host are not applied, said once" 'from other hosts only; they are not applied' \
  run "${S[@]}" --db "$tmp/other.db" "${T[@]}"
check "  ...once" "[ \$(grep -c 'other hosts only' '$tmp/out') -eq 1 ] && grep -q '0 tuned' '$tmp/out'"

# ---- bad input: one line, exit 2 -----------------------------------------------------
bad "run --batchsize 0" 'batch size of 0' run "${S[@]}" --batchsize 0
bad "run: unknown model" "nosuch" run --modelname nosuch
bad "run: unknown model source" "nowhere" run --modelsource nowhere --modelname simple
bad "run --kernels bogus" "unknown kernel source 'bogus'" run "${S[@]}" --kernels bogus
bad "run --executor bogus" "unknown executor 'bogus'" run "${S[@]}" --executor bogus
bad "a list of batch sizes needs --executor vm" 'list of batch sizes' run "${S[@]}" --batchsize 1,2
bad "tune --executor vm" 'executor vm serves requests' tune "${S[@]}" --executor vm
bad "tune --iftune maybe" "--iftune: bad value 'maybe'" tune "${S[@]}" --iftune maybe
bad "tune with --op and a model" 'not both' tune "${S[@]}" --op dense --shape M=1,N=8,K=8
bad "model flags on tune --op" 'is for tuning a model' tune --op dense --shape M=1,N=8,K=8 --ifcompare false
bad "run --input: no such file" "$tmp/nofile.npy" run "${S[@]}" --kernels default --input "$tmp/nofile.npy"
head -c 100 /dev/zero >"$tmp/short.f32"
bad "run --input: raw file of the wrong size" 'short.f32' run "${S[@]}" --kernels default --input "$tmp/short.f32"
bad "run --input: .npy of another shape" 'o1.npy' run "${S[@]}" --kernels default --input "$tmp/o1.npy"
printf '\x93NUMPY\x01\x00garbage' >"$tmp/bad.npy"
bad "run --input: malformed .npy" 'bad.npy' run "${S[@]}" --kernels default --input "$tmp/bad.npy"
bad "run --save-output into a missing folder" 'save-output' \
  run "${S[@]}" --kernels default --save-output "$tmp/no/such/dir/o.npy" "${T[@]}"
echo "not a database" >"$tmp/junk.db"
bad "run --db: not a database" 'junk.db' run "${S[@]}" --db "$tmp/junk.db"
bad "vm: a batch size of 0 in the list" 'batch size of 0|bad value' run "${S[@]}" --executor vm --batchsize 1,0
good "tune --modelname --warm: warm caches" '^tasks .*warm caches \(--warm\)' \
  tune "${S[@]}" --trials 1 --db "$tmp/warm.db" --iftune true --ifcompare false --tuner random --warm "${T[@]}"
bad "tune --modelname --warm --flush" '--warm is for tuning a model' \
  tune "${S[@]}" --db "$tmp/warm.db" --warm --flush
check "the database is untouched by the failures" "[ -s '$db' ] && sqlite3 '$db' 'SELECT count(*) FROM measurements' | grep -Eq '^[1-9]'"

finish
