#!/usr/bin/env bash
# Which training kernel moves a case's loss curve: the case trained with every kernel
# (fused_kernels: true), with none (false), and with each kernel of KERNELS switched off in turn
# (XPUPERF_KERNELS_OFF=name: that kernel steps aside for ATen's operators, the others run), once
# with each of SEEDS. Prints a Markdown table: the held-out metric at each evaluation, a row a run,
# then each setting's mean and spread over the seeds at the last evaluation. Exits 1 when a run
# evaluated nothing, naming it.
#
#   bench/kernel_each_off.sh [HARDWARE [CASE]]
#
# HARDWARE: the nvidia vendor's hardware (default H200); CASE: a training case (default glm).
# KERNELS (default add_norm_with_backward,bias_gelu,cross_entropy: the training kernels of the GPT
# layout; fused_ops.h names the rest; "" for the on and off rows only), SEEDS (default 1234), DATA (default data/text), SETS="key=value
# ...": more settings for every run (e.g. "max_epochs=1"), METRIC (default loss). LOGS=DIR keeps the
# runs' output. XPUPERF: the binary (default build/src/xpuperf).
set -euo pipefail
# shellcheck source=bench/common.sh
source "$(dirname "$0")/common.sh"
bench_absolute_paths LOGS XPUPERF DATA
cd "$(dirname "$0")/.."
bench_require_xpuperf
hardware=${1:-H200}
case_name=${2:-glm}
IFS=, read -r -a kernels <<<"${KERNELS-add_norm_with_backward,bias_gelu,cross_entropy}"  # KERNELS="": on and off only
IFS=, read -r -a seeds <<<"${SEEDS:-1234}"
bench_require_whole_numbers "SEEDS" "${seeds[@]}"
metric=${METRIC:-loss}
bench_read_sets
logs=${LOGS:-$(mktemp -d)}
mkdir -p "$logs"
[[ -n ${LOGS:-} ]] || trap 'rm -rf "$logs"' EXIT

settings=(all-on all-off)
for k in "${kernels[@]}"; do [[ -n $k ]] && settings+=("off:$k"); done
runs=()
for setting in "${settings[@]}"; do
  for seed in "${seeds[@]}"; do
    fused=true off=""
    [[ $setting == all-off ]] && fused=false
    [[ $setting == off:* ]] && off=${setting#off:}
    log=$logs/$case_name.${setting/:/-}.seed-$seed.out
    args=(--set "seed=$seed" --set "fused_kernels=$fused" --set target_value=0)
    for s in "${bench_sets[@]}"; do args+=(--set "$s"); done
    echo "$bench_name: $case_name, $setting, seed $seed" >&2
    XPUPERF_KERNELS_OFF=$off "$xpuperf" train --case "$case_name" --vendor nvidia --hardware "$hardware" \
      --data-dir "${DATA:-data/text}" "${args[@]}" >"$log" 2>&1 || true
    if ! grep -q '"event":"EVALUATE"' "$log"; then
      echo "$bench_name: $case_name $setting seed $seed failed: $(bench_error_line "$log")" >&2
      echo "$case_name $setting seed $seed" >>"$bench_failures_file"
    fi
    runs+=("$setting|$seed|$log")
  done
done

python3 - "$metric" "${bench_sets[*]:-}" "${runs[@]}" <<'PY'
import json, statistics, sys
metric, sets, runs = sys.argv[1], sys.argv[2], sys.argv[3:]
curves = {}
for r in runs:
    setting, seed, log = r.split("|", 2)
    points = {}
    for line in open(log, errors="replace"):
        if '"event":"EVALUATE"' in line:
            v = json.loads(line[line.index("{"):])["value"]
            if metric in v:
                points[int(v["global_steps"])] = float(v[metric])
    curves[(setting, seed)] = points
steps = sorted({s for p in curves.values() for s in p})
shown = steps if len(steps) <= 10 else [steps[round(i * (len(steps) - 1) / 9)] for i in range(10)]
print(f"\n{metric} at each evaluation" + (f" (settings: {sets})" if sets else "") + "\n")
print("| run | seed | " + " | ".join(f"{s:,}" for s in shown) + " |")
print("| --- | --- | " + " | ".join("---:" for _ in shown) + " |")
for (setting, seed), p in curves.items():
    print(f"| {setting} | {seed} | " + " | ".join(f"{p[s]:.3f}" if s in p else "" for s in shown) + " |")
print(f"\n| setting | runs | last {metric}: mean | min | max | minus all-on's mean |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
ends = {}
for (setting, seed), p in curves.items():
    if p:
        ends.setdefault(setting, []).append(p[max(p)])
base = statistics.mean(ends["all-on"]) if ends.get("all-on") else float("nan")
for setting, e in ends.items():
    print(f"| {setting} | {len(e)} | {statistics.mean(e):.4f} | {min(e):.4f} | {max(e):.4f} | "
          f"{statistics.mean(e) - base:+.4f} |")
PY
bench_finish
