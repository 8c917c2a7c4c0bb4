#!/usr/bin/env bash
# fleet_test.sh: the device fleet against a real Redis (scripts/test-servers.sh
# starts it on loopback with an ACL user and a password; never mocked).
# Usage: fleet_test.sh OPBENCH   ($OB_TEST_SERVERS_ENV names the servers' file)
#  1. fleet keys: keygen writes mode 0600 and never over a file; a key others
#     may read is refused;
#  2. brokers that are down, refuse the password or want one: exit 2, one line;
#  3. tune --fleet through two workers: every trial stored once under the
#     workers' host, fleet status shows both alive with the jobs they did,
#     --host/--port (and $TVM_TRACKER_HOST/PORT) name the broker as well;
#  4. jobs injected by hand: unsigned, forged, altered, oversized, replayed,
#     for another device key, dated ahead, signed with timing counts out of
#     range (1e300, 2.5) or a thread count of 1.5: each refused and logged, never run, and the
#     worker keeps serving (a correctly signed one is measured);
#  5. a worker asked for more threads or a target it cannot run: clear errors;
#  6. a worker killed (-9) in the middle of a job: another takes it over after
#     the claim timeout and the tuning run completes, nothing measured twice;
#  7. two clients share the fleet at once.
# Prints `ok - name` / `not ok - name`, then `N passed, M failed`.
set -u
OB=${1:?usage: fleet_test.sh path/to/opbench}
[ -x "$OB" ] || { echo "fleet_test.sh: $OB is not an executable" >&2; exit 1; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/sh_util.sh"
need redis-cli sqlite3 openssl
envf=${OB_TEST_SERVERS_ENV:-}
if [ -z "$envf" ] || [ ! -f "$envf" ]; then
  echo "fleet_test.sh: no servers file (\$OB_TEST_SERVERS_ENV); run through ctest" >&2
  exit 1
fi
# shellcheck disable=SC1090
. "$envf"
if [ "${OB_TEST_SERVERS:-}" = absent ]; then
  echo "SKIP fleet_test.sh: redis-server is not installed"
  exit 77
fi
URL=$OB_TEST_REDIS_URL
tmp=$(mktemp -d /tmp/opbench_fleet.XXXXXX)
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
export OPBENCH_CACHE=$tmp/kcache
ncpu=$(nproc)
c1=$((ncpu > 1 ? 1 : 0))
run=$(head -c 4 /dev/urandom | od -An -tx1 | tr -d ' \n')

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
rc() { REDISCLI_AUTH=$OB_TEST_REDIS_PASSWORD redis-cli --user opbench -p "$OB_TEST_REDIS_PORT" "$@" 2>/dev/null; }
# one `opbench: error:` line on stderr and exit 2
one_error() { # one_error NAME PATTERN cmd...
  local name=$1 pat=$2
  shift 2
  "$@" >"$tmp/o" 2>"$tmp/e"
  local st=$?
  local n; n=$(wc -l <"$tmp/e")
  [ "$st" -eq 2 ] && [ "$n" -eq 1 ] && grep -q "^opbench: error: .*$pat" "$tmp/e"
  check "$name" $? "exit $st, stderr: $(head -c 600 "$tmp/e")"
}
# start_worker NAME KEY CORES [flags...]: a worker in the background, its log in $tmp/NAME.log
start_worker() {
  local name=$1 key=$2 cores=$3
  shift 3
  "$OB" worker --broker "$URL" --device-key "$key" --fleet-key "$tmp/key" --cores "$cores" "$@" \
    >"$tmp/$name.out" 2>"$tmp/$name.log" &
  pids+=($!)
  eval "pid_$name=$!"
}
wait_alive() { # wait_alive KEY N: until N workers of KEY are alive (10 s)
  for _ in $(seq 1 100); do
    local n
    n=$("$OB" fleet status --broker "$URL" 2>/dev/null | awk -v k="$1" '$1==k && NF==4 {print $2}' | head -1)
    [ -n "$n" ] && [ "$n" -ge "$2" ] && return 0
    sleep 0.1
  done
  return 1
}
sign() { # sign JSON: the HMAC-SHA256 a worker checks
  printf 'opbench-fleet-job-v1\n%s' "$1" | openssl dgst -sha256 -hmac "$(tr -d '\n' <"$tmp/key")" | awk '{print $NF}'
}

# ---- 1. keys --------------------------------------------------------------------
"$OB" fleet keygen --out "$tmp/key" >/dev/null 2>"$tmp/e"
mode=$(stat -c %a "$tmp/key" 2>/dev/null)
[ "$mode" = 600 ] && [ "$(tr -d '\n' <"$tmp/key" | wc -c)" -eq 64 ]
check "keygen writes a 64-digit key with mode 0600" $? "mode $mode: $(cat "$tmp/e")"
one_error "keygen never replaces a key" "refusing to replace" "$OB" fleet keygen --out "$tmp/key"
cp "$tmp/key" "$tmp/key644" && chmod 644 "$tmp/key644"
one_error "a key others may read is refused" "mode 0644" "$OB" worker --broker "$URL" --device-key k --fleet-key "$tmp/key644"
one_error "a missing key file is an error" "fleet key" "$OB" worker --broker "$URL" --device-key k --fleet-key "$tmp/nokey"
one_error "a bad device key is refused" "device key 'a b'" "$OB" worker --broker "$URL" --device-key "a b" --fleet-key "$tmp/key"
one_error "tune --fleet needs a device key" "needs --device-key" "$OB" tune --op dense --shape M=1,N=8,K=8 --fleet "$URL" --fleet-key "$tmp/key"
one_error "tune --modelname does not go through a fleet" "tunes and runs the model here" "$OB" tune --modelname simple --fleet "$URL" --device-key k --fleet-key "$tmp/key"

# ---- 2. brokers that cannot be used -----------------------------------------------
dead_port=$(( (OB_TEST_REDIS_PORT % 30000) + 20001 ))
while (exec 3<>"/dev/tcp/127.0.0.1/$dead_port") 2>/dev/null; do dead_port=$((dead_port + 1)); done
one_error "a broker that is down" "cannot reach the broker at redis://opbench:\*\*\*@127.0.0.1:$dead_port" \
  "$OB" worker --broker "redis://opbench:x@127.0.0.1:$dead_port" --device-key k --fleet-key "$tmp/key"
one_error "a broker that refuses the password" "refused the login of user 'opbench'" \
  "$OB" worker --broker "redis://opbench:wrong@127.0.0.1:$OB_TEST_REDIS_PORT" --device-key k --fleet-key "$tmp/key"
grep -q wrong "$tmp/e"
[ $? -ne 0 ]
check "the password is never printed" $? "$(cat "$tmp/e")"
one_error "a broker that wants a password" "requires a password" \
  "$OB" fleet status --broker "redis://127.0.0.1:$OB_TEST_REDIS_PORT"
one_error "a malformed broker URL" "only redis://" "$OB" fleet status --broker "http://127.0.0.1:1"
one_error "tune with a broker that is down" "cannot reach the broker" \
  "$OB" tune --op dense --shape M=1,N=8,K=8 --fleet "redis://opbench:x@127.0.0.1:$dead_port" --device-key k --fleet-key "$tmp/key" \
  --db "$tmp/down.db"
[ ! -e "$tmp/down.db" ]
check "a broker that is down leaves no new database" $? "$(ls -l "$tmp/down.db" 2>&1)"

# ---- 3. tuning through two workers --------------------------------------------------
K=cpu-$run
start_worker a "$K" 0 --claim-timeout 3
start_worker b "$K" "$c1" --claim-timeout 3
wait_alive "$K" 2
check "two workers register and are alive" $? "$(cat "$tmp/a.log" "$tmp/b.log")"
"$OB" tune --op dense --shape M=4,N=512,K=256 --tuner random --trials 24 --repeat 3 --db "$tmp/t.db" \
  --fleet "$URL" --device-key "$K" --fleet-key "$tmp/key" >"$tmp/tune.out" 2>"$tmp/tune.err"
st=$?
n=$(sqlite3 "$tmp/t.db" "SELECT COUNT(*) FROM measurements" 2>&1)
hosts=$(sqlite3 "$tmp/t.db" "SELECT DISTINCT host FROM measurements" 2>&1)
wfp=$(rc HGET "opbench:fleet:worker:$(rc SMEMBERS "opbench:fleet:workers:$K" | head -1)" host)
res=$(sqlite3 "$tmp/t.db" "SELECT DISTINCT resources FROM measurements" 2>&1)
[ $st -eq 0 ] && [ "$n" -eq 24 ] && [ "$hosts" = "$wfp" ] && [ "$res" = "threads=1;device=$K" ]
check "tune --fleet stores 24 trials under the workers' host" $? "exit $st, $n records, hosts '$hosts' vs '$wfp', resources '$res'" "$(tail -n 3 "$tmp/tune.err")"
"$OB" fleet status --broker "$URL" >"$tmp/status.out" 2>&1
da=$(awk -v k="$K" '$1==k && NF>=8 && $4=="idle" {print $6}' "$tmp/status.out" | paste -sd+ | bc)
nidle=$(awk -v k="$K" '$1==k && NF>=8 && $4=="idle"' "$tmp/status.out" | wc -l)
[ "$nidle" -eq 2 ] && [ "${da:-0}" -ge 24 ]
check "fleet status shows both workers alive with the jobs they did" $? "$(cat "$tmp/status.out")"
ja=$(grep -c ": ok (" "$tmp/a.log"); jb=$(grep -c ": ok (" "$tmp/b.log")
[ "$ja" -gt 0 ] && [ "$jb" -gt 0 ]
check "both workers measured jobs" $? "a: $ja, b: $jb"
"$OB" fleet status --broker "$URL" --json >"$tmp/status.json" 2>&1
grep -q "\"double_measured\":	0" "$tmp/status.json"
check "nothing was measured twice" $? "$(grep double "$tmp/status.json")"
# again: resumed from the db, nothing sent
"$OB" tune --op dense --shape M=4,N=512,K=256 --tuner random --trials 24 --repeat 3 --db "$tmp/t.db" \
  --fleet "$URL" --device-key "$K" --fleet-key "$tmp/key" >"$tmp/tune2.out" 2>&1
grep -q "resumed 24, measured 0" "$tmp/tune2.out"
check "a second run resumes from the db under the same host" $? "$(cat "$tmp/tune2.out")"
# the seed collector's spelling: --host/--port and TVM_TRACKER_HOST/PORT
OPBENCH_FLEET_USER=opbench OPBENCH_FLEET_PASSWORD=$OB_TEST_REDIS_PASSWORD \
  "$OB" tune --op dense --shape M=2,N=128,K=256 --tuner random --trials 4 --repeat 3 --db "$tmp/h.db" \
  --host 127.0.0.1 --port "$OB_TEST_REDIS_PORT" --device-key "$K" --fleet-key "$tmp/key" >"$tmp/h.out" 2>&1
st1=$?
TVM_TRACKER_HOST=127.0.0.1 TVM_TRACKER_PORT=$OB_TEST_REDIS_PORT OPBENCH_FLEET_USER=opbench \
  OPBENCH_FLEET_PASSWORD=$OB_TEST_REDIS_PASSWORD \
  "$OB" tune --op dense --shape M=2,N=128,K=256 --tuner random --trials 8 --repeat 3 --db "$tmp/h.db" \
  --device-key "$K" --fleet-key "$tmp/key" >"$tmp/h2.out" 2>&1
st2=$?
[ $st1 -eq 0 ] && [ $st2 -eq 0 ] && [ "$(sqlite3 "$tmp/h.db" "SELECT COUNT(*) FROM measurements")" -eq 8 ]
check "--host/--port and \$TVM_TRACKER_HOST/PORT name the broker" $? "$(tail -n 2 "$tmp/h.out" "$tmp/h2.out")"

# ---- 3b. the shared record store: push the fleet's records to PostgreSQL and pull them back
if [ -n "${OB_TEST_PG_URL:-}" ] && command -v psql >/dev/null; then
  pgdb=fleet_$run
  psql "$OB_TEST_PG_URL" -qc "CREATE DATABASE $pgdb" >/dev/null 2>"$tmp/pg.err"
  PG=${OB_TEST_PG_URL%/*}/$pgdb
  "$OB" db push --db "$tmp/t.db" --shared "$PG" >"$tmp/push.out" 2>&1 &&
    "$OB" db pull --db "$tmp/pulled.db" --shared "$PG" >"$tmp/pull.out" 2>&1
  st=$?
  a=$(sqlite3 "$tmp/t.db" "SELECT host, config_index, median_s FROM measurements ORDER BY config_index" 2>&1)
  b=$(sqlite3 "$tmp/pulled.db" "SELECT host, config_index, median_s FROM measurements ORDER BY config_index" 2>&1)
  [ $st -eq 0 ] && [ -n "$a" ] && [ "$a" = "$b" ]
  check "the fleet's records go to PostgreSQL (db push) and come back (db pull) unchanged" $? \
    "$(cat "$tmp/pg.err" "$tmp/push.out" "$tmp/pull.out")"
  one_error "a PostgreSQL URL whose login fails" "cannot connect to PostgreSQL" \
    "$OB" db stats --db "${PG/:$OB_TEST_REDIS_PASSWORD@/:wrong@}"
  ! grep -q wrong "$tmp/e"
  check "the PostgreSQL password is never printed" $? "$(cat "$tmp/e")"
  one_error "a PostgreSQL server that is down" "cannot connect to PostgreSQL" \
    "$OB" db push --db "$tmp/t.db" --shared "postgresql://opbench:x@127.0.0.1:$dead_port/postgres"
fi

# ---- 4. jobs injected by hand ---------------------------------------------------------
S=opbench:fleet:jobs:$K
# a real job of the client's own form, to alter
now=$(date +%s)
mk_job() { # mk_job ID NONCE KEY TS
  printf '{"v":1,"id":"%s","ts":%s,"nonce":"%s","key":"%s","reply":"opbench:fleet:reply:t%s","op":"dense","attrs":{"dtype":"float32","M":1,"N":16,"K":16},"template":"dense_pack.x86","target":"llvm -mcpu=native","space":"0","index":"0","entity":[],"timing":{"number":0,"repeat":3,"min_repeat_ms":-1,"flush":false,"max_cv":0.05,"stability_budget_s":-1,"timeout_s":10},"threads":1,"seed":"1","build_timeout_s":10}' \
    "$1" "$4" "$2" "$3" "$run"
}
refused_before=$(grep -c REFUSED "$tmp/a.log" "$tmp/b.log" | awk -F: '{s+=$2} END {print s}')
j=$(mk_job "hand-1" "0123456789abcdef0123" "$K" "$now")
rc XADD "$S" '*' job "$j" >/dev/null
rc XADD "$S" '*' job "$j" sig 0000000000000000000000000000000000000000000000000000000000000000 >/dev/null
good=$(sign "$j")
rc XADD "$S" '*' job "${j/\"N\":16/\"N\":17}" sig "$good" >/dev/null
rc XADD "$S" '*' job "$(head -c 70000 /dev/zero | tr '\0' x)" sig "$good" >/dev/null
jk=$(mk_job "hand-2" "1123456789abcdef0123" "other-$run" "$now")
rc XADD "$S" '*' job "$jk" sig "$(sign "$jk")" >/dev/null
jo=$(mk_job "hand-3" "2123456789abcdef0123" "$K" "$((now + 100000))")
rc XADD "$S" '*' job "$jo" sig "$(sign "$jo")" >/dev/null
# signed, but with timing counts no int holds or no whole number (read as
# an int, 1e300 was undefined behaviour)
jn=$(mk_job "hand-5" "4123456789abcdef0123" "$K" "$now")
jn=${jn/\"number\":0/\"number\":1e300}
rc XADD "$S" '*' job "$jn" sig "$(sign "$jn")" >/dev/null
jr=$(mk_job "hand-6" "5123456789abcdef0123" "$K" "$now")
jr=${jr/\"repeat\":3/\"repeat\":2.5}
rc XADD "$S" '*' job "$jr" sig "$(sign "$jr")" >/dev/null
# signed, with a thread count that is no whole number (read as an int it ran on 1)
jt=$(mk_job "hand-7" "6123456789abcdef0123" "$K" "$now")
jt=${jt/\"threads\":1/\"threads\":1.5}
rc XADD "$S" '*' job "$jt" sig "$(sign "$jt")" >/dev/null
for _ in $(seq 1 100); do
  r=$(grep -c REFUSED "$tmp/a.log" "$tmp/b.log" | awk -F: '{s+=$2} END {print s}')
  [ $((r - refused_before)) -ge 9 ] && break
  sleep 0.1
done
logs=$(cat "$tmp/a.log" "$tmp/b.log")
echo "$logs" | grep -q "REFUSED.*unsigned job" &&
  echo "$logs" | grep -q "REFUSED.*signature does not match" &&
  echo "$logs" | grep -q "REFUSED.*oversized job" &&
  echo "$logs" | grep -q "REFUSED.*for device key 'other-$run'" &&
  echo "$logs" | grep -q "REFUSED.*in the future" &&
  [ "$(echo "$logs" | grep -c "REFUSED.*signature does not match")" -ge 2 ] &&
  [ "$(echo "$logs" | grep -c "REFUSED.*malformed job: timing options out of range")" -ge 2 ] &&
  echo "$logs" | grep -q "REFUSED.*malformed job: a bad thread count"
check "unsigned, forged, altered, oversized, other-key, future and out-of-range jobs are refused and logged" $? \
  "$(echo "$logs" | grep REFUSED)"
! echo "$logs" | grep -vi refused | grep -q "hand-"
check "no refused job was run" $? "$(echo "$logs" | grep hand-)"
# replayed: a correctly signed job (a real config of the space) runs once; the same entry sent again is refused
space=$("$OB" space dense --shape M=1,N=16,K=16 | awk '/^space size/ {print $3; exit}')
j=$(mk_job "hand-4" "3123456789abcdef0123" "$K" "$(date +%s)")
ent=$("$OB" op dense --shape M=1,N=16,K=16 --config-index 0 --json --repeat 1 2>/dev/null |
  sed -n 's/^[[:space:]]*"entity":[[:space:]]*\(.*\)$/\1/p' | head -1)
j=${j/\"space\":\"0\"/\"space\":\"$space\"}
j=${j/\"entity\":[]/\"entity\":$ent}
sg=$(sign "$j")
rc XADD "$S" '*' job "$j" sig "$sg" >/dev/null
for _ in $(seq 1 100); do grep -q "job hand-4 .*: ok\|job hand-4.*cannot" "$tmp/a.log" "$tmp/b.log" && break; sleep 0.1; done
rc XADD "$S" '*' job "$j" sig "$sg" >/dev/null
for _ in $(seq 1 100); do grep -q "REFUSED.*replayed job hand-4" "$tmp/a.log" "$tmp/b.log" && break; sleep 0.1; done
logs=$(cat "$tmp/a.log" "$tmp/b.log")
echo "$logs" | grep -q "job hand-4 dense/dense_pack.x86 #0: ok" && echo "$logs" | grep -q "REFUSED.*replayed job hand-4"
check "a signed job runs; the same job replayed is refused" $? "$(echo "$logs" | grep hand-4)"
kill -0 "$pid_a" 2>/dev/null && kill -0 "$pid_b" 2>/dev/null &&
  "$OB" tune --op dense --shape M=1,N=48,K=48 --tuner random --trials 4 --repeat 3 --db "$tmp/t3.db" \
    --fleet "$URL" --device-key "$K" --fleet-key "$tmp/key" >"$tmp/t3.out" 2>&1
check "the workers keep serving after refusals" $? "$(tail -n 3 "$tmp/t3.out")"

# ---- 5. jobs a worker cannot run ------------------------------------------------------
one_error "a job with more threads than the worker serves" "serves at most 1" \
  "$OB" tune --op dense --shape M=1,N=16,K=16 --tuner random --trials 2 --threads 2 --cores 0,1 --db "$tmp/x.db" \
  --fleet "$URL" --device-key "$K" --fleet-key "$tmp/key"
one_error "a target no worker of the key runs" "no live worker of device key '$K' can run it" \
  "$OB" tune --op dense --shape M=1,N=16,K=16 --tuner random --trials 2 --target "llvm -mcpu=haswell" --db "$tmp/x.db" \
  --fleet "$URL" --device-key "$K" --fleet-key "$tmp/key"

# ---- 7. two clients at once -----------------------------------------------------------
"$OB" tune --op dense --shape M=2,N=256,K=128 --tuner random --trials 12 --repeat 3 --db "$tmp/c1.db" \
  --fleet "$URL" --device-key "$K" --fleet-key "$tmp/key" >"$tmp/c1.out" 2>&1 &
p1=$!
"$OB" tune --op dense --shape M=2,N=64,K=128 --tuner random --trials 12 --repeat 3 --db "$tmp/c2.db" \
  --fleet "$URL" --device-key "$K" --fleet-key "$tmp/key" >"$tmp/c2.out" 2>&1
s2=$?
wait $p1
s1=$?
[ $s1 -eq 0 ] && [ $s2 -eq 0 ] && [ "$(sqlite3 "$tmp/c1.db" "SELECT COUNT(*) FROM measurements")" -eq 12 ] &&
  [ "$(sqlite3 "$tmp/c2.db" "SELECT COUNT(*) FROM measurements")" -eq 12 ]
check "two clients share the fleet" $? "$(tail -n 2 "$tmp/c1.out" "$tmp/c2.out")"

# ---- 6. a worker killed in the middle of a job -------------------------------------------
kill "$pid_a" "$pid_b" 2>/dev/null
wait "$pid_a" "$pid_b" 2>/dev/null
K2=kill-$run
start_worker c "$K2" 0 --claim-timeout 2
wait_alive "$K2" 1
# each trial runs long enough (repeats of at least 150 ms) to be killed in the middle
"$OB" tune --op dense --shape M=1,N=64,K=64 --tuner random --trials 3 --batch 3 --repeat 3 --min-repeat-ms 150 \
  --max-cv 0 --db "$tmp/k.db" --fleet "$URL" --device-key "$K2" --fleet-key "$tmp/key" >"$tmp/k.out" 2>&1 &
pt=$!
for _ in $(seq 1 200); do grep -q ": measuring" "$tmp/c.log" && break; sleep 0.05; done
sleep 0.2
kill -9 "$pid_c"
killed_job=$(grep ": measuring" "$tmp/c.log" | tail -1 | awk '{print $5}')
start_worker d "$K2" "$c1" --claim-timeout 2
wait $pt
st=$?
n=$(sqlite3 "$tmp/k.db" "SELECT COUNT(*) FROM measurements" 2>&1)
grep -q "job $killed_job .*taken over from a dead worker" "$tmp/d.log" &&
  grep -q "job $killed_job .*: ok" "$tmp/d.log" && [ $st -eq 0 ] && [ "$n" -eq 3 ]
check "a job of a worker killed mid-job is taken over and finished by another" $? \
  "exit $st, $n records, killed job '$killed_job'" "$(cat "$tmp/d.log")" "$(tail -n 3 "$tmp/k.out")"
"$OB" fleet status --broker "$URL" >"$tmp/status2.out" 2>&1
grep -q "^$K2 .* dead " "$tmp/status2.out" && grep -q "^$K2 .* idle " "$tmp/status2.out"
check "fleet status shows the killed worker dead and the other alive" $? "$(cat "$tmp/status2.out")"
"$OB" fleet status --broker "$URL" --json | grep -q "\"double_measured\":	0"
check "the taken-over job was measured once" $? "$(rc GET opbench:fleet:double_measured)"

finish
