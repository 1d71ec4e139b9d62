#!/usr/bin/env bash
# Two builds of xpuperf, A and B, decoding side by side on the same GPU: the llm case's TPOT (greedy
# and sampled) at each decode batch size beside the bandwidth bound, in ROUNDS alternating runs
# (A B A B ...), so that a change to the decoder's kernels is shown by its effect on a decoding step.
# Prints a Markdown table: each run's TPOT, the means, B ÷ A, and the bound.
#
#   bench/llm_decode_ab.sh A_BINARY B_BINARY [HARDWARE [SIZE]]
#
# HARDWARE: the nvidia vendor's hardware (default H200); SIZE: 7b (Llama-2-7B's shape, default) or
# 1b (the case's default, TinyLlama-1.1B's). ROUNDS (default 2); LOGS=DIR keeps each run's output.
# A_ENV / B_ENV: environment settings for one side's runs (e.g. A_ENV=XPUPERF_SERIAL_LAUNCHES=1 with
# one binary as both A and B: the same build with and without a runtime switch).
# A short prefill set, no serving.
set -euo pipefail
if (($# < 2)); then
  echo "usage: bench/llm_decode_ab.sh A_BINARY B_BINARY [HARDWARE [SIZE]]" >&2
  exit 2
fi
# Paths the caller gave, before the cd to the repository.
a=$(realpath -m -- "$1")
b=$(realpath -m -- "$2")
[[ -n ${LOGS:-} ]] && LOGS=$(realpath -m -- "$LOGS")
cd "$(dirname "$0")/.."
hardware=${3:-H200}
size=${4:-7b}
rounds=${ROUNDS:-2}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "llm_decode_ab: ROUNDS must be a whole number of 1 or more, not '$rounds'" >&2; exit 2; }
# shellcheck source=bench/common.sh
source bench/common.sh
bench_require_pair "$a" "$b"
work=$(mktemp -d /tmp/xpuperf-decode-ab.XXXXXX)
trap 'rm -rf "$work"' EXIT

sets=(prefill_samples=8 batch_size=8 latency_batch_sizes=[1] latency_queries=5 offline_queries=0 decode_batch_sizes=[1,64]
      decode_prompt_tokens=512 decode_output_tokens=128 max_batch=64 max_seq_len=1024 fused_kernels=true)
if [[ $size == 7b ]]; then
  sets+=(hidden_size=4096 intermediate_size=11008 num_hidden_layers=32 num_attention_heads=32
         num_key_value_heads=32 max_position_embeddings=4096)
fi
args=()
for s in "${sets[@]}"; do args+=(--set "$s"); done

for ((r = 1; r <= rounds; ++r)); do
  for side in A B; do
    log=$work/$side$r.log
    if ! bench_side "$side" "$a" "$b" infer --case llm --vendor nvidia --hardware "$hardware" --out "$work/out$side$r" \
      "${args[@]}" >"$log" 2>&1; then
      echo "llm_decode_ab: side $side ($([[ $side == A ]] && echo "$a" || echo "$b")) failed; its output:" >&2
      tail -n 30 "$log" >&2
      exit 1
    fi
    grep 'decode: batch' "$log" | sed "s/^/$side run $r: /" || true
    [[ -n ${LOGS:-} ]] && mkdir -p "$LOGS" && cp "$log" "$LOGS/"
  done
done

python3 - "$work" "$rounds" "$a" "$b" <<'PY'
import json, os, sys
work, rounds = sys.argv[1], int(sys.argv[2])
def decode_rows(path):
    for line in open(path):
        if '"event":"FINISHED"' in line:
            rows = json.loads(line[line.index("{"):])["value"].get("generation", {}).get("decode", [])
            if not rows:
                sys.exit(f"llm_decode_ab: {path}: FINISHED has no decode rows")
            return {(d["batch_size"], d["sampling"]): d for d in rows}
    sys.exit(f"llm_decode_ab: no FINISHED in {path}")
runs = {side: [decode_rows(f"{work}/{side}{r}.log") for r in range(1, rounds + 1)] for side in "AB"}
print(f"A: {' '.join(filter(None, [os.environ.get('A_ENV', ''), sys.argv[3]]))}\n"
      f"B: {' '.join(filter(None, [os.environ.get('B_ENV', ''), sys.argv[4]]))}\n")
print("| batch | sampling | A TPOT ms (runs) | B TPOT ms (runs) | A mean | B mean | B ÷ A | bound ms | B ÷ bound |")
print("| ---: | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |")
for key in sorted(runs["A"][0]):
    a = [r[key]["tpot_ms"] for r in runs["A"]]
    b = [r[key]["tpot_ms"] for r in runs["B"]]
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    bound = runs["B"][0][key]["bandwidth_bound_ms"]
    print(f"| {key[0]} | {key[1]} | {', '.join(f'{x:.3f}' for x in a)} | {', '.join(f'{x:.3f}' for x in b)} "
          f"| {ma:.3f} | {mb:.3f} | {mb / ma:.3f} | {bound:.3f} | {mb / bound:.2f} |")
PY
