#!/usr/bin/env bash
# The training benches refuse to print a table of zeros as if it were a measurement: without the
# xpuperf binary they stop before anything runs (exit 2, naming the path); with a binary whose run
# logs no step they still print the table, then name the run and exit 1.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAILED: $*" >&2
  exit 1
}

for bench in vision_train_vs_pytorch.sh language_train_vs_pytorch.sh parallel_train_vs_pytorch.sh offload_capacity.sh; do
  out=$(XPUPERF="$work/none" bash "$root/bench/$bench" H100 2>&1)
  rc=$?
  [[ $rc == 2 ]] || fail "$bench without a binary: exit $rc, not 2: $out"
  [[ $out == *"no xpuperf binary at '$work/none'"* ]] || fail "$bench does not name the missing binary: $out"
done

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
echo "ok"
