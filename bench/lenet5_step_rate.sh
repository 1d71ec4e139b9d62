#!/usr/bin/env bash
# LeNet-5 training step rate: xpuperf (C++ LibTorch) against the same model in Python PyTorch
# (Debian's python3-torch), same data, batch size, optimizer and threads, run here one after
# the other. Usage: bench/lenet5_step_rate.sh [steps] (from the project root, after `make`).
set -euo pipefail
steps=${1:-2000}
data=/usr/share/datasets/fashion-mnist
# shellcheck source=bench/common.sh
source "$(dirname "$0")/common.sh"
bench_require_xpuperf  # sets $xpuperf
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "bench: the reference needs Debian's python3-torch: apt-get install --no-install-recommends python3-torch" >&2
  exit 1
fi
[[ -x $xpuperf ]] || { echo "bench: build first (make), or set XPUPERF" >&2; exit 1; }

cpp_rate() {  # steps/s from FINISHED: global_steps / raw_train_time (training steps only)
  "$xpuperf" train --case lenet5 --vendor cpu --hardware CPU --data-dir "$data" \
    --set max_steps="$steps" --set num_threads="$1" --set lr_scheduler=constant --set log_freq=100 \
    --set eval_interval_epochs=0 2>/dev/null |
    grep '"event":"FINISHED"' | sed 's/^.*\[PerfLog\] //' |
    /usr/bin/python3 -c 'import json,sys; v=json.load(sys.stdin)["value"]; print("%.1f" % (v["global_steps"]/v["raw_train_time"]))'
}

printf '| threads | xpuperf C++ (steps/s) | PyTorch Python (steps/s) | C++ / Python |\n'
printf '| ---: | ---: | ---: | ---: |\n'
for threads in 1 2; do
  cpp=$(cpp_rate "$threads")
  py=$(/usr/bin/python3 bench/lenet5_pytorch.py --steps "$steps" --threads "$threads" --data-dir "$data")
  ratio=$(/usr/bin/python3 -c "print(f'{$cpp/$py:.2f}')")
  printf '| %s | %s | %s | %s |\n' "$threads" "$cpp" "$py" "$ratio"
done
echo "LeNet-5, batch 64, SGD, Fashion-MNIST, $steps steps, $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
