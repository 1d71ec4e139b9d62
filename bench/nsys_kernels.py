"""xpuperf's kernels of a profiled training run (Nsight Systems' cuda_gpu_kern_sum as CSV on stdin):
the top kernels by time, then a step's GPU time by class (bench/kernel_classes.py) beside the
classes of the PyTorch side's profile of the same case (the "kernels" rows of its JSON lines).
Usage: nsys stats -r cuda_gpu_kern_sum -f csv REP | nsys_kernels.py CASE STEPS RUN_LOG TORCH_JSONL
(STEPS: the steps the run took; RUN_LOG: its output, whose FINISHED steady rate gives the step's
wall time and so the idle row)."""
import csv
import json
import sys

from kernel_classes import class_table, class_times

case, steps, out, torch_jsonl = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
rows = [r for r in csv.reader(sys.stdin) if len(r) > 8]
head, body = rows[0], rows[1:]
t, n, name = head.index("Total Time (ns)"), head.index("Instances"), head.index("Name")
total = sum(float(r[t]) for r in body)
print("| kernel | ms a step | calls a step | share |\n| --- | ---: | ---: | ---: |")
for r in body[:15]:
    print(f"| {r[name][:90]} | {float(r[t]) / (steps * 1e6):.2f} | {int(r[n]) // steps} | {float(r[t]) / total:.1%} |")
print(f"| all {len(body)} kernels | {total / (steps * 1e6):.2f} | | 100% |")
# The step wall time from the run: its steady rate (idle = what the kernels leave).
step_ms = None
for line in open(out):
    if '"event":"FINISHED"' in line:
        v = json.loads(line[line.index("{"):])["value"]
        if v.get("steady_samples_per_second"):
            step_ms = 1000 * v["global_batch_size"] / v["steady_samples_per_second"]
columns = [("xpuperf", class_times([(r[name], float(r[t]) / (steps * 1e6)) for r in body], step_ms))]
for line in open(torch_jsonl):
    r = json.loads(line)
    if r.get("figure") == "kernels" and r.get("case") == case and "classes" in r:
        columns.append(("PyTorch " + r["mode"], r["classes"]))
print()
print(class_table(columns))
