// LoRA (parallel/lora.h) on a tiny Llama: the adapted model starts with the base model's outputs,
// only the adapters train and the base stays as it was, the names are PEFT's, and the saved
// adapter_model.safetensors reads back (with our reader and with Python's json) with adapter_config.json beside it.

#include "xpuperf/parallel/lora.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include "test_util.h"
#include "xpuperf/core/model_splits.h"
#include "xpuperf/models/llama.h"
#include "xpuperf/torchrt/safetensors.h"

namespace xpuperf::parallel {
namespace {

models::LlamaConfig tiny() {
  models::LlamaConfig c;
  c.vocab = 61, c.hidden = 32, c.intermediate = 48, c.layers = 2, c.heads = 4, c.kv_heads = 2;
  return c;
}

TEST(Lora, AdaptersStartAtTheBaseModelAndOnlyTheyTrain) {
  torch::manual_seed(7);
  auto m = models::LlamaForCausalLM(tiny());
  const auto ids = torch::randint(0, 61, {4, 9});
  const auto before = m->forward(ids).detach();
  std::map<std::string, torch::Tensor> base;
  for (const auto& p : m->named_parameters()) base[p.key()] = p.value().detach().clone();

  const auto adapted = apply_lora(*m, {4, 8, 0.0, {"q_proj", "v_proj", "o_proj"}}, torch::kFloat);
  EXPECT_EQ(adapted.size(), 6u) << "three layers in each of two decoder layers";
  EXPECT_TRUE(torch::equal(m->forward(ids), before)) << "B starts at zero: the base model's outputs";

  std::int64_t trained = 0;
  for (const auto& p : m->named_parameters()) {
    const bool adapter = p.key().find(".lora_") != std::string::npos;
    EXPECT_EQ(p.value().requires_grad(), adapter) << p.key();
    if (adapter) trained += p.value().numel();
  }
  EXPECT_EQ(trained, 2 * (4 * 32 + 32 * 4 + 4 * 32 + 16 * 4 + 4 * 32 + 32 * 4)) << "A (4 × in) and B (out × 4)";
  const auto names = lora_tensors(*m);
  ASSERT_EQ(names.size(), 12u);
  EXPECT_EQ(names.front().first, "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight");

  std::vector<torch::Tensor> params;
  for (const auto& p : m->parameters())
    if (p.requires_grad()) params.push_back(p);
  torch::optim::AdamW opt(params, torch::optim::AdamWOptions(1e-2));
  const double first = m->loss(ids).item<double>();
  for (int step = 0; step < 30; ++step) {
    opt.zero_grad();
    m->loss(ids).backward();
    opt.step();
  }
  EXPECT_LT(m->loss(ids).item<double>(), first - 0.1) << "the adapters learn";
  for (const auto& p : m->named_parameters())
    if (base.count(p.key())) {
      EXPECT_TRUE(torch::equal(p.value(), base[p.key()])) << p.key() << " moved";
    }
}

TEST(Lora, TheFrozenBaseTakesTheComputeTypeAndTheAdaptersStayFp32) {
  auto m = models::LlamaForCausalLM(tiny());
  apply_lora(*m, {2, 4, 0.05, {"v_proj"}}, torch::kBFloat16);
  for (const auto& p : m->named_parameters())
    EXPECT_EQ(p.value().scalar_type(), p.key().find(".lora_") != std::string::npos ? torch::kFloat : torch::kBFloat16)
        << p.key();
  const auto logits = m->forward(torch::randint(0, 61, {2, 5}));
  EXPECT_EQ(logits.scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::isfinite(logits).all().item<bool>());
}

// The adapter's update as one autograd node (which keeps x and the keep mask, not the dropped copy of
// x) gives the composition's values and the gradients of x, A and B: without dropout, and with
// dropout drawing what native_dropout draws from the same seed.
TEST(Lora, TheUpdateNodeGivesTheCompositionsValuesAndGradients) {
  for (const double p : {0.0, 0.3}) {
    torch::manual_seed(3);
    const auto x0 = torch::randn({2, 5, 16}), a0 = torch::randn({4, 16}) * 0.3, b0 = torch::randn({8, 4}) * 0.3;
    const auto w = torch::randn({2, 5, 8});  // weights the outputs, so each gets its own gradient
    auto x = x0.clone().requires_grad_(), a = a0.clone().requires_grad_(), b = b0.clone().requires_grad_();
    auto rx = x0.clone().requires_grad_(), ra = a0.clone().requires_grad_(), rb = b0.clone().requires_grad_();
    torch::manual_seed(9);
    const auto got = low_rank_update(x, a, b, p, 2.5);
    torch::manual_seed(9);
    const auto in = p > 0 ? std::get<0>(torch::native_dropout(rx, p, true)) : rx;
    const auto want = torch::linear(torch::linear(in, ra), rb) * 2.5;
    (got * w).sum().backward();
    (want * w).sum().backward();
    const std::string what = "dropout " + std::to_string(p);
    EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-6)) << what;
    EXPECT_TRUE(torch::allclose(x.grad(), rx.grad(), 1e-5, 1e-6)) << what << ": x's gradient";
    EXPECT_TRUE(torch::allclose(a.grad(), ra.grad(), 1e-5, 1e-6)) << what << ": A's gradient";
    EXPECT_TRUE(torch::allclose(b.grad(), rb.grad(), 1e-5, 1e-6)) << what << ": B's gradient";
    const auto dropped = x.grad().eq(0).sum().item<std::int64_t>();
    if (p > 0)
      EXPECT_GT(dropped, 0) << "dropout zeroes some of x's gradient";
    else
      EXPECT_EQ(dropped, 0);
  }
}

TEST(Lora, ATargetTheModelLacksNamesTheLayersItHas) {
  auto m = models::LlamaForCausalLM(tiny());
  try {
    apply_lora(*m, {4, 8, 0.0, {"query"}}, torch::kFloat);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no layer of the model is named 'query'"), std::string::npos) << what;
    EXPECT_NE(what.find("down_proj, gate_proj, k_proj, o_proj, q_proj, up_proj, v_proj"), std::string::npos) << what;
  }
}

// model_splits.yaml's lora_layers, which `xpuperf check` refuses lora_targets by, are the layers the
// model has: Llama's, and Mixtral's (whose experts' layers are not adaptable).
TEST(Lora, TheCheckKnowsTheLayersTheModelHas) {
  for (const std::string name : {"llama", "mixtral"}) {
    auto c = tiny();
    if (name == "mixtral") c.moe.experts = 4, c.moe.top_k = 2;
    auto m = models::LlamaForCausalLM(c);
    std::set<std::string> layers;
    for (const auto& item : m->named_modules("", false))
      if (dynamic_cast<LowRankAdaptable*>(item.value().get()))
        layers.insert(item.key().substr(item.key().rfind('.') + 1));
    Diagnostics diags;
    const auto splits = load_model_splits(Repo(XPUPERF_SOURCE_DIR), name, "libtorch", diags);
    ASSERT_TRUE(splits && splits->lora_layers) << name << ": " << diags.format();
    EXPECT_EQ(std::set<std::string>(splits->lora_layers->begin(), splits->lora_layers->end()), layers) << name;
  }
}

TEST(Lora, SavedAsPeftSavesThem) {
  torch::manual_seed(3);
  auto m = models::LlamaForCausalLM(tiny());
  apply_lora(*m, {8, 32, 0.05, {"q_proj", "v_proj"}}, torch::kFloat);
  {
    const torch::NoGradGuard no_grad;
    for (const auto& p : m->named_parameters())
      if (p.key().find(".lora_B.") != std::string::npos) p.value().normal_();
  }
  test::TempDir dir;
  save_lora_adapters(*m, {8, 32, 0.05, {"q_proj", "v_proj"}}, dir.path() + "/adapter", "CAUSAL_LM");
  const auto file = dir.path() + "/adapter/adapter_model.safetensors";
  const auto read = torchrt::read_safetensors(file);
  const auto tensors = lora_tensors(*m);
  ASSERT_EQ(read.size(), tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(read[i].first, tensors[i].first);
    EXPECT_TRUE(torch::equal(read[i].second, tensors[i].second)) << tensors[i].first;
  }
  const auto config = nlohmann::json::parse(test::read_file(dir.path() + "/adapter/adapter_config.json"));
  EXPECT_EQ(config["peft_type"], "LORA");
  EXPECT_EQ(config["task_type"], "CAUSAL_LM");
  EXPECT_EQ(config["r"], 8);
  EXPECT_EQ(config["lora_alpha"], 32.0);
  EXPECT_EQ(config["target_modules"], nlohmann::json({"q_proj", "v_proj"}));
  EXPECT_EQ(config["fan_in_fan_out"], false);
  EXPECT_FALSE(std::filesystem::exists(file + ".partial"));

  // The format as another reader sees it (Python's json and struct, no LibTorch): the header's
  // byte ranges tile the data, in F32, under PEFT's names, and the data starts 8-byte aligned.
  const std::string listing = dir.path() + "/listing.txt";
  const std::string command =
      "python3 -c \"import json, struct, sys; b = open(sys.argv[1], 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; "
      "h = json.loads(b[8:8 + n]); m = h.pop('__metadata__'); at = 0\n"
      "for k, v in sorted(h.items(), key=lambda kv: kv[1]['data_offsets']):\n"
      "  s, e = v['data_offsets']; assert s == at and e - s == 4 * v['shape'][0] * v['shape'][1], k; at = e\n"
      "assert at == len(b) - 8 - n and n % 8 == 0 and m == {'format': 'pt'}\n"
      "print('\\n'.join(k + ' ' + v['dtype'] + ' ' + 'x'.join(map(str, v['shape'])) for k, v in "
      "sorted(h.items())))\" " +
      file + " > " + listing + " 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << test::read_file(listing);
  std::string expected;
  auto sorted = tensors;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [name, t] : sorted)
    expected += name + " F32 " + std::to_string(t.size(0)) + "x" + std::to_string(t.size(1)) + "\n";
  EXPECT_EQ(test::read_file(listing), expected);
}

// A damaged safetensors file is an error naming the file and what is wrong, never tensors of garbage.
TEST(Lora, ADamagedSafetensorsFileIsRefusedSayingWhy) {
  test::TempDir dir;
  const auto good = torchrt::safetensors_bytes(
      {{"a", torch::arange(6, torch::kFloat).view({2, 3})}, {"b", torch::ones({4}, torch::kBFloat16)}});
  const auto write = [&](const std::string& bytes) {
    std::ofstream(dir.path() + "/f.safetensors", std::ios::binary) << bytes;
    return dir.path() + "/f.safetensors";
  };
  const auto back = torchrt::read_safetensors(write(good));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_TRUE(torch::equal(back[0].second, torch::arange(6, torch::kFloat).view({2, 3})));
  EXPECT_EQ(back[1].second.scalar_type(), torch::kBFloat16);
  const auto refused = [&](const std::string& bytes, const std::string& says) {
    try {
      torchrt::read_safetensors(write(bytes));
      ADD_FAILURE() << "read without an error; expected: " << says;
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("f.safetensors"), std::string::npos) << what;
      EXPECT_NE(what.find(says), std::string::npos) << what;
    }
  };
  refused(good.substr(0, 5), "shorter than its 8-byte header length");
  refused(good.substr(0, good.size() - 2), "the file ends at byte " + std::to_string(good.size() - 2) +
                                               ", but b's bytes run to byte " + std::to_string(good.size()));
  refused(good + "xx", "bytes after the last tensor");
  std::string not_json = good;
  not_json[8] = '[';
  refused(not_json, "the header is not JSON");
}

}  // namespace
}  // namespace xpuperf::parallel
