#!/usr/bin/env python3
"""The reference for bench/op_vs_torch.sh: one operator's median time per call from
torch.utils.benchmark (blocked_autorange) on the GPU, for the same shape and dtype as an
xpuperf operator case. Prints the median in milliseconds.

    op_torch_benchmark.py OP SIZES DTYPE      e.g. mm 8192x8192x8192 bf16

MIN_RUN_TIME: blocked_autorange's seconds (default 1.0).
"""
import os
import sys

import torch
import torch.nn.functional as F
import torch.utils.benchmark as benchmark

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32, "fp64": torch.float64}


def inputs(op, z, dt, dev):
    r = lambda *s: torch.randn(*s, device=dev, dtype=dt)
    if op in ("mm",):
        return "torch.mm(a, b)", {"a": r(z[0], z[2]), "b": r(z[2], z[1])}
    if op == "addmm":
        return "torch.addmm(c, a, b)", {"c": r(z[0], z[1]), "a": r(z[0], z[2]), "b": r(z[2], z[1])}
    if op == "linear":
        return "F.linear(x, w, b)", {"x": r(z[0], z[2]), "w": r(z[1], z[2]), "b": r(z[1])}
    if op == "bmm":
        return "torch.bmm(a, b)", {"a": r(z[0], z[1], z[3]), "b": r(z[0], z[3], z[2])}
    if op == "mv":
        return "torch.mv(a, v)", {"a": r(z[0], z[1]), "v": r(z[1])}
    if op == "layer_norm":
        return "F.layer_norm(x, (x.shape[1],), w, b, 1e-5)", {"x": r(z[0], z[1]), "w": r(z[1]), "b": r(z[1])}
    if op == "group_norm":
        return f"F.group_norm(x, {z[3]}, w, b, 1e-5)", {"x": r(z[0], z[1], z[2]), "w": r(z[1]), "b": r(z[1])}
    if op == "cross_entropy":
        labels = torch.randint(0, z[1], (z[0],), device=dev)
        return "F.cross_entropy(x, y)", {"x": r(z[0], z[1]), "y": labels}
    if op in ("softmax", "log_softmax"):
        return f"torch.{op}(x, -1)", {"x": r(z[0], z[1])}
    if op in ("sum", "mean"):
        return f"x.{op}(-1)", {"x": r(z[0], z[1])}
    if op == "amax":
        return "x.max(-1)[0]", {"x": r(z[0], z[1])}
    if op in ("relu", "gelu", "silu", "sigmoid", "tanh", "exp"):
        return (f"F.{op}(x)" if op in ("gelu", "silu") else f"torch.{op}(x)"), {"x": r(z[0])}
    symbols = {"add": "+", "sub": "-", "mul": "*", "div": "/"}
    if op in symbols:
        return f"a {symbols[op]} b", {"a": r(z[0]), "b": r(z[0]).abs() + 0.5}
    raise SystemExit(f"op_torch_benchmark: no reference for {op}")


def main():
    op, sizes, dtype = sys.argv[1], [int(s) for s in sys.argv[2].split("x")], DTYPES[sys.argv[3]]
    stmt, env = inputs(op, sizes, dtype, "cuda")
    env.update({"torch": torch, "F": F})
    timer = benchmark.Timer(stmt=stmt, globals=env)
    seconds = float(os.environ.get("MIN_RUN_TIME", "1.0"))
    print(f"{timer.blocked_autorange(min_run_time=seconds).median * 1e3:.6f}")


if __name__ == "__main__":
    main()
