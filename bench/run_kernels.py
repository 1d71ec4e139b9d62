"""xpuperf's kernels of a profiled training run (`--set profile_steps=N`: FINISHED's kernel_profile,
from LibTorch's Kineto profiler): the top kernels by time, then a step's GPU time by class
(bench/kernel_classes.py) beside the classes of the PyTorch side's profile of the same case (the
"kernels" rows of its JSON lines). Exits non-zero, saying why, when the run has no profile.
Usage: run_kernels.py CASE RUN_LOG TORCH_JSONL
KERNEL_NAME_WIDTH=N cuts each listed name to N characters (90 by default; 0: whole names, which tell
ATen's element-wise kernels apart by the functor and types in their template arguments)."""
import json
import os
import sys

from kernel_classes import class_table, class_times

case, out, torch_jsonl = sys.argv[1], sys.argv[2], sys.argv[3]
profile = None
for line in open(out):
    if '"event":"FINISHED"' in line:
        profile = json.loads(line[line.index("{"):])["value"].get("kernel_profile")
if not profile or "kernels" not in profile:
    why = (profile or {}).get("error", "its FINISHED has no kernel_profile (did it reach profile_steps?)")
    sys.exit(f"run_kernels.py: no kernel profile in {out}: {why}")
kernels, total = profile["kernels"], profile["device_ms_per_step"]
print(f"| kernel ({case}, {profile['steps']} steps) | ms a step | calls a step | share |")
print("| --- | ---: | ---: | ---: |")
width = int(os.environ.get("KERNEL_NAME_WIDTH", "90"))
for k in kernels[:15]:
    print(f"| {k['name'][:width] if width > 0 else k['name']} | {k['ms_per_step']:.2f} | {k['calls_per_step']:.0f} | {k['ms_per_step'] / total:.1%} |")
print(f"| all {profile['distinct_kernels']} kernels | {total:.2f} | | 100% |")
# The kernels past the listed ones count as one "other" row, so the classes add up to the device's time.
rows = [(k["name"], k["ms_per_step"]) for k in kernels]
rest = total - sum(ms for _, ms in rows)
if rest > 1e-9:
    rows.append(("(kernels not listed)", rest))
columns = [("xpuperf", class_times(rows, profile["step_ms"]))]
for line in open(torch_jsonl):
    r = json.loads(line)
    if r.get("figure") == "kernels" and r.get("case") == case and "classes" in r:
        columns.append(("PyTorch " + r["mode"], r["classes"]))
print()
print(class_table(columns))
