#!/usr/bin/env bash
# nvJPEG beside the training step, two builds A and B on the same GPU: each vision case's steady
# images/s on synthetic images and on real JPEGs that nvJPEG decodes, with each loader thread count,
# and the share of the synthetic rate each keeps (the speed issue's goal: 97 % or more). A and B
# alternate row by row, so that a change to the GPU loader is shown by its effect on the step.
# Prints Markdown tables: the runs, then each side's loader alone (`data decode-rate`).
#
#   bench/nvjpeg_share_ab.sh A_BINARY B_BINARY [HARDWARE [CASES]]
#
# HARDWARE: the nvidia vendor's hardware (default H200); CASES: comma-separated vision cases
# (default resnet50,mobilenetv2). The JPEGs: DATA=DIR, a folder in ImageNet's layout, else
# PHOTOS=DIR, photographs (e.g. /usr/share/wallpapers) that A's `data photos` crops into 80,000
# training images in 100 classes. THREADS: the loader thread counts of the nvJPEG runs (default
# 1,2). STEPS (default 300: within one epoch of 80,000 images at batch 256) and SKIP (the untimed
# first steps, default 100: nvJPEG's rate climbs through them); LOGS=DIR keeps each run's output.
# With A and B the same binary, A_ENV / B_ENV (NAME=VALUE words) give each side its environment.
set -euo pipefail
if (($# < 2)); then
  echo "usage: bench/nvjpeg_share_ab.sh A_BINARY B_BINARY [HARDWARE [CASES]]" >&2
  exit 2
fi
# Paths the caller gave, before the cd to the repository.
a=$(realpath -m -- "$1")
b=$(realpath -m -- "$2")
[[ -n ${DATA:-} ]] && DATA=$(realpath -m -- "$DATA")
[[ -n ${PHOTOS:-} ]] && PHOTOS=$(realpath -m -- "$PHOTOS")
[[ -n ${LOGS:-} ]] && LOGS=$(realpath -m -- "$LOGS")
cd "$(dirname "$0")/.."
# shellcheck source=bench/common.sh
source bench/common.sh
hardware=${3:-H200}
IFS=, read -r -a cases <<<"${4:-resnet50,mobilenetv2}"
IFS=, read -r -a threads <<<"${THREADS:-1,2}"
steps=${STEPS:-300}
skip=${SKIP:-100}
bench_require_whole_numbers "STEPS, SKIP and THREADS" "$steps" "$skip" "${threads[@]}"
((skip < steps)) || { echo "$bench_name: SKIP ($skip) leaves no step of STEPS ($steps) to time" >&2; exit 2; }
bench_require_pair "$a" "$b"
if [[ -z ${DATA:-} && -z ${PHOTOS:-} ]]; then
  echo "$bench_name: no JPEGs: set DATA to a folder in ImageNet's layout (DIR/train/CLASS/*.JPEG)," \
    "or PHOTOS to a folder of photographs to crop one from (e.g. PHOTOS=/usr/share/wallpapers)" >&2
  exit 2
fi
work=$(mktemp -d /tmp/xpuperf-nvjpeg-share.XXXXXX)
trap 'rm -rf "$work"' EXIT
data=${DATA:-$work/photos}
if [[ -z ${DATA:-} ]]; then
  "$a" data photos --from "$PHOTOS" -o "$data" --classes 100 --train-per-class 800 --val-per-class 10 \
    >"$work/photos.txt" 2>&1 || { echo "$bench_name: data photos failed:" >&2; tail -n 5 "$work/photos.txt" >&2; exit 1; }
fi

# run SIDE LABEL CASE --set ...: one run, its output in $work/CASE.LABEL.SIDE.log; a run that
# logged no step is named (bench_finish fails the bench for it).
run() {
  local side=$1 label=$2 case=$3
  shift 3
  local log=$work/$case.$label.$side.log
  bench_side "$side" "$a" "$b" train --case "$case" --vendor nvidia --hardware "$hardware" --set max_steps="$steps" \
    --set timing_skip_steps="$skip" --set log_freq=20 "$@" >"$log" 2>&1 || true
  if [[ -n ${LOGS:-} ]]; then mkdir -p "$LOGS" && cp "$log" "$LOGS/"; fi
  bench_expect_steps "$log" "$case $label $side"
}

# rate LOG: the run's steady images/s (FINISHED's steady_samples_per_second), nothing without one.
rate() {
  PYTHONPATH=bench python3 -c '
import sys
from perflog import events
print(events(sys.argv[1])[1].get("steady_samples_per_second") or "")
' "$1"
}

rows=$work/rows.tsv
for c in "${cases[@]}"; do
  run A synthetic "$c" --set synthetic_data=true
  run B synthetic "$c" --set synthetic_data=true
  sa=$(rate "$work/$c.synthetic.A.log")
  sb=$(rate "$work/$c.synthetic.B.log")
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$c" synthetic "$sa" "$sb" "$sa" "$sb" >>"$rows"
  for t in "${threads[@]}"; do
    label=nvjpeg-$t-threads
    run A "$label" "$c" --set "data_dir=$data" --set jpeg_decoder=nvjpeg --set loader_threads="$t"
    run B "$label" "$c" --set "data_dir=$data" --set jpeg_decoder=nvjpeg --set loader_threads="$t"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "nvJPEG, $t loader thread(s)" "$(rate "$work/$c.$label.A.log")" \
      "$(rate "$work/$c.$label.B.log")" "$sa" "$sb" >>"$rows"
  done
done

python3 - "$rows" <<'PY'
import sys
def num(s):
    return float(s) if s else None
def share(x, synthetic):
    return f"{100 * x / synthetic:.1f} %" if x and synthetic else "n/a"
print("| case | run | A img/s | B img/s | A share of synthetic | B share of synthetic | B ÷ A |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
for line in open(sys.argv[1]):
    case, run, a, b, sa, sb = line.rstrip("\n").split("\t")
    a, b, sa, sb = num(a), num(b), num(sa), num(sb)
    rate = lambda x: f"{x:,.0f}" if x else "n/a"
    ratio = f"{b / a:.3f}" if a and b else "n/a"
    shares = ("", "") if run == "synthetic" else (share(a, sa), share(b, sb))
    print(f"| {case} | {run} | {rate(a)} | {rate(b)} | {shares[0]} | {shares[1]} | {ratio} |")
PY

# The loader alone with each thread count (`data decode-rate`): how fast each side's nvJPEG path
# decodes without a step beside it, to tell a loader too slow from a step disturbed.
echo
echo "| loader threads | A crops/s, the loader alone | B crops/s, the loader alone |"
echo "| ---: | ---: | ---: |"
for t in "${threads[@]}"; do
  alone=()
  for side in A B; do
    log=$work/decode-rate.$t.$side.log
    bench_side "$side" "$a" "$b" data decode-rate "$data/train" --decoder nvjpeg --threads "$t" --json >"$log" 2>&1 ||
      true
    figure=$(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    if line.startswith("{"):
        print(format(json.loads(line)["images_per_second"], ",.0f"))
' "$log" 2>/dev/null || true)
    if [[ -z $figure ]]; then
      echo "$bench_name: decode-rate with $t thread(s), side $side, measured nothing; its last lines:" >&2
      tail -n 5 "$log" | sed 's/^/    /' >&2
      echo "decode-rate $t $side" >>"$bench_failures_file"
      figure=n/a
    fi
    alone+=("$figure")
  done
  echo "| $t | ${alone[0]} | ${alone[1]} |"
done
echo
echo "A: ${A_ENV:+$A_ENV }$a; B: ${B_ENV:+$B_ENV }$b; $hardware, $steps steps, the first $skip untimed; JPEGs: $data"
bench_finish
