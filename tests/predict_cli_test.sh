#!/usr/bin/env bash
# predict_cli_test.sh: `opbench predict` end to end on records this test
# measures itself (a few random configs of three small dense workloads at 1
# and 2 threads, through opbench tune): train, predict one point, eval by
# workload, corr, turnaround, nash (this machine and simulated ones), the
# scheduler with --predictor, a model's latency (predict --modelname),
# collaboration tuning (tune --corun), and every bad input: a kind without records,
# corrupt / foreign-schema / non-model files, missing files, bad flags.
# Usage: predict_cli_test.sh OPBENCH. Assertions are on outputs and exit
# codes, never on timings.
set -u

OB=${1:?usage: predict_cli_test.sh path/to/opbench}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/sh_util.sh"

passed=0
failed=0

db=$tmp/p.db
for s in M=4,N=64,K=64 M=4,N=128,K=64 M=4,N=64,K=128; do
  for t in 1 2; do
    run tune --op dense --shape "$s" --tuner random --trials 4 --db "$db" --threads "$t" --repeat 3 --seed 3
    [ "$rc" -eq 0 ] || { not_ok "measuring dense $s at $t threads"; finish; }
  done
done
ok "records measured"

good "train writes the model file" 'trained on 24 points .*feature schema 3' predict train --db "$db" --out "$tmp/m.model" --rounds 50
[ -s "$tmp/m.model" ] && ok "model file exists" || not_ok "model file exists"
good "train names the kinds" '^dense +24 ' predict train --db "$db" --out "$tmp/m2.model" --rounds 50
good "one point with an interval" 'predicted +[0-9.]+ ms \(90% interval [0-9.]+ \.\. [0-9.]+ ms\)' \
  predict --op dense --shape M=4,N=64,K=64 --threads 2 --db "$db" --predictor "$tmp/m.model"
run predict --op dense --shape M=4,N=64,K=64 --db "$db" --predictor "$tmp/m.model" --json
if [ "$rc" -eq 0 ] && python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); assert o["lo_s"] <= o["predicted_s"] <= o["hi_s"] and o["threads"] == 1' "$tmp/out"; then
  ok "one point as JSON"
else
  not_ok "one point as JSON"
fi
good "without --predictor: trained now" 'trained now from the db' predict --op dense --shape M=4,N=96,K=64 --db "$db" --rounds 20
good "eval by workload" '^all +24 ' predict eval --db "$db" --folds 3 --rounds 30
good "corr per kind" '^dense +log2_flops +24 ' predict corr --db "$db"
good "turnaround measured and predicted" 'turnaround predicted rightly for [0-9]+ of [0-9]+' \
  predict turnaround --db "$db" --predictor "$tmp/m.model"
printf 'dense M=4,N=64,K=64 1\ndense M=4,N=128,K=64 1\n' >"$tmp/players.txt"
good "nash on this machine" 'pure equilibria: [0-9]+ of [0-9]+ profiles' \
  predict nash --db "$db" --predictor "$tmp/m.model" --suite "$tmp/players.txt"
good "nash on simulated machines" 'SIMULATED 16-core machine' \
  predict nash --db "$db" --predictor "$tmp/m.model" --suite "$tmp/players.txt" --cores 8,16
good "schedule with the predictor" 'node latencies from' \
  schedule --modelname simple --predictor "$tmp/m.model"

# a model's latency: kernel steps predicted, the runtime's overhead measured
# once (on the small model here) and then read from the db
good "model latency, overhead measured and stored" 'per run [0-9.]+ ms.*\(measured now on simple' \
  predict --modelname simple --calibrate simple --db "$db" --predictor "$tmp/m.model"
grep -Eq '^predicted +[0-9.]+ ms \(90% interval' "$tmp/out" && ok "model latency predicted" || not_ok "model latency predicted"
good "model latency against the measured one" 'predicted error [-+][0-9.]+%' \
  predict --modelname simple --db "$db" --predictor "$tmp/m.model" --measure
grep -q '(stored)' "$tmp/out" && ok "overhead read from the db" || not_ok "overhead read from the db"
# collaboration tuning: two dense operators on cores 0 and 1
good "collaboration tuning" 'joint / independent = [0-9.]+' \
  tune --op dense --shape M=4,N=64,K=64 --corun dense:M=4,N=128,K=64 --trials 4 --batch 2 --tuner random \
  --repeat 3 --cores 0,1 --db "$tmp/c.db"
grep -Eq '^together +joint: .* makespan [0-9.]+ ms' "$tmp/out" && ok "both makespans" || not_ok "both makespans"

# bad input: one line, exit 2
bad "--measure without a model" '--measure is for a model' predict --op dense --shape M=4,N=64,K=64 --db "$db" --measure
bad "unknown model to predict" 'nonet' predict --modelname nonet --db "$db" --predictor "$tmp/m.model"
bad "a model and an action" 'takes no action train' predict train --modelname simple --db "$db" --out "$tmp/y.model"
bad "unknown calibration model" 'noncal' \
  predict --modelname simple --calibrate noncal --threads 2 --db "$db" --predictor "$tmp/m.model"
bad "collaboration partner of an unknown operator" "--corun nosuchop:M=1" \
  tune --op dense --shape M=4,N=64,K=64 --corun nosuchop:M=1 --trials 2 --db "$tmp/c.db"
bad "collaboration partner with a bad shape" "--corun dense:M=x" \
  tune --op dense --shape M=4,N=64,K=64 --corun dense:M=x --trials 2 --db "$tmp/c.db"
bad "collaboration tuning takes one partner" 'one partner' \
  tune --op dense --shape M=4,N=64,K=64 --corun dense:M=4,N=8,K=8 --corun dense:M=4,N=16,K=8 --db "$tmp/c.db"
bad "collaboration tuning needs disjoint cores" 'needs 2 cores' \
  tune --op dense --shape M=4,N=64,K=64 --corun dense:M=4,N=8,K=8 --threads 1 --cores 0 --db "$tmp/c.db"
bad "collaboration tuning of a model refused" 'not with a model' \
  tune --modelname simple --corun dense:M=4,N=8,K=8 --db "$tmp/c.db"
bad "a kind without records" "no model for operator 'conv2d'.*trained: dense" \
  predict --op conv2d --shape N=1,C=8,H=8,W=8,K=8,R=3,S=3 --db "$db" --predictor "$tmp/m.model"
bad "a kind without records, trained now" 'no usable records of operator conv2d' \
  predict --op conv2d --shape N=1,C=8,H=8,W=8,K=8,R=3,S=3 --db "$db"
size=$(stat -c %s "$tmp/m.model")
cp "$tmp/m.model" "$tmp/flip.model"
printf '\x00\x01' | dd of="$tmp/flip.model" bs=1 seek=$((size - 20)) conv=notrunc status=none
bad "corrupt model file" 'corrupt predictor model file \(checksum' \
  predict --op dense --shape M=4,N=64,K=64 --db "$db" --predictor "$tmp/flip.model"
head -c $((size - 100)) "$tmp/m.model" >"$tmp/trunc.model"
bad "truncated model file" 'corrupt predictor model file' \
  predict --op dense --shape M=4,N=64,K=64 --db "$db" --predictor "$tmp/trunc.model"
sed '2s/"schema":3/"schema":9/' "$tmp/m.model" >"$tmp/schema.model"
bad "model file of another feature schema" 'feature schema 9, this build uses schema 3' \
  predict --op dense --shape M=4,N=64,K=64 --db "$db" --predictor "$tmp/schema.model"
echo 'N,C,H,W' >"$tmp/text.model"
bad "not a model file" 'not an opbench predictor model file' \
  predict --op dense --shape M=4,N=64,K=64 --db "$db" --predictor "$tmp/text.model"
bad "missing model file" 'cannot open the predictor model file' \
  predict --op dense --shape M=4,N=64,K=64 --db "$db" --predictor "$tmp/none.model"
bad "missing database" 'none.db' predict train --db "$tmp/none.db" --out "$tmp/x.model"
[ ! -e "$tmp/none.db" ] && ok "a missing database is not created" || not_ok "a missing database is not created"
bad "train needs --out" 'needs --out' predict train --db "$db"
bad "unknown action" "unknown action 'fit'" predict fit --db "$db"
bad "random split refused" "unknown split 'random'" predict eval --db "$db" --split random
bad "model split needs models" 'needs --test-models' predict eval --db "$db" --split model
bad "model split that holds out nothing" 'holds out no point' \
  predict eval --db "$db" --split model --test-models resnet-18 --rounds 10
bad "unknown held-out model" "held-out model 'nonet'" predict eval --db "$db" --split model --test-models nonet
bad "no co-run points" 'no co-run points' predict corun --db "$db"
bad "nash needs a predictor" 'needs --predictor' predict nash --db "$db" --suite "$tmp/players.txt"
bad "nash machine sizes" "bad machine size 'x'" \
  predict nash --db "$db" --predictor "$tmp/m.model" --suite "$tmp/players.txt" --cores 8,x
bad "schedule with a corrupt predictor" 'corrupt predictor model file' \
  schedule --modelname simple --predictor "$tmp/flip.model"
bad "model latency with a corrupt predictor" 'corrupt predictor model file' \
  predict --modelname simple --db "$db" --predictor "$tmp/flip.model"
cmp -s "$tmp/m.model" "$tmp/m.model" && [ "$(stat -c %s "$tmp/m.model")" -eq "$size" ] &&
  ok "model file untouched by the failures" || not_ok "model file untouched by the failures"
finish
