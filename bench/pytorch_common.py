"""What the PyTorch sides of the bench/ scripts share: one JSON object a line, the timed steps of
eager or torch.compile, and the CUDA kernels of a few steps by time (where the time goes)."""
import json
import time

import torch


def emit(**kv):
    print(json.dumps(kv), flush=True)


def timed_steps(step, mode, warmup, steps):
    """`step` eager or under torch.compile (mode "compile"): `warmup` steps, then `steps` timed ones.
    Returns the step as it ran (for kernel_table), the timed steps' seconds and the device's peak
    memory over them in MiB."""
    run = torch.compile(step) if mode == "compile" else step
    for _ in range(warmup):
        run()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    t = time.perf_counter()
    for _ in range(steps):
        run()
    torch.cuda.synchronize()
    return run, time.perf_counter() - t, torch.cuda.max_memory_allocated() / 2**20


def kernel_table(case, mode, run, steps=5, top=12):
    """The CUDA kernels of `steps` steps by total time, as a markdown table (where the time goes),
    and their time by class (bench/kernel_classes.py), idle being the step's wall time they leave."""
    import time

    from torch.profiler import ProfilerActivity, profile

    from kernel_classes import class_times
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        start = time.perf_counter()
        for _ in range(steps):
            run()
        torch.cuda.synchronize()
        step_ms = (time.perf_counter() - start) / steps * 1000
    rows = [(e.key, e.device_time_total / steps / 1000, e.count // steps) for e in prof.key_averages()
            if e.device_time_total > 0]
    total = sum(r[1] for r in rows)
    rows.sort(key=lambda r: -r[1])
    lines = [f"| kernel ({case}, {mode}) | ms a step | calls a step | share |", "| --- | ---: | ---: | ---: |"]
    for name, ms, calls in rows[:top]:
        lines.append(f"| {name[:90]} | {ms:.2f} | {calls} | {ms / total:.1%} |")
    lines.append(f"| all {len(rows)} kernels | {total:.2f} | | 100% |")
    emit(figure="kernels", case=case, mode=mode, table="\n".join(lines), gpu_ms_per_step=total,
         step_ms=step_ms, classes=class_times([(name, ms) for name, ms, _ in rows], step_ms))
