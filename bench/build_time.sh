#!/usr/bin/env bash
# How long a new user waits: each of BASE_REF and NEW_REF is cloned fresh from this repository
# (no build folder, no compiler cache) and timed through the steps the README's two commands take.
#
#   bench/build_time.sh [--no-tests] [--remeasure] [BASE_REF [NEW_REF]]
#
# BASE_REF defaults to 6c21972 (main before the build was reorganised), NEW_REF to HEAD.
# Prints a Markdown table, one column per ref:
#   configure        `make configure` (CMake's configure and generate)
#   make run build   what `make run` compiles before it runs anything
#   quickstart plan  the quickstart plan itself (base cases + LeNet-5), after the build
#   make run total   the three above: a fresh clone to the quickstart's table
#   full build       everything `make test` compiles (the make run build included)
#   ctest            the tests themselves (skipped with --no-tests)
#   make test total  configure + full build + ctest: a fresh clone to the last test
#   touch one case   rebuilding what `make run` needs after touching one training case's .cpp
# The Debian packages are installed first (scripts/install-deps.sh), outside the timings.
# A commit's figures are kept in results/build_time/<commit>-<cores>cores.txt and reused by the
# next call on this machine (the table says when they were measured); --remeasure ignores them.
set -euo pipefail
cd "$(dirname "$0")/.."

run_tests=1
remeasure=0
while [[ ${1:-} == --* ]]; do
  case $1 in
    --no-tests) run_tests=0 ;;
    --remeasure) remeasure=1 ;;
    *) echo "usage: bench/build_time.sh [--no-tests] [--remeasure] [BASE_REF [NEW_REF]]" >&2; exit 1 ;;
  esac
  shift
done
base_ref=${1:-6c21972}
new_ref=${2:-HEAD}
jobs=${JOBS:-2}

scripts/install-deps.sh
work=$(mktemp -d /tmp/xpuperf-build-time.XXXXXX)
trap 'rm -rf "$work"' EXIT

now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"%.3f\", $* }"; }
# seconds STEP_LOG COMMAND...: runs COMMAND with its output in STEP_LOG, prints the wall time.
seconds() {
  local log=$1
  shift
  local t0
  t0=$(now)
  if ! "$@" >"$log" 2>&1; then
    echo "build_time: '$*' failed; its output:" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
  calc "$(now) - $t0"
}

# The target `make run` builds: `run-build` where the Makefile has one, else everything.
run_target() {
  if grep -q '^run-build:' "$1/Makefile"; then echo run-build; else echo build; fi
}

declare -A fig when
keys=(configure run_build plan full ctest touch)
cache_dir=results/build_time
mkdir -p "$cache_dir"

measure() {
  local ref=$1 dir="$work/$1" k
  local commit cache
  commit=$(git rev-parse --verify "$ref^{commit}")
  cache="$cache_dir/$commit-$(nproc)cores.txt"
  if ((!remeasure)) && [[ -f $cache ]] && { ((!run_tests)) || grep -q '^ctest ' "$cache"; }; then
    while read -r k v; do fig[$ref,$k]=$v; done <"$cache"
    when[$ref]="measured $(date -u -r "$cache" +'%F %H:%M') UTC, $cache"
    echo "build_time: $ref — reusing $cache" >&2
    return
  fi
  echo "build_time: $ref — cloning into $dir" >&2
  git clone --quiet --no-local . "$dir"
  git -C "$dir" checkout --quiet "$ref"
  local target
  target=$(run_target "$dir")
  local m=(make -C "$dir" JOBS="$jobs")
  echo "build_time: $ref — configure" >&2
  # As `make run` configures a fresh clone (configure-run where the Makefile has it).
  local configure=configure
  if grep -q '^configure-run:' "$dir/Makefile"; then configure=configure-run; fi
  fig[$ref,configure]=$(seconds "$dir/configure.out" "${m[@]}" "$configure")
  echo "build_time: $ref — make run's build ($target)" >&2
  fig[$ref,run_build]=$(seconds "$dir/run_build.out" "${m[@]}" "$target")
  echo "build_time: $ref — the quickstart plan" >&2
  fig[$ref,plan]=$(seconds "$dir/plan.out" bash -c "cd '$dir' && build/src/xpuperf run plans/quickstart.yaml")
  echo "build_time: $ref — the rest of the build" >&2
  local rest
  # `make test` builds everything and, where the Makefile has it, tokenises the language data.
  local rest_targets=(build)
  if grep -q '^language-data:' "$dir/Makefile"; then rest_targets+=(language-data); fi
  rest=$(seconds "$dir/rest.out" "${m[@]}" "${rest_targets[@]}")
  fig[$ref,full]=$(calc "${fig[$ref,run_build]} + $rest")
  if ((run_tests)); then
    echo "build_time: $ref — ctest" >&2
    fig[$ref,ctest]=$(seconds "$dir/ctest.out" bash -c "cd '$dir/build' && ctest -j$jobs --output-on-failure")
  fi
  echo "build_time: $ref — touch one case, rebuild" >&2
  touch "$dir"/cases/training/lenet5/libtorch/lenet5.cpp
  fig[$ref,touch]=$(seconds "$dir/touch.out" "${m[@]}" "$target")
  for k in "${keys[@]}"; do
    if [[ -n ${fig[$ref,$k]:-} ]]; then echo "$k ${fig[$ref,$k]}"; fi
  done >"$cache"
  when[$ref]="measured now"
}

measure "$base_ref"
measure "$new_ref"

fmt() { # seconds -> "Mm SSs"
  local s
  s=$(printf '%.0f' "$1")
  printf '%dm %02ds' $((s / 60)) $((s % 60))
}
row() { # label key [sum keys...]
  local label=$1
  shift
  local a=0 b=0 k
  for k in "$@"; do
    [[ -n ${fig[$base_ref,$k]:-} && -n ${fig[$new_ref,$k]:-} ]] || return 0
    a=$(calc "$a + ${fig[$base_ref,$k]}")
    b=$(calc "$b + ${fig[$new_ref,$k]}")
  done
  printf '| %s | %s | %s | %.2f |\n' "$label" "$(fmt "$a")" "$(fmt "$b")" "$(calc "$b / $a")"
}

echo
echo "Fresh clones on $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p' | head -1)), make JOBS=$jobs, $(date -u +%F)"
echo
echo "| step | $base_ref ($(git rev-parse --short "$base_ref")) | $new_ref ($(git rev-parse --short "$new_ref")) | new/base |"
echo "| --- | ---: | ---: | ---: |"
row configure configure
row "make run's build" run_build
row "quickstart plan" plan
row "**make run total** (target ≤ 4 min)" configure run_build plan
row "full build" full
row ctest ctest
row "**make test total** (target ≤ 12 min)" configure full ctest
row "touch one case, rebuild" touch
echo
echo "$base_ref: ${when[$base_ref]}; $new_ref: ${when[$new_ref]}."
