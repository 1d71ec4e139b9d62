#include "xpuperf/parallel/lora.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <tuple>

#include "xpuperf/torchrt/safetensors.h"

namespace xpuperf::parallel {

void LowRankAdaptable::add_adapter(torch::nn::Module& self, std::int64_t rank, double alpha, double dropout) {
  const std::int64_t in = adapter_in(), out = adapter_out();
  if (has_adapter()) throw std::logic_error("LoRA: a layer got a second adapter");
  // Where the layer's weights are (their own type may be the frozen one: the adapter trains in fp32).
  torch::Device device(torch::kCPU);
  for (const auto& p : self.parameters(false)) device = p.device();
  lora_A_ = self.register_module("lora_A", torch::nn::Linear(torch::nn::LinearOptions(in, rank).bias(false)));
  lora_B_ = self.register_module("lora_B", torch::nn::Linear(torch::nn::LinearOptions(rank, out).bias(false)));
  {
    const torch::NoGradGuard no_grad;
    lora_B_->weight.zero_();
  }
  lora_A_->to(device);
  lora_B_->to(device);
  scale_ = alpha / static_cast<double>(rank);
  dropout_ = dropout;
}

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// scale · B A dropout(x) as one autograd node that keeps x and dropout's keep mask for the backward,
// which makes dropout(x) again from them. Composed of ATen's operators, autograd would keep, for
// each adapter, the mask (a byte an element) and dropout(x) itself for A's gradient (two in bf16).
// For the two adapters of a layer's input (q_proj and v_proj) that is 6 bytes an element; these
// nodes keep the two masks and x, the same tensor for both, once: 4. On a 7B Llama with adapters
// on q and v, 128 MiB less at the step's peak (512 tokens).
struct LowRankUpdate : torch::autograd::Function<LowRankUpdate> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& a,
                               const torch::Tensor& b, double dropout, double scale) {
    torch::Tensor in = x, keep;
    if (dropout > 0) std::tie(in, keep) = torch::native_dropout(x, dropout, true);
    // Under autocast the products run in the compute type, as the layer's own.
    const auto h = torch::linear(in, a);
    ctx->save_for_backward({x, keep, a, b, h});
    ctx->saved_data["dropout"] = dropout;
    ctx->saved_data["scale"] = scale;
    return torch::linear(h, b) * scale;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &keep = saved[1], &a = saved[2], &b = saved[3], &h = saved[4];
    const double dropout = ctx->saved_data["dropout"].toDouble(), scale = ctx->saved_data["scale"].toDouble();
    const auto type = h.scalar_type();  // the forward's products' (autocast's) type
    // t × keep / (1 − p) in one kernel: dropout's own backward, whose arithmetic is its forward's, so
    // that dropout(x) made again here is the forward's to the bit.
    const auto kept = [&](const torch::Tensor& t) {
      return keep.defined() ? torch::native_dropout_backward(t, keep, 1.0 / (1.0 - dropout)) : t;
    };
    const auto rank = h.size(-1);
    const auto g = (grads[0].to(type) * scale).reshape({-1, grads[0].size(-1)});
    const auto h2 = h.reshape({-1, rank});
    const auto gh = g.mm(b.to(type));  // (tokens, rank)
    torch::Tensor gx, ga, gb;
    if (ctx->needs_input_grad(0)) gx = kept(gh.mm(a.to(type)).view(x.sizes()).to(x.scalar_type()));
    if (ctx->needs_input_grad(1)) ga = gh.t().mm(kept(x).reshape({-1, x.size(-1)}).to(type)).to(a.scalar_type());
    if (ctx->needs_input_grad(2)) gb = g.t().mm(h2).to(b.scalar_type());
    return {gx, ga, gb, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor low_rank_update(const torch::Tensor& x, const torch::Tensor& a, const torch::Tensor& b, double dropout,
                              double scale) {
  return LowRankUpdate::apply(x, a, b, dropout, scale);
}

torch::Tensor LowRankAdaptable::adapted(const torch::Tensor& x, const torch::Tensor& y, bool training) const {
  if (!lora_A_) return y;
  auto in = x;
  // On the GPU autocast runs the product in the compute type; elsewhere a frozen bf16 model's
  // activations meet the fp32 adapters here. The sum takes y's type.
  if (!in.is_cuda() && in.scalar_type() != lora_A_->weight.scalar_type()) in = in.to(lora_A_->weight.scalar_type());
  return y +
         low_rank_update(in, lora_A_->weight, lora_B_->weight, training ? dropout_ : 0.0, scale_).to(y.scalar_type());
}

namespace {

std::string last_part(const std::string& name) {
  const auto dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(dot + 1);
}

bool is_adapter_parameter(const std::string& name) {
  return name.find(".lora_A.") != std::string::npos || name.find(".lora_B.") != std::string::npos;
}

}  // namespace

std::vector<std::string> apply_lora(torch::nn::Module& model, const LoraSettings& settings,
                                    torch::ScalarType frozen_type) {
  if (settings.rank < 1) throw std::invalid_argument("lora_rank must be 1 or more to adapt layers");
  std::vector<std::pair<std::string, std::shared_ptr<torch::nn::Module>>> adaptable;
  for (const auto& item : model.named_modules("", false))
    if (dynamic_cast<LowRankAdaptable*>(item.value().get())) adaptable.emplace_back(item.key(), item.value());
  std::set<std::string> kinds;  // the adaptable layers' last name parts, for the error
  for (const auto& [name, module] : adaptable) kinds.insert(last_part(name));
  for (const auto& target : settings.targets)
    if (!kinds.count(target)) {
      std::string known;
      for (const auto& k : kinds) known += (known.empty() ? "" : ", ") + k;
      throw std::invalid_argument("lora_targets: no layer of the model is named '" + target +
                                  "'; its linear layers are " + (known.empty() ? "none" : known));
    }

  {
    const torch::NoGradGuard no_grad;
    for (auto& p : model.parameters()) {
      p.set_requires_grad(false);
      if (p.is_floating_point() && p.scalar_type() != frozen_type) p.set_data(p.to(frozen_type));
    }
  }
  std::vector<std::string> adapted;
  const std::set<std::string> targets(settings.targets.begin(), settings.targets.end());
  for (const auto& [name, module] : adaptable) {
    if (!targets.count(last_part(name))) continue;
    dynamic_cast<LowRankAdaptable*>(module.get())
        ->add_adapter(*module, settings.rank, settings.alpha, settings.dropout);
    adapted.push_back(name);
  }
  return adapted;
}

std::vector<std::pair<std::string, torch::Tensor>> lora_tensors(torch::nn::Module& model) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& p : model.named_parameters())
    if (is_adapter_parameter(p.key())) out.emplace_back("base_model.model." + p.key(), p.value());
  return out;
}

void save_lora_adapters(torch::nn::Module& model, const LoraSettings& settings, const std::string& dir,
                        const std::string& task_type) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  const auto bytes = torchrt::safetensors_bytes(lora_tensors(model));
  // Each file through a temporary, so that a reader never sees half of one.
  const auto write = [&](const std::string& name, const char* data, std::size_t size) {
    const fs::path path = fs::path(dir) / name, partial = fs::path(dir) / (name + ".partial");
    std::ofstream out(partial, std::ios::binary);
    out.write(data, static_cast<std::streamsize>(size));
    out.close();
    if (!out) throw std::runtime_error(partial.string() + ": cannot be written");
    fs::rename(partial, path);
  };
  write("adapter_model.safetensors", bytes.data(), bytes.size());
  bool conv1d = false;  // GPT-2's layers store W as (in, out): PEFT's fan_in_fan_out
  for (const auto& item : model.named_modules("", false))
    if (auto* layer = dynamic_cast<LowRankAdaptable*>(item.value().get()); layer && layer->has_adapter())
      conv1d = conv1d || layer->fan_in_fan_out();
  const nlohmann::json config = {{"peft_type", "LORA"},
                                 {"task_type", task_type.empty() ? nlohmann::json() : nlohmann::json(task_type)},
                                 {"r", settings.rank},
                                 {"lora_alpha", settings.alpha},
                                 {"lora_dropout", settings.dropout},
                                 {"target_modules", settings.targets},
                                 {"bias", "none"},
                                 {"fan_in_fan_out", conv1d},
                                 {"init_lora_weights", true},
                                 {"inference_mode", true},
                                 {"modules_to_save", nullptr},
                                 {"base_model_name_or_path", nullptr},
                                 {"use_rslora", false}};
  const std::string text = config.dump(2) + "\n";
  write("adapter_config.json", text.data(), text.size());
}

}  // namespace xpuperf::parallel
