#!/usr/bin/env bash
# LoRA fine-tuning at FlagPerf's llama2_7b_finetune settings (Llama-2-7B's shape, r 8, alpha 32,
# dropout 0.05 on q_proj and v_proj, sequence 512, batch 1, bf16, one GPU): the llama case with
# lora_rank 8 beside the same adapters on Hugging Face's LlamaForCausalLM — PEFT's where PEFT is
# installed, eager and torch.compile, and PEFT's layer written in plain PyTorch, compiled
# (bench/lora_train_pytorch.py) — on the same GPU in the same call: tokens/s, peak device memory,
# trained and frozen parameters. Synthetic ids, random weights (throughput and memory only). Where
# PEFT is installed it first checks that PEFT loads the adapters xpuperf saves
# (bench/peft_reads_adapters.py, a tiny Llama).
# Usage: bench/lora_train_vs_pytorch.sh [HARDWARE]   (on an NVIDIA GPU machine, after building)
# STEPS=50 the measured steps; CUDA_GRAPHS=1 also times xpuperf with cuda_graphs: true (a step of one
# 512-token sequence is short of GPU work: launches bound it); PLAIN=0 skips the plain-PyTorch row.
set -euo pipefail
hardware=${1:-H200}
steps=${STEPS:-50}
work=${WORK:-$(mktemp -d)}
mkdir -p "$work"
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/common.sh
source "$here/common.sh"
bench_require_xpuperf

if python3 -c "import peft" 2>/dev/null; then
  tiny=(hidden_size=64 intermediate_size=128 num_hidden_layers=2 num_attention_heads=4 num_key_value_heads=2
    seq_length=64 train_batch_size=2 synthetic_data=true max_steps=3 log_freq=1 eval_interval_steps=0 lora_rank=4
    lora_alpha=8 "save_checkpoint=$work/adapters")
  tiny_args=()
  for s in "${tiny[@]}"; do tiny_args+=(--set "$s"); done
  "$xpuperf" train --case llama --vendor nvidia --hardware "$hardware" "${tiny_args[@]}" > "$work/tiny.out" 2>&1 || true
  bench_expect_steps "$work/tiny.out" "llama lora_rank 4 (tiny, saves its adapters)"
  if ! python3 "$here/peft_reads_adapters.py" "$work/adapters" --hidden 64 --intermediate 128 --layers 2 --heads 4 \
    --kv-heads 2; then
    peft_refused=1
  fi
fi
python3 "$here/lora_train_pytorch.py" --steps "$steps" > "$work/torch.jsonl"
if [[ ${PLAIN:-1} == 1 ]] && grep -q '"adapters": "peft"' "$work/torch.jsonl"; then
  python3 "$here/lora_train_pytorch.py" --steps "$steps" --adapters plain --modes compile | grep '"throughput"' \
    >> "$work/torch.jsonl"
fi
shape=(vocab_size=32000 hidden_size=4096 intermediate_size=11008 num_hidden_layers=32 num_attention_heads=32
  num_key_value_heads=32 max_position_embeddings=4096 rope_theta=10000 rope_scaling_factor=0
  tie_word_embeddings=false)
args=()
for s in "${shape[@]}" synthetic_data=true synthetic_tokens=4194304 seq_length=512 train_batch_size=1 \
  eval_batch_size=1 lora_rank=8 lora_alpha=32 lora_dropout=0.05 max_steps=$((steps + 10)) timing_skip_steps=10 \
  log_freq=10 eval_interval_steps=0; do
  args+=(--set "$s")
done
"$xpuperf" train --case llama --vendor nvidia --hardware "$hardware" "${args[@]}" > "$work/ours.out" 2>&1 || true
bench_expect_steps "$work/ours.out" "llama lora_rank 8"
if [[ ${CUDA_GRAPHS:-0} == 1 ]]; then
  "$xpuperf" train --case llama --vendor nvidia --hardware "$hardware" "${args[@]}" --set cuda_graphs=true \
    > "$work/ours_graphs.out" 2>&1 || true
  bench_expect_steps "$work/ours_graphs.out" "llama lora_rank 8, cuda_graphs"
fi
PYTHONPATH="$here" python3 - "$work" <<'PY'
import json, sys
from perflog import events
work = sys.argv[1]
ref = [json.loads(l) for l in open(f"{work}/torch.jsonl")]
print(next(r for r in ref if r["figure"] == "versions"))
# The first reference (PEFT's where installed) is the one the ratios are to; a plain row is listed after.
first = next(r for r in ref if r["figure"] == "throughput")["adapters"]
tp = {r["mode"]: r for r in ref if r["figure"] == "throughput" and r["adapters"] == first}
print("\n| run | tokens/s | × PyTorch eager | × PyTorch compile | peak MiB | trained | frozen |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
def ratio(x, mode):
    return f"{x / tp[mode]['tokens_per_s']:.2f}" if mode in tp else "?"
for name, label in (("ours", "xpuperf llama, lora_rank 8"), ("ours_graphs", "xpuperf llama, lora_rank 8, cuda_graphs")):
    try:
        _, fin, _ = events(f"{work}/{name}.out")
    except FileNotFoundError:
        continue
    ours = fin.get("steady_samples_per_second", 0) * fin.get("tokens_per_sample", 512)
    lora = fin.get("lora", {})
    print(f"| {label} | {ours:,.0f} | {ratio(ours, 'eager')} | {ratio(ours, 'compile')} | "
          f"{fin.get('peak_device_memory_mib', float('nan')):,.0f} | {lora.get('trained_parameters', '?'):,} | "
          f"{lora.get('frozen_parameters', '?'):,} |")
for r in (r for r in ref if r["figure"] == "throughput"):
    who = "PEFT" if r["adapters"] == "peft" else "plain-PyTorch LoRA"
    print(f"| {who} ({r['mode']}) | {r['tokens_per_s']:,.0f} | | | {r['peak_mib']:,.0f} | {r['trained']:,} | {r['frozen']:,} |")
print(f"\nxpuperf: init {fin.get('init_time', 0):.1f} s, {fin.get('global_steps')} steps (the last run)")
PY
bench_finish
if [[ -n ${peft_refused:-} ]]; then
  echo "$bench_name: PEFT did not load the adapters xpuperf saved ($work/adapters; its reasons above)" >&2
  exit 1
fi
