#!/usr/bin/env bash
# What monitoring costs: CPU time of `xpuperf monitor` (every sampler this host has) as a share
# of one core, at 1 Hz and 10 Hz. The start-up of the process (loading its libraries, LibTorch
# included) is measured alone and subtracted. Usage: bench/monitor_cost.sh [seconds] (after `make`).
set -euo pipefail
seconds=${1:-20}
# shellcheck source=bench/common.sh
source "$(dirname "$0")/common.sh"
bench_require_xpuperf  # sets $xpuperf
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cpu_seconds() {  # duration, period → user+sys seconds of the whole process
  /usr/bin/time -f '%U %S' -o "$work/time" "$xpuperf" monitor --duration "$1" --period "$2" --out "$work/m.csv" \
    > "$work/out" 2>&1
  awk '{print $1 + $2}' "$work/time"
}

base=$(cpu_seconds 0.01 1)
samplers=$(sed -n 's/^Monitoring \(.*\) every.*/\1/p' "$work/out")
echo "| period | samplers | CPU time over ${seconds} s (s) | start-up (s) | sampling, share of one core | target |"
echo "| ---: | --- | ---: | ---: | ---: | --- |"
for period in 1 0.1; do
  total=$(cpu_seconds "$seconds" "$period")
  python3 -c "
t, b, d, p = $total, $base, $seconds, '$period'
target = {'1': '< 0.2 %', '0.1': '< 1 %'}[p]
print('| %s s | %s | %.2f | %.2f | %.3f %% | %s |' % (p, '$samplers', t, b, 100 * max(0.0, t - b) / d, target))"
done
echo "CPU time from /usr/bin/time, 10 ms resolution; $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
