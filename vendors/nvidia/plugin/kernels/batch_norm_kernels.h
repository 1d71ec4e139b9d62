#pragma once
// Batch norm in training over channels-last activations, with the activation and the residual add
// that follow it in ResNet and MobileNetV2: y = act(BN(x) + residual). ATen runs this as a
// statistics kernel, a normalising kernel, an add and an activation forward, and as the
// activation's backward, a reduction and a normalising kernel backward, each a pass over the
// activations; here it is one reading pass for the statistics and one normalising pass forward,
// one reduction and one normalising pass backward. Torch-free like fused_kernels.h (raw pointers,
// the stream as void*); models/batch_norm_act.cpp is the autograd function with ATen's fallback.
// Each function returns null when launched, else CUDA's error text.
//
// The layout: x is (rows, channels) in memory, rows the batch × height × width of a channels-last
// (NHWC) tensor. Element tensors are of one type (float, half, bfloat16) and 16-byte aligned, the
// channels a multiple of pack_elements(type); the per-channel tensors (weight, bias, statistics)
// are float. The arithmetic follows ATen's CUDA batch norm: Welford's statistics in float, the
// output w × (x − mean) × invstd + b rounded to the type, then added to the residual and rounded,
// then the activation; backward from the activation's mask, as ATen's threshold / hardtanh backward.

#include <cstdint>

#include "kernels/fused_kernels.h"

namespace xpuperf::nvidia::kernels {

enum class Activation { None, Relu, Relu6 };

// The float workspace (elements) that batch_norm_forward and batch_norm_backward need for `rows`
// × `channels` of `type`: the reductions' partial sums, a row of blocks each.
std::int64_t batch_norm_workspace(Element type, std::int64_t rows, std::int64_t channels);

// y = act(w × (x − mean) × invstd + b [+ residual]) with the batch's mean and invstd = 1 / √(biased
// variance + eps), which are written to `mean` and `invstd` (channels floats, for backward).
// running_mean / running_var (null: not tracked) become momentum × the batch's (the variance
// unbiased) + (1 − momentum) × theirs. residual null: no add. rows ≥ 2.
const char* batch_norm_forward(Element type, const void* x, const void* residual, void* y, const float* weight,
                               const float* bias, float* mean, float* invstd, float* running_mean, float* running_var,
                               float* workspace, std::int64_t rows, std::int64_t channels, float momentum, float eps,
                               Activation act, void* stream);

// The gradients of batch_norm_forward from grad_y: g = grad_y where the activation passed its input
// (read from y; act None: everywhere), grad_weight = Σ g × (x − mean) × invstd, grad_bias = Σ g (floats),
// grad_x = (g − Σg / n − (x − mean) × invstd² × Σ g (x − mean) / n) × w × invstd in x's type; with
// grad_residual (non-null), g is also written there (the residual's gradient) and read back from it.
const char* batch_norm_backward(Element type, const void* x, const void* y, const void* grad_y, const float* weight,
                                const float* mean, const float* invstd, void* grad_x, void* grad_residual,
                                float* grad_weight, float* grad_bias, float* workspace, std::int64_t rows,
                                std::int64_t channels, Activation act, void* stream);

}  // namespace xpuperf::nvidia::kernels
