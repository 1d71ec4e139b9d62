#!/usr/bin/env bash
# Rapidformer's tables on the GPUs at hand, xpuperf's `sweep` beside PyTorch (Hugging Face's models
# under DDP / FSDP2, bench/rapidformer_pytorch.py) in the same call:
#   bert    BERT-base pre-training, 512 tokens, micro-batch 16, global 64: fp32 (TF32 off) against bf16
#   gpt13   Megatron's GPT 1.3B (24 × 2048, 32 heads), 1024 tokens, micro-batch 1, global 4:
#           bf16 data parallelism, ZeRO-1, -2, -3, tensor parallel 2, pipeline parallel 2 (and with four
#           GPUs tensor × pipeline 2 × 2, 4 × 1, 1 × 4), checkpointing; DDP, FSDP2 shard-grad-op and full-shard
#   graphs  GPT-2 small on one GPU with and without cuda_graphs at 2 × 1024 and 16 × 1024 tokens
# Usage: bench/rapidformer_vs_pytorch.sh DATA_DIR [PARTS]   (PARTS: bert,gpt13,graphs; on an NVIDIA
# machine with two GPUs, after building; DATA_DIR: scripts/linux-doc-datasets.sh's token datasets)
# STEPS=10 WARMUP=3 REPEATS=2 HW=H200 GPUS=2 pick the sweep's shape (GPUS=1: the same global batches
# by accumulation on one GPU, where sharding has nothing to shard); XPUPERF=build/src/xpuperf.
set -euo pipefail
data=${1:?give the token datasets folder}
parts=${2:-bert,gpt13,graphs}
# shellcheck source=bench/common.sh
source "$(dirname "$0")/common.sh"
bench_require_xpuperf  # sets $xpuperf
hw=${HW:-H200}
steps=${STEPS:-10}
warmup=${WARMUP:-3}
repeats=${REPEATS:-2}
gpus=${GPUS:-2}
work=${WORK:-$(mktemp -d)}
mkdir -p "$work"
here=$(cd "$(dirname "$0")" && pwd)

sweep() {  # label case hardware strategies --set ...: prints the sweep's table
  local label=$1 case=$2 hardware=$3 strategies=$4
  shift 4
  local args=()
  for s in "$@"; do args+=(--set "$s"); done
  "$xpuperf" sweep "$case" --vendor nvidia --hardware "$hardware" --data-dir "$data" --strategies "$strategies" \
    --steps "$steps" --warmup-steps "$warmup" --repeats "$repeats" --log-dir "$work/$label" "${args[@]}" \
    > "$work/$label.out" 2>&1 || true
  echo "## xpuperf: $label"
  cat "$work/$label"/sweep*/summary.md 2>/dev/null || tail -30 "$work/$label.out"
  grep -E -h -A8 "error|crashed|out of memory" "$work/$label"/sweep*/rows/*/run*/*/round1/*noderank0/rank0.out.log \
    2>/dev/null | head -20 || true
}

torch_row() {  # arguments of rapidformer_pytorch.py: one JSON line
  torchrun --standalone --nproc_per_node "$gpus" "$here/rapidformer_pytorch.py" "$@" 2> "$work/torch.err" | tail -1 ||
    { echo "{\"failed\": \"$*\"}"; grep -E "Error|error" "$work/torch.err" | tail -3; }
}

IFS=, read -ra list <<< "$parts"
for part in "${list[@]}"; do
  case $part in
    bert)
      sweep bert bert "${hw}x1x$gpus" "fp32; bf16" train_batch_size=16 global_batch_size=64 eval_batch_size=16 \
        cuda_graphs=false
      echo "## PyTorch (Hugging Face BertForMaskedLM, DDP)"
      for p in fp32 bf16; do torch_row --case bert --mode ddp --precision $p --micro 16 --global-batch 64 --steps "$steps"; done
      ;;
    gpt13)
      strategies="bf16; bf16+zero1; bf16+zero2; bf16+zero3; bf16+tp2; bf16+pp2; bf16+ckpt"
      [[ $gpus -ge 4 ]] && strategies+="; bf16+tp2+pp2; bf16+tp4; bf16+pp4"
      [[ $gpus == 1 ]] && strategies="bf16; bf16+ckpt"
      sweep gpt13 gpt2 "${hw}x1x$gpus" "$strategies" n_layer=24 n_embd=2048 n_head=32 train_batch_size=1 \
        global_batch_size=4 eval_batch_size=4 valid_share=0.002 cuda_graphs=false
      echo "## PyTorch (Hugging Face GPT2LMHeadModel at 1.3B)"
      modes="ddp fsdp_grad_op fsdp_full"
      [[ $gpus == 1 ]] && modes=ddp
      for m in $modes; do torch_row --case gpt13 --mode $m --micro 1 --global-batch 4 --steps "$steps"; done
      ;;
    graphs)
      for b in 2 16; do
        sweep "graphs$b" gpt2 "${hw}x1x1" "bf16+cuda_graphs=false; bf16+graphs" train_batch_size=$b eval_batch_size=16
      done
      ;;
    *) echo "unknown part '$part' (bert, gpt13, graphs)" >&2; exit 2 ;;
  esac
done
