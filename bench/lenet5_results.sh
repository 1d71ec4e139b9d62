#!/usr/bin/env bash
# The lenet5 case README's results table: trains LeNet-5 to its target with `xpuperf train` for
# each configuration given and prints one Markdown row each.
# Usage: bench/lenet5_results.sh VENDOR HARDWARE NPROC[:precision] ...
#   e.g. bench/lenet5_results.sh cpu CPU 1 2      bench/lenet5_results.sh nvidia H200 1 1:bf16 2
set -euo pipefail
vendor=$1 hardware=$2
shift 2
data=${DATA_DIR:-/usr/share/datasets/fashion-mnist}
# shellcheck source=bench/common.sh
source "$(dirname "$0")/common.sh"
bench_require_xpuperf  # sets $xpuperf
printf '| config | precision | e2e time (s) | train time (s) | samples/s | epochs | final accuracy | converged |\n'
printf '| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |\n'
for spec in "$@"; do
  nproc=${spec%%:*}
  mp=off
  [[ $spec == *:* ]] && mp=${spec#*:}
  finished=$(timeout "${RUN_TIMEOUT:-3600}" "$xpuperf" train --case lenet5 --vendor "$vendor" --hardware "$hardware" --nproc "$nproc" \
    --data-dir "$data" --set precision="$mp" 2>/dev/null | grep -a '"event":"FINISHED"' | sed 's/^.*\[PerfLog\] //') || true
  if [[ -z $finished ]]; then
    printf '| %sx1x%s | %s | failed (no FINISHED) | | | | | |\n' "$hardware" "$nproc" "$mp"
    continue
  fi
  echo "$finished" | python3 -c '
import json, sys
v = json.load(sys.stdin)["value"]
cfg, mp = sys.argv[1], sys.argv[2]
print("| %s | %s | %.1f | %.1f | %.0f | %d | %.4f | %s |" % (cfg, mp, v["e2e_time"], v["raw_train_time"],
      v["training_samples_per_second"], v["epochs"], v["final_metric"]["value"], str(v["converged"]).lower()))
' "${hardware}x1x${nproc}" "$mp"
done
