"""PyTorch's figures for the base cases, measured the way bench/base_vs_pytorch.sh compares them:
GEMM throughput of torch.mm (and torch._scaled_mm for FP8, torch._int_mm for INT8) at one size,
device copy_ and sum bandwidth, pinned host<->device copy_, and (with --allreduce, under
torchrun) dist.all_reduce's busbw. Prints one JSON object per figure."""
import argparse
import json
import os

import torch


def timed(fn, iters=None, warmup=5, window=1.0):
    """Calls per second, best of 5 windows of about `window` seconds each (sustained, as
    xpuperf's base cases time them: short bursts would read clocks the power limit later cuts)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    if iters is None:
        start.record()
        for _ in range(3):
            fn()
        stop.record()
        stop.synchronize()
        iters = max(1, int(window / (start.elapsed_time(stop) / 3000)))
    best = 0.0
    for _ in range(5):
        start.record()
        for _ in range(iters):
            fn()
        stop.record()
        stop.synchronize()
        best = max(best, iters / (start.elapsed_time(stop) / 1000))
    return best  # calls per second, best of 5 windows


def levels(shape, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randint(-8, 9, shape, device="cuda", generator=g, dtype=torch.int32)


def gemm(size, precision):
    a, b = levels((size, size), 1), levels((size, size), 2)
    flops = 2.0 * size ** 3
    torch.backends.cuda.matmul.allow_tf32 = precision == "TF32"
    if precision == "INT8":
        a8, b8 = a.to(torch.int8), b.to(torch.int8).t().contiguous().t()
        fn = lambda: torch._int_mm(a8, b8)
    elif precision == "FP8":
        a8 = (a.float() / 8).to(torch.float8_e4m3fn)
        b8 = (b.float() / 8).to(torch.float8_e4m3fn).t().contiguous().t()
        one = torch.ones((), device="cuda")
        fn = lambda: torch._scaled_mm(a8, b8, one, one, out_dtype=torch.bfloat16)
    else:
        dtype = {"FP64": torch.float64, "FP32": torch.float32, "TF32": torch.float32,
                 "FP16": torch.float16, "BF16": torch.bfloat16}[precision]
        x, y = (a.to(dtype) / 8), (b.to(dtype) / 8)
        fn = lambda: torch.mm(x, y)
    calls = timed(fn)
    return calls * flops / 1e12


def memory(mib):
    n = (mib << 20) // 4
    x, y = torch.ones(n, device="cuda"), torch.empty(n, device="cuda")
    copy = timed(lambda: y.copy_(x), 20) * 2 * n * 4 / 1e9  # 20 calls: like xpuperf's single-kernel timings
    read = timed(lambda: x.sum(), 20) * n * 4 / 1e9
    return copy, read


def host_link(mib):
    n = mib << 20
    host = torch.empty(n, dtype=torch.uint8, pin_memory=True)
    dev = torch.empty(n, dtype=torch.uint8, device="cuda")
    h2d = timed(lambda: dev.copy_(host, non_blocking=True), 10) * n / 1e9
    d2h = timed(lambda: host.copy_(dev, non_blocking=True), 10) * n / 1e9
    return h2d, d2h


def allreduce(mib):
    import torch.distributed as dist
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    t = torch.zeros((mib << 20) // 4, device="cuda")
    rate = timed(lambda: dist.all_reduce(t), 20)
    if rank == 0:
        algbw = rate * t.numel() * 4 / 1e9
        print(json.dumps({"figure": "allreduce_busbw_%dMiB" % mib, "value": algbw * 2 * (world - 1) / world}))
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--size", type=int, default=8192)
    p.add_argument("--allreduce", action="store_true")
    args = p.parse_args()
    if args.allreduce:
        allreduce(256)
    else:
        for precision in ["FP64", "FP32", "TF32", "FP16", "BF16", "FP8", "INT8"]:
            print(json.dumps({"figure": "gemm_" + precision, "value": gemm(args.size, precision)}), flush=True)
        copy, read = memory(1024)
        print(json.dumps({"figure": "copy", "value": copy}))
        print(json.dumps({"figure": "read", "value": read}))
        h2d, d2h = host_link(1024)
        print(json.dumps({"figure": "h2d_pinned", "value": h2d}))
        print(json.dumps({"figure": "d2h_pinned", "value": d2h}))
