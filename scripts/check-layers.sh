#!/usr/bin/env bash
# check-layers.sh: keeps the modules in their layer order. The order is the
# module column of README.md's layout table (the "## Layout" section), one
# module per row, lowest first: a module may include the headers of, and
# call, only itself and the modules in earlier rows. Adding a module is
# adding its row where it belongs. Fails (exit 1), naming file and line, on
#  - a folder src/<m>/ or a header include/opbench/<m>.h whose module has
#    no row (new modules must be placed in the order);
#  - a file of src/<m>/ or include/opbench/<m>.h that includes a header of a
#    later module: public "opbench/<x>.h" or private "<x>/...";
#  - a public header that includes a private one (it could not be installed);
#  - with --objects: an object file of src/<m>/ whose undefined symbol is
#    defined by a later module's objects (a call upward made without an
#    include, through a hand-written prototype).
# Private headers of earlier modules are tolerated (schedule reads te's node
# layout); public ones are preferred.
# Usage: check-layers.sh [--root DIR] [--objects BUILD_DIR]
#   --root     the source tree (default: this script's repository)
#   --objects  a build folder: its CMakeFiles/*/src/<m>/*.o are checked
#              (objects whose source file is gone are skipped as stale)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
objects=""
while [ $# -gt 0 ]; do
  case $1 in
  --root) root=${2:?--root needs a folder}; shift 2 ;;
  --objects) objects=${2:?--objects needs a build folder}; shift 2 ;;
  *) echo "check-layers: unknown argument '$1' (usage: check-layers.sh [--root DIR] [--objects BUILD_DIR])" >&2; exit 2 ;;
  esac
done
readme=$root/README.md
[ -f "$readme" ] || { echo "check-layers: $readme is missing" >&2; exit 2; }

# ---- the order ----------------------------------------------------------------
# First cells of the layout table's rows that are one lower-case word; rows
# like "graph, sched, ..." (planned modules) are not layers yet.
mapfile -t layers < <(awk '
  /^## / { on = ($0 ~ /^## Layout/); next }
  on && /^\|/ {
    n = split($0, c, "|"); cell = c[2]; gsub(/^[ \t`]+|[ \t`]+$/, "", cell)
    if (cell == "module" || cell ~ /^-+$/) next
    if (cell ~ /^[a-z][a-z0-9_]*$/) print cell
  }' "$readme")
if [ "${#layers[@]}" -eq 0 ]; then
  echo "check-layers: README.md has no layout table (a \"## Layout\" section with a \"| module |\" table)" >&2
  exit 2
fi
declare -A level
for i in "${!layers[@]}"; do
  m=${layers[$i]}
  if [ -n "${level[$m]:-}" ]; then
    echo "check-layers: README.md's layout table lists module '$m' twice" >&2
    exit 2
  fi
  level[$m]=$i
done
order=$(IFS=' '; echo "${layers[*]}")
order=${order// / < }

fails=0
fail() {
  echo "$1"
  fails=$((fails + 1))
}

# ---- every module has a row -----------------------------------------------------
for d in "$root"/src/*/; do
  [ -d "$d" ] || continue
  m=$(basename "$d")
  [ -n "${level[$m]:-}" ] ||
    fail "src/$m/: module '$m' has no row in README.md's layout table; add one where it belongs in the layer order ($order)"
done
for h in "$root"/include/opbench/*.h; do
  [ -f "$h" ] || continue
  m=$(basename "$h" .h)
  [ -n "${level[$m]:-}" ] ||
    fail "include/opbench/$m.h: module '$m' has no row in README.md's layout table; add one where it belongs in the layer order ($order)"
done

# ---- includes ---------------------------------------------------------------------
# check_includes FILE MODULE PUBLIC(0/1)
check_includes() {
  local file=$1 m=$2 public=$3 rel=${1#"$root"/}
  local lineno target x
  while IFS=: read -r lineno target; do
    case $target in
    opbench/*.h)
      x=${target#opbench/}
      x=${x%.h}
      ;;
    */*)
      x=${target%%/*}
      if [ "$public" = 1 ] && [ -n "${level[$x]:-}" ]; then
        fail "$rel:$lineno: public header includes \"$target\", a private header of module '$x'"
        continue
      fi
      ;;
    *) continue ;; # a file of the same folder, or a system header
    esac
    if [ -z "${level[$x]:-}" ]; then
      # "opbench/<x>.h" of no module, or a folder that is not a module
      [ "${target#opbench/}" != "$target" ] &&
        fail "$rel:$lineno: includes \"$target\", which belongs to no module of README.md's layout table"
      continue
    fi
    if [ "${level[$x]}" -gt "${level[$m]}" ]; then
      fail "$rel:$lineno: module '$m' includes \"$target\" of module '$x', a later layer"
    fi
  done < <(awk 'match($0, /^[ \t]*#[ \t]*include[ \t]*[<"][^">]*[">]/) {
                  s = substr($0, RSTART, RLENGTH); sub(/^[^<"]*[<"]/, "", s); sub(/[">]$/, "", s)
                  print FNR ":" s }' "$file")
}

for m in "${layers[@]}"; do
  if [ -d "$root/src/$m" ]; then
    while IFS= read -r f; do
      check_includes "$f" "$m" 0
    done < <(find "$root/src/$m" -type f \( -name '*.c' -o -name '*.h' \) | sort)
  fi
  [ -f "$root/include/opbench/$m.h" ] && check_includes "$root/include/opbench/$m.h" "$m" 1
done

# ---- calls (object files) ---------------------------------------------------------------
if [ -n "$objects" ]; then
  [ -d "$objects" ] || { echo "check-layers: --objects $objects is not a folder" >&2; exit 2; }
  command -v nm >/dev/null || { echo "check-layers: --objects needs nm (binutils)" >&2; exit 2; }
  objs=()
  objmap=""
  while IFS= read -r o; do
    src=${o#*/src/}
    m=${src%%/*}
    src=src/${src%.o}
    [ -f "$root/$src" ] || continue # stale: its source moved or went
    [ -n "${level[$m]:-}" ] || continue # reported above as a missing row
    objs+=("$o")
    objmap+="$o $m $src"$'\n'
  done < <([ -d "$objects/CMakeFiles" ] &&
           find "$objects/CMakeFiles" -path '*/src/*' -name '*.o' | sort)
  if [ "${#objs[@]}" -eq 0 ]; then
    fail "check-layers: no object files of src/ under $objects (build first)"
  fi
  levels=""
  for m in "${layers[@]}"; do levels+="$m=${level[$m]} "; done
  # nm -A: "object:address type symbol" (defined), "object: U symbol" (undefined)
  while IFS= read -r line; do
    fail "$line"
  done < <([ "${#objs[@]}" -gt 0 ] && {
    printf '%s' "$objmap" | sed 's/^/O /'
    nm -A -g --defined-only "${objs[@]}" 2>/dev/null | sed 's/^/D /'
    nm -A -u "${objs[@]}" 2>/dev/null | sed 's/^/U /'
  } | awk -v levels="$levels" '
    BEGIN { n = split(levels, a, " "); for (i = 1; i <= n; i++) { split(a[i], kv, "="); lv[kv[1]] = kv[2] } }
    $1 == "O" { mod[$2] = $3; src[$2] = $4; next }
    { o = $2; sub(/:.*/, "", o); sym = $NF }
    $1 == "D" && NF >= 4 { def[sym] = mod[o]; next }
    $1 == "U" { nu++; um[nu] = mod[o]; us[nu] = src[o]; uy[nu] = sym }
    END {
      for (i = 1; i <= nu; i++) {
        if (!(uy[i] in def) || lv[def[uy[i]]] <= lv[um[i]]) continue
        key = us[i] " " uy[i]
        if (key in seen) continue
        seen[key] = 1
        print us[i] ": module \x27" um[i] "\x27 calls " uy[i] " of module \x27" def[uy[i]] "\x27, a later layer"
      }
    }' | sort)
fi

if [ "$fails" -gt 0 ]; then
  echo "check-layers: $fails violation(s) of the layer order ($order, from README.md's layout table)"
  exit 1
fi
echo "check-layers: ${#layers[@]} modules in order ($order); includes${objects:+ and calls} go downward only"
