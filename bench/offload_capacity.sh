#!/usr/bin/env bash
# How far ZeRO-Offload reaches on one GPU (the llama case's README, "Offload"): the llama case at growing
# sizes, each trained a few steps with the optimizer on the GPU (fused AdamW) and with
# offload_optimizer (with and without offload_overlap), activation checkpointing on every row so
# that the optimizer's state is what decides the fit. Per size and row: tokens/s over the steps after
# the first, the most device memory, or "out of device memory"; then the largest size each way, and
# offload's rate against the on-GPU rate of the same size where both fit. bf16, synthetic ids.
# The host keeps 14 bytes a parameter with offload (fp32 master and moments, the bf16 exchange
# buffer): a size the host's memory cannot hold is skipped, and said so.
# Usage: bench/offload_capacity.sh [HARDWARE]   (on an NVIDIA GPU machine, after building)
# SIZES=1b,3b,8b,8b-40l STEPS=8 BATCH=8 ACCUM=1 pick the sizes (below), the steps, the sequences a
# micro-batch and the micro-batches a step (gradient accumulation on every row: the host's update,
# once a step, is then spread over ACCUM times the device's work, as ZeRO-Offload's large batches do);
# HOST_KIB: the host memory to plan for (default: the kernel's MemAvailable). The overlapped rows run
# 10 steps more and time only their overlapped steps: offload_overlap keeps its first 10 synchronous.
# Each offload row also gives the host's update a step (FINISHED's offload_host_update_s) and its rate,
# and how long the step waited after its backward for its gradients on the host: the plain offload
# row streams them during the backward (offload_stream_gradients), the "after backward" row copies
# them once the backward is done (the share that streamed is given). ROWS=on_gpu,offload,after,overlap
# picks the rows (default: all four).
set -euo pipefail
hardware=${1:-H100}
sizes=${SIZES:-1b,3b,8b,8b-40l}
steps=${STEPS:-8}
batch=${BATCH:-8}
accum=${ACCUM:-1}
rows=",${ROWS:-on_gpu,offload,after,overlap},"
work=${WORK:-$(mktemp -d)}
mkdir -p "$work"
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/common.sh
source "$here/common.sh"
bench_require_xpuperf

shape() {  # size → its --set lines and parameter count (the llama case's README, "Model")
  local eight=(hidden_size=4096 intermediate_size=14336 num_attention_heads=32 num_key_value_heads=8
    tie_word_embeddings=false rope_scaling_factor=0 max_position_embeddings=8192)
  case $1 in
    1b) echo "1235814400" ;;
    3b) echo "3212749824 hidden_size=3072 num_hidden_layers=28 num_attention_heads=24" ;;
    8b) echo "8030261248 ${eight[*]} num_hidden_layers=32" ;;
    # The 8B shape with more layers: 218,112,000 parameters a layer.
    *b-*l)
      local layers=${1#*b-}
      layers=${layers%l}
      echo "$((1050677248 + 218112000 * layers)) ${eight[*]} num_hidden_layers=$layers"
      ;;
    *)
      echo "$bench_name: unknown size '$1' (1b, 3b, 8b, 8b-<layers>l)" >&2
      exit 2
      ;;
  esac
}

host_kib=${HOST_KIB:-$(awk '/MemAvailable/ {print $2}' /proc/meminfo)}

synchronous=10  # offload_overlap's synchronous steps (offload_optimizer.h)

run() {  # size label --set ... → one JSON line
  local size=$1 label=$2
  shift 2
  local args=()
  for s in "$@"; do args+=(--set "$s"); done
  local out="$work/$size.$label.out" total=$steps skip=1
  if [[ $label == *overlap* ]]; then
    total=$((steps + synchronous))
    skip=$((synchronous + 1))  # the first overlapped step's update has not yet been waited for
  fi
  "$xpuperf" train --case llama --vendor nvidia --hardware "$hardware" --set synthetic_data=true \
    --set synthetic_tokens=4194304 --set max_steps="$total" --set log_freq=1 --set eval_interval_steps=0 \
    --set train_batch_size="$batch" --set global_batch_size=$((batch * accum)) --set activation_checkpointing=true \
    "${args[@]}" > "$out" 2>&1 || true
  # Out of device memory is a finding; a run that stopped otherwise without a step is a failure.
  grep -qi "out of memory" "$out" || bench_expect_steps "$out" "$size $label"
  PYTHONPATH="$here" python3 - "$out" "$size" "$label" "$skip" <<'PY'
import json, sys
from perflog import events, steady
steps, fin, _ = events(sys.argv[1])
text = open(sys.argv[1]).read()
oom = "out of memory" in text.lower() or "OutOfMemoryError" in text
print(json.dumps({"size": sys.argv[2], "label": sys.argv[3], "oom": oom and len(steps) < 2,
                  "tokens_per_s": steady(steps, "tokens_per_second", int(sys.argv[4])),
                  "peak_mib": fin.get("peak_device_memory_mib", 0),
                  "host_update_s": fin.get("offload_host_update_s", 0),
                  "host_parameters_per_s": fin.get("offload_host_parameters_per_s", 0),
                  "host_threads": fin.get("offload_host_threads", 0),
                  "overlap_wait_s": fin.get("offload_overlap_wait_s"),
                  "gradient_wait_s": fin.get("offload_gradient_wait_s"),
                  "streamed_share": fin.get("offload_streamed_gradient_share")}))
PY
}

IFS=, read -ra list <<< "$sizes"
: > "$work/rows.jsonl"
for size in "${list[@]}"; do
  read -ra spec <<< "$(shape "$size")"
  params=${spec[0]}
  sets=("${spec[@]:1}")
  if [[ $rows == *,on_gpu,* ]]; then run "$size" on_gpu "${sets[@]}" fused_optimizer=fused >> "$work/rows.jsonl"; fi
  if ((params * 14 / 1024 > host_kib * 9 / 10)); then
    echo "{\"size\": \"$size\", \"label\": \"offload\", \"host_short\": true}" >> "$work/rows.jsonl"
    continue
  fi
  if [[ $rows == *,offload,* ]]; then
    run "$size" offload "${sets[@]}" offload_optimizer=true fused_optimizer=off >> "$work/rows.jsonl"
  fi
  if [[ $rows == *,after,* ]]; then
    run "$size" offload_after "${sets[@]}" offload_optimizer=true offload_stream_gradients=false \
      fused_optimizer=off >> "$work/rows.jsonl"
  fi
  if [[ $rows == *,overlap,* ]]; then
    run "$size" offload_overlap "${sets[@]}" offload_optimizer=true offload_overlap=true fused_optimizer=off \
      >> "$work/rows.jsonl"
  fi
done

python3 - "$work/rows.jsonl" "$sizes" "$host_kib" "$batch" "$accum" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
order = sys.argv[2].split(",")
print(f"\nhost memory available: {int(sys.argv[3]) / 2**20:.0f} GiB; {sys.argv[4]} sequences of 2,048 tokens a "
      f"micro-batch, {sys.argv[5]} micro-batch(es) a step\n")
print("| size | optimizer on the GPU | offload (gradients streamed) | offload, gradients after backward "
      "| offload, overlapped | overlapped ÷ on the GPU |")
print("| --- | --- | --- | --- | --- | ---: |")
def cell(r):
    if r is None:
        return ""
    if r.get("host_short"):
        return "host memory too small"
    if r["oom"]:
        return "out of device memory"
    if not r["tokens_per_s"]:
        return "failed (see its log)"
    text = f"{r['tokens_per_s']:,.0f} tokens/s, {r['peak_mib']:,.0f} MiB"
    if r.get("host_update_s"):
        text += (f"; host update {r['host_update_s']:.2f} s a step "
                 f"({r['host_parameters_per_s'] / 1e9:.2f} G parameters/s, {r['host_threads']} threads)")
    if r.get("overlap_wait_s") is not None:
        text += f", {r['overlap_wait_s']:.2f} s of it waited for"
    if r.get("gradient_wait_s") is not None:
        text += (f"; gradients on the host {r['gradient_wait_s']:.3f} s after the backward "
                 f"({r['streamed_share']:.0%} streamed)")
    return text
largest = {}
for size in order:
    by = {r["label"]: r for r in rows if r["size"] == size}
    on, off, after, lap = by.get("on_gpu"), by.get("offload"), by.get("offload_after"), by.get("offload_overlap")
    ratio = ""
    if on and lap and on.get("tokens_per_s") and lap.get("tokens_per_s"):
        ratio = f"{lap['tokens_per_s'] / on['tokens_per_s']:.2f}"
    print(f"| {size} | {cell(on)} | {cell(off)} | {cell(after)} | {cell(lap)} | {ratio} |")
    for label, r in (("on the GPU", on), ("with offload", lap or off)):
        if r and r.get("tokens_per_s"):
            largest[label] = size
for label in ("on the GPU", "with offload"):
    print(f"largest size that trained {label}: {largest.get(label, 'none')}")
PY
bench_finish
