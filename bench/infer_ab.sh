#!/usr/bin/env bash
# Two builds of xpuperf, A and B, side by side on the same device: each inference case's throughput
# (FINISHED's inference_core, samples/s) and batch-1 p50 latency on synthetic data through each
# engine asked for, in ROUNDS alternating runs (A B A B ...), so that a change to the engines or the
# models is shown to keep their speed. Prints a Markdown table: each run's figure, the means, B ÷ A.
#
#   bench/infer_ab.sh A_BINARY B_BINARY [HARDWARE [CASES [COMPILERS]]]
#
# HARDWARE: the nvidia vendor's hardware (default H200); CASES: comma-separated (default
# resnet50,vit_l_16); COMPILERS: comma-separated engines (default libtorch,libtorch-graph).
# ROUNDS (default 2).
set -euo pipefail
if (($# < 2)); then
  echo "usage: bench/infer_ab.sh A_BINARY B_BINARY [HARDWARE [CASES [COMPILERS]]]" >&2
  exit 2
fi
a=$(realpath -m -- "$1")
b=$(realpath -m -- "$2")
cd "$(dirname "$0")/.."
hardware=${3:-H200}
IFS=, read -r -a cases <<<"${4:-resnet50,vit_l_16}"
IFS=, read -r -a compilers <<<"${5:-libtorch,libtorch-graph}"
rounds=${ROUNDS:-2}
for bin in "$a" "$b"; do
  [[ -x $bin ]] || { echo "infer_ab: '$bin' is not an executable" >&2; exit 1; }
done
work=$(mktemp -d /tmp/xpuperf-infer-ab.XXXXXX)
trap 'rm -rf "$work"' EXIT

# figures BINARY CASE COMPILER LOG: "samples/s p50_ms" of one run (its output kept in LOG).
figures() {
  if ! "$1" infer --case "$2" --vendor nvidia --hardware "$hardware" --out "$work/out" --set synthetic_data=true \
    --set compiler="$3" >"$4" 2>&1; then
    echo "infer_ab: $1 $2 ($3) failed; its output:" >&2
    tail -n 30 "$4" >&2
    exit 1
  fi
  python3 - "$4" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    if '"event":"FINISHED"' in line:
        v = json.loads(line[line.index("{"):])["value"]
        lat = (v.get("latency") or [{}])[0]
        print(v["inference_core"], lat.get("p50_ms", float("nan")))
        break
else:
    sys.exit("no FINISHED event in " + sys.argv[1])
PY
}

echo "| case | engine | A samples/s | B samples/s | B ÷ A | A batch-1 p50 ms | B batch-1 p50 ms |"
echo "| --- | --- | --- | --- | ---: | ---: | ---: |"
for c in "${cases[@]}"; do
  for e in "${compilers[@]}"; do
    ra=() rb=() la=() lb=()
    for ((r = 0; r < rounds; r++)); do
      out=$(figures "$a" "$c" "$e" "$work/a.log")
      read -r x l <<<"$out"
      ra+=("$x") la+=("$l")
      out=$(figures "$b" "$c" "$e" "$work/b.log")
      read -r x l <<<"$out"
      rb+=("$x") lb+=("$l")
    done
    python3 - "$c" "$e" "${ra[*]}" "${rb[*]}" "${la[*]}" "${lb[*]}" <<'PY'
import sys
case, engine, *lists = sys.argv[1:]
ra, rb, la, lb = ([float(x) for x in s.split()] for s in lists)
mean = lambda xs: sum(xs) / len(xs)
runs = lambda xs: ", ".join(f"{x:,.0f}" for x in xs)
print(f"| {case} | {engine} | {runs(ra)} | {runs(rb)} | {mean(rb) / mean(ra):.3f} | {mean(la):.3f} | {mean(lb):.3f} |")
PY
  done
done
