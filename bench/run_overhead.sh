#!/usr/bin/env bash
# What the harness itself costs a round: from the round's start to its ranks running, plus from
# the last rank's exit to the round recorded (round_status.json's overhead_start_s and
# overhead_end_s), for the local launcher and, as root with openssh-server installed, the ssh
# launcher with two loopback "hosts" (127.0.0.1, 127.0.0.2) and a throw-away sshd.
# Usage: bench/run_overhead.sh [rounds] (from the project root, after `make`).
set -euo pipefail
rounds=${1:-5}
root=$(pwd)
xpuperf=${XPUPERF:-$root/build/src/xpuperf}
data=/usr/share/datasets/fashion-mnist
work=$(mktemp -d)
sshd_pid=
cleanup() { [[ -n $sshd_pid ]] && kill "$sshd_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

summarise() {  # launcher, run folder
  python3 - "$1" "$2" <<'PY'
import glob, json, sys
launcher, run = sys.argv[1], sys.argv[2]
s = [json.load(open(f)) for f in sorted(glob.glob(run + "/*/round*/round_status.json"))]
start = [x["overhead_start_s"] for x in s if "overhead_start_s" in x]
end = [x["overhead_end_s"] for x in s if "overhead_end_s" in x]
total = [a + b for a, b in zip(start, end)]
target = {"local": 1.0, "ssh": 3.0}[launcher]
print("| %s | %d | %.3f | %.3f | %.3f | %.3f | < %.0f s |" % (launcher, len(total), sum(start) / len(start),
      sum(end) / len(end), sum(total) / len(total), max(total), target))
PY
}

plan() {  # file, launcher lines, case key
  printf 'vendor: cpu\nlog_dir: %s/results-%s\n%s\ncases:\n  "%s": %s\n' "$work" "$(basename "$1" .yaml)" "$2" "$3" "$data" > "$1"
}

echo "| launcher | rounds | start → ranks running (s) | last exit → recorded (s) | overhead mean (s) | overhead max (s) | target |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | --- |"
plan "$work/local.yaml" "" "lenet5:libtorch:CPU:1:1:$rounds"
"$xpuperf" --root tests/fixtures/run_repo run "$work/local.yaml" > "$work/local.out" 2>&1 || { cat "$work/local.out"; exit 1; }
summarise local "$(ls -d "$work"/results-local/run*)"

if [[ $EUID -eq 0 && -x /usr/sbin/sshd ]]; then
  port=$((30000 + $$ % 20000))
  ssh-keygen -q -t ed25519 -N '' -f "$work/host_key"
  ssh-keygen -q -t ed25519 -N '' -f "$work/user_key"
  cp "$work/user_key.pub" "$work/authorized_keys"
  printf 'Port %s\nListenAddress 127.0.0.1\nListenAddress 127.0.0.2\nHostKey %s/host_key\nPidFile %s/sshd.pid\nPermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nAuthorizedKeysFile %s/authorized_keys\nStrictModes no\nUsePAM no\n' \
    "$port" "$work" "$work" "$work" > "$work/sshd_config"
  printf '[127.0.0.1]:%s %s\n[127.0.0.2]:%s %s\n' "$port" "$(cat "$work/host_key.pub")" "$port" "$(cat "$work/host_key.pub")" > "$work/known_hosts"
  mkdir -p /run/sshd
  /usr/sbin/sshd -D -e -f "$work/sshd_config" 2> "$work/sshd.log" &
  sshd_pid=$!
  sleep 0.5
  plan "$work/ssh.yaml" "$(printf 'launcher: ssh\nhosts: [127.0.0.1, 127.0.0.2]\nssh: {port: %s, user: root, known_hosts: %s/known_hosts, identity_file: %s/user_key}\n' "$port" "$work" "$work")" \
    "lenet5:libtorch:CPU:2:1:$rounds"
  "$xpuperf" --root tests/fixtures/run_repo run "$work/ssh.yaml" > "$work/ssh.out" 2>&1 || { cat "$work/ssh.out"; exit 1; }
  summarise ssh "$(ls -d "$work"/results-ssh/run*)"
else
  echo "(ssh row skipped: needs root and openssh-server)"
fi
echo "Reference, from FlagPerf's run.py (not run here: it needs Docker): a fixed sleep of 60 s per round and sequential ssh calls."
echo "Rounds of lenet5 (20 steps, fixture configs) on $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
