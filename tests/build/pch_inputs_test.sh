#!/usr/bin/env bash
# The build survives its own installer: a header that the precompiled header read gets a new mtime
# (still older than the build, as apt gives it) or new contents, and the next build still passes.
# A small project built the way xpuperf builds its LibTorch targets (cmake/BuildSpeed.cmake's
# xpuperf_torch_pch, scripts/build.sh), with a stand-in for LibTorch's header. Clang only: GCC
# does not check the headers' mtimes (exit 77, skipped).
set -euo pipefail
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
command -v clang++ >/dev/null || { echo "clang++ is not installed: skipped"; exit 77; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/project" "$work/system"
old=1000000000  # 2001: older than any build
cat >"$work/system/inner.h" <<'H'
#define INNER_VALUE 1
H
cat >"$work/system/outer.h" <<'H'
#include <inner.h>
#include <vector>
inline int outer() { return INNER_VALUE; }
H
touch -d @$old "$work/system/inner.h" "$work/system/outer.h"
cat >"$work/project/CMakeLists.txt" <<C
cmake_minimum_required(VERSION 3.22)
project(pch_inputs CXX)
include($source_dir/cmake/BuildSpeed.cmake)
add_library(owner STATIC a.cpp)
add_library(reuser STATIC b.cpp)
foreach(t owner reuser)
  target_include_directories(\${t} SYSTEM PRIVATE $work/system)
  xpuperf_torch_pch(\${t})
endforeach()
C
echo 'int a() { return outer(); }' >"$work/project/a.cpp"
echo 'int b() { return outer() + 1; }' >"$work/project/b.cpp"

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
cmake -S "$work/project" -B "$work/build" -DCMAKE_CXX_COMPILER=clang++ "-DXPUPERF_PCH_HEADER=<outer.h>" \
  -DXPUPERF_UNITY_BUILD=OFF >"$work/configure.log" || { cat "$work/configure.log"; fail "configure"; }
"$source_dir/scripts/build.sh" "$work/build" 2 >"$work/1.log" 2>&1 || { cat "$work/1.log"; fail "first build"; }
[[ -n $(find "$work/build" -name cmake_pch.hxx.pch) ]] || fail "no precompiled header was built"

# 1. The header's mtime moves by one second, its contents stay: the precompiled header is still good.
touch -d @$((old + 1)) "$work/system/inner.h"
touch "$work/project/a.cpp" "$work/project/b.cpp"
"$source_dir/scripts/build.sh" "$work/build" 2 >"$work/2.log" 2>&1 || { cat "$work/2.log"; fail "build after an mtime change"; }
grep -q 'building it again' "$work/2.log" && fail "an mtime change alone rebuilt the precompiled header"

# 2. New contents with an old mtime (an upgraded package): the stale header is built again.
echo '#define INNER_VALUE 2' >"$work/system/inner.h"
touch -d @$((old + 2)) "$work/system/inner.h"
touch "$work/project/a.cpp"
"$source_dir/scripts/build.sh" "$work/build" 2 >"$work/3.log" 2>&1 || { cat "$work/3.log"; fail "build after a contents change"; }
grep -q 'building it again' "$work/3.log" || { cat "$work/3.log"; fail "the stale header was not named"; }

# 3. A build error of the code itself is passed on, with where the log is.
echo 'int a() { return missing(); }' >"$work/project/a.cpp"
if "$source_dir/scripts/build.sh" "$work/build" 2 >"$work/4.log" 2>&1; then fail "a broken source built"; fi
grep -q "the whole log is in $work/build/build.log" "$work/4.log" || { cat "$work/4.log"; fail "no pointer to the log"; }
echo "ok: the precompiled header survives an mtime change and is rebuilt after a contents change"
