#pragma once
// LoRA fine-tuning (Hu et al., 2021; Hugging Face PEFT's LoraLayer), the runtime's `lora_rank`
// switch: chosen linear layers of a frozen model learn a low-rank update,
//   y = W x + b + (alpha / r) · B A dropout(x),
// A (r × in) initialised as a Linear layer's weight (Kaiming-uniform), B (out × r) zeros, so
// training starts from the base model's outputs. Only A and B are trained: every other parameter
// is frozen (no gradient, no optimizer state) and stored in the run's compute type (bf16 under
// precision bf16), as FlagPerf's llama2_7b_finetune keeps its base model. The adapters are named as
// PEFT names them (<layer>.lora_A.weight, <layer>.lora_B.weight), and saved alone as PEFT's
// adapter_model.safetensors + adapter_config.json, which Hugging Face loads (PeftModel.from_pretrained).

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

namespace xpuperf::parallel {

// A layer type that can carry an adapter (the parallel layer types: parallel_linear.h).
class LowRankAdaptable {
 public:
  virtual ~LowRankAdaptable() = default;
  // Registers lora_A (rank × adapter_in()) and lora_B (adapter_out() × rank) on `self`, the layer itself.
  void add_adapter(torch::nn::Module& self, std::int64_t rank, double alpha, double dropout);
  bool has_adapter() const { return static_cast<bool>(lora_A_); }
  virtual std::int64_t adapter_in() const = 0;
  virtual std::int64_t adapter_out() const = 0;
  virtual bool fan_in_fan_out() const { return false; }  // W stored (in, out), as GPT-2's Conv1D

 protected:
  // y plus the adapter's update of x (y itself without an adapter).
  torch::Tensor adapted(const torch::Tensor& x, const torch::Tensor& y, bool training) const;

 private:
  torch::nn::Linear lora_A_{nullptr}, lora_B_{nullptr};
  double scale_ = 0, dropout_ = 0;
};

// (scale · B A dropout(x)): the adapter's update of x, A (rank × in), B (out × rank), dropout with
// probability `dropout` (0: none). One autograd node that keeps x and a byte an element for the
// dropout (lora.cpp says why), with the composition's values and gradients.
torch::Tensor low_rank_update(const torch::Tensor& x, const torch::Tensor& a, const torch::Tensor& b, double dropout,
                              double scale);

struct LoraSettings {
  std::int64_t rank = 0;  // 0: no LoRA
  double alpha = 32, dropout = 0.05;
  std::vector<std::string> targets{"q_proj", "v_proj"};  // layers whose name ends in one of these
};

// Adds an adapter to every adaptable layer of `model` whose last name part is a target, freezes
// every other parameter and stores the frozen floating-point ones as `frozen_type`. Returns the
// adapted layers' names; throws std::invalid_argument naming the model's adaptable layers when a
// target matches none.
std::vector<std::string> apply_lora(torch::nn::Module& model, const LoraSettings& settings,
                                    torch::ScalarType frozen_type);

// The adapters' tensors under PEFT's names: "base_model.model." + the model's name.
std::vector<std::pair<std::string, torch::Tensor>> lora_tensors(torch::nn::Module& model);

// PEFT's save_pretrained layout in `dir` (made if needed): adapter_model.safetensors, the adapters
// (PEFT's default format, which it reads first; a pickled adapter_model.bin from LibTorch is refused by
// PyTorch ≥ 2.6's torch.load(weights_only=True), which PEFT calls), and adapter_config.json. `task_type`: PEFT's
// (CAUSAL_LM, ...).
void save_lora_adapters(torch::nn::Module& model, const LoraSettings& settings, const std::string& dir,
                        const std::string& task_type);

}  // namespace xpuperf::parallel
