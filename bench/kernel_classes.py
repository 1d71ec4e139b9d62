"""Where a training step's GPU time goes, by kernel class: the speed issue's table of GEMM,
attention, normalisation, element-wise, loss, optimizer, copies and idle, for xpuperf's kernels
(Nsight Systems' cuda_gpu_kern_sum) and PyTorch's (torch.profiler) alike, so the bench scripts
print the two side by side and a case README can say where a goal was missed.

classify(name) names the class of one kernel; class_times(rows, step_ms) sums (name, ms a step)
rows into the classes, idle being the step's wall time the kernels leave; class_table prints
several such sums as one Markdown table."""

import re

# The first pattern that matches names the class: order matters (a Triton kernel fusing layer
# norm is "normalisation", a cuBLAS kernel with an epilogue is "GEMM").
CLASSES = [
    # cuDNN's attention backward runs two helpers of its own beside the flash kernel.
    ("attention", r"flash|fmha|attention|sdpa|cudnn.*(mha|sdp)|efficient_attention|mem_eff|compute_dot_do_o|"
                  r"convert_dq_to|unpack_cudnn"),
    ("GEMM", r"gemm|cutlass|cublas|sm\d+_xmma|ampere_|hopper_|nvjet|wgmma|matmul|dot_kernel|splitk|gemv"),
    ("normalisation", r"layer_norm|layernorm|rms_norm|rmsnorm|batch_norm|batchnorm|bn_fw|bn_bw|_norm_|welford|"
                      r"add_rms_norm|add_layer_norm|norm_forward_kernel|norm_backward_kernel"),
    ("loss", r"softmax|cross_entropy|nll_loss|log_softmax"),
    # Not "lamb": every ATen kernel's name holds a "lambda" (apex's LAMB is a multi_tensor kernel anyway).
    # NormTwoOps: the gradient norm taken one tensor at a time.
    ("optimizer", r"multi_tensor|adam|sgd|fused_optimizer|_foreach|NormTwoOps"),
    ("copies", r"memcpy|memset|copy|cat_|catarray|fill|transpose|permute|contiguous|to_copy|index_?select|gather|"
               r"scatter|embedding"),
    # cuDNN's depthwise kernels: conv2d_c1_k1_nhwc, dgrad2d_c1_k1_nhwc, wgrad2d_c1_k1_nhwc.
    ("convolution", r"conv|implicit_gemm|winograd|fft|cudnn|dgrad|wgrad"),
    ("element-wise", r"elementwise|vectorized|unrolled|triton_poi|triton_|pointwise|gelu|silu|relu|dropout|fused|"
                     r"reduce|add|mul|rotary"),
]
ORDER = ["GEMM", "convolution", "attention", "normalisation", "element-wise", "loss", "optimizer", "copies", "other",
         "idle"]
_compiled = [(cls, re.compile(pattern, re.IGNORECASE)) for cls, pattern in CLASSES]


def classify(name):
    for cls, pattern in _compiled:
        if pattern.search(name):
            return cls
    return "other"


def class_times(rows, step_ms=None):
    """rows: (kernel name, ms a step); step_ms: the step's wall time (None: no idle row)."""
    times = {}
    for name, ms in rows:
        cls = classify(name)
        times[cls] = times.get(cls, 0.0) + ms
    if step_ms is not None:
        times["idle"] = max(0.0, step_ms - sum(times.values()))
    return times


def class_table(columns):
    """columns: [(label, class_times(...))] → a Markdown table, ms a step and share, a class a row."""
    head = "| class | " + " | ".join(f"{label} ms a step | share" for label, _ in columns) + " |"
    rule = "| --- | " + " | ".join("---: | ---:" for _ in columns) + " |"
    lines = [head, rule]
    totals = [sum(t.values()) for _, t in columns]
    for cls in ORDER:
        if not any(cls in t for _, t in columns):
            continue
        cells = []
        for (_, t), total in zip(columns, totals):
            ms = t.get(cls, 0.0)
            cells.append(f"{ms:.2f} | {ms / total:.0%}" if total else "0.00 | –")
        lines.append(f"| {cls} | " + " | ".join(cells) + " |")
    lines.append("| **step** | " + " | ".join(f"**{total:.2f}** | 100%" for total in totals) + " |")
    return "\n".join(lines)
