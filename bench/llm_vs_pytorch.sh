#!/usr/bin/env bash
# The llm inference case beside Hugging Face on the same GPU in the same call
# (cases/inference/llm/README.md's tables): prefill tokens/s and MFU (8 x 1024 tokens), decode TTFT
# and TPOT at batch 1 and 64 with the bandwidth bound, and LoadGen's Offline and Server scenarios
# (short runs: labelled not valid by LoadGen's 600 s rule), against LlamaForCausalLM eager,
# torch.compile and generate() with a static cache under torch.compile (bench/llm_pytorch.py).
# Random bf16 weights on both sides: throughput does not depend on their values.
# xpuperf runs twice: with fused_kernels=true, then with fused_kernels=false (ATen's element-wise
# operators; prefill and decode only), so the table shows what the fused kernels bring.
# Usage: bench/llm_vs_pytorch.sh [HARDWARE] [SIZE]   (H100 or H200, for MFU; SIZE 7b or 1b; on an
# NVIDIA GPU machine after building; SKIP=compile-decode,... passes on to llm_pytorch.py;
# UNFUSED=0 leaves out the second xpuperf run; TORCH=0 the PyTorch one; PROFILE=N prints where
# prefill's time goes: xpuperf's libtorch engine with profile_batches=N, torch.profiler's kernels)
set -euo pipefail
hardware=${1:-H200}
size=${2:-7b}
# shellcheck source=bench/common.sh
source "$(dirname "$0")/common.sh"
bench_require_xpuperf  # sets $xpuperf
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
here=$(cd "$(dirname "$0")" && pwd)

if [[ $size == 7b ]]; then
  shape=(hidden_size=4096 intermediate_size=11008 num_hidden_layers=32 num_attention_heads=32
         num_key_value_heads=32 max_position_embeddings=4096)
else
  shape=()
fi
args=()
for s in "${shape[@]}" batch_size=8 seq_length=1024 prefill_samples=32 latency_batch_sizes=[1] \
  decode_batch_sizes=[1,64] decode_prompt_tokens=512 decode_output_tokens=128 max_batch=64 max_seq_len=1024 \
  prompt_tokens=[128,512] output_tokens=[32,256] offline_queries=256 server_load=[0.5,0.8] \
  server_min_duration_s=${SERVER_SECONDS:-30} server_min_queries=100 fused_kernels=true; do
  args+=(--set "$s")
done
"$xpuperf" infer --case llm --vendor nvidia --hardware "$hardware" --out "$work" "${args[@]}" | tee "$work/ours.out" \
  | grep -v PerfLog || true
touch "$work/unfused.out" "$work/torch.jsonl"
if [[ ${UNFUSED:-1} != 0 ]]; then
  "$xpuperf" infer --case llm --vendor nvidia --hardware "$hardware" --out "$work/unfused" "${args[@]}" \
    --set fused_kernels=false --set offline_queries=0 > "$work/unfused.out" || true
fi
if [[ ${PROFILE:-0} != 0 ]]; then
  "$xpuperf" infer --case llm --vendor nvidia --hardware "$hardware" --out "$work/profile" "${args[@]}" \
    --set compiler=libtorch --set profile_batches="$PROFILE" --set offline_queries=0 --set decode_batch_sizes=[1] \
    --set decode_output_tokens=2 2>&1 | grep -A18 "ATen operators" || true
fi
if [[ ${TORCH:-1} != 0 ]]; then
  python3 "$here/llm_pytorch.py" --size "$size" --skip "${SKIP:-}" --profile "${PROFILE:-0}" | tee "$work/torch.jsonl" || true
fi

python3 - "$work/ours.out" "$work/torch.jsonl" "$size" "$work/unfused.out" <<'PY'
import json, sys
def finished(path):
    for line in open(path):
        if '"event":"FINISHED"' in line:
            return json.loads(line[line.index("{"):])["value"]
    return {}
ours, unfused = finished(sys.argv[1]), finished(sys.argv[4])
ref = [json.loads(l) for l in open(sys.argv[2]) if l.startswith("{")]
g = ours.get("generation", {})
tokens = g.get("prefill_tokens_per_sample", 1024)
print(f"\n### llm, Llama {sys.argv[3]} shape, bf16, random weights\n")
print("| prefill, 8 x 1024 tokens | tokens/s | ratio ours / it |\n| --- | ---: | ---: |")
mine = ours.get("inference_core", 0) * tokens
print(f"| xpuperf libtorch-graph (MFU {ours.get('mfu', 0):.3f}, fused kernels {g.get('fused_kernels')}) | {mine:,.0f} | |")
if unfused:
    theirs = unfused.get("inference_core", 0) * tokens
    print(f"| xpuperf, fused_kernels=false (MFU {unfused.get('mfu', 0):.3f}) | {theirs:,.0f} | {mine / theirs:.2f} |")
for r in ref:
    if r.get("what") == "prefill":
        if "error" in r:
            print(f"| Hugging Face {r['mode']} | failed: {r['error'][:80]} | |")
        else:
            print(f"| Hugging Face {r['mode']}, logits {r['logits']} | {r['tokens_per_second']:,.0f} | {mine / r['tokens_per_second']:.2f} |")
print("\n| decode, 512-token prompts, 128 new | batch | TTFT ms | TPOT ms | bound ms | TPOT / bound |\n| --- | ---: | ---: | ---: | ---: | ---: |")
for name, run in (("xpuperf", g), ("xpuperf, fused_kernels=false", unfused.get("generation", {}))):
    for d in run.get("decode", []):
        print(f"| {name}, {d['sampling']} | {d['batch_size']} | {d['ttft_ms']:.1f} | {d['tpot_ms']:.3f} | {d['bandwidth_bound_ms']:.3f} | {d.get('tpot_over_bound', 0):.2f} |")
for r in ref:
    if r.get("what") == "decode":
        if "error" in r:
            print(f"| Hugging Face {r['mode']} | {r['batch']} | failed: {r['error'][:80]} | | | |")
        else:
            print(f"| Hugging Face {r['mode']} | {r['batch']} | {r['ttft_ms']:.1f} | {r['tpot_ms']:.3f} | | |")
print(f"\ncopy bandwidth {g.get('copy_bandwidth_gb_per_s', 0):.0f} GB/s; {g.get('engine', '')}")
PY
