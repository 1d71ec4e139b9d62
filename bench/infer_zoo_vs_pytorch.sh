#!/usr/bin/env bash
# The inference zoo beside PyTorch on the same GPU in the same call (cases/inference/{vit_l_16,
# bertLarge}/README.md's tables): batch-32 bf16 throughput of xpuperf's engines (inference_core) and
# batch-1 latency against torchvision's vit_l_16 and Hugging Face's BertForMaskedLM (bert-large
# sizes) eager, torch.compile and torch.compile(mode="max-autotune"), with the same random weights
# (bench/infer_zoo_pytorch.py writes them; the ViT's TorchScript trace runs in the torchscript engine).
# PROFILE=N adds where the time goes: xpuperf's libtorch engine with profile_batches=N (each ATen
# operator's GPU time) and torch.profiler's kernel table of N batches, eager and compiled (stderr);
# AUTOTUNE=0 leaves out torch.compile(mode="max-autotune"), whose compile takes minutes; TORCH=0
# leaves out PyTorch (xpuperf's rows only, on weights of its own). A row that fails prints why, and
# the bench then exits 1; without DATA's token dataset bertLarge runs on synthetic tokens, labelled.
# Usage: bench/infer_zoo_vs_pytorch.sh [HARDWARE] [CASES]   (H100 or H200, for MFU; CASES: vit,bert;
# on an NVIDIA GPU machine after building; bert reads DATA=data/text's linux-doc-bert token dataset)
set -euo pipefail
hardware=${1:-H200}
cases=${2:-vit,bert}
# shellcheck source=bench/common.sh
source "$(dirname "$0")/common.sh"
bench_require_xpuperf  # sets $xpuperf
data=${DATA:-data/text}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
here=$(cd "$(dirname "$0")" && pwd)

autotune=()
[[ ${AUTOTUNE:-1} == 0 ]] && autotune=(--no-autotune)
if [[ ${TORCH:-1} == 0 ]]; then
  : > "$work/torch.jsonl"  # TORCH=0: xpuperf's rows only (random weights of its own)
else
  python3 "$here/infer_zoo_pytorch.py" --out "$work" --cases "$cases" --profile "${PROFILE:-0}" "${autotune[@]}" \
    > "$work/torch.jsonl"
fi

ours() {  # case label --set ... → one JSON line of the FINISHED figures
  local case=$1 label=$2
  shift 2
  local args=()
  for s in "$@"; do args+=(--set "$s"); done
  "$xpuperf" infer --case "$case" --vendor nvidia --hardware "$hardware" --out "$work" "${args[@]}" \
    > "$work/$label.out" 2>&1 || true
  bench_expect_finished "$work/$label.out" "$case $label"
  python3 - "$work/$label.out" "$case" "$label" <<'PY'
import json, sys
v = {}
for line in open(sys.argv[1]):
    if '"event":"FINISHED"' in line:
        v = json.loads(line[line.index("{"):])["value"]
print(json.dumps({**v, "case": sys.argv[2], "label": sys.argv[3]}))
PY
  grep -E "error|NOTE" "$work/$label.out" >&2 || true
}

{
  if [[ $cases == *vit* ]]; then
    vit=(synthetic_data=true synthetic_samples=2048)
    [[ ${TORCH:-1} == 0 ]] || vit+=(checkpoint="$work/vit_l_16.pth")
    ours vit_l_16 libtorch compiler=libtorch "${vit[@]}"
    ours vit_l_16 libtorch-graph compiler=libtorch-graph "${vit[@]}"
    [[ ${TORCH:-1} == 0 ]] ||  # the TorchScript trace is PyTorch's
      ours vit_l_16 torchscript compiler=torchscript exist_compiler_path="$work/vit_l_16_ts.pt" "${vit[@]}"
    if [[ ${PROFILE:-0} != 0 ]]; then
      ours vit_l_16 profile compiler=libtorch profile_batches="$PROFILE" "${vit[@]}" > /dev/null
      grep -A18 "ATen operators" "$work/profile.out" >&2 || true
    fi
  fi
  if [[ $cases == *bert* ]]; then
    bert=(data_dir="$data" max_samples=1024 repeat=3)
    [[ ${TORCH:-1} == 0 ]] || bert+=(checkpoint="$work/bert_large.pth")
    if [[ ! -e $data/linux-doc-bert.bin ]]; then
      # No text here: the rows run on synthetic token ids (throughput and latency hold; accuracy does
      # not), and each says so.
      echo "$bench_name: no $data/linux-doc-bert.bin (\`make language-data\` makes data/text): bertLarge runs on" \
        "synthetic tokens, its accuracy columns mean nothing" >&2
      bert+=(synthetic_data=true)
      synthetic=" (synthetic tokens)"
    fi
    ours bertLarge "libtorch${synthetic:-}" compiler=libtorch "${bert[@]}"
    ours bertLarge "libtorch-graph${synthetic:-}" compiler=libtorch-graph "${bert[@]}"
    ours bertLarge "libtorch-graph, fused_kernels false${synthetic:-}" compiler=libtorch-graph fused_kernels=false \
      "${bert[@]}"
    if [[ ${PROFILE:-0} != 0 ]]; then
      ours bertLarge profile compiler=libtorch profile_batches="$PROFILE" "${bert[@]}" > /dev/null
      grep -A18 "ATen operators" "$work/profile.out" >&2 || true
    fi
  fi
} > "$work/ours.jsonl"

cat "$work/torch.jsonl"
python3 - "$work/ours.jsonl" "$work/torch.jsonl" <<'PY'
import json, sys
ours = [json.loads(l) for l in open(sys.argv[1])]
ref = [json.loads(l) for l in open(sys.argv[2])]
for case in dict.fromkeys(o["case"] for o in ours):  # the cases' names, as the Python side gives them
    params = [r["parameters"] for r in ref if r.get("case") == case and "parameters" in r]
    print(f"\n### {case} (reference parameters: {params[0] if params else '?'})\n")
    print("| run | engine | inference_core samples/s | MFU | batch-1 p50 / p99 ms | accuracy (validation / inference) | agreement vs validation |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    mine = {}
    for o in ours:
        if o["case"] != case:
            continue
        mine[o["label"].replace(" (synthetic tokens)", "")] = o
        lat = (o.get("latency") or [{}])[0]
        print(f"| {o['label']} | {o.get('engine', 'failed')} | {o.get('inference_core', float('nan')):.1f} | "
              f"{o.get('mfu', float('nan')):.3f} | {lat.get('p50_ms', float('nan')):.3f} / {lat.get('p99_ms', float('nan')):.3f} | "
              f"{o.get('validation_accuracy', float('nan')):.4f} / {o.get('inference_accuracy', float('nan')):.4f} | "
              f"{o.get('top1_agreement_vs_validation', float('nan')):.4f} |")
    print("\n| PyTorch | samples/s | batch-1 p50 / p99 ms | xpuperf libtorch-graph ÷ it (throughput) | p50 ratio |")
    print("| --- | ---: | ---: | ---: | ---: |")
    g = mine.get("libtorch-graph", {})
    glat = (g.get("latency") or [{}])[0]
    for r in ref:
        if r.get("case") != case or "mode" not in r:
            continue
        if "error" in r:
            print(f"| {r['mode']} | failed: {r['error']} | | | |")
            continue
        ratio = g.get("inference_core", 0) / r["samples_per_s"] if r["samples_per_s"] else float("nan")
        lat = glat.get("p50_ms", float("nan")) / r["p50_ms"] if r.get("p50_ms") else float("nan")
        print(f"| {r['mode']} | {r['samples_per_s']:.1f} | {r['p50_ms']:.3f} / {r['p99_ms']:.3f} | {ratio:.3f} | {lat:.3f} |")
PY
bench_finish
