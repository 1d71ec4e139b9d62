#!/usr/bin/env bash
# resnet50 inference beside PyTorch on the same GPU in the same call (cases/inference/resnet50/
# README.md's table): batch 256 bf16 throughput of xpuperf's engines (inference_core) against
# torchvision's resnet50 eager and torch.compile, and batch-1 latency. The weights, TorchScript
# trace and AOTInductor package come from the Python side, so the torchscript and aoti engines
# run torchvision's own graph and max_abs_diff_vs_validation compares it with xpuperf's model.
# Usage: bench/infer_vs_pytorch.sh [HARDWARE]   (H100 or H200, for MFU; on an NVIDIA GPU machine, after building;
# AOTI=1 also builds and runs an AOTInductor package)
set -euo pipefail
hardware=${1:-H200}
# shellcheck source=bench/common.sh
source "$(dirname "$0")/common.sh"
bench_require_xpuperf  # sets $xpuperf
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
here=$(cd "$(dirname "$0")" && pwd)

python3 "$here/infer_pytorch.py" --out "$work" ${AOTI:+--aoti} > "$work/torch.jsonl"

ours() {  # label, --set ... → one JSON line of the FINISHED figures
  local label=$1
  shift
  local args=()
  for s in "$@"; do args+=(--set "$s"); done
  "$xpuperf" infer --case resnet50 --vendor nvidia --hardware "$hardware" --out "$work" --set synthetic_data=true \
    --set checkpoint="$work/resnet50.pth" "${args[@]}" > "$work/$label.out" 2>&1 || true
  bench_expect_finished "$work/$label.out" "resnet50 $label"
  python3 - "$work/$label.out" "$label" <<'PY'
import json, sys
v = {}
for line in open(sys.argv[1]):
    if '"event":"FINISHED"' in line:
        v = json.loads(line[line.index("{"):])["value"]
print(json.dumps({"label": sys.argv[2], **v}))
PY
  grep -E "error|NOTE" "$work/$label.out" >&2 || true
}

{
  ours libtorch compiler=libtorch
  ours graph compiler=libtorch-graph
  ours graph_unfused compiler=libtorch-graph cudnn_fusion=false
  ours torchscript compiler=torchscript exist_compiler_path="$work/resnet50_ts.pt"
  # float32: torchvision's traced graph against xpuperf's own model with the same weights.
  ours torchscript_fp32 compiler=torchscript fp16=false exist_compiler_path="$work/resnet50_ts.pt"
  if [[ -f $work/resnet50.pt2 ]]; then ours aoti compiler=aoti exist_compiler_path="$work/resnet50.pt2"; fi
} > "$work/ours.jsonl"

python3 - "$work/ours.jsonl" "$work/torch.jsonl" <<'PY'
import json, sys
ours = {o["label"]: o for o in map(json.loads, open(sys.argv[1]))}
ref = {o["figure"]: o["value"] for o in map(json.loads, open(sys.argv[2]))}
print("torchvision resnet50 parameters:", ref.get("parameters"))
print("\n| run | engine | inference_core img/s | MFU | batch-1 p50 / p99 ms | output diff vs fp32 validation (relative) | top-1 agreement |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
for label, o in ours.items():
    lat = (o.get("latency") or [{}])[0]
    print(f"| {label} | {o.get('engine', 'failed')} | {o.get('inference_core', float('nan')):.0f} | "
          f"{o.get('mfu', float('nan')):.3f} | "
          f"{lat.get('p50_ms', float('nan')):.3f} / {lat.get('p99_ms', float('nan')):.3f} | "
          f"{o.get('relative_diff_vs_validation', float('nan')):.2e} | {o.get('top1_agreement_vs_validation', float('nan')):.3f} |")
print("\n| figure | xpuperf | PyTorch | reference | ratio |")
print("| --- | ---: | ---: | --- | ---: |")
def row(name, mine, theirs, what):
    r = mine / theirs if mine and theirs else float("nan")
    print(f"| {name} | {mine:.1f} | {theirs:.1f} | {what} | {r:.3f} |")
g = ours.get("graph", {}); e = ours.get("libtorch", {})
row("bs256 bf16 img/s, libtorch-graph", g.get("inference_core", 0), ref.get("compile_bs256", 0), "torch.compile")
row("bs256 bf16 img/s, libtorch eager", e.get("inference_core", 0), ref.get("eager_bs256", 0), "eager")
gl = (g.get("latency") or [{}])[0]
for q in (50, 99):
    mine = gl.get(f"p{q}_ms", 0)
    print(f"| bs1 p{q} ms, libtorch-graph | {mine:.3f} | {ref.get(f'eager_bs1_p{q}_ms', 0):.3f} | eager | "
          f"{mine / ref.get(f'eager_bs1_p{q}_ms', 1):.3f} |")
    print(f"| bs1 p{q} ms, libtorch-graph | {mine:.3f} | {ref.get(f'compile_bs1_p{q}_ms', 0):.3f} | torch.compile | "
          f"{mine / ref.get(f'compile_bs1_p{q}_ms', 1):.3f} |")
PY
bench_finish
