#!/usr/bin/env bash
# A long run that must lose nothing: one plan of many short CPU rounds (base cases, then LeNet-5),
# monitors sampling at 10 Hz, and a rank killed with SIGKILL in every tenth LeNet-5 round. Checks
# that every killed round failed with its reason, every other round is ok in summary.json, no
# process of the run is left, and prints the memory (RSS) and open file descriptors of the
# `xpuperf run` process at its first, middle and last rounds: they must stay flat.
#
#   bench/soak.sh [LENET_ROUNDS (150)] [BASE_ROUNDS (50)]    from the project root, after `make`
#
# Not part of `make test` (about 15 minutes on 2 cores); the README has its figures.
set -euo pipefail
lenet_rounds=${1:-150}
base_rounds=${2:-50}
total=$((lenet_rounds + base_rounds))
root=$(pwd)
xpuperf=${XPUPERF:-$root/build/src/xpuperf}
data=/usr/share/datasets/fashion-mnist
work=$(mktemp -d /tmp/xpuperf-soak.XXXXXX)
run_pid=
cleanup() {
  [[ -n $run_pid ]] && kill "$run_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

cat >"$work/plan.yaml" <<EOF
vendor: cpu
log_dir: $work/results
monitor_period: 0.1
case_time_limit: 10m
history_db: none
base:
  "computation-FP32:CPU:1:1:$base_rounds": {cpu_size: 128, repeats: 1, seconds: 0.05}
cases:
  "lenet5:libtorch:CPU:1:1:$lenet_rounds": {data_dir: $data, max_steps: 20, max_epochs: 1, eval_interval_epochs: 0,
                                            log_freq: 5, num_threads: 1}
EOF

"$xpuperf" --root "$root" run "$work/plan.yaml" >"$work/run.out" 2>&1 &
run_pid=$!

# The controller's memory and descriptors when round N of the plan starts (N counts every case).
declare -A rss fds
sample() {
  rss[$1]=$(awk '/^VmRSS/ {print $2}' "/proc/$run_pid/status" 2>/dev/null || echo "?")
  fds[$1]=$(ls "/proc/$run_pid/fd" 2>/dev/null | wc -l)
}
started() { # rounds whose folder exists
  { find "$work/results" -mindepth 3 -maxdepth 3 -type d -name 'round*' 2>/dev/null || true; } | wc -l
}
# The rank of a LeNet-5 round: the child of the node agent whose --out is that round's folder.
rank_of_round() {
  local agent
  agent=$(pgrep -f -- "--out [^ ]*/lenet5_libtorch_CPU_1_1_$lenet_rounds/round$1/" | head -1 || true)
  [[ -n $agent ]] && pgrep -P "$agent" | head -1 || true
}

killed=()
missed=()
next_kill=10
sampled_mid=0
sample 0
while kill -0 "$run_pid" 2>/dev/null; do
  n=$(started)
  ((n >= 1)) && [[ -z ${rss[1]:-} ]] && sample 1
  ((n >= total / 2 && !sampled_mid)) && { sample mid; sampled_mid=1; }
  ((n >= total)) && [[ -z ${rss[last]:-} ]] && sample last
  if ((next_kill <= lenet_rounds)); then
    # Kill the round's rank while it runs (a round is a second or two: waiting for its first step
    # to be logged missed them all on a fast build). A round that ended before this loop saw its
    # rank is counted as missed, and the next tenth round is the target.
    pid=$(rank_of_round "$next_kill")
    if [[ -n $pid ]]; then
      # The rank may end between the lookup and the kill: then the round was missed.
      if kill -KILL "$pid" 2>/dev/null; then killed+=("$next_kill"); else missed+=("$next_kill"); fi
      next_kill=$((next_kill + 10))
    elif [[ -d $(ls -d "$work"/results/run*/lenet5_libtorch_CPU_1_1_"$lenet_rounds"/round$((next_kill + 1)) 2>/dev/null ||
      true) ]]; then
      missed+=("$next_kill")
      next_kill=$((next_kill + 10))
    fi
  fi
  sleep 0.05
done
wait "$run_pid" || true
run_pid=
run=$(ls -d "$work"/results/run*)

status=0
python3 - "$run" "$lenet_rounds" "$base_rounds" "${killed[*]}" <<'PY' || status=$?
import json, sys
run, lenet_rounds, base_rounds, killed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
killed = {int(k) for k in killed.split()}
s = json.load(open(run + "/summary.json"))
problems = []
for c in s["cases"]:
    lenet = c["case"].startswith("lenet5")
    planned = lenet_rounds if lenet else base_rounds
    rounds = {r["round"]: r for r in c["rounds"]}
    if len(rounds) != planned:
        problems.append("%s: %d rounds in summary.json, %d planned" % (c["case"], len(rounds), planned))
    for n, r in sorted(rounds.items()):
        if lenet and n in killed:
            if r["status"] != "failed" or "killed by signal 9" not in r.get("reason", ""):
                problems.append("%s round %d was killed but reads %s (%s)" % (c["case"], n, r["status"], r.get("reason")))
        elif r["status"] != "ok":
            problems.append("%s round %d: %s (%s)" % (c["case"], n, r["status"], r.get("reason")))
ok = sum(r["status"] == "ok" for c in s["cases"] for r in c["rounds"])
print("rounds in summary.json: %d ok, %d killed and failed with their reason; problems: %d"
      % (ok, len(killed), len(problems)))
for p in problems[:20]:
    print("  " + p)
sys.exit(1 if problems or not killed else 0)
PY
left=$(pgrep -f -- "$work" | grep -v "^$$\$" || true)
echo "processes of the run left: ${left:-none}"
echo
echo "| xpuperf run at | RSS (KiB) | open file descriptors |"
echo "| --- | ---: | ---: |"
echo "| round 1 | ${rss[1]:-?} | ${fds[1]:-?} |"
echo "| round $((total / 2)) | ${rss[mid]:-?} | ${fds[mid]:-?} |"
echo "| round $total | ${rss[last]:-?} | ${fds[last]:-?} |"
echo
echo "$total rounds ($base_rounds base, $lenet_rounds LeNet-5), monitors at 10 Hz, ${#killed[@]} ranks killed" \
  "(${#missed[@]} tenth rounds ended before their rank was seen${missed[*]:+: ${missed[*]}}); $(nproc) cores, $(date -u +%F)"
[[ -z $left && $status -eq 0 ]]
