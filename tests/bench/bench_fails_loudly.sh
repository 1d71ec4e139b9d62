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

for bench in vision_train_vs_pytorch.sh language_train_vs_pytorch.sh; do
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
echo "ok"
