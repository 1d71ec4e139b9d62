#!/usr/bin/env bash
# Two builds of xpuperf, A and B, side by side on the same device: the steady training rate of
# each case on synthetic data (FINISHED's steady_samples_per_second after the first SKIP steps), in
# ROUNDS alternating runs (A B A B ...), so that a change to the runtime can be shown to keep
# its speed. Prints a Markdown table: each run's figure, the means and B ÷ A.
#
#   bench/step_rate_ab.sh A_BINARY B_BINARY [HARDWARE [CASES]]
#
# HARDWARE: the vendor config's hardware (default H100; nvidia vendor); CASES: comma-separated
# (default gpt2,resnet50). STEPS (default 60), SKIP (default 20), ROUNDS (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."

if (($# < 2)); then
  echo "usage: bench/step_rate_ab.sh A_BINARY B_BINARY [HARDWARE [CASES]]" >&2
  exit 2
fi
a=$1
b=$2
hardware=${3:-H100}
IFS=, read -r -a cases <<<"${4:-gpt2,resnet50}"
steps=${STEPS:-60}
skip=${SKIP:-20}
rounds=${ROUNDS:-2}
for bin in "$a" "$b"; do
  [[ -x $bin ]] || { echo "step_rate_ab: '$bin' is not an executable" >&2; exit 1; }
done
work=$(mktemp -d /tmp/xpuperf-step-rate.XXXXXX)
trap 'rm -rf "$work"' EXIT

# rate BINARY CASE LOG: the steady samples/s of one run (its output kept in LOG).
rate() {
  local extra=()
  # A language case sizes its synthetic data in tokens, an image case in samples.
  if grep -q '^synthetic_tokens:' "cases/training/$2/libtorch/config/_base.yaml" 2>/dev/null; then
    extra=(--set synthetic_tokens=4194304)
  else
    extra=(--set synthetic_train_samples=65536 --set synthetic_eval_samples=256)
  fi
  if ! "$1" train --case "$2" --vendor nvidia --hardware "$hardware" --set synthetic_data=true \
    --set max_steps="$steps" --set timing_skip_steps="$skip" --set log_freq=0 --set eval_interval_epochs=0 \
    --set eval_interval_steps=0 "${extra[@]}" >"$3" 2>&1; then
    echo "step_rate_ab: $1 $2 failed; its output:" >&2
    tail -n 30 "$3" >&2
    exit 1
  fi
  python3 - "$3" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    if '"event":"FINISHED"' in line:
        print(json.loads(line[line.index("{"):])["value"]["steady_samples_per_second"])
        break
else:
    sys.exit("no FINISHED event in " + sys.argv[1])
EOF
}

echo "| case | A runs (samples/s) | B runs (samples/s) | A mean | B mean | B ÷ A |"
echo "| --- | --- | --- | ---: | ---: | ---: |"
for c in "${cases[@]}"; do
  ra=() rb=()
  for ((i = 1; i <= rounds; ++i)); do
    ra+=("$(rate "$a" "$c" "$work/$c-a$i.log")")
    rb+=("$(rate "$b" "$c" "$work/$c-b$i.log")")
  done
  python3 - "$c" "${ra[*]}" "${rb[*]}" <<'EOF'
import sys
name, a, b = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
ma, mb = sum(a) / len(a), sum(b) / len(b)
fmt = lambda v: ", ".join(f"{x:,.1f}" for x in v)
print(f"| {name} | {fmt(a)} | {fmt(b)} | {ma:,.1f} | {mb:,.1f} | {mb / ma:.3f} |")
EOF
done
echo
echo "A: $a ($("$a" --version)); B: $b ($("$b" --version)); $hardware, $steps steps, the first $skip untimed, synthetic data"
