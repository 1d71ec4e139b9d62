#!/usr/bin/env bash
# bench/vision_curve_vs_torchvision.sh for real on the CPU: xpuperf's ResNet-50 and torchvision's
# (Debian's python3-torchvision) each train 4 steps of 8 Fashion-MNIST images at 32 px with the
# recipe xpuperf merged; the table holds both curves, and each first window is near ln 10, the loss
# of an untrained 10-class model, so both sides trained the classes the settings give.
# Skipped (77) without Fashion-MNIST or torchvision.   usage: vision_curve_cpu.sh XPUPERF
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
xpuperf=$1
[[ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]] || { echo "no Fashion-MNIST: skipped"; exit 77; }
/usr/bin/python3 -c 'import torchvision' 2>/dev/null || { echo "no python3-torchvision: skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$xpuperf" data fashion-mnist -o "$work/fm" --size 32 --train-per-class 8 --val-per-class 2 > "$work/data.log" 2>&1 ||
  { cat "$work/data.log"; exit 1; }
out=$(XPUPERF="$xpuperf" PYTHON=/usr/bin/python3 IMAGES="$work/fm" STEPS=4 WINDOW=2 \
  SETS="image_size=32 num_classes=10 train_batch_size=8 warmup_epochs=0 warmup_steps=2 num_threads=1" \
  bash "$root/bench/vision_curve_vs_torchvision.sh" resnet50 2>&1)
rc=$?
echo "$out"
[[ $rc == 0 ]] || { echo "FAILED: exit $rc"; exit 1; }
python3 - "$out" <<'PY'
import math
import re
import sys

rows = re.findall(r"^\| (\d+)–(\d+) \| ([\d.]+) \| ([\d.]+) \| [-+][\d.]+ \|$", sys.argv[1], re.M)
assert [r[:2] for r in rows] == [("1", "2"), ("3", "4")], f"the table's windows: {rows}"
first_ours, first_reference = float(rows[0][2]), float(rows[0][3])
for name, value in (("xpuperf", first_ours), ("torchvision", first_reference)):
    assert abs(value - math.log(10)) < 2.0, f"{name}'s first window {value} is not near ln 10"
assert re.search(r"reference: torchvision [\d.]+\S* on PyTorch [\d.]+\S*, cpu", sys.argv[1]), "the reference is not named"
PY
