#!/usr/bin/env bash
# The language training cases beside Hugging Face on the same GPU in the same call (the tables in
# cases/training/{gpt2,bert,llama,mixtral,cpm,glm}/README.md): GPT-2 small at 16 × 1,024 tokens, BERT-base at
# 32 × 512, Llama-3.2-1B at 8 × 2,048, the reduced Mixtral at 4 × 2,048, bf16, and CPM-1 medium and GLM-large
# at 16 × 512, fp16, tokens/s and sequences/s of xpuperf (on the kernel's documentation, and on synthetic ids)
# against GPT2LMHeadModel / BertForMaskedLM / LlamaForCausalLM / MixtralForCausalLM (GLM: the plain-PyTorch GLM
# of bench/glm_reference.py, Hugging Face having none) eager and torch.compile, MFU (the cases' FLOPs a
# sample over the datasheet's dense bf16 peak), peak device memory; then the first-step parity
# from Hugging Face's weights (fp32 and bf16: tests/models, LanguageModels.*FirstStep*).
# Usage: bench/language_train_vs_pytorch.sh [HARDWARE [DATA_DIR]]   (on an NVIDIA GPU machine,
# after building; DATA_DIR: where scripts/linux-doc-datasets.sh wrote the token datasets)
# CASES=gpt2,bert,llama,mixtral,cpm,glm STEPS=100 pick the cases and the measured steps; PROFILE=gpt2 lists Hugging
# Face's kernels by time; VARIANTS=gpt2 also times xpuperf with cuda_graphs, the fused
# optimizer and the fused kernels (the loss's) off in turn (VARIANTS=mixtral: bf16_weights too) (VARIANTS=llama: with LoRA r 8,
# ZeRO-Offload with and without offload_overlap, activation checkpointing, and the fused kernels off); OURS_PROFILE=1 lists xpuperf's kernels (a run with profile_steps) and their time by class (GEMM, attention,
# normalisation, element-wise, loss, optimizer, copies, idle: bench/kernel_classes.py) beside
# Hugging Face's classes from PROFILE's run (KERNEL_NAME_WIDTH=0: whole kernel names); PEAK=989.4 the dense bf16 TFLOP/s of the GPU (H100/H200 SXM);
# PARITY=0 skips the first-step parity tests at the end.
set -euo pipefail
hardware=${1:-H200}
data=${2:-}
cases=${CASES:-gpt2,bert}
steps=${STEPS:-100}
peak=${PEAK:-989.4}
work=${WORK:-$(mktemp -d)}
mkdir -p "$work"
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/common.sh
source "$here/common.sh"
bench_require_xpuperf

# TORCH_JSONL=FILE reuses Hugging Face's figures of an earlier call on the same machine kind.
if [[ -n ${TORCH_JSONL:-} ]]; then
  cp "$TORCH_JSONL" "$work/torch.jsonl"
else
  python3 "$here/language_train_pytorch.py" --cases "$cases" --profile "${PROFILE:-}" > "$work/torch.jsonl"
fi

ours() {  # case label --set ... → one JSON line: the steady rates (STEP_ENDs after the first) and FINISHED
  local case=$1 label=$2
  shift 2
  local args=()
  for s in "$@"; do args+=(--set "$s"); done
  "$xpuperf" train --case "$case" --vendor nvidia --hardware "$hardware" "${args[@]}" > "$work/$case.$label.out" 2>&1 || true
  bench_expect_steps "$work/$case.$label.out" "$case $label"
  PYTHONPATH="$here" python3 - "$work/$case.$label.out" "$case" "$label" <<'PY'
import json, sys
from perflog import events, steady
steps, fin, evals = events(sys.argv[1])
print(json.dumps({"case": sys.argv[2], "label": sys.argv[3], "sequences_per_s": steady(steps, "samples_per_second"),
                  "tokens_per_s": steady(steps, "tokens_per_second"), "finished": fin,
                  "evaluate": evals[-1] if evals else {}}))
PY
  grep -E -A12 "error|crashed" "$work/$case.$label.out" | head -30 >&2 || true
}

IFS=, read -ra list <<< "$cases"
{
  for c in "${list[@]}"; do
    common=(max_steps=$steps log_freq=10 eval_interval_steps=0)
    # Mixtral at 4 sequences, as Hugging Face's side: its eager step does not fit the case's 8 on an H100.
    [[ $c == mixtral ]] && common+=(train_batch_size=4)
    ours "$c" synthetic synthetic_data=true synthetic_tokens=4194304 "${common[@]}"
    [[ -n $data ]] && ours "$c" "$([[ $c == cpm ]] && echo zh_debian || echo linux_doc)" "data_dir=$data" "${common[@]}"
    if [[ ,${VARIANTS:-}, == *,$c,* ]]; then
      synth=(synthetic_data=true synthetic_tokens=4194304 "${common[@]}")
      if [[ $c == llama ]]; then  # the LLM switches: LoRA, ZeRO-Offload, activation checkpointing
        ours "$c" lora_r8_q_v "${synth[@]}" lora_rank=8
        ours "$c" offload_optimizer "${synth[@]}" offload_optimizer=true fused_optimizer=off
        ours "$c" offload_overlap "${synth[@]}" offload_optimizer=true offload_overlap=true fused_optimizer=off
        ours "$c" activation_checkpointing "${synth[@]}" activation_checkpointing=true
      else
        ours "$c" without_cuda_graphs "${synth[@]}" cuda_graphs=false
        off=(fused_optimizer=off)
        if [[ $c == mixtral ]]; then  # its configs keep bf16 weights, which need the fused step
          ours "$c" without_bf16_weights "${synth[@]}" bf16_weights=false
          off+=(bf16_weights=false)
        fi
        ours "$c" without_fused_optimizer "${synth[@]}" "${off[@]}"
      fi
      ours "$c" without_fused_kernels "${synth[@]}" fused_kernels=false
    fi
  done
} > "$work/ours.jsonl"

python3 - "$work" "$peak" <<'PY'
import json, sys
work, peak = sys.argv[1], float(sys.argv[2]) * 1e12
ours = [json.loads(l) for l in open(f"{work}/ours.jsonl")]
ref = [json.loads(l) for l in open(f"{work}/torch.jsonl")]
tp = {(r["case"], r["mode"]): r for r in ref if r["figure"] == "throughput"}
print(next(r for r in ref if r["figure"] == "versions"))
print("\n| case | run | sequences/s | tokens/s | MFU | × HF eager | × HF compile | peak MiB |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
for case in dict.fromkeys(o["case"] for o in ours):
    flops = max([o["finished"].get("train_flops_per_sample", 0) for o in ours if o["case"] == case] + [0])
    e, c = tp.get((case, "eager"), {}), tp.get((case, "compile"), {})
    def row(label, seq, tok, mem):
        mfu = f"{seq * flops / peak:.1%}" if flops else "?"
        xe = f"{seq / e['sequences_per_s']:.2f}" if e else "?"
        xc = f"{seq / c['sequences_per_s']:.2f}" if c else "?"
        print(f"| {case} | {label} | {seq:.1f} | {tok:,.0f} | {mfu} | {xe} | {xc} | {mem:,.0f} |")
    for o in ours:
        if o["case"] == case:
            row("xpuperf " + o["label"], o["sequences_per_s"], o["tokens_per_s"],
                o["finished"].get("peak_device_memory_mib", float("nan")))
    for mode, r in (("Hugging Face eager", e), ("Hugging Face torch.compile", c)):
        if r:
            row(mode, r["sequences_per_s"], r["tokens_per_s"], r["peak_mib"])
for o in ours:
    if o["evaluate"]:
        print(f"{o['case']} {o['label']}: after {o['finished'].get('global_steps')} steps, validation {o['evaluate']}")
for r in ref:
    if r["figure"] == "kernels":
        print("\n" + r["table"])
PY

# xpuperf's kernels by time (profile_steps: LibTorch's Kineto profiler), in a run of its own since the
# profiler slows the steps it watches.
if [[ -n ${OURS_PROFILE:-} ]]; then
  for c in "${list[@]}"; do
    extra=()
    [[ $c == mixtral ]] && extra+=(--set train_batch_size=4)
    "$xpuperf" train --case "$c" --vendor nvidia --hardware "$hardware" --set synthetic_data=true \
      --set synthetic_tokens=4194304 --set max_steps=30 --set timing_skip_steps=10 --set profile_steps=10 \
      --set log_freq=10 --set eval_interval_steps=0 "${extra[@]}" > "$work/$c.profile.out" 2>&1 || true
    echo; echo "xpuperf's kernels ($c, steps 11-20 of 30), then a step's GPU time by class beside Hugging Face's (PROFILE=$c):"
    python3 "$here/run_kernels.py" "$c" "$work/$c.profile.out" "$work/torch.jsonl" || echo "$c profile" >>"$bench_failures_file"
  done
fi

# First-step parity from Hugging Face's weights (needs the test binary of a build with tests; PARITY=0
# skips it: it builds every case's Hugging Face reference, a few minutes).
tests=$(dirname "$xpuperf")/../tests/xpuperf_models_tests
if [[ ${PARITY:-1} != 0 && -x $tests ]]; then
  echo
  "$tests" --gtest_filter='LanguageModels.*FirstStep*:LanguageModels.*HuggingFaces*' 2>&1 |
    grep -E "first step|relative logit|OK \]|FAILED" || true
fi
bench_finish
