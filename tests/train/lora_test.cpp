// LoRA (parallel/lora.h) on a tiny Llama: the adapted model starts with the base model's outputs,
// only the adapters train and the base stays as it was, the names are PEFT's, and the saved
// adapter_model.bin reads back (as torch.load reads it) with adapter_config.json beside it.

#include "xpuperf/parallel/lora.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "xpuperf/models/llama.h"

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
    if (base.count(p.key())) EXPECT_TRUE(torch::equal(p.value(), base[p.key()])) << p.key() << " moved";
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
  std::ifstream in(dir.path() + "/adapter/adapter_model.bin", std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto dict = torch::pickle_load(bytes).toGenericDict();
  const auto tensors = lora_tensors(*m);
  ASSERT_EQ(dict.size(), tensors.size());
  for (const auto& [name, t] : tensors) {
    ASSERT_TRUE(dict.contains(name)) << name;
    EXPECT_TRUE(torch::equal(dict.at(name).toTensor(), t)) << name;
  }
  const auto config = nlohmann::json::parse(test::read_file(dir.path() + "/adapter/adapter_config.json"));
  EXPECT_EQ(config["peft_type"], "LORA");
  EXPECT_EQ(config["task_type"], "CAUSAL_LM");
  EXPECT_EQ(config["r"], 8);
  EXPECT_EQ(config["lora_alpha"], 32.0);
  EXPECT_EQ(config["target_modules"], nlohmann::json({"q_proj", "v_proj"}));
  EXPECT_EQ(config["fan_in_fan_out"], false);
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/adapter/adapter_model.bin.partial"));

  // What PEFT does with the file first: Python's torch.load, giving a dict of name → tensor.
  if (std::system("/usr/bin/python3 -c 'import torch' 2>/dev/null") != 0) {
    std::cout << "(Debian's python3-torch is not installed: adapter_model.bin not read by Python)\n";
    return;
  }
  const std::string listing = dir.path() + "/listing.txt";
  const std::string command =
      "/usr/bin/python3 -c \"import sys, torch; d = torch.load(sys.argv[1]); "
      "print('\\n'.join(k + ' ' + 'x'.join(map(str, v.shape)) for k, v in sorted(d.items())))\" " +
      dir.path() + "/adapter/adapter_model.bin > " + listing + " 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << test::read_file(listing);
  std::string expected;
  auto sorted = tensors;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [name, t] : sorted)
    expected += name + " " + std::to_string(t.size(0)) + "x" + std::to_string(t.size(1)) + "\n";
  EXPECT_EQ(test::read_file(listing), expected);
}

}  // namespace
}  // namespace xpuperf::parallel
