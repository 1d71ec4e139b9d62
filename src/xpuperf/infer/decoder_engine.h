#pragma once
// Generation on a CausalDecoder (models/kv_cache.h): prompts prefilled into slots of a
// preallocated, contiguous KV cache, then one token a step for the busy slots, on CUDA each step
// a replayed CUDA graph (one per decode batch bucket and visible-length bucket, captured up
// front). Tokens are picked greedily or sampled (temperature, top-k).

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "xpuperf/models/kv_cache.h"

namespace xpuperf::infer {

struct DecoderOptions {
  std::int64_t slots = 1;            // sequences in flight (the largest decode batch)
  std::int64_t max_tokens = 2048;    // prompt + output of one sequence
  std::int64_t length_bucket = 256;  // the visible keys of a decode step, rounded up to this
  bool cuda_graphs = true;           // on CUDA
  double temperature = 0;            // 0: greedy
  std::int64_t top_k = 0;            // sampling from the k most likely (0: all)
};

class DecoderEngine {
 public:
  DecoderEngine(std::shared_ptr<torch::nn::Module> module, models::CausalDecoder& decoder, torch::Device device,
                torch::Dtype dtype, DecoderOptions options);
  ~DecoderEngine();

  // `prompts` (rows, tokens) into slots first_slot.. first_slot + rows - 1; each row's first output
  // token is picked. Asynchronous on CUDA (torchrt::synchronize to time it).
  void prefill(std::int64_t first_slot, const torch::Tensor& prompts);
  // One token for each of `busy` (ascending slots); the rows up to the last busy one run together.
  void decode(const std::vector<std::int64_t>& busy);
  // Every decode CUDA graph captured now (no capture inside a timed run); a no-op without them.
  void capture_all();
  // The last token of each of the first `rows` slots (on the CPU).
  torch::Tensor last_tokens(std::int64_t rows) const;
  void set_sampling(double temperature, std::int64_t top_k);
  std::string describe() const;

 private:
  torch::Tensor pick(const torch::Tensor& logits);  // (rows, vocab) -> (rows)
  torch::Tensor step_logits(std::int64_t rows, std::int64_t visible);
  std::int64_t rows_bucket(std::int64_t rows) const;
  std::int64_t visible_bucket(std::int64_t longest) const;

  std::shared_ptr<torch::nn::Module> module_;
  models::CausalDecoder& decoder_;
  torch::Device device_;
  DecoderOptions options_;
  models::KvCache cache_;
  torch::Tensor tokens_;     // (slots, 1): each slot's last token, the next decode input
  torch::Tensor positions_;  // (slots, 1): where that token goes
  std::vector<std::int64_t> host_positions_;
  struct Graph;
  std::map<std::pair<std::int64_t, std::int64_t>, std::unique_ptr<Graph>> graphs_;  // (rows, visible)
};

}  // namespace xpuperf::infer
