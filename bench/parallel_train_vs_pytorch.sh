#!/usr/bin/env bash
# The LLM cases on several GPUs of one host beside PyTorch's data parallelism on the same GPUs in the same
# call (the multi-GPU tables of cases/training/{llama,mixtral}/README.md): xpuperf's llama (Llama-3.2-1B,
# 8 × 2,048 tokens a GPU) on one GPU, then on NPROC with data parallelism, ZeRO-3 and tensor parallelism;
# its mixtral (the reduced shape, 4 × 2,048 a GPU, Hugging Face's batch) on one GPU, data-parallel, and
# with expert parallelism; beside torchrun's DistributedDataParallel and FSDP2 (eager, and compiled layer
# by layer for llama) of Hugging Face's models (bench/parallel_train_pytorch.py). bf16, synthetic ids.
# Tokens/s are over all GPUs; "per GPU ÷ 1 GPU" is the scaling against xpuperf's one-GPU run.
# Usage: bench/parallel_train_vs_pytorch.sh [HARDWARE]   (on a GPU machine with NPROC GPUs, after building)
# NPROC=2 CASES=llama,mixtral STEPS=30 TORCH=1 (0: xpuperf's rows only); WORK=DIR keeps the runs' logs;
# PEAK=989.4 the dense bf16 TFLOP/s of one GPU (H100/H200 SXM), for MFU (the one-GPU model's FLOPs a token:
# the tensor-parallel row's untied output layer is not counted).
set -euo pipefail
hardware=${1:-H100}
nproc=${NPROC:-2}
cases=${CASES:-llama,mixtral}
steps=${STEPS:-30}
work=${WORK:-$(mktemp -d)}
mkdir -p "$work"
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/common.sh
source "$here/common.sh"
bench_require_xpuperf

gpus=$( (nvidia-smi -L 2> /dev/null || true) | wc -l)
if ((gpus < nproc)); then
  echo "$bench_name: NPROC=$nproc GPUs wanted, this host has $gpus" >&2
  exit 2
fi

ours() {  # case label ranks --set ... → one JSON line: rank 0's steady rates (STEP_ENDs after the first)
  local case=$1 label=$2 ranks=$3
  shift 3
  local args=(--set synthetic_data=true --set synthetic_tokens=4194304 --set max_steps="$steps" --set log_freq=10
    --set eval_interval_steps=0)
  [[ $case == mixtral ]] && args+=(--set train_batch_size=4)
  for s in "$@"; do args+=(--set "$s"); done
  local out="$work/$case.$label.out"
  "$xpuperf" train --case "$case" --vendor nvidia --hardware "$hardware" --nproc "$ranks" "${args[@]}" > "$out" 2>&1 ||
    true
  bench_expect_steps "$out" "$case $label"
  PYTHONPATH="$here" python3 - "$out" "$case" "$label" "$ranks" <<'PY'
import json, sys
from perflog import events, steady
steps, fin, _ = events(sys.argv[1])
print(json.dumps({"case": sys.argv[2], "label": sys.argv[3], "ranks": int(sys.argv[4]),
                  "tokens_per_s": steady(steps, "tokens_per_second"),
                  "peak_mib": fin.get("peak_device_memory_mib", float("nan")),
                  "flops_per_token": fin.get("train_flops_per_sample", 0) / max(1, fin.get("tokens_per_sample", 0))}))
PY
  grep -E -A12 "error|crashed" "$out" | head -30 >&2 || true
}

theirs() {  # case mode → rank 0's JSON line; a run out of device memory is a row that says so
  local out="$work/$1.torch-$2.out"
  if torchrun --standalone --nproc-per-node "$nproc" "$here/parallel_train_pytorch.py" --case "$1" --mode "$2" \
    > "$out" 2>&1; then
    grep '"figure": "throughput"' "$out"
  elif grep -q OutOfMemoryError "$out"; then
    echo "{\"case\": \"$1\", \"mode\": \"$2\", \"ranks\": $nproc, \"out_of_memory\": true}"
  else
    echo "$bench_name: torchrun $1 $2 failed; its last lines:" >&2
    tail -n 8 "$out" | sed 's/^/    /' >&2
    echo "torch $1 $2" >>"$bench_failures_file"
  fi
}

IFS=, read -ra list <<< "$cases"
for c in "${list[@]}"; do
  {
    # Without CUDA graphs, as the rows of several GPUs run (they cannot capture the all-reduce), so
    # that the scaling is of the ranks alone.
    ours "$c" 1gpu 1 cuda_graphs=false
    ours "$c" data_parallel "$nproc"
    if [[ $c == llama ]]; then
      ours "$c" zero_stage_3 "$nproc" zero_stage=3
      ours "$c" tensor_parallel "$nproc" tensor_parallel="$nproc" tie_word_embeddings=false
    else
      ours "$c" expert_parallel "$nproc" expert_parallel="$nproc"
    fi
  } > "$work/$c.ours.jsonl"
  : > "$work/$c.torch.jsonl"
  if [[ ${TORCH:-1} == 1 ]]; then
    modes=(ddp fsdp2)
    [[ $c == llama ]] && modes+=(fsdp2-compile)  # Mixtral's routing breaks the graph at every layer
    for m in "${modes[@]}"; do theirs "$c" "$m" >> "$work/$c.torch.jsonl"; done
  fi
done

python3 - "$work" "${PEAK:-989.4}" "${list[@]}" <<'PY'
import json, sys
work, peak, cases = sys.argv[1], float(sys.argv[2]) * 1e12, sys.argv[3:]
print("\n| case | run | GPUs | tokens/s | MFU | per GPU ÷ xpuperf's 1 GPU | × torch DDP | × torch FSDP2 | peak MiB (the most of any rank) |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for case in cases:
    ours = [json.loads(l) for l in open(f"{work}/{case}.ours.jsonl")]
    theirs = [json.loads(l) for l in open(f"{work}/{case}.torch.jsonl")]
    one = next((o["tokens_per_s"] for o in ours if o["ranks"] == 1), 0)
    flops = next((o["flops_per_token"] for o in ours if o["ranks"] == 1 and o["flops_per_token"]), 0)
    ref = {t["mode"]: t["tokens_per_s"] for t in theirs if "tokens_per_s" in t}
    def row(label, ranks, tok, mem):
        scale = f"{tok / ranks / one:.2f}" if one else "?"
        mfu = f"{tok / ranks * flops / peak:.1%}" if flops else "?"
        xd = f"{tok / ref['ddp']:.2f}" if ref.get("ddp") else ""
        xf = f"{tok / ref['fsdp2']:.2f}" if ref.get("fsdp2") else ""
        print(f"| {case} | {label} | {ranks} | {tok:,.0f} | {mfu} | {scale} | {xd} | {xf} | {mem:,.0f} |")
    for o in ours:
        row("xpuperf " + o["label"], o["ranks"], o["tokens_per_s"], o["peak_mib"])
    for t in theirs:
        if t.get("out_of_memory"):
            print(f"| {case} | torch {t['mode']} (Hugging Face) | {t['ranks']} | out of device memory | | | | | |")
        else:
            row(f"torch {t['mode']} (Hugging Face, torch {t['torch']})", t["ranks"], t["tokens_per_s"], t["peak_mib"])
PY
bench_finish
