#!/usr/bin/env bash
# sched_cli_test.sh: `opbench schedule` end to end. Usage: sched_cli_test.sh
# OPBENCH. Runs each case, prints `ok - name` or `not ok - name`, and at the
# end `N passed, M failed`; exits 1 if any failed. Schedule files are edited
# with python3's json module to make each bad case.
set -u
. "$(dirname "$0")/sh_util.sh"

OB=${1:?usage: sched_cli_test.sh path/to/opbench}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

passed=0
failed=0
# edit IN OUT PYTHON: OUT is IN's JSON after the statements (on `s`).
edit() {
  python3 -c "import json,sys
s = json.load(open(sys.argv[1]))
$3
json.dump(s, open(sys.argv[2], 'w'), indent=1)" "$1" "$2"
}

# ---- the three schedulers -----------------------------------------------------------------
M=(--modelsource local --modelname inception-v3)
good "schedule inception-v3: three schedulers" '^ios \(r=3, s=8\) ' schedule "${M[@]}" --cores 2
grep -Eq '^sequential +119 +119/0/0/0 ' "$tmp/out" && ok "sequential: 119 operators, one stage each" ||
  not_ok "sequential: 119 operators, one stage each"
grep -Eq '^greedy +[0-9]+ ' "$tmp/out" && ok "greedy row" || not_ok "greedy row"
grep -q 'predicted by a per-operator model, not measured' "$tmp/out" && ok "says the latencies are predicted" ||
  not_ok "says the latencies are predicted"
grep -Eq '^ios \(r=3, s=8\) +[0-9]+ .* 1[0-9]{3} +[0-9]+ ' "$tmp/out" && ok "ios: ~1.2k DP states" || not_ok "ios: ~1.2k DP states"
good "--r 2 --s 2" '^ios \(r=2, s=2\) ' schedule "${M[@]}" --r 2 --s 2 --cores 2
good "--cores 64 is a prediction" 'planning for 64 cores; this machine has [0-9]+: the plan is a PREDICTION' schedule "${M[@]}" --cores 64
good "--ios-original" '^ios \(r=3, s=8, orig\)' schedule "${M[@]}" --cores 2 --ios-original
good "--print-stages" '^ +1 +[0-9.]+ parallel \[0,1\] Conv2d_1a_3x3.conv$' schedule "${M[@]}" --cores 2 --print-stages
good "squeezenet-1.1" '^ios ' schedule --modelname squeezenet-1.1 --cores 2
good "--json" '"schedulers":\[' schedule "${M[@]}" --cores 2 --json
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert len(d['schedulers'])==3 and d['prediction'] is True and d['units']==119" "$tmp/out" &&
  ok "--json parses: 3 schedulers, a prediction" || not_ok "--json parses: 3 schedulers, a prediction"

# ---- files out ----------------------------------------------------------------------------
good "--schedule-out and --timeline" "wrote $tmp/inc.svg: timeline" schedule "${M[@]}" --cores 2 --schedule-out "$tmp/inc.json" --timeline "$tmp/inc.svg"
grep -q '<svg' "$tmp/inc.svg" 2>/dev/null && grep -q 'opbench-schedule' "$tmp/inc.json" 2>/dev/null && ok "the SVG and the JSON exist" ||
  not_ok "the SVG and the JSON exist"
good "--schedule reads it back: same latency" '^file \(ios\) ' schedule "${M[@]}" --cores 2 --schedule "$tmp/inc.json"
a=$(awk '/^ios /{print $(NF-9)}' "$tmp/out")
b=$(awk '/^file /{print $(NF-9)}' "$tmp/out")
[ -n "$a" ] && [ "$a" = "$b" ] && ok "file and ios predict the same ($a ms)" || not_ok "file and ios predict the same ($a vs $b)"
good "--scheduler greedy --schedule-out" 'wrote .*greedy.json: the greedy schedule' schedule "${M[@]}" --cores 2 --scheduler greedy --schedule-out "$tmp/greedy.json"
good "a greedy schedule file" '^file \(greedy\) ' schedule "${M[@]}" --cores 2 --schedule "$tmp/greedy.json"
good "an 8-core plan" 'wrote' schedule "${M[@]}" --cores 8 --schedule-out "$tmp/inc8.json"

# ---- bad schedule files -----------------------------------------------------------------------
good "resnet-18's schedule" 'wrote' schedule --modelname resnet-18 --cores 2 --schedule-out "$tmp/r18.json"
bad "a schedule for another graph" "is not an operator of 'inception-v3' \(the file is a schedule for 'resnet-18'\)" \
  schedule "${M[@]}" --cores 2 --schedule "$tmp/r18.json"
edit "$tmp/inc.json" "$tmp/missing.json" "del s['stages'][0]"
bad "an operator missing" "operator 'Conv2d_1a_3x3.conv' is in no stage, but stage 1 runs 'Conv2d_2a_3x3.conv'" \
  schedule "${M[@]}" --cores 2 --schedule "$tmp/missing.json"
edit "$tmp/inc.json" "$tmp/twice.json" "s['stages'][1]['groups'][0]['ops'].append('Conv2d_1a_3x3.conv')"
bad "an operator scheduled twice" "stage 2, group 1: operator 'Conv2d_1a_3x3.conv' is scheduled twice \(already in stage 1\)" \
  schedule "${M[@]}" --cores 2 --schedule "$tmp/twice.json"
edit "$tmp/inc8.json" "$tmp/overlap.json" "
st = next(x for x in s['stages'] if len(x.get('groups', [])) > 1)
st['groups'][1]['cores'] = st['groups'][0]['cores']"
bad "overlapping core sets" "stage [0-9]+: group 1 \(operator '[^']+'\) and group 2 \(operator '[^']+'\) both hold core 0" \
  schedule "${M[@]}" --cores 8 --schedule "$tmp/overlap.json"
edit "$tmp/inc.json" "$tmp/beyond.json" "s['stages'][2]['groups'][0]['cores'] = [0, 5]"
bad "a core beyond the machine" "stage 3, group 1 \(operator '[^']+'\): core 5 is beyond the machine's 2 cores" \
  schedule "${M[@]}" --cores 2 --schedule "$tmp/beyond.json"
bad "a plan for more cores than the machine" "is for 8 cores; this machine \(or --cores\) has 2" \
  schedule "${M[@]}" --cores 2 --schedule "$tmp/inc8.json"
edit "$tmp/inc.json" "$tmp/order.json" "s['stages'][0], s['stages'][1] = s['stages'][1], s['stages'][0]"
bad "an operator before its input" "stage 1, group 1: operator 'Conv2d_2a_3x3.conv' runs before its input 'Conv2d_1a_3x3.conv' \(stage 2\)" \
  schedule "${M[@]}" --cores 2 --schedule "$tmp/order.json"
edit "$tmp/inc.json" "$tmp/merge.json" "s['stages'][0] = {'kind': 'merge', 'cores': [0, 1], 'ops': ['Conv2d_1a_3x3.conv', 'Mixed_5b.branch1x1.conv']}"
bad "a merge of convolutions that do not merge" "stage 1 \(merge\): operators 'Conv2d_1a_3x3.conv' and 'Mixed_5b.branch1x1.conv' cannot merge" \
  schedule "${M[@]}" --cores 2 --schedule "$tmp/merge.json"
printf '{"format": "opbench-schedule", "stages": [' >"$tmp/trunc.json"
bad "truncated JSON" "trunc.json: not JSON" schedule "${M[@]}" --cores 2 --schedule "$tmp/trunc.json"
bad "an SVG" "inc.svg: not JSON" schedule "${M[@]}" --cores 2 --schedule "$tmp/inc.svg"
printf '{"model": "inception-v3", "stages": []}' >"$tmp/other.json"
bad "JSON but not a schedule" "not an opbench schedule" schedule "${M[@]}" --cores 2 --schedule "$tmp/other.json"
bad "a directory" "$tmp" schedule "${M[@]}" --cores 2 --schedule "$tmp"
bad "a missing file" "nothing.json" schedule "${M[@]}" --cores 2 --schedule "$tmp/nothing.json"

# ---- bad flags and outputs --------------------------------------------------------------------
bad "unknown model" "unknown model 'inception-v4'" schedule --modelname inception-v4
bad "no model" "needs --modelname" schedule
bad "--r 0" "--r: bad value '0'" schedule "${M[@]}" --r 0
bad "--s x" "--s: bad value 'x'" schedule "${M[@]}" --s x
bad "--cores 0" "--cores: bad value '0'" schedule "${M[@]}" --cores 0
bad "--cores 0-3 (a count here)" "--cores: bad value '0-3'" schedule "${M[@]}" --cores 0-3
bad "--scheduler" "unknown scheduler 'random'" schedule "${M[@]}" --scheduler random
bad "--corun below 1" "--corun: bad value '0.5'" schedule "${M[@]}" --corun 0.5
bad "--schedule-out into a directory" "schedule-out" schedule "${M[@]}" --cores 2 --schedule-out "$tmp"
bad "--timeline in a missing folder" "timeline" schedule "${M[@]}" --cores 2 --timeline "$tmp/no/such/t.svg"
cp "$tmp/inc.svg" "$tmp/keep.svg"
args=(schedule "${M[@]}" --cores 2 --timeline "$tmp/keep.svg" "(PATH without gnuplot)")
env PATH=/nonexistent "$OB" schedule "${M[@]}" --cores 2 --timeline "$tmp/keep.svg" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 2 ] && grep -q 'gnuplot is not installed' "$tmp/err" && cmp -s "$tmp/inc.svg" "$tmp/keep.svg"; then
  ok "gnuplot missing: an error, the old file kept"
else
  not_ok "gnuplot missing: an error, the old file kept"
fi
good "--help" 'PREDICTED by a per-operator model' schedule --help

# ---- opbench run --schedule: the stages run by the graph runtime ---------------------------------
SQ=(--modelname squeezenet-1.1 --input-size 64)
good "squeezenet's IOS schedule" 'wrote' schedule "${SQ[@]}" --cores 2 --schedule-out "$tmp/sq.json"
good "squeezenet's greedy schedule" 'wrote' schedule "${SQ[@]}" --cores 2 --scheduler greedy --schedule-out "$tmp/sqg.json"
good "run --schedule: by stages equal to the sequential run" 'by stages against the sequential run: max \|difference\| .*: ok$' \
  run "${SQ[@]}" --kernels default --schedule "$tmp/sq.json" --repeat 3
good "run --schedule greedy (two groups at once)" '^speedup +[0-9.]+x over the sequential run' \
  run "${SQ[@]}" --kernels default --schedule "$tmp/sqg.json" --repeat 3 --profile
good "schedule --cost measured: stages measured, schedules measured end to end" \
  '^ios \(r=3, s=8\) +[0-9]+ +[0-9/]+ +[0-9.]+ +[0-9.]+x +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[1-9][0-9]* +[0-9.]+ +[0-9.]+ +[0-9.]+x$' \
  schedule "${SQ[@]}" --cores 2 --cost measured --db "$tmp/sc.db"
grep -Eq '^guided +[0-9]+ endings ruled out by the prediction' "$tmp/out" && ok "--cost measured: guided by the prediction" ||
  not_ok "--cost measured: guided by the prediction"
grep -Eq '^picked +(ios plan [1-3]|greedy|sequential), the measured fastest \(the faster of sequential and greedy stays unless beaten by more than 3 % and in two thirds of the samples, each against its nearest in time\): [0-9.]+ of sequential, [0-9.]+ of greedy, [0-9.]+ of the DP.s schedule; .*costed by measurement, [3-5] schedules measured\)$' "$tmp/out" &&
  ok "--cost measured: the DP's schedule measured against sequential and greedy, the fastest kept" ||
  not_ok "--cost measured: the DP's schedule measured against sequential and greedy, the fastest kept"
good "schedule --cost predicted: nothing measured while planning, then end to end" \
  '^greedy +[0-9]+ +[0-9/]+ +[0-9.]+ +[0-9.]+x +- +- +[0-9]+ +[0-9]+ +0 +[0-9.]+ +[0-9.]+ +[0-9.]+x$' \
  schedule "${SQ[@]}" --cores 2 --cost predicted --db "$tmp/sc.db" --schedule-out "$tmp/picked.json"
grep -Eq '^records +[1-9][0-9]* node latencies from the database' "$tmp/out" &&
  grep -Eq '^picked +.*the measured fastest \(the faster of sequential and greedy stays unless beaten by more than 3 % and in two thirds of the samples, each against its nearest in time\): [0-9.]+ of sequential, [0-9.]+ of greedy, [0-9.]+ of the DP.s schedule; optimisation [0-9.]+ s \([0-9]+ states, [0-9]+ distinct stages costed by prediction, [7-9] schedules measured\)$' "$tmp/out" &&
  grep -Eq '^candidates [7-9] measured on this machine \(5 interleaved rounds, medians\):.* \[?ios in context 1 [0-9.]+ ms.* \[?greedy [0-9.]+ ms.* \[?sequential [0-9.]+ ms' "$tmp/out" &&
  grep -Eq '^prepared .* 0 per-operator records stored now, 0 co-run pairs measured now' "$tmp/out" &&
  ok "--cost predicted: records read back, candidates measured, the fastest picked" ||
  not_ok "--cost predicted: records read back, candidates measured, the fastest picked"
printf 'opbench-corun 1\nhost x\nconv warp 2\n' >"$tmp/bad.db.corun"
bad "--cost predicted with a malformed co-run file" "bad.db.corun:3: expected 'KIND KIND FACTOR'" \
  schedule "${SQ[@]}" --cores 2 --cost predicted --db "$tmp/bad.db"
bad "--cost bogus" "--cost: unknown cost mode 'bogus'" schedule "${SQ[@]}" --cost bogus
bad "--cost measured past this machine" "--cost measured measures on this machine: --cores 64" \
  schedule "${SQ[@]}" --cores 64 --cost measured
good "schedule --cross: batch sizes x thread counts" '^b2 t1 \(([0-9]+) stages\) +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+$' \
  schedule "${SQ[@]}" --batchsize 1,2 --threads 1,2 --cross
grep -Eq '^b1 t2 \([0-9]+ stages\) +- ' "$tmp/out" && ok "--cross: a 2-core plan does not run on 1 core" ||
  not_ok "--cross: a 2-core plan does not run on 1 core"
bad "--cross past this machine" "--cross runs every plan here: --threads 64" schedule "${SQ[@]}" --threads 1,64 --cross
bad "--threads list bad" "--threads: bad value '1,x'" schedule "${SQ[@]}" --threads 1,x --cross
bad "a batch list without --cross" "a list of batch sizes is a list of requests" schedule "${SQ[@]}" --batchsize 1,2
bad "run: a schedule for another graph" "is not an operator of 'simple' \(the file is a schedule for 'squeezenet-1.1'\)" \
  run --modelname simple --kernels default --schedule "$tmp/sq.json"
edit "$tmp/sq.json" "$tmp/sq-missing.json" "del s['stages'][0]"
bad "run: an operator missing" "--schedule: .*operator '[^']+' is in no stage" \
  run "${SQ[@]}" --kernels default --schedule "$tmp/sq-missing.json"
edit "$tmp/sq.json" "$tmp/sq-twice.json" "s['stages'][1]['groups'][0]['ops'].append(s['stages'][0]['groups'][0]['ops'][0])"
bad "run: an operator scheduled twice" "stage 2, group 1: operator '[^']+' is scheduled twice \(already in stage 1\)" \
  run "${SQ[@]}" --kernels default --schedule "$tmp/sq-twice.json"
edit "$tmp/sqg.json" "$tmp/sq-overlap.json" "
st = next(x for x in s['stages'] if len(x.get('groups', [])) > 1)
st['groups'][1]['cores'] = st['groups'][0]['cores']"
bad "run: overlapping core sets" "stage [0-9]+: group 1 \(operator '[^']+'\) and group 2 \(operator '[^']+'\) both hold core 0" \
  run "${SQ[@]}" --kernels default --schedule "$tmp/sq-overlap.json"
edit "$tmp/sq.json" "$tmp/sq-beyond.json" "s['stages'][2]['groups'][0]['cores'] = [0, 4095]"
bad "run: a core past the machine" "stage 3, group 1 \(operator '[^']+'\): core 4095 is beyond the machine's [0-9]+ cores" \
  run "${SQ[@]}" --kernels default --schedule "$tmp/sq-beyond.json"
bad "run: --schedule with oneDNN kernels" "runs generated kernels" \
  run "${SQ[@]}" --kernels onednn --schedule "$tmp/sq.json"
bad "run: a missing schedule file" "nothing.json" run "${SQ[@]}" --kernels default --schedule "$tmp/nothing.json"

finish
