#!/usr/bin/env bash
# The base cases beside PyTorch on the same GPU in the same call (cases/base/README.md's table):
# GEMM per precision at 8192^3, device copy and read bandwidth, pinned host<->device at 1 GiB,
# and all-reduce busbw at 256 MiB over the host's first two GPUs. Prints a Markdown table.
# Usage: bench/base_vs_pytorch.sh [HARDWARE]   (on an NVIDIA GPU machine, after building)
set -euo pipefail
hardware=${1:-H200}
# shellcheck source=bench/common.sh
source "$(dirname "$0")/common.sh"
bench_require_xpuperf  # sets $xpuperf
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
here=$(cd "$(dirname "$0")" && pwd)

ours() {  # metric, figure name, [--set ...] → the figure's value from FINISHED
  local metric=$1 figure=$2
  shift 2
  "$xpuperf" base "$metric" --vendor nvidia --hardware "$hardware" "$@" > "$work/out" 2>&1 || true
  bench_expect_finished "$work/out" "base $metric $figure"
  python3 - "$work/out" "$figure" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    if '"event":"FINISHED"' in line:
        v = json.loads(line[line.index("{"):])["value"]
        for f in v["figures"]:
            if f["name"] == sys.argv[2]:
                print(f["value"]); sys.exit(0)
        if sys.argv[2].startswith("sweep:"):
            size = int(sys.argv[2][6:])
            for row in v["details"]["sweep"]:
                if int(row["size_bytes"]) == size:
                    print(row["busbw_gbps"]); sys.exit(0)
print("nan")
PY
}

python3 "$here/base_pytorch.py" > "$work/torch.jsonl"
if [[ $(nvidia-smi -L | wc -l) -ge 2 ]]; then
  python3 -m torch.distributed.run --nproc-per-node 2 "$here/base_pytorch.py" --allreduce >> "$work/torch.jsonl" 2>/dev/null
fi

{
  for p in FP64 FP32 TF32 FP16 BF16 FP8 INT8; do
    echo "gemm_$p $(ours computation-$p best --set cuda_size=8192)"
  done
  echo "copy $(ours main_memory-bandwidth copy)"
  echo "memcpy $(ours main_memory-bandwidth "copy (cudaMemcpy)")"
  echo "read $(ours main_memory-bandwidth read)"
  echo "h2d_pinned $(ours interconnect-h2d 'pinned 1024 MiB')"
  echo "d2h_pinned $(ours interconnect-d2h 'pinned 1024 MiB')"
  if [[ $(nvidia-smi -L | wc -l) -ge 2 ]]; then
    echo "allreduce_busbw_256MiB $(ours interconnect-allreduce sweep:268435456 --nproc 2 --set device_min_bytes=268435456)"
  fi
} > "$work/ours.txt"

python3 - "$work/ours.txt" "$work/torch.jsonl" <<'PY'
import json, math, sys
ours = dict(line.split() for line in open(sys.argv[1]) if line.strip())
ref = {}
ref_alias = {"memcpy": "copy"}
for line in open(sys.argv[2]):
    if line.startswith("{"):
        o = json.loads(line); ref[o["figure"]] = o["value"]
names = {"gemm_FP64": ("FP64 GEMM 8192³", "TFLOP/s", "torch.mm"), "gemm_FP32": ("FP32 GEMM 8192³", "TFLOP/s", "torch.mm"),
         "gemm_TF32": ("TF32 GEMM 8192³", "TFLOP/s", "torch.mm, allow_tf32"),
         "gemm_FP16": ("FP16 GEMM 8192³", "TFLOP/s", "torch.mm"), "gemm_BF16": ("BF16 GEMM 8192³", "TFLOP/s", "torch.mm"),
         "gemm_FP8": ("FP8 E4M3 GEMM 8192³", "TFLOP/s", "torch._scaled_mm"), "gemm_INT8": ("INT8 GEMM 8192³", "TOP/s", "torch._int_mm"),
         "copy": ("device copy kernel (read + write)", "GB/s", "Tensor.copy_"),
         "memcpy": ("device copy, cudaMemcpyAsync (read + write)", "GB/s", "Tensor.copy_"), "read": ("device read", "GB/s", "Tensor.sum"),
         "h2d_pinned": ("host→device, pinned, 1 GiB", "GB/s", "copy_(non_blocking)"),
         "d2h_pinned": ("device→host, pinned, 1 GiB", "GB/s", "copy_(non_blocking)"),
         "allreduce_busbw_256MiB": ("all-reduce busbw, 2 GPUs, 256 MiB", "GB/s", "dist.all_reduce")}
print("| figure | unit | xpuperf | PyTorch | reference | xpuperf / PyTorch |")
print("| --- | --- | ---: | ---: | --- | ---: |")
for key, (label, unit, how) in names.items():
    if key not in ours: continue
    a = float(ours[key]); b = ref.get(ref_alias.get(key, key), float("nan"))
    ratio = a / b if b and not math.isnan(b) else float("nan")
    print("| %s | %s | %.1f | %.1f | %s | %.3f |" % (label, unit, a, b, how, ratio))
PY
bench_finish
