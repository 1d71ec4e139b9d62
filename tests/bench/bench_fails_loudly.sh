#!/usr/bin/env bash
# The training benches refuse to print a table of zeros as if it were a measurement: without the
# xpuperf binary they stop before anything runs (exit 2, naming the path); with a binary whose run
# logs no step they still print the table, then name the run and exit 1. The decode A/B refuses a
# binary without xpuperf-torch beside it.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAILED: $*" >&2
  exit 1
}

for bench in vision_train_vs_pytorch.sh language_train_vs_pytorch.sh parallel_train_vs_pytorch.sh offload_capacity.sh \
  kernel_curves.sh vision_curve_vs_torchvision.sh llm_serving_vs_hf.sh; do
  out=$(XPUPERF="$work/none" bash "$root/bench/$bench" H100 2>&1)
  rc=$?
  [[ $rc == 2 ]] || fail "$bench without a binary: exit $rc, not 2: $out"
  [[ $out == *"no xpuperf binary at '$work/none'"* ]] || fail "$bench does not name the missing binary: $out"
done

# The decode A/B: a binary without xpuperf-torch beside it is refused before anything runs, named.
mkdir -p "$work/alone"
printf '#!/bin/sh\nexit 0\n' > "$work/alone/xpuperf"
chmod +x "$work/alone/xpuperf"
out=$(bash "$root/bench/llm_decode_ab.sh" "$work/alone/xpuperf" "$work/alone/xpuperf" H200 2>&1)
rc=$?
[[ $rc == 1 ]] || fail "llm_decode_ab.sh with a binary copied alone: exit $rc, not 1: $out"
[[ $out == *"'$work/alone/xpuperf' has no xpuperf-torch beside it"* ]] || fail "the lone binary is not named: $out"

# The nvJPEG share A/B: the same refusal, and none without JPEGs to decode.
out=$(DATA="$work" bash "$root/bench/nvjpeg_share_ab.sh" "$work/alone/xpuperf" "$work/alone/xpuperf" 2>&1)
rc=$?
[[ $rc == 1 && $out == *"'$work/alone/xpuperf' has no xpuperf-torch beside it"* ]] ||
  fail "nvjpeg_share_ab.sh with a binary copied alone: exit $rc: $out"
mkdir -p "$work/pair"
cat > "$work/pair/xpuperf" <<'SH'
#!/bin/sh
# A stand-in run: 1,000 images/s on synthetic data, 970 with one nvJPEG thread; a run with two
# threads logs no step (as when a rank dies at its start); the loader alone makes 12,345.6 crops/s.
case "$*" in
  *decode-rate*) echo '{"decoder":"nvjpeg","images_per_second":12345.6}'; exit 0 ;;
  *loader_threads=2*) echo "xpuperf: error: the rank stopped" >&2; exit 1 ;;
  *synthetic_data=true*) rate=1000 ;;
  *) rate=970 ;;
esac
echo '[PerfLog] {"event":"STEP_END","metadata":{},"value":{"samples_per_second":1}}'
echo "[PerfLog] {\"event\":\"FINISHED\",\"metadata\":{},\"value\":{\"steady_samples_per_second\":$rate}}"
SH
cp "$work/pair/xpuperf" "$work/pair/xpuperf-torch"
chmod +x "$work/pair/xpuperf" "$work/pair/xpuperf-torch"
out=$(bash "$root/bench/nvjpeg_share_ab.sh" "$work/pair/xpuperf" "$work/pair/xpuperf" 2>&1)
rc=$?
[[ $rc == 2 && $out == *"no JPEGs: set DATA"* ]] || fail "nvjpeg_share_ab.sh without DATA or PHOTOS: exit $rc: $out"
out=$(DATA="$work" CASES=resnet50 bash "$root/bench/nvjpeg_share_ab.sh" "$work/pair/xpuperf" "$work/pair/xpuperf" H200 resnet50 2>&1)
rc=$?
[[ $out == *"| resnet50 | nvJPEG, 1 loader thread(s) | 970 | 970 | 97.0 % | 97.0 % | 1.000 |"* ]] ||
  fail "nvjpeg_share_ab.sh's share of synthetic is not the runs' (970 of 1,000): $out"
[[ $out == *"| 2 | 12,346 | 12,346 |"* ]] || fail "nvjpeg_share_ab.sh's loader-alone row is not decode-rate's: $out"
[[ $rc == 1 && $out == *"| resnet50 | nvJPEG, 2 loader thread(s) | n/a | n/a | n/a | n/a | n/a |"* &&
  $out == *"resnet50 nvjpeg-2-threads A measured nothing"* ]] ||
  fail "nvjpeg_share_ab.sh does not name the run that measured nothing and fail: exit $rc: $out"

# The kernels' loss curves: every run's curve read from FINISHED into the table; a run that
# records none is named with its last lines, and fails the bench.
cat > "$work/curves" <<'SH'
#!/bin/sh
case "$*" in
  *seed=2*fused_kernels=false*data_dir=*) echo "xpuperf: error: the rank stopped" >&2; exit 1 ;;
  *seed=1*) curve="[3.0, 3.0, 2.0, 2.0]" ;;
  *) curve="[3.2, 3.2, 2.2, 2.2]" ;;
esac
echo "[PerfLog] {\"event\":\"FINISHED\",\"metadata\":{},\"value\":{\"loss_curve\":$curve}}"
SH
chmod +x "$work/curves"
out=$(XPUPERF="$work/curves" DATA="$work/no-text" STEPS=4 WINDOW=2 bash "$root/bench/kernel_curves.sh" H200 gpt2 2>&1)
rc=$?
[[ $rc == 0 && $out == *"Data: synthetic tokens (no $work/no-text): random text."* &&
  $out == *"| 3–4 | 2.1000 | 2.1000 | 0.0000 | 0.2000 | yes |"* && $out == *"| gpt2 | 0.0000 | 0.2000 | 2 of 2 |"* ]] ||
  fail "kernel_curves.sh's table is not the runs' curves: exit $rc: $out"
out=$(XPUPERF="$work/curves" DATA="$work" STEPS=4 WINDOW=2 bash "$root/bench/kernel_curves.sh" H200 gpt2 2>&1)
rc=$?
[[ $rc == 1 && $out == *"gpt2, kernels off, seed 2 recorded no loss curve"* && $out == *"the rank stopped"* &&
  $out == *"gpt2 kernels off seed 2"* ]] || fail "kernel_curves.sh does not name the run without a curve: exit $rc: $out"
out=$(XPUPERF="$work/curves" DATA="$work/no-text" STEPS=4 WINDOW=2 SETS="warmup_steps=20 lr=0.5" \
  bash "$root/bench/kernel_curves.sh" H200 gpt2 2>&1)
[[ $? == 0 && $out == *"random text; also set: warmup_steps=20 lr=0.5."* && $out == *"| gpt2 | 0.0000 | 0.2000 | 2 of 2 |"* ]] ||
  fail "kernel_curves.sh does not pass SETS or name them: $out"
out=$(XPUPERF="$work/curves" SETS="warmup_steps" bash "$root/bench/kernel_curves.sh" H200 gpt2 2>&1)
[[ $? == 2 && $out == *"SETS takes key=value pairs, got 'warmup_steps'"* ]] || fail "kernel_curves.sh with a bad SETS: $out"
out=$(XPUPERF="$work/curves" SEEDS=1 bash "$root/bench/kernel_curves.sh" H200 gpt2 2>&1)
[[ $? == 2 && $out == *"SEEDS needs two seeds or more"* ]] || fail "kernel_curves.sh with one seed: $out"

# A vision case's curve beside torchvision's: the folder and a Python with torchvision are asked for
# by name; both runs' curves reach the table; a run without one is named with its output.
cat > "$work/vcurve" <<'SH'
#!/bin/sh
case "$1" in
  config) echo "seed: 1  # --set seed=1"; echo "max_steps: 4  # --set max_steps=4" ;;
  train) echo "[PerfLog] {\"event\":\"FINISHED\",\"metadata\":{},\"value\":{\"loss_curve\":[2.0,4.0,1.0,1.0]}}" ;;
esac
SH
cat > "$work/tvpython" <<'SH'
#!/bin/sh
[ "$1" = -c ] && exit 0
[ -n "${TV_BROKEN:-}" ] && { echo "RuntimeError: out of memory" >&2; exit 1; }
echo '{"loss_curve": [2.0, 3.0, 2.0, 1.0], "torch": "9.9", "torchvision": "0.9", "device": "cpu"}'
SH
chmod +x "$work/vcurve" "$work/tvpython"
mkdir -p "$work/folder/train/a"
out=$(XPUPERF="$work/vcurve" PYTHON="$work/tvpython" bash "$root/bench/vision_curve_vs_torchvision.sh" 2>&1)
[[ $? == 2 && $out == *"IMAGES must name an ImageNet-layout folder"* ]] || fail "vision_curve without IMAGES: $out"
out=$(XPUPERF="$work/vcurve" PYTHON=/bin/false IMAGES="$work/folder" bash "$root/bench/vision_curve_vs_torchvision.sh" 2>&1)
[[ $? == 2 && $out == *"/bin/false cannot import torchvision: set PYTHON"* ]] || fail "vision_curve without torchvision: $out"
out=$(XPUPERF="$work/vcurve" PYTHON="$work/tvpython" IMAGES="$work/folder" STEPS=4 WINDOW=2 SETS="image_size=32" \
  bash "$root/bench/vision_curve_vs_torchvision.sh" resnet50 2>&1)
rc=$?
[[ $rc == 0 && $out == *"| 1–2 | 3.0000 | 2.5000 | +0.5000 |"* && $out == *"| 3–4 | 1.0000 | 1.5000 | -0.5000 |"* &&
  $out == *"xpuperf: highest loss 4.0000 at step 2"* && $out == *"torchvision 0.9 on PyTorch 9.9, cpu"* &&
  $out == *"Settings: image_size=32"* ]] || fail "vision_curve's table is not the two runs' curves: exit $rc: $out"
out=$(TV_BROKEN=1 XPUPERF="$work/vcurve" PYTHON="$work/tvpython" IMAGES="$work/folder" STEPS=4 WINDOW=2 \
  bash "$root/bench/vision_curve_vs_torchvision.sh" resnet50 2>&1)
rc=$?
[[ $rc == 1 && $out == *"no loss curve from torchvision"* && $out == *"RuntimeError: out of memory"* ]] ||
  fail "vision_curve does not name the run without a curve: exit $rc: $out"

printf '#!/bin/sh\necho "xpuperf: error: no CUDA device here" >&2\nexit 1\n' > "$work/broken"
chmod +x "$work/broken"
echo '{"figure": "versions", "torch": "none"}' > "$work/torch.jsonl"
out=$(XPUPERF="$work/broken" TORCH_JSONL="$work/torch.jsonl" CASES=gpt2 WORK="$work/run" \
  bash "$root/bench/language_train_vs_pytorch.sh" H100 2>&1)
rc=$?
[[ $rc == 1 ]] || fail "a run without steps: exit $rc, not 1: $out"
[[ $out == *"gpt2 synthetic measured nothing (no STEP_END"* ]] || fail "the empty run is not named: $out"
[[ $out == *"no CUDA device here"* ]] || fail "the run's own error is not shown: $out"
# The offload bench: a run out of device memory is a row that says so; one that stopped otherwise
# without a step fails the bench, named.
printf '#!/bin/sh\ncase "$*" in *offload_optimizer=true*) echo "xpuperf: error: no CUDA device here" >&2 ;;\n*) echo "RuntimeError: CUDA out of memory." >&2 ;; esac\nexit 1\n' > "$work/oom"
chmod +x "$work/oom"
out=$(XPUPERF="$work/oom" SIZES=1b HOST_KIB=100000000 WORK="$work/offload" bash "$root/bench/offload_capacity.sh" H100 2>&1)
rc=$?
[[ $rc == 1 ]] || fail "offload_capacity.sh with failed runs: exit $rc, not 1: $out"
[[ $out == *"| 1b | out of device memory |"* ]] || fail "the run out of memory is not a row that says so: $out"
[[ $out == *"1b offload measured nothing"* ]] || fail "the failed offload run is not named: $out"
out=$(XPUPERF="$work/oom" SIZES=1b HOST_KIB=1000 WORK="$work/offload-host" bash "$root/bench/offload_capacity.sh" H100 2>&1)
[[ $out == *"| 1b | out of device memory | host memory too small |"* ]] ||
  fail "a size the host cannot hold offloaded is not said so: $out"
# Its overlapped rows run past offload_overlap's 10 synchronous steps and time only the overlapped
# ones; the offload rows give the host's update and the gradients' wait from FINISHED, the
# after-backward row the run with offload_stream_gradients=false.
cat > "$work/fake" <<'SH'
#!/bin/sh
echo "arguments: $*"
steps=0; offload=0; overlap=0; streamed=1
for a in "$@"; do
  case $a in
    max_steps=*) steps=${a#max_steps=} ;;
    offload_optimizer=true) offload=1 ;;
    offload_overlap=true) overlap=1; streamed=0 ;;
    offload_stream_gradients=false) streamed=0 ;;
  esac
done
i=1
while [ "$i" -le "$steps" ]; do
  rate=1000; [ "$offload" = 1 ] && rate=100; [ "$overlap" = 1 ] && [ "$i" -gt 11 ] && rate=400
  echo "[PerfLog] {\"event\":\"STEP_END\",\"value\":{\"global_steps\":$i,\"tokens_per_second\":$rate}}"
  i=$((i + 1))
done
extra=""
[ "$offload" = 1 ] && extra=",\"offload_host_update_s\":1.5,\"offload_host_parameters_per_s\":8e8,\"offload_host_threads\":16"
[ "$offload" = 1 ] && extra="$extra,\"offload_gradient_wait_s\":0.$((2 - streamed))5,\"offload_streamed_gradient_share\":$streamed"
[ "$overlap" = 1 ] && extra="$extra,\"offload_overlap_wait_s\":0.25"
echo "[PerfLog] {\"event\":\"FINISHED\",\"value\":{\"peak_device_memory_mib\":2048$extra}}"
SH
chmod +x "$work/fake"
out=$(XPUPERF="$work/fake" SIZES=1b STEPS=4 HOST_KIB=100000000 WORK="$work/offload-rows" \
  bash "$root/bench/offload_capacity.sh" H100 2>&1)
rc=$?
[[ $rc == 0 ]] || fail "offload_capacity.sh with good runs: exit $rc: $out"
host="host update 1.50 s a step (0.80 G parameters/s, 16 threads)"
row="| 1b | 1,000 tokens/s, 2,048 MiB | 100 tokens/s, 2,048 MiB; $host; gradients on the host 0.150 s after the backward"
row+=" (100% streamed) | 100 tokens/s, 2,048 MiB; $host; gradients on the host 0.250 s after the backward (0% streamed)"
row+=" | 400 tokens/s, 2,048 MiB; $host, 0.25 s of it waited for; gradients on the host 0.250 s after the backward"
row+=" (0% streamed) | 0.40 |"
[[ $out == *"$row"* ]] || fail "the offload rows are not the runs' (overlapped steps only, the host's update): $out"
[[ $(grep -c STEP_END "$work/offload-rows/1b.offload_overlap.out") == 14 ]] ||
  fail "the overlapped row did not run 10 steps more than STEPS"
XPUPERF="$work/fake" SIZES=1b STEPS=2 BATCH=2 ACCUM=4 HOST_KIB=100000000 WORK="$work/offload-accum" \
  bash "$root/bench/offload_capacity.sh" H100 > /dev/null 2>&1 || fail "offload_capacity.sh with ACCUM=4 failed"
for row in on_gpu offload offload_after offload_overlap; do
  grep -q "train_batch_size=2 --set global_batch_size=8 " "$work/offload-accum/1b.$row.out" ||
    fail "ACCUM=4 does not accumulate 4 micro-batches of BATCH in the $row row"
done
# The inference zoo: a row that fails prints its error line, and the bench exits 1 though it printed
# its table; without the token dataset bertLarge runs on synthetic tokens and says so.
cat > "$work/infer-fails" <<'SH'
#!/bin/sh
echo "xpuperf: error: data_dir is empty: make language-data" >&2
exit 1
SH
chmod +x "$work/infer-fails"
out=$(XPUPERF="$work/infer-fails" TORCH=0 DATA="$work/no-text" bash "$root/bench/infer_zoo_vs_pytorch.sh" H200 bert 2>&1)
rc=$?
[[ $rc == 1 ]] || fail "infer_zoo_vs_pytorch.sh whose rows all failed: exit $rc, not 1: $out"
[[ $out == *"bertLarge libtorch (synthetic tokens) failed: xpuperf: error: data_dir is empty"* ]] ||
  fail "infer_zoo_vs_pytorch.sh does not print a failed row's error: $out"
[[ $out == *"bertLarge runs on synthetic tokens"* ]] || fail "the synthetic fallback is not said: $out"
[[ $out == *"3 run(s) measured nothing"* ]] || fail "the failed rows are not counted: $out"

# Each kernel off in turn: the table's rows are the runs' last evaluations, and a run that evaluated
# nothing is named and fails the bench.
cat > "$work/each-off" <<'SH'
#!/bin/sh
end=4.00
case "$*" in *fused_kernels=true*) end=4.03 ;; esac
[ "$XPUPERF_KERNELS_OFF" = bias_gelu ] && end=3.99
[ "$XPUPERF_KERNELS_OFF" = cross_entropy ] && { echo "xpuperf: error: the rank stopped" >&2; exit 1; }
echo "[PerfLog] {\"event\":\"EVALUATE\",\"value\":{\"global_steps\":200,\"loss\":4.8}}"
echo "[PerfLog] {\"event\":\"EVALUATE\",\"value\":{\"global_steps\":400,\"loss\":$end}}"
SH
chmod +x "$work/each-off"
out=$(XPUPERF="$work/each-off" bash "$root/bench/kernel_each_off.sh" H200 glm 2>&1)
rc=$?
[[ $rc == 1 ]] || fail "kernel_each_off.sh with a failed run: exit $rc, not 1: $out"
[[ $out == *"| off:bias_gelu | 1 | 3.9900 | 3.9900 | 3.9900 | -0.0400 |"* ]] ||
  fail "kernel_each_off.sh's rows are not the runs' last evaluations: $out"
[[ $out == *"glm off:cross_entropy seed 1234 failed: xpuperf: error: the rank stopped"* ]] ||
  fail "kernel_each_off.sh does not name the failed run: $out"

echo "ok"
