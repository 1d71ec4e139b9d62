# Sourced by the bench scripts. A bench that cannot find its binary, or whose run measured nothing,
# says so and exits non-zero, instead of printing a table of zeros and NaNs and exiting 0.

bench_name=$(basename "$0")
# The runs that measured nothing, one a line: a file, so that a row run in a $(...) subshell counts.
bench_failures_file=$(mktemp "${TMPDIR:-/tmp}/xpuperf-bench-failures.XXXXXX")

# bench_absolute_paths NAME...: each variable NAME that is set becomes an absolute path, so that
# the paths a user gave still hold after the bench changes folder.
bench_absolute_paths() {
  local name
  for name in "$@"; do
    [[ -n ${!name:-} ]] && printf -v "$name" '%s' "$(realpath -m -- "${!name}")"
  done
  return 0
}

# Sets $xpuperf (XPUPERF, else build/src/xpuperf); exits 2 naming the path when it is not a program.
bench_require_xpuperf() {
  xpuperf=${XPUPERF:-build/src/xpuperf}
  if [[ ! -x $xpuperf ]]; then
    echo "$bench_name: no xpuperf binary at '$xpuperf': build it first (make build, or cmake --build BUILD_DIR)" \
      "or set XPUPERF to one" >&2
    exit 2
  fi
}

# bench_error_line LOG: the line that says why a run failed: its last "error" line, else its last
# line that is not empty.
bench_error_line() {
  local line
  line=$(grep -E 'error|Error|ERROR' "$1" 2>/dev/null | tail -n 1)
  [[ -n $line ]] || line=$(grep -v '^[[:space:]]*$' "$1" 2>/dev/null | tail -n 1)
  echo "${line:-(the log is empty)}"
}

# bench_expect_steps LOG LABEL: a training run whose LOG has no STEP_END measured nothing; says so
# with the line that says why and the log's last lines, and remembers LABEL for bench_finish.
bench_expect_steps() {
  if ! grep -q '"event":"STEP_END"' "$1"; then
    echo "$bench_name: $2 failed: $(bench_error_line "$1")" >&2
    echo "$bench_name: $2 measured nothing (no STEP_END in $1); its last lines:" >&2
    tail -n 8 "$1" | sed 's/^/    /' >&2
    echo "$2" >>"$bench_failures_file"
  fi
}

# bench_expect_finished LOG LABEL: the same for a run that ends in a FINISHED event (inference,
# base cases): without it the row's figures are not figures.
bench_expect_finished() {
  if ! grep -q '"event":"FINISHED"' "$1"; then
    echo "$bench_name: $2 failed: $(bench_error_line "$1")" >&2
    echo "$2" >>"$bench_failures_file"
  fi
}

# After the table: exits 1 naming every run that measured nothing (their rows read failed, 0 or nan),
# so that a bench whose xpuperf rows failed never exits 0.
bench_finish() {
  local failed=()
  mapfile -t failed <"$bench_failures_file"
  rm -f "$bench_failures_file"
  if ((${#failed[@]} > 0)); then
    echo "$bench_name: ${#failed[@]} run(s) measured nothing, their figures above are not figures:" \
      "$(IFS=';'; echo "${failed[*]}")" >&2
    exit 1
  fi
}

# bench_require_whole_numbers NAMES VALUE...: exits 2 unless every VALUE is a whole number, naming
# the settings they came from (NAMES, e.g. "STEPS and SKIP") and the first that is not.
bench_require_whole_numbers() {
  local names=$1 n
  shift
  for n in "$@"; do
    [[ $n =~ ^[0-9]+$ ]] || { echo "$bench_name: $names take whole numbers, not '$n'" >&2; exit 2; }
  done
}

# bench_require_pair BINARY...: each must be a program with xpuperf-torch beside it. Training and
# inference run in xpuperf-torch, which xpuperf finds beside itself, so a binary copied alone (to
# keep one build while another is made) would fail at its first run; exits 1 naming it.
bench_require_pair() {
  local bin
  for bin in "$@"; do
    [[ -x $bin ]] || { echo "$bench_name: '$bin' is not an executable" >&2; exit 1; }
    [[ -x $(dirname "$bin")/xpuperf-torch ]] || {
      echo "$bench_name: '$bin' has no xpuperf-torch beside it, and the cases run there: copy both" \
        "(e.g. cp build/src/xpuperf build/src/xpuperf-torch DIR/)" >&2
      exit 1
    }
  done
}

# bench_side SIDE A_BINARY B_BINARY ARGS...: the A/B benches' run of one side: SIDE's binary with
# ARGS in SIDE's environment (A_ENV / B_ENV: NAME=VALUE words, e.g. one binary with a switch on and off).
bench_side() {
  local bin=$2 words=${A_ENV:-}
  [[ $1 == B ]] && bin=$3 && words=${B_ENV:-}
  shift 3
  # shellcheck disable=SC2086  # A_ENV / B_ENV are lists of NAME=VALUE words
  env $words "$bin" "$@"
}

# Sets the array bench_sets from SETS ("key=value ...", settings a bench adds to every run); exits 2
# naming the first word that is not key=value.
bench_read_sets() {
  local s
  read -r -a bench_sets <<<"${SETS:-}"
  for s in "${bench_sets[@]}"; do
    [[ $s == ?*=* ]] || { echo "$bench_name: SETS takes key=value pairs, got '$s'" >&2; exit 2; }
  done
}
