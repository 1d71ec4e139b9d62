#!/usr/bin/env bash
# A vision case's loss curve beside torchvision's: xpuperf trains the case STEPS steps on an
# ImageNet-layout folder, every step's loss recorded (record_loss_curve); then torchvision's model
# trains as many steps with the recipe xpuperf merged for that run (`xpuperf config` with the same
# settings: bench/vision_curve_torchvision.py) on the same folder. Prints the two curves averaged
# over windows of WINDOW steps, their difference, and each curve's highest step. The models start
# from their own random weights, so the curves are two draws of one recipe: a shape that only one
# of them has (a spike, a plateau, a slower fall) is what it shows.
#
#   IMAGES=DIR bench/vision_curve_vs_torchvision.sh [CASE [VENDOR [HARDWARE]]]
#
# CASE: resnet50 (default), mobilenetv2 or vit; VENDOR and HARDWARE: the vendor config to run
# (default cpu CPU; nvidia H200 on a GPU machine). IMAGES: the folder (train/ and val/, each
# <class>/*.JPEG, e.g. `xpuperf data fashion-mnist -o DIR --size 64`). STEPS (200), WINDOW (20),
# SEED (1). SETS="key=value ...": settings for both sides (e.g. "image_size=64 num_classes=10
# warmup_epochs=0 warmup_steps=100"). PYTHON: a Python with torchvision (default python3, else Debian's
# /usr/bin/python3). LOGS=DIR keeps both runs' output. XPUPERF: the binary (default build/src/xpuperf).
set -euo pipefail
[[ -n ${IMAGES:-} ]] && IMAGES=$(realpath -m -- "$IMAGES")
[[ -n ${LOGS:-} ]] && LOGS=$(realpath -m -- "$LOGS")
[[ -n ${XPUPERF:-} ]] && XPUPERF=$(realpath -m -- "$XPUPERF")
cd "$(dirname "$0")/.."
# shellcheck source=bench/common.sh
source bench/common.sh
bench_require_xpuperf
case_name=${1:-resnet50}
vendor=${2:-cpu}
hardware=${3:-CPU}
steps=${STEPS:-200}
window=${WINDOW:-20}
seed=${SEED:-1}
bench_require_whole_numbers "STEPS, WINDOW and SEED" "$steps" "$window" "$seed"
((steps >= 1 && window >= 1 && window <= steps)) ||
  { echo "$bench_name: STEPS ($steps) must be 1 or more and WINDOW ($window) 1 to STEPS" >&2; exit 2; }
[[ -d ${IMAGES:-} ]] || {
  echo "$bench_name: IMAGES must name an ImageNet-layout folder (train/ and val/, each <class>/*.JPEG;" \
    "xpuperf evaluates once at the end), e.g. one that \`xpuperf data fashion-mnist -o DIR --size 64\` writes;" \
    "got '${IMAGES:-}'" >&2
  exit 2
}
bench_read_sets
python=${PYTHON:-python3}
if ! "$python" -c 'import torchvision' 2>/dev/null; then
  if [[ -z ${PYTHON:-} ]] && /usr/bin/python3 -c 'import torchvision' 2>/dev/null; then
    python=/usr/bin/python3
  else
    echo "$bench_name: $python cannot import torchvision: set PYTHON to one that can" \
      "(Debian: apt-get install python3-torchvision)" >&2
    exit 2
  fi
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
logs=${LOGS:-$work/logs}
mkdir -p "$logs"

sets=()
for s in "max_steps=$steps" "seed=$seed" record_loss_curve=true log_freq=0 eval_interval_epochs=0 \
  eval_interval_steps=0 "${bench_sets[@]}"; do
  sets+=(--set "$s")
done
"$xpuperf" config "$case_name:libtorch:$hardware:1:1:1" --vendor "$vendor" --data-dir "$IMAGES" "${sets[@]}" \
  > "$logs/config.txt" 2> "$logs/config.err" || {
  echo "$bench_name: xpuperf config refused the run:" >&2
  cat "$logs/config.err" >&2
  exit 1
}
echo "$case_name: xpuperf ($vendor $hardware), $steps steps" >&2
"$xpuperf" train --case "$case_name" --vendor "$vendor" --hardware "$hardware" --data-dir "$IMAGES" "${sets[@]}" \
  > "$logs/xpuperf.out" 2>&1 || true
echo "$case_name: torchvision ($python)" >&2
"$python" bench/vision_curve_torchvision.py "$case_name" "$logs/config.txt" > "$logs/torchvision.out" \
  2> "$logs/torchvision.err" || true

PYTHONPATH=bench python3 - "$logs" "$case_name" "$window" "${SETS:-}" <<'PY' || {
import json
import sys

from kernel_curves import loss_curve, window_means

logs, case, window, sets = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
ours = loss_curve(f"{logs}/xpuperf.out")
reference, versions = [], ""
for line in open(f"{logs}/torchvision.out"):
    if line.startswith("{"):
        value = json.loads(line)
        reference = [float(v) for v in value.get("loss_curve", [])]
        versions = f"torchvision {value['torchvision']} on PyTorch {value['torch']}, {value['device']}"
missing = [name for name, curve in (("xpuperf", ours), ("torchvision", reference)) if not curve]
if missing:
    sys.exit("no loss curve from " + " and ".join(missing))
a, b = window_means(ours, window), window_means(reference, window)
print(f"\n### {case}: xpuperf's loss curve beside torchvision's, windows of {window} steps\n")
print(f"Settings: {sets or 'the vendor config'}; reference: {versions}.\n")
print("| steps | xpuperf | torchvision | difference |")
print("| --- | ---: | ---: | ---: |")
for w, (x, y) in enumerate(zip(a, b)):
    print(f"| {w * window + 1}–{(w + 1) * window} | {x:.4f} | {y:.4f} | {x - y:+.4f} |")
for name, curve in (("xpuperf", ours), ("torchvision", reference)):
    top = max(range(len(curve)), key=curve.__getitem__)
    print(f"\n{name}: highest loss {curve[top]:.4f} at step {top + 1}; last {curve[-1]:.4f}", end="")
print()
PY
  echo "$bench_name: the runs' output: ${LOGS:-set LOGS=DIR to keep it}" >&2
  for f in xpuperf.out torchvision.err; do
    echo "--- $f, last lines:" >&2
    tail -n 6 "$logs/$f" >&2
  done
  exit 1
}
