#include "xpuperf/models/documents.h"

namespace xpuperf::models {

DocumentAttention document_attention(const torch::Tensor& documents, bool causal) {
  const auto tokens = documents.size(1);
  const auto index = torch::arange(tokens, documents.options()).unsqueeze(0).expand_as(documents);
  // A document's first token: the row's first, or where the number changes; its index carried on.
  const auto first = torch::ones_like(documents, torch::kBool);
  if (tokens > 1)
    first.narrow(1, 1, tokens - 1).copy_(documents.narrow(1, 1, tokens - 1).ne(documents.narrow(1, 0, tokens - 1)));
  const auto start = std::get<0>(torch::where(first, index, torch::zeros_like(index)).cummax(1));
  auto mask = documents.unsqueeze(2).eq(documents.unsqueeze(1));
  if (causal) mask = mask.logical_and(torch::ones({tokens, tokens}, mask.options()).tril());
  return {index - start, mask.unsqueeze(1)};
}

}  // namespace xpuperf::models
