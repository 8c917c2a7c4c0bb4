#!/usr/bin/env bash
# timeloop_standalone.sh: src/kernel/timeloop.c keeps its contract with the
# emulator harness: it compiles on its own (standard C, kernel.h and core.h's
# standard headers), its object calls nothing of opbench (every undefined
# symbol is libc's or libm's), and linked with a tiny main against libc and
# libm alone it times a call. When Debian's aarch64 cross compiler is
# installed it must also compile for aarch64.
# Usage: timeloop_standalone.sh SOURCE_DIR [CC]
set -u
src=${1:?usage: timeloop_standalone.sh SOURCE_DIR [CC]}
cc=${2:-${OPBENCH_CC:-cc}}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() {
  echo "FAIL: $1"
  fails=$((fails + 1))
}

flags="-std=gnu17 -O2 -Wall -Wextra -Werror -I$src/include"
$cc $flags -c "$src/src/kernel/timeloop.c" -o "$tmp/timeloop.o" 2>"$tmp/cc.err" ||
  fail "timeloop.c does not compile on its own: $(cat "$tmp/cc.err")"

if [ -f "$tmp/timeloop.o" ]; then
  # every undefined symbol: libc / libm / the compiler's runtime, never ob_*
  undef=$(nm -u "$tmp/timeloop.o" | awk '{print $2}' | sed 's/@.*//' | sort -u)
  for s in $undef; do
    case $s in
    ob_* | OB_*) fail "timeloop.o calls $s (it must not call into opbench)" ;;
    clock_gettime | qsort | memcpy | memset | sqrt | malloc | free | __stack_chk_fail | _GLOBAL_OFFSET_TABLE_) ;;
    *) fail "timeloop.o needs '$s', which is not in the list of libc/libm symbols it may use" ;;
    esac
  done
  cat >"$tmp/main.c" <<'C'
#include <stdio.h>
#include "opbench/kernel.h"
static volatile double sink;
static int call(void *u) { (void)u; for (int i = 0; i < 100; i++) sink += i; return 0; }
int main(void) {
  ob_timing_opts o = ob_timing_default();
  o.repeat = 5;
  ob_timing t;
  int rc = ob_time_loop(&o, 1e18, call, NULL, NULL, &t);
  if (rc || t.ncosts != 5 || t.number < 1 || !(t.median_s > 0) || !(t.timer_overhead_s > 0)) {
    printf("rc %d ncosts %d number %d median %g\n", rc, t.ncosts, t.number, t.median_s);
    return 1;
  }
  for (int i = 0; i < t.ncosts; i++)
    if (t.costs[i] * t.number < OB_TIMING_DEFAULT_FLOOR_MS * 1e-3 * 0.999) return 2; /* the floor */
  printf("ok: number %d, median %.3g s, timer overhead %.3g s\n", t.number, t.median_s,
         t.timer_overhead_s);
  return 0;
}
C
  if $cc $flags "$tmp/main.c" "$tmp/timeloop.o" -o "$tmp/main" -lm 2>"$tmp/ld.err"; then
    "$tmp/main" || fail "the standalone timing loop failed (exit $?)"
  else
    fail "timeloop.o does not link with libc and libm alone: $(cat "$tmp/ld.err")"
  fi
fi

if command -v aarch64-linux-gnu-gcc >/dev/null; then
  aarch64-linux-gnu-gcc $flags -c "$src/src/kernel/timeloop.c" -o "$tmp/timeloop_a64.o" 2>"$tmp/a64.err" ||
    fail "timeloop.c does not compile for aarch64: $(cat "$tmp/a64.err")"
else
  echo "note: aarch64-linux-gnu-gcc not installed; the cross-compile check did not run"
fi

if [ "$fails" -ne 0 ]; then
  echo "timeloop_standalone: $fails failure(s)"
  exit 1
fi
echo "timeloop_standalone: ok"
