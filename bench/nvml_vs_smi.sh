#!/usr/bin/env bash
# Checks the NVML sampler against nvidia-smi: `xpuperf monitor` and
# `nvidia-smi --query-gpu` sample the same GPUs at 1 Hz over the same window, while a load
# (by default a LeNet-5 training on GPU 0) runs; prints the mean of each figure per GPU from both.
# Usage: bench/nvml_vs_smi.sh [seconds] [load command...]   (on a machine with NVIDIA GPUs)
set -euo pipefail
seconds=${1:-20}
shift || true
# shellcheck source=bench/common.sh
source "$(dirname "$0")/common.sh"
bench_require_xpuperf  # sets $xpuperf
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [[ $# -eq 0 ]]; then
  set -- "$xpuperf" train --case lenet5 --vendor nvidia --hardware H200 --nproc 1 \
    --data-dir "${DATA_DIR:-/usr/share/datasets/fashion-mnist}" --set target_value=0.99 --set max_epochs=100
fi
timeout "$seconds" "$@" > "$work/load.log" 2>&1 &
load=$!
nvidia-smi --query-gpu=index,power.draw,memory.used,memory.total,utilization.gpu,temperature.gpu,clocks.sm \
  --format=csv,noheader,nounits -lms 1000 > "$work/smi.csv" &
smi=$!
"$xpuperf" monitor --duration "$seconds" --period 1 --out "$work/m.csv" > /dev/null
kill "$smi" 2>/dev/null || true
wait "$load" 2>/dev/null || true
python3 - "$work/m.csv" "$work/smi.csv" <<'PY'
import csv, sys, statistics
ours = {}
with open(sys.argv[1]) as f:
    for row in csv.DictReader(f):
        if row["device"].startswith("gpu"):
            ours.setdefault((int(row["device"][3:]), row["metric"]), []).append(float(row["value"]))
smi = {}
fields = ["power_w", "mem_used_bytes", "mem_total_bytes", "util_percent", "temperature_c", "sm_clock_mhz"]
scale = {"mem_used_bytes": 2**20, "mem_total_bytes": 2**20}  # nvidia-smi prints MiB
with open(sys.argv[2]) as f:
    for line in f:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 7: continue
        try:
            gpu = int(parts[0])
            for name, text in zip(fields, parts[1:]):
                smi.setdefault((gpu, name), []).append(float(text) * scale.get(name, 1))
        except ValueError:
            continue
print("| GPU | figure | xpuperf NVML mean | nvidia-smi mean | samples (ours / smi) | difference |")
print("| ---: | --- | ---: | ---: | ---: | ---: |")
for key in sorted(smi):
    if key not in ours: continue
    a, b = statistics.mean(ours[key]), statistics.mean(smi[key])
    div = 2**30 if "bytes" in key[1] else 1
    unit = " GiB" if div > 1 else ""
    diff = 100 * (a - b) / b if b else 0.0
    print("| %d | %s | %.2f%s | %.2f%s | %d / %d | %+.1f %% |" % (key[0], key[1].replace("_bytes", ""), a / div, unit,
          b / div, unit, len(ours[key]), len(smi[key]), diff))
energy = {k[0]: max(v) for k, v in ours.items() if k[1] == "energy_j"}
for gpu, joules in sorted(energy.items()):
    mean_power = statistics.mean(ours[(gpu, "power_w")])
    print("GPU %d: energy counter %.0f J over the window; mean power x %d s = %.0f J" % (gpu, joules, len(ours[(gpu, "power_w")]), mean_power * len(ours[(gpu, "power_w")])))
PY
