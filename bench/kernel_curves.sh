#!/usr/bin/env bash
# The speed issue's loss-curve check for the fused training kernels: each training case trained
# STEPS steps with its kernels (fused_kernels: true) and without them (false), once with each of
# SEEDS, on the same GPU; every step's loss recorded (record_loss_curve), averaged over windows of
# WINDOW steps, and whether the curves with and without the kernels differ by no more than the
# seeds' curves do, over the windows on average (bench/kernel_curves.py says how). Prints Markdown tables, a case each, then one
# line a case; exits 1 when a run recorded no curve, naming it.
#
#   bench/kernel_curves.sh [HARDWARE [CASES]]
#
# HARDWARE: the nvidia vendor's hardware (default H200); CASES: comma-separated training cases
# (default gpt2,bert,vit,resnet50,mobilenetv2). STEPS (200), WINDOW (20), SEEDS (1,2). Data: the
# language cases read DATA (default data/text, `make language-data`); the vision cases a folder in
# ImageNet's layout, IMAGES=DIR, or crops of PHOTOS=DIR that `data photos` makes (100 classes). A
# case without its data runs on synthetic data, and its table says so. SETS="key=value ...": more
# settings for every run, after the bench's own (e.g. "warmup_epochs=0 warmup_steps=20", so that a
# recipe with a long warm-up learns within the steps), named in each table. LOGS=DIR keeps each
# run's output. XPUPERF: the binary (default build/src/xpuperf).
set -euo pipefail
# shellcheck source=bench/common.sh
source "$(dirname "$0")/common.sh"
bench_absolute_paths IMAGES PHOTOS LOGS XPUPERF DATA
cd "$(dirname "$0")/.."
bench_require_xpuperf
hardware=${1:-H200}
IFS=, read -r -a cases <<<"${2:-gpt2,bert,vit,resnet50,mobilenetv2}"
IFS=, read -r -a seeds <<<"${SEEDS:-1,2}"
steps=${STEPS:-200}
window=${WINDOW:-20}
bench_require_whole_numbers "STEPS, WINDOW and SEEDS" "$steps" "$window" "${seeds[@]}"
((${#seeds[@]} >= 2)) || { echo "$bench_name: SEEDS needs two seeds or more: their spread is the noise" >&2; exit 2; }
((window >= 1 && window <= steps)) || { echo "$bench_name: WINDOW ($window) must be 1 to STEPS ($steps)" >&2; exit 2; }
text=${DATA:-data/text}
bench_read_sets
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
logs=${LOGS:-$work/logs}
mkdir -p "$logs"

images=${IMAGES:-}
if [[ -z $images && -n ${PHOTOS:-} ]]; then
  "$xpuperf" data photos --from "$PHOTOS" -o "$work/photos" --classes 100 --train-per-class 800 --val-per-class 10 \
    > "$work/photos.log" 2>&1 || { cat "$work/photos.log" >&2; exit 1; }
  images=$work/photos
fi

runs=()
notes=()
for c in "${cases[@]}"; do
  case $c in
    resnet50 | vit | mobilenetv2)
      if [[ -n $images ]]; then
        data=("data_dir=$images" num_classes=1000 eval_batch_size=250)
        source_of_data="images in $images"
      else
        data=(synthetic_data=true synthetic_eval_samples=500)
        source_of_data="synthetic images (no IMAGES or PHOTOS): random labels"
      fi
      ;;
    *)
      if [[ -d $text ]]; then
        data=("data_dir=$text" eval_interval_steps=0)
        source_of_data="the token datasets in $text"
      else
        data=(synthetic_data=true synthetic_tokens=4194304 eval_interval_steps=0)
        source_of_data="synthetic tokens (no $text): random text"
      fi
      ;;
  esac
  if ((${#bench_sets[@]})); then source_of_data+="; also set: ${bench_sets[*]}"; fi
  echo "$c: $source_of_data" >&2
  notes+=(--data "$c=$source_of_data")
  for seed in "${seeds[@]}"; do
    for setting in on off; do
      fused=true
      [[ $setting == off ]] && fused=false
      log=$logs/$c.kernels-$setting.seed-$seed.out
      sets=()
      for s in "max_steps=$steps" record_loss_curve=true log_freq=0 "seed=$seed" "fused_kernels=$fused" \
        "${data[@]}" "${bench_sets[@]}"; do
        sets+=(--set "$s")
      done
      "$xpuperf" train --case "$c" --vendor nvidia --hardware "$hardware" "${sets[@]}" > "$log" 2>&1 || true
      if ! grep -q '"loss_curve"' "$log"; then
        echo "$bench_name: $c, kernels $setting, seed $seed recorded no loss curve; its last lines:" >&2
        tail -n 8 "$log" | sed 's/^/    /' >&2
      fi
      runs+=("$c:$setting:$seed:$log")
    done
  done
done

PYTHONPATH=bench python3 bench/kernel_curves.py --window "$window" "${notes[@]}" "${runs[@]}" || {
  echo "$bench_name: a run's output is in ${LOGS:-its log (set LOGS=DIR to keep them)}" >&2
  exit 1
}
echo
echo "$hardware, $steps steps, seeds ${seeds[*]}; $("$xpuperf" --version 2>/dev/null | head -1)"
