#!/usr/bin/env bash
# Builds a configured build folder, as `make run` and `make test` do:
#
#   scripts/build.sh BUILD_DIR JOBS [TARGET]
#
# A precompiled header goes stale when a system header it read changes under it (an apt upgrade
# between two builds: `make test`'s own installer can do it right after `make run`). apt gives the
# new header its package's mtime, older than the build, so make keeps the precompiled header and
# the compiler refuses it. When the build fails for that reason, the stale headers are removed and
# the build runs once more; any other failure is the build's own and is passed on.
set -uo pipefail

if (($# < 2 || $# > 3)); then
  echo "usage: scripts/build.sh BUILD_DIR JOBS [TARGET]" >&2
  exit 2
fi
build_dir=$1
jobs=$2
target=(${3:+--target "$3"})

if [[ ! -f $build_dir/CMakeCache.txt ]]; then
  echo "build: $build_dir is not a configured build folder (run make run or make test)" >&2
  exit 2
fi

log=$build_dir/build.log
build() {
  cmake --build "$build_dir" -j"$jobs" "${target[@]}" 2>&1 | tee "$log"
}

build && exit 0
status=$?

# Clang: "file '...' has been modified since the precompiled header '...' was built"; GCC: "... is
# not a valid precompiled header" or "... used to build the precompiled header changed".
if grep -Eq 'modified since the precompiled header|precompiled header .* (was built|changed)|not a valid precompiled header' "$log"; then
  stale=$(find "$build_dir" -name 'cmake_pch.hxx.pch' -o -name 'cmake_pch.hxx.gch' | sort)
  if [[ -n $stale ]]; then
    echo "build: a system header changed since the precompiled header was built (a package was upgraded);" \
      "building it again: removing" $stale >&2
    # shellcheck disable=SC2086
    rm -f $stale
    build && exit 0
    status=$?
  fi
fi

echo "build: failed (exit $status); the whole log is in $log." \
  "If the build folder is from an older checkout or compiler, make clean and build again." >&2
exit "$status"
