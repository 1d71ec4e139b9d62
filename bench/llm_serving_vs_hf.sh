#!/usr/bin/env bash
# The llm case's serving sweep (the paged engine) beside Hugging Face's compiled static-cache
# generate() at the same concurrencies, on the same GPU in the same call
# (cases/inference/llm/README.md's serving table). Random bf16 weights on both sides.
# Usage: bench/llm_serving_vs_hf.sh [HARDWARE] [SIZE] [LENGTHS] [MAX_CONCURRENCY]
#   HARDWARE H200 or H100; SIZE 8b (Llama-3-8B's shape) or 1b (TinyLlama's); LENGTHS like
#   1024x1024,8192x1024; on an NVIDIA GPU machine after building. TORCH=0 leaves out Hugging Face;
#   HF_CONCURRENCY=1,8,64 runs it at those concurrencies only (each batch size compiles anew).
#   The llm case runs without its prefill engine (compiler null): the sweep is what is compared.
set -euo pipefail
hardware=${1:-H200}
size=${2:-8b}
lengths=${3:-1024x1024}
most=${4:-64}
# shellcheck source=bench/common.sh
source "$(dirname "$0")/common.sh"
bench_require_xpuperf  # sets $xpuperf
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
here=$(cd "$(dirname "$0")" && pwd)

if [[ $size == 8b ]]; then
  shape=(vocab_size=128256 hidden_size=4096 intermediate_size=14336 num_hidden_layers=32 num_attention_heads=32
         num_key_value_heads=8 max_position_embeddings=131072 rope_theta=500000.0)
else
  shape=()
fi
pairs=$(echo "$lengths" | sed 's/\([0-9]*\)x\([0-9]*\)/[\1,\2]/g')
concurrency=1; list=1
while (( concurrency * 2 <= most )); do concurrency=$((concurrency * 2)); list="$list,$concurrency"; done
(( concurrency == most )) || list="$list,$most"
args=()
for s in "${shape[@]}" compiler=null prefill_samples=8 "latency_batch_sizes=[]" "decode_batch_sizes=[1]" \
  offline_queries=0 "sweep_lengths=[$pairs]" max_concurrency="$most"; do
  args+=(--set "$s")
done
# Its steps and the sweep's points as they come (a run stopped early still shows how far it got, and
# when: a large model's set-up takes minutes before the first point).
"$xpuperf" infer --case llm --vendor nvidia --hardware "$hardware" --out "$work" "${args[@]}" 2>&1 |
  tee "$work/ours.out" |
  grep --line-buffered -E '"event":"INFER_STEP"|^serving sweep|at concurrency|^decode: batch|^decode engine ready' |
  while IFS= read -r line; do
    if [[ $line == *'"event":"INFER_STEP"'* ]]; then
      step=${line#*\"step\":\"}
      echo "at ${SECONDS} s: step ${step%%\"*} done"
    else
      echo "$line"
    fi
  done || true
touch "$work/torch.jsonl"
if [[ ${TORCH:-1} != 0 ]]; then
  python3 "$here/llm_serving_hf.py" --size "$size" --lengths "$lengths" --concurrency "${HF_CONCURRENCY:-$list}" |
    tee "$work/torch.jsonl" || true
fi

python3 - "$work/ours.out" "$work/torch.jsonl" <<'PY'
import json, sys
ours = {}
for line in open(sys.argv[1]):
    if '"event":"FINISHED"' in line:
        g = json.loads(line[line.index("{"):])["value"].get("generation", {})
        for p in g.get("sweep", {}).get("points", []):
            ours[(p.get("lengths"), p["concurrency"])] = p
hf = {}
for line in open(sys.argv[2]):
    if line.startswith("{"):
        p = json.loads(line)
        if p.get("what") == "point":
            hf[(f'{p["input_tokens"]}/{p["output_tokens"]}', p["concurrency"])] = p
if not ours:
    tail = "".join(open(sys.argv[1]).readlines()[-5:])
    sys.exit("xpuperf's run has no serving sweep point, nothing to compare; its output ended:\n" + tail)
print("\n| in / out | concurrency | xpuperf output tokens/s | TPOT p50 (ms) | host share | HF generate, static cache, compiled | xpuperf / HF |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for key in sorted(ours, key=lambda k: (k[0], k[1])):
    p, h = ours[key], hf.get(key, {})
    if not p.get("ok"):
        print(f"| {key[0]} | {key[1]} | failed: {p.get('error', '')} | | | | |")
        continue
    mine = p["output_tokens_per_second_per_gpu"]
    theirs = h.get("output_tokens_per_second")
    print(f"| {key[0]} | {key[1]} | {mine:,.0f} | {p['tpot_ms']['p50']:.2f} | {100 * p['host_share_of_step']:.1f} % | "
          f"{f'{theirs:,.0f}' if theirs else h.get('error', '-')} | {f'{mine / theirs:.2f}x' if theirs else '-'} |")
PY
