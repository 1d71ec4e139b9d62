#pragma once
// A LibTorch module's weights as ONNX initializers named as in its state_dict (conv1.weight,
// layer1.0.bn1.running_mean, ...), for a case's export_model.

#include <torch/torch.h>

#include "xpuperf/infer/onnx_export.h"

namespace xpuperf::infer::onnx_export {

// Every parameter and floating-point buffer (batch-norm statistics; not num_batches_tracked).
inline void add_weights(Graph& g, torch::nn::Module& module) {
  auto add = [&](const std::string& name, const torch::Tensor& value) {
    const torch::Tensor t = value.detach().to(torch::kCPU, torch::kFloat).contiguous();
    g.initializer(name, t.sizes().vec(), std::vector<float>(t.data_ptr<float>(), t.data_ptr<float>() + t.numel()));
  };
  for (const auto& p : module.named_parameters()) add(p.key(), p.value());
  for (const auto& b : module.named_buffers())
    if (b.value().is_floating_point()) add(b.key(), b.value());
}

}  // namespace xpuperf::infer::onnx_export
