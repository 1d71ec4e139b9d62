#!/usr/bin/env bash
# Is xpuperf's operator timing honest? For each operator × shape × dtype, xpuperf op's median time
# of ATen's operator beside torch.utils.benchmark's (blocked_autorange, a second) for the same
# operator, shape and dtype on the same GPU in the same call. xpuperf runs twice: as its cases do
# (inputs rotated past the caches, a fill between calls), and with warm caches as
# torch.utils.benchmark times (rotate_mib=0, flush_mib=0): the second compares the clocks, the
# first shows what the caches gave. Prints a Markdown table with the ratios, and each row's error
# against float64: the worst |error| over the row's tolerance and over torch.testing's defaults.
#
#   bench/op_vs_torch.sh [HARDWARE]        (nvidia vendor; default H200)
#
# ROWS overrides the list: "op:SIZES:dtype op:SIZES:dtype ...". XPUPERF: the binary (default
# build/src/xpuperf); PYTHON: a Python with PyTorch (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
hardware=${1:-H200}
xpuperf=${XPUPERF:-build/src/xpuperf}
python=${PYTHON:-python3}
# The default rows are large enough that a call takes more than 40 µs: below that,
# torch.utils.benchmark's host clock counts Python's launch of each call and the gaps between
# kernels, which the device's events leave out (on an H200, mv at 8192² or bmm at 32×2048²×128 read
# 20–40 % slower there; at 32768² and 64×4096²×128 the two agree within 3 %).
rows=${ROWS:-"mm:8192x8192x8192:bf16 linear:8192x8192x8192:bf16 bmm:64x4096x4096x128:bf16 mv:32768x32768:bf16
layer_norm:16384x4096:bf16 group_norm:64x512x16384x32:bf16 softmax:16384x4096:bf16 log_softmax:16384x4096:bf16
cross_entropy:16384x50257:bf16 sum:16384x4096:bf16 mean:16384x4096:bf16 gelu:268435456:bf16 silu:268435456:bf16
add:268435456:bf16 mul:268435456:bf16 sigmoid:268435456:bf16"}
work=$(mktemp -d /tmp/xpuperf-op-vs-torch.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "| operator | shape | dtype | xpuperf ms (p10 – p90) | xpuperf, warm caches, ms | torch.utils.benchmark ms | warm ÷ torch | TFLOP/s | GB/s | error / tolerance | error / torch.testing's | accurate |"
echo "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
for row in $rows; do
  IFS=: read -r op shape dtype <<<"$row"
  if ! "$xpuperf" op --case "$op" --vendor nvidia --hardware "$hardware" --shape "$shape" --dtype "$dtype" \
      --json "$work/$op.json" >"$work/$op.log" 2>&1; then
    [[ -s $work/$op.json ]] || { echo "| $op | $shape | $dtype | failed: $(tail -1 "$work/$op.log") | | | | | | | | |"; continue; }
  fi
  "$xpuperf" op --case "$op" --vendor nvidia --hardware "$hardware" --shape "$shape" --dtype "$dtype" \
    --set rotate_mib=0 --set flush_mib=0 --set check_accuracy=false --json "$work/$op.warm.json" >/dev/null 2>&1 || true
  ref=$("$python" bench/op_torch_benchmark.py "$op" "$shape" "$dtype")
  "$python" - "$work/$op.json" "$work/$op.warm.json" "$ref" "$shape" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["rows"][0]
warm = json.load(open(sys.argv[2]))["rows"][0]["median_ms"]
ref = float(sys.argv[3])
worst = lambda key: max(r["error"][key], r.get("gradient_error", {}).get(key, 0))
print(f"| {r['op']} | {sys.argv[4]} | {r['dtype']} | {r['median_ms']:.4f} ({r['p10_ms']:.4f} – {r['p90_ms']:.4f}) | "
      f"{warm:.4f} | {ref:.4f} | {warm / ref:.3f} | {r['tflops']:.1f} | {r['gb_per_s']:.0f} | "
      f"{worst('worst_over_tolerance'):.2f} | {worst('worst_over_default'):.1f} | {'yes' if r['accurate'] else 'NO'} |")
PY
done
echo
echo "xpuperf: $("$xpuperf" --version); PyTorch $("$python" -c 'import torch; print(torch.__version__)'); $hardware"
