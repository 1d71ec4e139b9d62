#!/usr/bin/env bash
# The vision training cases beside torchvision on the same GPU in the same call (the table in
# cases/training/{resnet50,vit,mobilenetv2}/README.md): batch 256 bf16 images/s of xpuperf
# (synthetic data, and real JPEGs through the loader with each decoder: libjpeg-turbo and nvJPEG)
# against torchvision eager and torch.compile, peak device memory, the loader's rate alone, and
# the first-step parity (loss and
# gradient norm from the same weights and batch, fp32 and bf16).
# Usage: bench/vision_train_vs_pytorch.sh [HARDWARE [PHOTOS...]]   (on an NVIDIA GPU machine, after
# building; PHOTOS: JPEG photographs for `xpuperf data photos`, e.g. /usr/share/wallpapers)
# CASES=resnet50,vit,mobilenetv2 STEPS=100 pick the cases and the measured steps (JPEG_STEPS=300 for the
# real-JPEG rows, timed after step 100); PROFILE=resnet50
# lists torchvision's kernels by time (eager and compiled: where the time goes); VARIANTS=resnet50
# times xpuperf with each acceleration switch off in turn (VARIANT_SWITCHES="fused_kernels=false ...": the
# switches to turn off, one run each), GRAPHS=mobilenetv2 with cuda_graphs on,
# for the cases listed; OURS_PROFILE=1 (a run with profile_steps) lists xpuperf's kernels and a step's GPU time
# by class beside torchvision's from PROFILE (bench/kernel_classes.py); KERNEL_NAME_WIDTH=0 lists whole
# kernel names (bench/run_kernels.py).
set -euo pipefail
hardware=${1:-H200}
shift || true
cases=${CASES:-resnet50,vit,mobilenetv2}
steps=${STEPS:-100}
jpeg_steps=${JPEG_STEPS:-300}
work=${WORK:-$(mktemp -d)}
mkdir -p "$work"
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/common.sh
source "$here/common.sh"
bench_require_xpuperf

# REUSE_TORCH=1 keeps the torchvision figures (and saved weights) of an earlier call with the same WORK.
if [[ -z ${REUSE_TORCH:-} || ! -s $work/torch.jsonl ]]; then
  python3 "$here/vision_train_pytorch.py" --cases "$cases" --out "$work" --steps 60 --profile "${PROFILE:-}" \
    > "$work/torch.jsonl"
fi

if [[ $# -gt 0 ]]; then
  [[ -d $work/photos ]] || "$xpuperf" data photos --from "$@" -o "$work/photos" --classes 100 --train-per-class 800 --val-per-class 10 \
    2> "$work/photos.err" > "$work/photos.txt" || { cat "$work/photos.err"; exit 1; }
  # The loader alone: both decoders over the same folder (nvJPEG where the build has it).
  "$xpuperf" data decode-rate "$work/photos/train" --decoder cpu --json > "$work/decode.jsonl" 2> /dev/null
  "$xpuperf" data decode-rate "$work/photos/train" --decoder nvjpeg --json >> "$work/decode.jsonl" 2> "$work/decode.err" \
    || cat "$work/decode.err" >&2
fi

ours() {  # case label --set ... → one JSON line: the steady images/s (STEP_ENDs after the first), FINISHED
  local case=$1 label=$2
  shift 2
  local args=()
  for s in "$@"; do args+=(--set "$s"); done
  "$xpuperf" train --case "$case" --vendor nvidia --hardware "$hardware" "${args[@]}" > "$work/$case.$label.out" 2>&1 || true
  bench_expect_steps "$work/$case.$label.out" "$case $label"
  PYTHONPATH="$here" python3 - "$work/$case.$label.out" "$case" "$label" "${STEADY_SKIP:-1}" <<'PY'
import json, sys
from perflog import events, steady
steps, fin, _ = events(sys.argv[1])
skip = int(sys.argv[4])
print(json.dumps({"case": sys.argv[2], "label": sys.argv[3], "images_per_s": steady(steps, "samples_per_second", skip),
                  "input_wait_share": steady(steps, "input_wait_share", skip), "first": steps[0] if steps else {},
                  "finished": fin}))
PY
  grep -E "error|warning: skipping" "$work/$case.$label.out" | head -5 >&2 || true
}

IFS=, read -ra list <<< "$cases"
{
  for c in "${list[@]}"; do
    nodrop=()
    [[ $c == mobilenetv2 ]] && nodrop=(dropout=0)  # the only case with dropout: off on both sides
    ours "$c" synthetic synthetic_data=true max_steps=$steps log_freq=20 synthetic_eval_samples=500
    if [[ ,${GRAPHS:-}, == *,$c,* ]]; then
      ours "$c" with_cuda_graphs synthetic_data=true max_steps=$steps log_freq=20 synthetic_eval_samples=500 \
        cuda_graphs=true
    fi
    if [[ ,${VARIANTS:-}, == *,$c,* ]]; then
      for v in ${VARIANT_SWITCHES:-channels_last=false cudnn_benchmark=false fused_optimizer=off precision=fp32 fused_kernels=false}; do
        ours "$c" "without_${v%%=*}" synthetic_data=true max_steps=$((steps / 2)) log_freq=10 \
          synthetic_eval_samples=500 "$v"
      done
    fi
    if [[ -d $work/photos ]]; then
      # The loader makes batches ahead while the run starts, and a backlog of B batches hides a
      # loader that falls d batches a step behind for B / d steps: 32 batches ahead (16 cores) and
      # 100 steps read 99 % for a loader at about 80 %. So the fewest batches ahead (one a thread),
      # 300 steps within one epoch of the folder (no refill during an evaluation), timed after 100.
      STEADY_SKIP=5 ours "$c" jpeg max_steps="$jpeg_steps" log_freq=20 num_classes=1000 eval_batch_size=250 \
        "data_dir=$work/photos" jpeg_decoder=cpu loader_batches_ahead=1
      STEADY_SKIP=5 ours "$c" jpeg_nvjpeg max_steps="$jpeg_steps" log_freq=20 num_classes=1000 eval_batch_size=250 \
        "data_dir=$work/photos" jpeg_decoder=nvjpeg loader_batches_ahead=1
    fi
    ours "$c" parity_fp32 synthetic_data=true synthetic_train_samples=64 train_batch_size=64 max_steps=1 log_freq=1 \
      synthetic_eval_samples=64 eval_batch_size=64 "init_checkpoint=$work/${c}_init.pt" precision=fp32 \
      cudnn_benchmark=false "${nodrop[@]}"
    ours "$c" parity_bf16 synthetic_data=true synthetic_train_samples=64 train_batch_size=64 max_steps=1 log_freq=1 \
      synthetic_eval_samples=64 eval_batch_size=64 "init_checkpoint=$work/${c}_init.pt" precision=bf16 \
      cudnn_benchmark=false "${nodrop[@]}"
  done
} > "$work/ours.jsonl"

python3 - "$work" <<'PY'
import json, os, sys
work = sys.argv[1]
ours = [json.loads(l) for l in open(f"{work}/ours.jsonl")]
ref = [json.loads(l) for l in open(f"{work}/torch.jsonl")]
mine = {(o["case"], o["label"]): o for o in ours}
tp = {(r["case"], r["mode"]): r for r in ref if r["figure"] == "throughput"}
par = {(r["case"], r["precision"]): r for r in ref if r["figure"] == "parity"}
print(next(r for r in ref if r["figure"] == "versions"))
if os.path.exists(f"{work}/decode.jsonl"):
    print("\n" + open(f"{work}/photos.txt").read().strip())
    print("\n| the loader alone (xpuperf data decode-rate) | images/s |\n| --- | ---: |")
    for line in open(f"{work}/decode.jsonl"):
        d = json.loads(line)
        print(f"| {d['backend']} | {d['images_per_second']:.0f} |")
print("\n| case | xpuperf synthetic img/s | real JPEGs, libjpeg-turbo (share of synthetic, host's wait for data) | real JPEGs, nvJPEG (share, wait) | torchvision eager | torch.compile | ours / compile | peak MiB ours | peak MiB eager | peak MiB compile |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for case in dict.fromkeys(o["case"] for o in ours):
    s = mine.get((case, "synthetic"), {})
    e, c = tp.get((case, "eager"), {}), tp.get((case, "compile"), {})
    si, ci = s.get("images_per_s", 0), c.get("images_per_s", 0)
    def share(label):  # with the share of the time the host waited for batches (a slow loader)
        o = mine.get((case, label), {})
        ji = o.get("images_per_s", 0)
        return f"{ji:.0f} ({ji / si:.1%}, waited {o.get('input_wait_share', 0):.0%})" if ji and si else "not run"
    print(f"| {case} | {si:.0f} | {share('jpeg')} | {share('jpeg_nvjpeg')} | {e.get('images_per_s', 0):.0f} | {ci:.0f} | "
          f"{si / ci if ci else float('nan'):.3f} | {s.get('finished', {}).get('peak_device_memory_mib', float('nan')):.0f} | "
          f"{e.get('peak_mib', float('nan')):.0f} | {c.get('peak_mib', float('nan')):.0f} |")
variants = [o for o in ours if o["label"].startswith(("without_", "with_"))]
if variants:
    print("\n| case | xpuperf synthetic, the config's switches | variant | img/s | change |")
    print("| --- | ---: | --- | ---: | ---: |")
    for o in variants:
        base = mine.get((o["case"], "synthetic"), {}).get("images_per_s", 0)
        print(f"| {o['case']} | {base:.0f} | {o['label'].replace('_', ' ', 1)} | {o['images_per_s']:.0f} | "
              f"{o['images_per_s'] / base - 1 if base else float('nan'):+.1%} |")
for r in ref:
    if r["figure"] == "kernels":
        print(f"\ntorchvision {r['case']} {r['mode']}: {r['gpu_ms_per_step']:.1f} ms of kernels a step\n" + r["table"])
print("\n| case | precision | loss xpuperf | loss torchvision | relative | grad norm xpuperf | grad norm torchvision | relative |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for case in dict.fromkeys(o["case"] for o in ours):
    for p in ("fp32", "bf16"):
        o = mine.get((case, f"parity_{p}"), {}).get("first", {})
        r = par.get((case, p), {})
        lo, lr_ = o.get("loss", float("nan")), r.get("loss", float("nan"))
        go, gr = o.get("grad_norm", float("nan")), r.get("grad_norm", float("nan"))
        print(f"| {case} | {p} | {lo:.6f} | {lr_:.6f} | {abs(lo - lr_) / abs(lr_):.2e} | {go:.5f} | {gr:.5f} | "
              f"{abs(go - gr) / abs(gr):.2e} |")
# bf16 against the exact step: both bf16 runs' distance from torchvision's fp32 run (two bf16 runs that
# round in different places may differ from each other by more than either does from fp32).
print("\n| case | bf16 loss off torchvision's fp32: xpuperf | torchvision | bf16 grad norm off fp32: xpuperf | torchvision |")
print("| --- | ---: | ---: | ---: | ---: |")
for case in dict.fromkeys(o["case"] for o in ours):
    o = mine.get((case, "parity_bf16"), {}).get("first", {})
    r, exact = par.get((case, "bf16"), {}), par.get((case, "fp32"), {})
    off = lambda v, key: abs(v - exact.get(key, float("nan"))) / abs(exact.get(key, float("nan")))
    print(f"| {case} | {off(o.get('loss', float('nan')), 'loss'):.2e} | {off(r.get('loss', float('nan')), 'loss'):.2e} | "
          f"{off(o.get('grad_norm', float('nan')), 'grad_norm'):.2e} | {off(r.get('grad_norm', float('nan')), 'grad_norm'):.2e} |")
PY

# xpuperf's kernels by time and by class beside torchvision's (profile_steps: LibTorch's Kineto profiler),
# in a run of its own since the profiler slows the steps it watches.
if [[ -n ${OURS_PROFILE:-} ]]; then
  for c in "${list[@]}"; do
    "$xpuperf" train --case "$c" --vendor nvidia --hardware "$hardware" --set synthetic_data=true \
      --set synthetic_eval_samples=500 --set max_steps=30 --set timing_skip_steps=10 --set profile_steps=10 \
      --set log_freq=10 > "$work/$c.profile.out" 2>&1 || true
    echo; echo "xpuperf's kernels ($c, steps 11-20 of 30), then a step's GPU time by class beside torchvision's (PROFILE=$c):"
    python3 "$here/run_kernels.py" "$c" "$work/$c.profile.out" "$work/torch.jsonl" || echo "$c profile" >>"$bench_failures_file"
  done
fi
bench_finish
