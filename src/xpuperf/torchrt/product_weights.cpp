#include "xpuperf/torchrt/product_weights.h"

#include <unordered_set>

namespace xpuperf::torchrt {

std::vector<torch::Tensor> product_weights(torch::nn::Module& model) {
  std::unordered_set<const void*> embedded, taken;
  for (const auto& m : model.modules(/*include_self=*/true))
    if (const auto* e = dynamic_cast<const torch::nn::EmbeddingImpl*>(m.get()))
      embedded.insert(e->weight.unsafeGetTensorImpl());
  std::vector<torch::Tensor> out;
  const auto take = [&](const torch::Tensor& w) {
    if (w.defined() && w.is_floating_point() && !embedded.count(w.unsafeGetTensorImpl()) &&
        taken.insert(w.unsafeGetTensorImpl()).second)
      out.push_back(w);
  };
  for (const auto& m : model.modules(/*include_self=*/true)) {
    if (const auto* linear = dynamic_cast<const torch::nn::LinearImpl*>(m.get())) take(linear->weight);
    if (auto* own = dynamic_cast<HasProductWeights*>(m.get()))
      for (const auto& w : own->product_weights()) take(w);
  }
  return out;
}

}  // namespace xpuperf::torchrt
