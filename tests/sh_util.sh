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
