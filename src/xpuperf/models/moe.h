#pragma once
// A sparse mixture-of-experts MLP (Mixtral's block: a router picks `top_k` of `experts` SwiGLU
// experts a token, their outputs weighted by the router's renormalised probabilities; optionally
// Qwen1.5-MoE's: a shared expert added, the probabilities not renormalised). The
// experts' weights are stacked, (experts, out, in), and run as batched GEMMs over per-expert
// buffers of `capacity` tokens — one launch for all experts of the layer, not a loop of small
// products. With `capacity_factor` > 0 an expert takes at most ceil(factor × tokens × top_k /
// experts) tokens and the rest are dropped (counted); 0 sizes the buffers to the busiest expert.
// With the kernels, bf16 on a Hopper or Blackwell GPU and PyTorch ≥ 2.9, no capacity factor and no
// expert parallelism, the experts run instead as ATen's grouped GEMMs over the pairs sorted by expert
// (each expert's rows padded to 16): no buffer padded to the busiest expert, and no wait for the
// host to learn its size.
// The router's load-balancing loss (Switch / Mixtral) and z-loss (ST-MoE) of the last forward
// are kept for the model's loss.

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "xpuperf/parallel/expert_parallel.h"
#include "xpuperf/torchrt/product_weights.h"

namespace xpuperf::models {

struct MoeConfig {
  std::int64_t experts = 0;  // 0: a dense MLP
  std::int64_t top_k = 2;
  double capacity_factor = 0;   // 0: no token dropped
  double aux_loss_coef = 0.02;  // load balancing, Mixtral's router_aux_loss_coef
  double z_loss_coef = 0.001;   // ST-MoE's router z-loss
  std::int64_t every = 1;       // every how many layers (from the first) is sparse
  // Qwen1.5-MoE's block (Qwen2MoeSparseMoeBlock) beside Mixtral's: experts narrower than the dense
  // MLP, a shared expert every token goes through, weighted by a sigmoid gate, and the top-k
  // probabilities used as they are instead of renormalised to sum to 1.
  std::int64_t expert_intermediate =
      0;  // an expert's MLP units (moe_intermediate_size); 0: the model's intermediate_size
  std::int64_t shared_intermediate = 0;  // the shared expert's units (shared_expert_intermediate_size); 0: none
  bool normalize_top_k = true;           // norm_topk_prob (Mixtral: true, Qwen1.5-MoE: false)
};

// x's rows gathered by `source` (x.index_select(0, source)), with a backward that gathers too:
// readers (x.size(0), n) lists the rows of the result that read each row of x (n of them; a row that
// none reads is marked in `unread` and lists any), and a row's gradient is the sum of its readers'.
// ATen's backward of index_select is an index_add, whose atomic adds make it several times slower.
// For an MoE's tokens moved to their experts' rows and back.
torch::Tensor gather_rows(const torch::Tensor& x, const torch::Tensor& source, const torch::Tensor& readers,
                          const torch::Tensor& unread = {});

struct SparseMoeBlockImpl : torch::nn::Module, torchrt::HasProductWeights {
  SparseMoeBlockImpl(std::int64_t hidden, std::int64_t intermediate, const MoeConfig& c);
  // (..., hidden); kernels: the experts' SiLU(gate) × up as fused_ops.h's kernel with its backward.
  torch::Tensor forward(const torch::Tensor& x, bool kernels = false);
  // The dense reference: every token through its experts one by one (tests; no capacity).
  torch::Tensor forward_per_token(const torch::Tensor& x);
  // sigmoid(shared_expert_gate(x)) × the shared expert's SwiGLU of x (rows, hidden).
  torch::Tensor shared_expert(const torch::Tensor& flat);
  // Keeps this rank's experts of `ep`'s group (experts / E of them, by rank) and returns their
  // parameters; forward then exchanges the tokens over the group (expert_parallel.h).
  std::vector<torch::Tensor> split_experts(std::shared_ptr<parallel::ExpertParallel> ep);

  MoeConfig config;
  torch::nn::Linear gate{nullptr};  // the router: hidden → experts, no bias
  torch::Tensor w_gate, w_up;       // (experts, intermediate, hidden); this rank's experts under expert parallelism
  torch::Tensor w_down;             // (experts, hidden, intermediate)
  // The shared expert (SwiGLU, Hugging Face's shared_expert.{gate,up,down}_proj) and its gate
  // (shared_expert_gate, hidden → 1); null without one.
  torch::nn::Linear shared_gate_proj{nullptr}, shared_up_proj{nullptr}, shared_down_proj{nullptr};
  torch::nn::Linear shared_expert_gate{nullptr};
  // Of the last forward: the auxiliary losses (0-d; until LlamaForCausalLM::loss takes them) and the
  // token-expert pairs dropped for capacity.
  torch::Tensor load_balancing_loss, z_loss;
  std::int64_t dropped = 0, routed = 0;

  // The experts' weights: only ever operands of the grouped or batched products, in bf16 under bf16
  // autocast (bf16_weights keeps them so).
  std::vector<torch::Tensor> product_weights() override { return {w_gate, w_up, w_down}; }

  // Whether forward(x, kernels) runs the experts as grouped GEMMs (above); flat: x as (tokens, hidden).
  bool runs_grouped(const torch::Tensor& flat, bool kernels) const;

 private:
  // The routed experts' outputs for the tokens (tokens, hidden) from the routing's weights and choices
  // (tokens, top_k): as grouped GEMMs, or as batched products over buffers of `capacity` rows.
  torch::Tensor batched_experts(const torch::Tensor& flat, const torch::Tensor& weights, const torch::Tensor& selected,
                                bool kernels);
  torch::Tensor grouped_experts(const torch::Tensor& flat, const torch::Tensor& weights, const torch::Tensor& selected,
                                bool kernels);

  std::shared_ptr<parallel::ExpertParallel> ep_;  // null: every expert here
};
TORCH_MODULE(SparseMoeBlock);

// A state_dict with Mixtral's experts as Hugging Face's checkpoints hold them, one module an expert
// (`<layer>.block_sparse_moe.experts.<j>.w1.weight` (units, hidden): the gate projection, `w3` the
// up one, `w2` (hidden, units) the down one), stacked in place into this block's `w_gate`, `w_up`
// and `w_down` (experts first); the router's `gate.weight` is the same name in both. Returns whether
// any layer was converted; a layer whose experts are not 0 to E − 1, each with its three weights
// of one shape, is a std::runtime_error naming the layer and what is missing. transformers 5's own
// layout (`<layer>.mlp.experts.gate_up_proj`, gate rows then up rows, and `.down_proj`, the router
// at `<layer>.mlp.gate.weight`) is split and renamed the same way.
bool stack_hugging_face_experts(std::map<std::string, torch::Tensor>& tensors);

// The same loss Hugging Face's load_balancing_loss_func gives for one layer: experts × Σ over the
// top-k slots and experts of (the share of tokens routed there) × (the mean router probability).
torch::Tensor load_balancing_loss(const torch::Tensor& probabilities, const torch::Tensor& selected,
                                  std::int64_t experts);

}  // namespace xpuperf::models
