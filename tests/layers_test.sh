#!/usr/bin/env bash
# layers_test.sh: scripts/check-layers.sh fails where it must. Each case
# copies README.md, src/ and include/ into a temporary tree, plants one
# violation (an upward include, public or private; a public header that
# includes a private one; a folder without a row; a module dropped from the
# README's table; an upward call without an include, in object files built
# here) and expects exit 1 with the file (and line) named; a downward
# include and a downward call must pass. The unmodified copy passes too.
# Usage: layers_test.sh SOURCE_ROOT
# Prints `ok - name` / `not ok - name`, then `N passed, M failed`.
set -u
SRC=${1:?usage: layers_test.sh path/to/source/root}
CHECK=$SRC/scripts/check-layers.sh
[ -f "$CHECK" ] || { echo "layers_test.sh: $CHECK is missing" >&2; exit 1; }
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/sh_util.sh"
tmp=$(mktemp -d /tmp/opbench_layers.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

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
    for d in "$@"; do printf '  %s\n' "$d"; done
  fi
}

fresh() { # a clean copy of the tree in $tmp/t
  rm -rf "$tmp/t"
  mkdir -p "$tmp/t"
  cp -r "$SRC/README.md" "$SRC/src" "$SRC/include" "$tmp/t/"
}

# expect_fail NAME PATTERN [check args...]: exit 1 and PATTERN in the output
expect_fail() {
  local name=$1 pat=$2
  shift 2
  local out rc
  out=$(bash "$CHECK" --root "$tmp/t" "$@" 2>&1)
  rc=$?
  [ "$rc" -eq 1 ] && grep -qF -- "$pat" <<<"$out"
  check "$name" $? "exit $rc, expected 1 with '$pat' in:" "$out"
}

expect_pass() {
  local name=$1
  shift
  local out rc
  out=$(bash "$CHECK" --root "$tmp/t" "$@" 2>&1)
  rc=$?
  check "$name" "$rc" "exit $rc, expected 0:" "$out"
}

fresh
expect_pass "the tree as it is passes"

# An upward public include in a new file of the lowest module.
fresh
printf '/* planted */\n#include <stdio.h>\n#include "opbench/tune.h"\n' >"$tmp/t/src/core/planted.c"
expect_fail "core including tune.h fails, naming file and line" "src/core/planted.c:3"

# An upward include in an existing public header (appended: its last line).
fresh
echo '#include "opbench/ops.h"' >>"$tmp/t/include/opbench/db.h"
n=$(wc -l <"$tmp/t/include/opbench/db.h")
expect_fail "db.h including ops.h fails" "include/opbench/db.h:$n"

# An upward private include, and one with spaces after the '#'.
fresh
printf '#  include "tune/tune_impl.h"\n' >"$tmp/t/src/schedule/planted.h"
expect_fail "schedule including tune's private header fails" "src/schedule/planted.h:1"

# A public header that includes a private one, even of a lower module.
fresh
echo '#include "te/te_impl.h"' >>"$tmp/t/include/opbench/lower.h"
expect_fail "a public header including a private one fails" "a private header of module 'te'"

# A folder that is not in the table.
fresh
mkdir -p "$tmp/t/src/zzz"
echo 'int ob_zzz;' >"$tmp/t/src/zzz/zzz.c"
expect_fail "a module folder without a row fails" "src/zzz/: module 'zzz' has no row"

# A module dropped from the table: its folder and header are unplaced.
fresh
grep -v '^| space |' "$SRC/README.md" >"$tmp/t/README.md"
expect_fail "a module missing from README's table fails" "src/space/: module 'space' has no row"

# Two rows swapped: the includes that were downward now go up.
fresh
awk '/^\| ops \|/ { ops = $0; next } { print } /^\| tune \|/ { print ops }' "$SRC/README.md" >"$tmp/t/README.md"
expect_fail "tune placed before ops fails" "module 'tune' includes \"opbench/ops.h\" of module 'ops'"

# No table at all.
fresh
grep -v '^|' "$SRC/README.md" >"$tmp/t/README.md"
out=$(bash "$CHECK" --root "$tmp/t" 2>&1)
rc=$?
[ "$rc" -eq 2 ] && grep -q "no layout table" <<<"$out"
check "a README without the table is an error" $? "exit $rc:" "$out"

# Downward includes, public and private, pass.
fresh
printf '#include "opbench/core.h"\n#include "te/te_impl.h"\n#include "opbench/ops.h"\n' \
  >"$tmp/t/src/tune/planted.c"
expect_pass "tune including core.h, te's private header and ops.h passes"

# Calls: object files built here, laid out as CMake lays them out. te calls
# a function that tune defines, declared by hand (no include).
# cc and nm come with build-essential, which the build needs anyway.
command -v cc >/dev/null && command -v nm >/dev/null
check "cc and nm are installed" $?
if command -v cc >/dev/null && command -v nm >/dev/null; then
  fresh
  obj=$tmp/build/CMakeFiles/opbench.dir/src
  mkdir -p "$obj/te" "$obj/tune"
  printf 'int ob_tune_planted(void);\nint ob_te_planted(void) { return ob_tune_planted(); }\n' \
    >"$tmp/t/src/te/planted.c"
  printf 'int ob_te_planted(void);\nint ob_tune_planted(void) { return 1; }\nint ob_tune_other(void) { return ob_te_planted(); }\n' \
    >"$tmp/t/src/tune/planted.c"
  cc -c "$tmp/t/src/te/planted.c" -o "$obj/te/planted.c.o" &&
    cc -c "$tmp/t/src/tune/planted.c" -o "$obj/tune/planted.c.o"
  check "the planted objects compile" $?
  expect_fail "te calling a function of tune fails, naming file and function" \
    "src/te/planted.c: module 'te' calls ob_tune_planted of module 'tune'" --objects "$tmp/build"
  # The same call the right way round (tune calls te) passes.
  printf 'int ob_te_planted(void) { return 0; }\n' >"$tmp/t/src/te/planted.c"
  cc -c "$tmp/t/src/te/planted.c" -o "$obj/te/planted.c.o"
  expect_pass "tune calling a function of te passes" --objects "$tmp/build"
  # An object whose source is gone is stale and skipped.
  printf 'int ob_tune_planted(void);\nint ob_core_gone(void) { return ob_tune_planted(); }\n' \
    >"$tmp/gone.c"
  mkdir -p "$obj/core"
  cc -c "$tmp/gone.c" -o "$obj/core/gone.c.o"
  expect_pass "a stale object (its source gone) is skipped" --objects "$tmp/build"
  # A build folder without objects is an error, not a pass.
  mkdir -p "$tmp/empty"
  expect_fail "--objects without object files fails" "no object files" --objects "$tmp/empty"
fi

finish
