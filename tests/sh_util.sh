# sh_util.sh: what the shell tests (tests/*_test.sh) share, sourced by each.
# The exit codes follow ctest's conventions, as check.h's do for the C tests:
#   need TOOL...    exit 77 (ctest: skipped, SKIP_RETURN_CODE) naming the first
#                   missing tool: a test that cannot run here is not a pass;
#   finish          prints "N passed, M failed" and exits 1 if a case failed or
#                   if no case ran at all, else 0.
# Each script counts its own cases in $passed and $failed.

need() {
  local t
  for t in "$@"; do
    if ! command -v "$t" >/dev/null 2>&1; then
      echo "SKIP $(basename "$0"): needs '$t', which is not installed"
      exit 77
    fi
  done
}

finish() {
  echo "$passed passed, $failed failed"
  if [ "$((passed + failed))" -eq 0 ]; then
    echo "$(basename "$0"): no case ran: a test that checks nothing fails" >&2
    exit 1
  fi
  [ "$failed" -eq 0 ] || exit 1
  exit 0
}

# The opbench command-line cases (cli_test, gpu_cli, graph_cli, predict_cli,
# runtime_cli, sched_cli): each script sets $OB (the tool) and $tmp (its
# scratch folder) and these run one case each, printing `ok - NAME` or
# `not ok - NAME` with the command, exit status and output.
#   run ARGS...              opbench ARGS, output in $tmp/out and $tmp/err, status in $rc
#   with VAR=V... -- CASE    the case with those environment variables set
#   good NAME PATTERN ARGS   exit 0 and PATTERN (ERE) on stdout
#   bad NAME PATTERN ARGS    exit 2, nothing on stdout (unless the script sets
#                            bad_stdout_ok=1), one `opbench: error:` line matching
#                            PATTERN on stderr
#   json_check NAME EXPR ARGS  exit 0 and the python expression EXPR true of the
#                            JSON on stdout (bound to d)
envs=()
ok() { passed=$((passed + 1)); echo "ok - $1"; }
not_ok() {
  failed=$((failed + 1))
  echo "not ok - $1"
  echo "#   command: opbench ${args[*]}"
  echo "#   exit status: $rc"
  sed 's/^/#   stdout: /' "$tmp/out" | tail -25
  sed 's/^/#   stderr: /' "$tmp/err" | head -20
}
run() {
  args=("$@")
  env "${envs[@]}" "$OB" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}
with() {
  envs=()
  while [ "$1" != "--" ]; do
    envs+=("$1")
    shift
  done
  shift
  "$@"
  envs=()
}
good() {
  local name=$1 pattern=$2
  shift 2
  run "$@"
  if [ "$rc" -eq 0 ] && grep -Eq -- "$pattern" "$tmp/out"; then ok "$name"; else not_ok "$name"; fi
}
bad() {
  local name=$1 pattern=$2
  shift 2
  run "$@"
  if [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] &&
    { [ ! -s "$tmp/out" ] || [ "${bad_stdout_ok:-0}" = 1 ]; } &&
    grep -q '^opbench: error: ' "$tmp/err" && grep -Eq -- "$pattern" "$tmp/err"; then
    ok "$name"
  else
    not_ok "$name"
  fi
}
json_check() {
  local name=$1 expr=$2
  shift 2
  run "$@"
  if [ "$rc" -eq 0 ] && python3 -c "import json,sys; d=json.load(sys.stdin); sys.exit(0 if ($expr) else 1)" <"$tmp/out" 2>/dev/null; then
    ok "$name"
  else
    not_ok "$name"
  fi
}
