// The model zoo against its reference, torchvision: parameter counts, FLOPs, and the outputs of
// the same weights on the same batch (when Debian's python3-torchvision is installed).

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "parameter_count.h"
#include "test_util.h"
#include "xpuperf/core/process.h"
#include "xpuperf/models/bert.h"
#include "xpuperf/models/fused_ops.h"
#include "xpuperf/models/glm.h"
#include "xpuperf/models/gpt.h"
#include "xpuperf/models/llama.h"
#include "xpuperf/models/mobilenet_v2.h"
#include "xpuperf/models/resnet50.h"
#include "xpuperf/models/vit.h"
#include "xpuperf/models/vocabulary_output.h"
#include "xpuperf/optim/optimizers.h"
#include "xpuperf/parallel/activation_checkpoint.h"
#include "xpuperf/torchrt/safetensors.h"
#include "xpuperf/torchrt/weights.h"
#include "xpuperf/train/precision.h"

namespace xpuperf::models {
namespace {

TEST(Models, ParameterCountsAreTorchvisions) {
  EXPECT_EQ(parameters(*ResNet50()), 25'557'032);
  EXPECT_EQ(parameters(*VisionTransformer(ViTConfig::b16())), 86'567'656);
  EXPECT_EQ(parameters(*MobileNetV2()), 3'504'872);
  EXPECT_EQ(parameters(*VisionTransformer(ViTConfig::l16())), 304'326'632);  // the vit_l_16 inference case's
}

TEST(Models, ForwardFlopsFromTheLayerShapes) {
  EXPECT_EQ(ResNet50Impl::forward_macs(), 4'089'184'256.0);
  // torchvision lists 17.56 G multiply-adds for vit_b_16 and 0.30 G for mobilenet_v2.
  EXPECT_EQ(VisionTransformer()->forward_flops(), 2 * 17'563'828'224.0);
  EXPECT_NEAR(MobileNetV2()->forward_flops(224) / 2, 0.30e9, 0.01e9);
  // torchvision lists 61.55 G multiply-adds for vit_l_16.
  EXPECT_NEAR(ViTConfig::l16().forward_flops() / 2, 61.55e9, 0.01e9);
}

TEST(Models, ASmallViTRunsForwardAndBackward) {
  ViTConfig c;
  c.image_size = 32;
  c.patch_size = 8;
  c.layers = 2;
  c.hidden = 64;
  c.heads = 4;
  c.mlp = 128;
  c.classes = 10;
  VisionTransformer vit(c);
  const auto y = vit->forward(torch::randn({3, 3, 32, 32}));
  EXPECT_EQ(y.sizes(), (std::vector<std::int64_t>{3, 10}));
  y.sum().backward();
  EXPECT_TRUE(vit->encoder->pos_embedding.grad().defined());
}

// Runs tests/models/torchvision_reference.py; false when torchvision is not installed.
bool torchvision_reference(const std::string& model, const std::string& dir) {
  if (std::system("/usr/bin/python3 -c 'import torchvision' 2>/dev/null") != 0) return false;
  const std::string command = "/usr/bin/python3 " + std::string(XPUPERF_TEST_DIR) +
                              "/models/torchvision_reference.py " + model + " " + dir + " > " + dir + "/ref.log 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0) << test::read_file(dir + "/ref.log");
  return true;
}

torch::Tensor io_tensor(const std::string& path, const std::string& key) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const auto& item : torch::pickle_load(bytes).toGenericDict())
    if (item.key().toStringRef() == key) return item.value().toTensor();
  ADD_FAILURE() << path << " has no " << key;
  return {};
}

void expect_same_outputs(torch::nn::Module& model, const std::function<torch::Tensor(torch::Tensor)>& forward,
                         const std::string& name) {
  test::TempDir dir;
  if (!torchvision_reference(name, dir.path())) GTEST_SKIP() << "python3-torchvision is not installed";
  EXPECT_EQ(torchrt::load_weights(model, dir.path() + "/" + name + ".weights.pt"), "PyTorch state_dict");
  model.eval();
  torch::NoGradGuard no_grad;
  const auto x = io_tensor(dir.path() + "/" + name + ".io.pt", "input");
  const auto expected = io_tensor(dir.path() + "/" + name + ".io.pt", "output");
  const auto y = forward(x);
  ASSERT_EQ(y.sizes(), expected.sizes());
  const double scale = expected.abs().max().item<double>();
  const double diff = (y - expected).abs().max().item<double>();
  ::testing::Test::RecordProperty("relative_diff_" + name, std::to_string(diff / scale));
  EXPECT_LT(diff / scale, 1e-4) << name << ": largest difference " << diff << " of outputs up to " << scale;
  EXPECT_TRUE(torch::equal(y.argmax(1), expected.argmax(1))) << name;
}

TEST(Models, ResNet50GivesTorchvisionsOutputs) {
  ResNet50 m;
  expect_same_outputs(
      *m, [&](torch::Tensor x) { return m->forward(x); }, "resnet50");
}

TEST(Models, ViTB16GivesTorchvisionsOutputs) {
  VisionTransformer m;
  expect_same_outputs(
      *m, [&](torch::Tensor x) { return m->forward(x); }, "vit_b_16");
}

TEST(Models, MobileNetV2GivesTorchvisionsOutputs) {
  MobileNetV2 m;
  expect_same_outputs(
      *m, [&](torch::Tensor x) { return m->forward(x); }, "mobilenet_v2");
}

}  // namespace
}  // namespace xpuperf::models

namespace xpuperf::models {
namespace {

TEST(LanguageModels, ParameterCountsAreHuggingFaces) {
  // GPT2LMHeadModel and BertForMaskedLM with their default configs (tied output layers count once).
  EXPECT_EQ(parameters(*GptLMHeadModel(GptConfig::gpt2_small())), 124'439'808);
  EXPECT_EQ(parameters(*BertForMaskedLM(BertConfig::base())), 109'514'298);
  EXPECT_EQ(parameters(*BertForMaskedLM(BertConfig::large())), 335'174'458);  // the bertLarge inference case's
  // Its forward FLOPs a 512-token sequence: FlagPerf's 2 × 512 × 0.33e9 counts the parameters only;
  // the head at every position and the attention products add to it.
  EXPECT_NEAR(BertConfig::large().forward_flops_per_token(512) * 512, 368.09e9, 0.01e9);
  // Megatron's GPT 1.3B: 12·h² + 13·h a layer, the two tables and the final norm. Checked on one
  // of its 24 layers (the whole model is 5 GB of fp32 to build here); the GPU runs build it whole.
  const double h = 2048;
  GptConfig one_layer = GptConfig::megatron_1_3b();
  one_layer.layers = 1;
  EXPECT_EQ(parameters(*GptLMHeadModel(one_layer)),
            static_cast<std::int64_t>(1 * (12 * h * h + 13 * h) + (50257 + 1024) * h + 2 * h));
  EXPECT_EQ(GptConfig::megatron_1_3b().layers, 24);
  EXPECT_EQ(GptConfig::megatron_1_3b().heads, 32);
  // CPM-1 medium (FlagPerf's cpm: "0.33B"): 24 layers of 1,024 and a 30,000-piece vocabulary, as
  // Hugging Face's GPT2LMHeadModel of those sizes counts it.
  EXPECT_EQ(parameters(*GptLMHeadModel(GptConfig::cpm1_medium())), 334'080'000);
}

// `dict` as Python's torch.save(dict(...)) writes a state_dict, at `path`; returns the path.
std::string save_state_dict(const c10::Dict<std::string, torch::Tensor>& dict, const std::string& path) {
  const auto bytes = torch::pickle_save(dict);
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

// A state_dict of `model`'s names, as CPM-1's cpm_model_states_medium.pt names them (Megatron's GPT-2
// of 2019: linears (out, in), "transformer.layers.<i>...", the embeddings at the top).
c10::Dict<std::string, torch::Tensor> in_cpm_names(GptLMHeadModelImpl& model) {
  const std::vector<std::pair<std::string, std::string>> parts = {
      {"ln_1.", "input_layernorm."},        {"attn.c_attn.", "attention.query_key_value."},
      {"attn.c_proj.", "attention.dense."}, {"ln_2.", "post_attention_layernorm."},
      {"mlp.c_fc.", "mlp.dense_h_to_4h."},  {"mlp.c_proj.", "mlp.dense_4h_to_h."}};
  c10::Dict<std::string, torch::Tensor> dict;
  for (const auto& p : model.named_parameters()) {
    std::string name = p.key();
    auto t = p.value().detach().clone();
    if (name == "transformer.wte.weight") name = "word_embeddings.weight";
    if (name == "transformer.wpe.weight") name = "position_embeddings.weight";
    if (name.rfind("transformer.ln_f.", 0) == 0) name = "transformer.final_layernorm." + name.substr(17);
    if (name.rfind("transformer.h.", 0) == 0) {
      const auto dot = name.find('.', 14);
      const std::string rest = name.substr(dot + 1);
      for (const auto& [ours, theirs] : parts)
        if (rest.rfind(ours, 0) == 0) {
          name = "transformer.layers." + name.substr(14, dot - 14) + "." + theirs + rest.substr(ours.size());
          if (t.dim() == 2) t = t.t().contiguous();
        }
    }
    dict.insert(name, t);
  }
  return dict;
}

TEST(LanguageModels, CpmsCheckpointInMegatronNamesLoadsIntoTheGptModel) {
  torch::manual_seed(3);
  const GptConfig g{64, 16, 2, 32, 4, 0.0, 1e-5};
  auto source = GptLMHeadModel(g);
  // Distinct q, k and v weights and biases, so that a wrong split of the fused rows shows.
  {
    torch::NoGradGuard no_grad;
    for (auto& p : source->parameters()) p.normal_(0, 0.2);
  }
  auto dict = in_cpm_names(*source);
  ASSERT_TRUE(dict.contains("transformer.layers.1.attention.query_key_value.weight"));
  EXPECT_EQ(dict.at("transformer.layers.1.attention.query_key_value.weight").sizes(), torch::IntArrayRef({96, 32}));
  test::TempDir dir;
  const auto save = [&](const std::string& name) { return save_state_dict(dict, dir.path() + "/" + name); };
  const torchrt::StateDictConversion convert = [](std::map<std::string, torch::Tensor>& tensors) {
    return convert_megatron_gpt_names(tensors) ? std::string("CPM-1's names") : std::string();
  };
  auto target = GptLMHeadModel(g);
  EXPECT_EQ(torchrt::load_weights(*target, save("cpm.pt"), GptLMHeadModelImpl::tied_weights(), convert),
            "PyTorch state_dict in CPM-1's names, converted");
  const auto ids = torch::randint(0, 64, {2, 12});
  source->eval(), target->eval();
  EXPECT_TRUE(torch::equal(target->forward(ids), source->forward(ids)));
  // DeepSpeed's "module." prefix is dropped too; Hugging Face's names are left as they are.
  c10::Dict<std::string, torch::Tensor> wrapped;
  for (const auto& item : dict) wrapped.insert("module." + item.key(), item.value());
  dict = wrapped;
  auto again = GptLMHeadModel(g);
  torchrt::load_weights(*again, save("module.pt"), GptLMHeadModelImpl::tied_weights(), convert);
  again->eval();
  EXPECT_TRUE(torch::equal(again->forward(ids), source->forward(ids)));
  std::map<std::string, torch::Tensor> hugging_face;
  for (const auto& p : source->named_parameters()) hugging_face[p.key()] = p.value();
  EXPECT_FALSE(convert_megatron_gpt_names(hugging_face));
  EXPECT_TRUE(hugging_face.count("transformer.h.0.attn.c_attn.weight"));
  // Without the conversion the names are refused, saying which.
  try {
    torchrt::load_weights(*again, dir.path() + "/cpm.pt", GptLMHeadModelImpl::tied_weights());
    ADD_FAILURE() << "CPM-1's names were taken without converting them";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("unexpected: word_embeddings.weight"), std::string::npos) << e.what();
  }
}

// GLM-large (FlagPerf's glm): GPT-2's blocks of 1,024 × 24, bert-large-uncased's vocabulary with
// [sop], [eop] and padding (30,592 ids), and two position tables of 513 rows each, as GLM builds them.
TEST(LanguageModels, GlmLargeHasItsSizesAndPartAAttendsBothWaysPartBCausally) {
  const double h = 1024;
  const auto large = parameters(*GlmModel(GlmConfig::glm_large()));
  EXPECT_EQ(large, static_cast<std::int64_t>(24 * (12 * h * h + 13 * h) + (30592 + 2 * 513) * h + 2 * h));
  EXPECT_EQ(large, 334'688'256);
  // Query i sees key j where j < sep or j <= i.
  const auto mask = glm_attention_mask(torch::tensor({2, 4}), 5);
  EXPECT_EQ(mask.sizes(), torch::IntArrayRef({2, 1, 5, 5}));
  const auto expected_row0 = torch::tensor({1, 1, 0, 0, 0, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1})
                                 .to(torch::kBool)
                                 .view({5, 5});
  EXPECT_TRUE(torch::equal(mask[0][0], expected_row0)) << mask[0][0];
  EXPECT_TRUE(mask[1][0][0].narrow(0, 0, 4).all().item<bool>());  // part A of 4: both ways
  EXPECT_FALSE(mask[1][0][0][4].item<bool>());

  torch::manual_seed(5);
  GlmConfig tiny{64, 16, 2, 32, 4, 0.0};
  auto glm = GlmModel(tiny);
  glm->eval();
  const auto ids = torch::randint(0, 60, {1, 10});
  GlmInputs in{ids,
               torch::full({1, 10}, -100, torch::kLong),
               torch::arange(10).unsqueeze(0),
               torch::zeros({1, 10}, torch::kLong),
               torch::tensor({6}),
               0};
  const auto base = glm->forward(in);
  const auto changed = [&](std::int64_t position) {
    auto other = in;
    other.ids = ids.clone();
    other.ids[0][position] = (ids[0][position].item<std::int64_t>() + 1) % 60;
    return glm->forward(other).sub(base).abs().amax({0, 2}).gt(1e-6);  // which positions' logits moved
  };
  // A part-A token moves every position, those before it too; a part-B token only itself and later.
  EXPECT_TRUE(changed(4).all().item<bool>()) << changed(4);
  EXPECT_TRUE(torch::equal(changed(7), torch::tensor({0, 0, 0, 0, 0, 0, 0, 1, 1, 1}).to(torch::kBool))) << changed(7);
  // The block positions count.
  auto blocks = in;
  blocks.block_positions = torch::arange(10).unsqueeze(0).clamp_max(5);
  EXPECT_FALSE(torch::allclose(glm->forward(blocks), base));
}

// GLM's blocklm checkpoints name the model Megatron's way, with both position tables in the
// transformer and the token embedding at the top.
TEST(LanguageModels, GlmsCheckpointInItsOwnNamesLoadsIntoTheGlmModel) {
  torch::manual_seed(6);
  GlmConfig tiny{64, 16, 2, 32, 4, 0.0};
  auto source = GlmModel(tiny);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : source->parameters()) p.normal_(0, 0.2);
  }
  GptLMHeadModelImpl shell(tiny.decoder());  // the GPT names of the same tensors, then CPM-1's
  {
    torch::NoGradGuard no_grad;
    for (const auto& p : source->transformer->named_parameters())
      if (p.key() != "wbpe.weight") shell.transformer->named_parameters()[p.key()].copy_(p.value());
  }
  const auto megatron = in_cpm_names(shell);
  c10::Dict<std::string, torch::Tensor> dict;
  for (const auto& item : megatron) {
    if (item.key() == "transformer.wbpe.weight") continue;  // GLM names it below
    const std::string name =
        item.key() == "position_embeddings.weight" ? "transformer.position_embeddings.weight" : item.key();
    dict.insert("module." + name, item.value());
  }
  dict.insert("module.transformer.block_position_embeddings.weight",
              source->transformer->wbpe->weight.detach().clone());
  test::TempDir dir;
  const torchrt::StateDictConversion convert = [](std::map<std::string, torch::Tensor>& tensors) {
    return convert_glm_names(tensors) ? std::string("GLM's names") : std::string();
  };
  auto target = GlmModel(tiny);
  EXPECT_EQ(torchrt::load_weights(*target, save_state_dict(dict, dir.path() + "/glm.pt"), {}, convert),
            "PyTorch state_dict in GLM's names, converted");
  const auto ids = torch::randint(0, 64, {2, 12});
  const GlmInputs in{
      ids, ids, torch::arange(12).repeat({2, 1}), torch::arange(12).repeat({2, 1}).clamp_max(3), torch::tensor({5, 8}),
      0};
  source->eval(), target->eval();
  EXPECT_TRUE(torch::equal(target->forward(in), source->forward(in)));
  // CPM-1's names (no block positions) are not GLM's.
  std::map<std::string, torch::Tensor> cpm;
  for (const auto& item : megatron) cpm[item.key()] = item.value();
  EXPECT_FALSE(convert_glm_names(cpm));
}

TEST(LanguageModels, NamesAreHuggingFacesSoItsStateDictLoads) {
  GptConfig g{64, 16, 2, 32, 4, 0.0, 1e-5};
  const auto gpt = GptLMHeadModel(g);
  const auto names = gpt->named_parameters().keys();
  for (const char* name :
       {"transformer.wte.weight", "transformer.wpe.weight", "transformer.h.1.ln_1.weight",
        "transformer.h.1.attn.c_attn.weight", "transformer.h.1.attn.c_proj.bias", "transformer.h.0.mlp.c_fc.weight",
        "transformer.h.0.mlp.c_proj.weight", "transformer.ln_f.bias"})
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  EXPECT_EQ(gpt->named_parameters()["transformer.h.0.attn.c_attn.weight"].sizes(), (std::vector<std::int64_t>{32, 96}))
      << "Conv1D: (in, out)";
  BertConfig b{64, 16, 2, 2, 32, 4, 64, 0.0, 0.0, 1e-12};
  const auto bert = BertForMaskedLM(b);
  const auto bert_names = bert->named_parameters().keys();
  for (const char* name :
       {"bert.embeddings.word_embeddings.weight", "bert.embeddings.token_type_embeddings.weight",
        "bert.embeddings.LayerNorm.weight", "bert.encoder.layer.1.attention.self.query.weight",
        "bert.encoder.layer.1.attention.output.dense.bias", "bert.encoder.layer.1.attention.output.LayerNorm.weight",
        "bert.encoder.layer.0.intermediate.dense.weight", "bert.encoder.layer.0.output.LayerNorm.bias",
        "cls.predictions.bias", "cls.predictions.transform.dense.weight", "cls.predictions.transform.LayerNorm.weight"})
    EXPECT_NE(std::find(bert_names.begin(), bert_names.end(), name), bert_names.end()) << name;
}

TEST(LanguageModels, TheAlignedOutputLayerKeepsTheLossAndThePredictions) {
  // What the GPU path does (a vocabulary of 70 padded to 128 with −inf logits), here on the CPU.
  torch::manual_seed(3);
  const auto hidden = torch::randn({6, 16});
  const auto weight = torch::randn({70, 16}), bias = torch::randn({70});
  const auto targets = torch::tensor({3, 69, 0, -100, 41, 7}, torch::kLong);
  for (const auto& b : {bias, torch::Tensor()}) {
    const auto exact = vocabulary_logits(hidden, weight, b, false);
    const auto aligned = vocabulary_logits(hidden, weight, b, true);
    EXPECT_EQ(aligned.size(1), 128);
    EXPECT_TRUE(torch::allclose(aligned.narrow(1, 0, 70), exact));
    EXPECT_TRUE(torch::equal(aligned.argmax(1), exact.argmax(1)));
    EXPECT_NEAR(token_cross_entropy(aligned, targets).item<double>(),
                token_cross_entropy(exact, targets).item<double>(), 1e-6);
  }
}

// Hugging Face's Mixtral checkpoints hold one module an expert (w1 gate, w3 up, w2 down): they load
// into the stacked experts, the same logits; a missing expert is named.
TEST(LanguageModels, HuggingFacesMixtralExpertsLoadIntoTheStackedExperts) {
  torch::manual_seed(5);
  LlamaConfig c;
  c.vocab = 64, c.hidden = 32, c.intermediate = 48, c.layers = 2, c.heads = 4, c.kv_heads = 2;
  c.moe.experts = 4;
  auto source = LlamaForCausalLM(c);
  c10::Dict<std::string, torch::Tensor> dict;
  for (const auto& p : source->named_parameters()) {
    const std::string& name = p.key();
    const auto at = name.find("block_sparse_moe.w_");
    if (at == std::string::npos) {
      dict.insert(name, p.value().detach().clone());
      continue;
    }
    const std::string prefix = name.substr(0, at) + "block_sparse_moe.experts.";
    const std::string which = name.substr(at + std::string("block_sparse_moe.w_").size());
    const std::string w = which == "gate" ? "w1" : which == "up" ? "w3" : "w2";
    for (std::int64_t j = 0; j < c.moe.experts; ++j)
      dict.insert(prefix + std::to_string(j) + "." + w + ".weight", p.value()[j].detach().clone());
  }
  ASSERT_TRUE(dict.contains("model.layers.1.block_sparse_moe.experts.3.w2.weight"));
  test::TempDir dir;
  const auto convert = [](std::map<std::string, torch::Tensor>& tensors) {
    return stack_hugging_face_experts(tensors) ? std::string("Mixtral's experts") : std::string();
  };
  auto target = LlamaForCausalLM(c);
  EXPECT_EQ(torchrt::load_weights(*target, save_state_dict(dict, dir.path() + "/mixtral.pt"), {}, convert),
            "PyTorch state_dict in Mixtral's experts, converted");
  source->eval(), target->eval();
  const auto ids = torch::randint(0, 64, {2, 9});
  EXPECT_TRUE(torch::equal(target->forward(ids), source->forward(ids)));
  // transformers 5's layout: gate and up fused, the block named mlp.
  c10::Dict<std::string, torch::Tensor> fused;
  for (const auto& p : source->named_parameters()) {
    std::string name = p.key();
    const auto at = name.find("block_sparse_moe.");
    if (at == std::string::npos) {
      fused.insert(name, p.value().detach().clone());
      continue;
    }
    const std::string layer = name.substr(0, at) + "mlp.",
                      rest = name.substr(at + std::string("block_sparse_moe.").size());
    if (rest == "gate.weight") fused.insert(layer + "gate.weight", p.value().detach().clone());
    if (rest == "w_down") fused.insert(layer + "experts.down_proj", p.value().detach().clone());
    if (rest == "w_gate") {
      const auto up = source->named_parameters()[name.substr(0, at) + "block_sparse_moe.w_up"];
      fused.insert(layer + "experts.gate_up_proj", torch::cat({p.value(), up}, 1).detach().clone());
    }
  }
  auto from_fused = LlamaForCausalLM(c);
  EXPECT_EQ(torchrt::load_weights(*from_fused, save_state_dict(fused, dir.path() + "/mixtral5.pt"), {}, convert),
            "PyTorch state_dict in Mixtral's experts, converted");
  from_fused->eval();
  EXPECT_TRUE(torch::equal(from_fused->forward(ids), source->forward(ids)));
  (void)dict.erase("model.layers.0.block_sparse_moe.experts.2.w3.weight");
  try {
    torchrt::load_weights(*target, save_state_dict(dict, dir.path() + "/broken.pt"), {}, convert);
    ADD_FAILURE() << "a checkpoint missing an expert's weight was taken";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("model.layers.0.block_sparse_moe.experts.2.w3.weight is missing"),
              std::string::npos)
        << e.what();
  }
}

TEST(LanguageModels, HuggingFacesTiedCopiesLoadWhenTheyEqualWhatTheyCopy) {
  // A state_dict as Hugging Face saves GPT2LMHeadModel's: lm_head.weight beside transformer.wte.weight.
  const GptConfig g{64, 16, 1, 32, 4, 0.0, 1e-5};
  auto source = GptLMHeadModel(g);
  c10::Dict<std::string, torch::Tensor> dict;
  for (const auto& p : source->named_parameters()) dict.insert(p.key(), p.value().detach().clone());
  dict.insert("lm_head.weight", source->transformer->wte->weight.detach().clone());
  test::TempDir dir;
  const auto save = [&](const std::string& name) { return save_state_dict(dict, dir.path() + "/" + name); };
  auto target = GptLMHeadModel(g);
  EXPECT_EQ(torchrt::load_weights(*target, save("hf.pt"), GptLMHeadModelImpl::tied_weights()), "PyTorch state_dict");
  EXPECT_TRUE(torch::equal(target->transformer->wte->weight, source->transformer->wte->weight));
  // Without the model saying they are tied, the copy is an unexpected entry.
  try {
    torchrt::load_weights(*target, dir.path() + "/hf.pt");
    ADD_FAILURE() << "lm_head.weight was taken without a tie";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("unexpected: lm_head.weight"), std::string::npos) << e.what();
  }
  // A copy that differs is not this model's weights.
  dict.insert_or_assign("lm_head.weight", torch::zeros({64, 32}));
  try {
    torchrt::load_weights(*target, save("other.pt"), GptLMHeadModelImpl::tied_weights());
    ADD_FAILURE() << "a differing tied copy was taken";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("lm_head.weight differs from transformer.wte.weight"), std::string::npos)
        << e.what();
  }
}

// Hugging Face's save_pretrained writes safetensors: one model.safetensors, or shards with
// model.safetensors.index.json naming each tensor's shard. Both load, in bf16 as such checkpoints
// usually are (converted to the model's type), through load_weights and load_pretrained; a shard the
// index names but the folder lacks is an error naming it.
TEST(LanguageModels, HuggingFacesSafetensorsLoadWholeAndSharded) {
  const GptConfig g{64, 16, 2, 32, 4, 0.0, 1e-5};
  auto source = GptLMHeadModel(g);
  torchrt::NamedTensors tensors;
  for (const auto& p : source->named_parameters())
    tensors.emplace_back(p.key(), p.value().detach().to(torch::kBFloat16));
  test::TempDir dir;
  const auto write = [&](const std::string& name, const torchrt::NamedTensors& part) {
    std::ofstream(dir.path() + "/" + name, std::ios::binary) << torchrt::safetensors_bytes(part);
    return dir.path() + "/" + name;
  };
  const auto expect_source_in = [&](GptLMHeadModel& m, const std::string& what) {
    for (const auto& p : m->named_parameters())
      EXPECT_TRUE(torch::equal(p.value(), source->named_parameters()[p.key()].to(torch::kBFloat16).to(torch::kFloat)))
          << what << ": " << p.key();
  };
  auto whole = GptLMHeadModel(g);
  EXPECT_EQ(torchrt::load_weights(*whole, write("model.safetensors", tensors)), "safetensors");
  expect_source_in(whole, "model.safetensors");

  const auto half = static_cast<std::ptrdiff_t>(tensors.size() / 2);
  write("model-00001-of-00002.safetensors", {tensors.begin(), tensors.begin() + half});
  write("model-00002-of-00002.safetensors", {tensors.begin() + half, tensors.end()});
  nlohmann::json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", nlohmann::json::object()}};
  for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(tensors.size()); ++i)
    index["weight_map"][tensors[static_cast<std::size_t>(i)].first] =
        i < half ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
  const auto index_path = dir.path() + "/model.safetensors.index.json";
  std::ofstream(index_path) << index.dump(2);
  auto sharded = GptLMHeadModel(g);
  EXPECT_EQ(torchrt::load_weights(*sharded, index_path), "safetensors");
  expect_source_in(sharded, "the sharded checkpoint");
  auto pretrained = GptLMHeadModel(g);
  const auto r = torchrt::load_pretrained(*pretrained, index_path);
  EXPECT_EQ(r.format, "safetensors");
  EXPECT_EQ(r.loaded.size(), tensors.size());
  EXPECT_TRUE(r.fresh.empty() && r.unused.empty());

  std::filesystem::remove(dir.path() + "/model-00002-of-00002.safetensors");
  try {
    torchrt::load_weights(*sharded, index_path);
    ADD_FAILURE() << "loaded without its second shard";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("model-00002-of-00002.safetensors: cannot be opened"), std::string::npos)
        << e.what();
  }
}

TEST(LanguageModels, GptIsCausalAndLearnsASmallSequence) {
  torch::manual_seed(0);
  GptConfig c{50, 16, 2, 32, 4, 0.0, 1e-5};
  auto gpt = GptLMHeadModel(c);
  auto ids = torch::randint(50, {2, 12}, torch::kLong);
  const auto logits = gpt->forward(ids);
  EXPECT_EQ(logits.sizes(), (std::vector<std::int64_t>{2, 12, 50}));
  auto changed = ids.clone();
  changed.index_put_({torch::indexing::Slice(), torch::indexing::Slice(8, torch::indexing::None)}, 7);
  const auto after = gpt->forward(changed);
  const auto head = torch::indexing::Slice(0, 8);
  EXPECT_TRUE(torch::allclose(after.index({torch::indexing::Slice(), head}),
                              logits.index({torch::indexing::Slice(), head}), 1e-5, 1e-5))
      << "a later token changes no earlier prediction";
  EXPECT_FALSE(torch::allclose(after, logits));
  torch::optim::AdamW opt(gpt->parameters(), torch::optim::AdamWOptions(3e-3));
  const auto first = gpt->loss(ids).item<double>();
  EXPECT_NEAR(first, std::log(50.0), 0.5) << "random weights: about ln(vocab)";
  for (int step = 0; step < 30; ++step) {
    opt.zero_grad();
    gpt->loss(ids).backward();
    opt.step();
  }
  EXPECT_LT(gpt->loss(ids).item<double>(), first / 3) << "it fits two sequences";
  // GPT-2 small: 6 × (124,439,808 − the 786,432 position weights) + 12 × 12 × 768 × 1,024.
  EXPECT_DOUBLE_EQ(GptLMHeadModel(GptConfig::gpt2_small())->training_flops_per_token(1024), 855'166'464.0);
}

// BERT's residual adds take the training kernel (whose dropout draws from its own Philox counter)
// only where activation checkpointing does not recompute the block: a recomputation replays the
// generators' draws, which ATen's dropout follows.
TEST(LanguageModels, BertTrainsOnTheAddNormKernelOnlyWhereBlocksAreNotRecomputed) {
  BertConfig c{40, 16, 2, 2, 32, 4, 64, 0.1, 0.1, 1e-12};
  auto bert = BertForMaskedLM(c);
  bert->use_fused_kernels(true);
  const auto ids = torch::randint(5, 40, {2, 8}, torch::kLong);
  const auto kernel_in_training = [&] {
    std::vector<bool> on;
    for (const auto& l : *bert->bert->encoder->layer) {
      on.push_back(l->as<BertLayer>()->attention->output->kernel_in_training);
      on.push_back(l->as<BertLayer>()->output->kernel_in_training);
    }
    return on;
  };
  bert->bert(ids, torch::zeros_like(ids), torch::ones_like(ids)).sum().backward();
  EXPECT_EQ(kernel_in_training(), std::vector<bool>(4, true));
  EXPECT_EQ(parallel::set_activation_checkpointing(*bert, true), 1);
  bert->bert(ids, torch::zeros_like(ids), torch::ones_like(ids)).sum().backward();
  EXPECT_EQ(kernel_in_training(), std::vector<bool>(4, false));
}

// Sequence packing: two sequences in one row, each attending only within itself and counting its
// positions from 0, give each one's hidden states as it has alone (padded) — and the masked-LM
// loss over the row is the two sequences' loss together.
TEST(LanguageModels, BertPackedSequencesEachGiveWhatTheyGiveAlone) {
  torch::manual_seed(1);
  BertConfig c{40, 16, 2, 2, 32, 4, 64, 0.0, 0.0, 1e-12};
  auto bert = BertForMaskedLM(c);
  bert->eval();
  const auto a = torch::randint(5, 40, {1, 6}, torch::kLong), b = torch::randint(5, 40, {1, 7}, torch::kLong);
  // Alone: each padded to 16 with the padding mask.
  const auto alone = [&](const torch::Tensor& ids) {
    auto padded = torch::full({1, 16}, 0, torch::kLong);
    padded.narrow(1, 0, ids.size(1)).copy_(ids);
    auto keep = torch::zeros({1, 16}, torch::kBool);
    keep.narrow(1, 0, ids.size(1)).fill_(true);
    return bert->bert(padded, torch::zeros_like(padded), keep).narrow(1, 0, ids.size(1));
  };
  // Packed: [a b pad pad pad], segments 1, 2 and 0, positions from 0 in each.
  auto ids = torch::zeros({1, 16}, torch::kLong), segments = torch::zeros({1, 16}, torch::kLong);
  auto positions = torch::zeros({1, 16}, torch::kLong);
  ids.narrow(1, 0, 6).copy_(a), ids.narrow(1, 6, 7).copy_(b);
  segments.narrow(1, 0, 6).fill_(1), segments.narrow(1, 6, 7).fill_(2);
  positions.narrow(1, 0, 6).copy_(torch::arange(6)), positions.narrow(1, 6, 7).copy_(torch::arange(7));
  const auto mask = segments.unsqueeze(2).eq(segments.unsqueeze(1));
  const auto packed = bert->bert->forward(ids, torch::zeros_like(ids), mask, positions);
  EXPECT_TRUE(torch::allclose(packed.narrow(1, 0, 6), alone(a), 1e-5, 1e-5)) << "the first sequence";
  EXPECT_TRUE(torch::allclose(packed.narrow(1, 6, 7), alone(b), 1e-5, 1e-5)) << "the second sequence";
  auto labels = torch::full({1, 16}, -100, torch::kLong);
  labels.index_put_({0, 2}, 11);
  labels.index_put_({0, 9}, 12);
  const auto [loss, accuracy] = bert->loss_and_accuracy(ids, torch::zeros_like(ids), mask, labels, 4, positions);
  const auto expected = torch::nn::functional::cross_entropy(
      bert->predict(torch::cat({alone(a), alone(b)}, 1), labels.narrow(1, 0, 13)), torch::tensor({11, 12}));
  EXPECT_NEAR(loss.item<double>(), expected.item<double>(), 1e-5);
}

TEST(LanguageModels, BertIgnoresPaddingAndPredictsOnlyMaskedPositions) {
  torch::manual_seed(0);
  BertConfig c{40, 16, 2, 2, 32, 4, 64, 0.0, 0.0, 1e-12};
  auto bert = BertForMaskedLM(c);
  auto ids = torch::randint(5, 40, {2, 10}, torch::kLong);
  const auto types = torch::zeros({2, 10}, torch::kLong);
  auto keep = torch::ones({2, 10}, torch::kBool);
  keep.index_put_({1, torch::indexing::Slice(6, torch::indexing::None)}, false);
  const auto hidden = bert->bert(ids, types, keep);
  auto other = ids.clone();
  other.index_put_({1, torch::indexing::Slice(6, torch::indexing::None)}, 3);  // what the padding holds
  const auto hidden2 = bert->bert(other, types, keep);
  const auto real = torch::indexing::Slice(0, 6);
  EXPECT_TRUE(torch::allclose(hidden.index({1, real}), hidden2.index({1, real}), 1e-5, 1e-5))
      << "padding changes no real token";
  auto labels = torch::full({2, 10}, -100, torch::kLong);
  labels.index_put_({0, 3}, 11);
  labels.index_put_({1, 2}, 12);
  labels.index_put_({1, 4}, 13);
  EXPECT_EQ(bert->predict(hidden, labels).sizes(), (std::vector<std::int64_t>{3, 40}));
  const auto [loss, accuracy] = bert->loss_and_accuracy(ids, types, keep, labels);
  EXPECT_NEAR(loss.item<double>(), std::log(40.0), 0.7);
  EXPECT_GE(accuracy.item<double>(), 0.0);
  EXPECT_LE(accuracy.item<double>(), 1.0);
  // A fixed number of head rows (no host synchronisation): the same loss and accuracy.
  bert->eval();
  const auto exact = bert->loss_and_accuracy(ids, types, keep, labels);
  const auto bounded = bert->loss_and_accuracy(ids, types, keep, labels, 8);
  EXPECT_NEAR(bounded.first.item<double>(), exact.first.item<double>(), 1e-6);
  EXPECT_NEAR(bounded.second.item<double>(), exact.second.item<double>(), 1e-6);
  // BERT-base: 6 × the encoder's 84,934,656 linear weights + 12 × 12 × 768 × 512 + the head's
  // 6 × (768² + 768 × 30,522) × 0.15.
  EXPECT_DOUBLE_EQ(BertForMaskedLM(BertConfig::base())->training_flops_per_token(512, 0.15),
                   6 * 84'934'656.0 + 12 * 12 * 768 * 512.0 + 6 * (768.0 * 768 + 768.0 * 30522) * 0.15);
}

// Hugging Face's model with the same weights, where its Python package is (the GPU machine).
bool hf_reference(const std::string& model, const std::string& dir) {
  if (std::system("python3 -c 'import transformers' 2>/dev/null") != 0) return false;
  const std::string command = "python3 " + std::string(XPUPERF_TEST_DIR) + "/models/hf_reference.py " + model + " " +
                              dir + " > " + dir + "/ref.log 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0) << test::read_file(dir + "/ref.log");
  return true;
}

void expect_same_logits_and_loss(const torch::Tensor& logits, const torch::Tensor& loss, const std::string& io,
                                 const std::string& name) {
  const auto expected = io_tensor(io, "output");
  ASSERT_EQ(logits.sizes(), expected.sizes()) << name;
  const double scale = expected.abs().max().item<double>();
  const double diff = (logits - expected).abs().max().item<double>();
  EXPECT_LT(diff / scale, 1e-4) << name << ": largest logit difference " << diff << " of logits up to " << scale;
  const double ref_loss = io_tensor(io, "loss").item<double>();
  EXPECT_NEAR(loss.item<double>(), ref_loss, 1e-4 * ref_loss) << name;
  std::cout << name << ": relative logit difference " << diff / scale << ", loss " << loss.item<double>()
            << " (Hugging Face " << ref_loss << ")\n";
}

// Hugging Face's causal-LM loss: each position predicts the next token (in float).
torch::Tensor next_token_loss(const torch::Tensor& logits, const torch::Tensor& ids) {
  const auto t = ids.size(1) - 1;
  return torch::nn::functional::cross_entropy(logits.narrow(1, 0, t).reshape({-1, logits.size(-1)}).to(torch::kFloat),
                                              ids.narrow(1, 1, t).reshape({-1}));
}

// hf_reference.py's LLAMA_SMALL: grouped-query attention, 8 heads on 2.
LlamaConfig llama_small() {
  LlamaConfig c;
  c.hidden = 256, c.intermediate = 688, c.layers = 4, c.heads = 8, c.kv_heads = 2;
  return c;
}

// hf_reference.py's MIXTRAL_SMALL: LLAMA_SMALL's attention, 4 experts of 688 units, 2 a token, rope θ 1e6.
LlamaConfig mixtral_small() {
  LlamaConfig c = llama_small();
  c.rope_theta = 1e6;
  c.moe.experts = 4, c.moe.top_k = 2;
  return c;
}

std::string mixtral_experts(std::map<std::string, torch::Tensor>& tensors) {
  return stack_hugging_face_experts(tensors) ? "Hugging Face's Mixtral experts" : "";
}

TEST(LanguageModels, Gpt2GivesHuggingFacesLogitsAndLoss) {
  test::TempDir dir;
  if (!hf_reference("gpt2", dir.path())) GTEST_SKIP() << "Hugging Face transformers is not installed";
  auto m = GptLMHeadModel(GptConfig::gpt2_small());
  EXPECT_EQ(torchrt::load_weights(*m, dir.path() + "/gpt2.weights.pt", GptLMHeadModelImpl::tied_weights()),
            "PyTorch state_dict");
  m->eval();
  torch::NoGradGuard no_grad;
  const auto ids = io_tensor(dir.path() + "/gpt2.io.pt", "input");
  const auto logits = m->forward(ids);
  // Hugging Face's loss: each position predicts the next token.
  expect_same_logits_and_loss(logits, m->loss(ids), dir.path() + "/gpt2.io.pt", "gpt2");
}

TEST(LanguageModels, LlamaGivesHuggingFacesLogitsAndLoss) {
  test::TempDir dir;
  if (!hf_reference("llama", dir.path())) GTEST_SKIP() << "Hugging Face transformers is not installed";
  auto m = LlamaForCausalLM(llama_small());
  EXPECT_EQ(torchrt::load_weights(*m, dir.path() + "/llama.weights.pt"), "PyTorch state_dict");
  m->eval();
  torch::NoGradGuard no_grad;
  const auto ids = io_tensor(dir.path() + "/llama.io.pt", "input");
  const auto logits = m->forward(ids);
  expect_same_logits_and_loss(logits, next_token_loss(logits, ids), dir.path() + "/llama.io.pt", "llama");
}

// Mixtral's sparse MoE block in the Llama model: Hugging Face's MixtralForCausalLM state_dict loads
// (its experts stacked) and gives the same logits and loss (the routers' losses are training's).
TEST(LanguageModels, MixtralGivesHuggingFacesLogitsAndLoss) {
  test::TempDir dir;
  if (!hf_reference("mixtral", dir.path())) GTEST_SKIP() << "Hugging Face transformers is not installed";
  auto m = LlamaForCausalLM(mixtral_small());
  EXPECT_EQ(torchrt::load_weights(*m, dir.path() + "/mixtral.weights.pt", {}, mixtral_experts),
            "PyTorch state_dict in Hugging Face's Mixtral experts, converted");
  m->eval();
  torch::NoGradGuard no_grad;
  const auto ids = io_tensor(dir.path() + "/mixtral.io.pt", "input");
  const auto logits = m->forward(ids);
  expect_same_logits_and_loss(logits, next_token_loss(logits, ids), dir.path() + "/mixtral.io.pt", "mixtral");
}

// The inference path on CUDA: stacked projections and the fused kernels (models/fused_ops.h) in
// fp32 against Hugging Face's logits for the same weights.
TEST(LanguageModels, LlamaWithTheFusedKernelsOnCudaGivesHuggingFacesLogits) {
  if (!torch::cuda::is_available() || !fused::kernels_built())
    GTEST_SKIP() << "needs a CUDA device and LibTorch built with CUDA";
  test::TempDir dir;
  if (!hf_reference("llama", dir.path())) GTEST_SKIP() << "Hugging Face transformers is not installed";
  auto m = LlamaForCausalLM(llama_small());
  EXPECT_EQ(torchrt::load_weights(*m, dir.path() + "/llama.weights.pt"), "PyTorch state_dict");
  m->to(torch::kCUDA);
  m->eval();
  m->fuse_for_inference();
  m->use_fused_kernels(true);
  torch::NoGradGuard no_grad;
  const auto ids = io_tensor(dir.path() + "/llama.io.pt", "input");
  const auto logits = m->forward(ids.to(torch::kCUDA)).to(torch::kCPU);
  expect_same_logits_and_loss(logits, next_token_loss(logits, ids), dir.path() + "/llama.io.pt",
                              "llama, fused kernels on CUDA");
}

TEST(LanguageModels, BertGivesHuggingFacesLogitsAndLoss) {
  test::TempDir dir;
  if (!hf_reference("bert", dir.path())) GTEST_SKIP() << "Hugging Face transformers is not installed";
  auto m = BertForMaskedLM(BertConfig::base());
  EXPECT_EQ(torchrt::load_weights(*m, dir.path() + "/bert.weights.pt", BertForMaskedLMImpl::tied_weights()),
            "PyTorch state_dict");
  m->eval();
  torch::NoGradGuard no_grad;
  const auto ids = io_tensor(dir.path() + "/bert.io.pt", "input");
  const auto labels = io_tensor(dir.path() + "/bert.io.pt", "labels");
  const auto types = torch::zeros_like(ids);
  const auto hidden = m->bert(ids, types, torch::Tensor());
  // Every position through the head, as Hugging Face computes them.
  const auto all = torch::zeros_like(labels);
  const auto logits = m->predict(hidden, all).view({ids.size(0), ids.size(1), -1});
  const auto [loss, accuracy] = m->loss_and_accuracy(ids, types, torch::Tensor(), labels);
  expect_same_logits_and_loss(logits, loss, dir.path() + "/bert.io.pt", "bert");
}

}  // namespace
}  // namespace xpuperf::models

namespace xpuperf::models {
namespace {

// The first training step on the GPU from Hugging Face's weights and batch, dropout off: fp32
// (TF32 off on both sides) and bf16 autocast give its loss, gradient norm and (bf16) logits.
// `step(precision)` runs forward and backward and returns {loss, logits}.
void expect_same_first_step(torch::nn::Module& model, const std::string& dir, const std::string& name,
                            const std::function<std::pair<torch::Tensor, torch::Tensor>()>& step,
                            const std::string& variant = "", double routed_share = 0.0) {
  const std::string file = dir + "/" + name + ".step.pt";
  ASSERT_TRUE(std::filesystem::exists(file)) << "the reference wrote no GPU step";
  model.to(torch::Device(torch::kCUDA, 0));
  model.eval();  // dropout off; gradients still flow
  // TF32 off on both sides, then back as it was (later tests in this process compare with ATen).
  const bool tf32 = at::globalContext().allowTF32CuBLAS();
  at::globalContext().setAllowTF32CuBLAS(false);
  for (const std::string precision : {"fp32", "bf16"}) {
    model.zero_grad();
    torch::Tensor loss, logits;
    {
      train::AutocastScope autocast(torch::Device(torch::kCUDA, 0),
                                    precision == "bf16" ? train::Precision::BF16 : train::Precision::FP32);
      std::tie(loss, logits) = step();
    }
    loss.backward();
    const auto norm = optim::gradient_norm(model.parameters()).item<double>();
    const double ref_loss = io_tensor(file, "loss_" + precision).item<double>();
    const double ref_norm = io_tensor(file, "grad_norm_" + precision).item<double>();
    const double loss_diff = std::abs(loss.item<double>() - ref_loss) / ref_loss;
    const double norm_diff = std::abs(norm - ref_norm) / ref_norm;
    // bf16 keeps 8 bits of mantissa: a relative 2^-8 on a value, less on a mean over many.
    const double tolerance = precision == "bf16" ? 1e-2 : 1e-4;
    EXPECT_LT(loss_diff, tolerance) << name << variant << " " << precision << ": loss " << loss.item<double>()
                                    << ", Hugging Face " << ref_loss;
    EXPECT_LT(norm_diff, 2 * tolerance) << name << variant << " " << precision << ": gradient norm " << norm
                                        << ", Hugging Face " << ref_norm;
    std::cout << name << variant << " first step " << precision << ": loss " << loss.item<double>() << " (Hugging Face "
              << ref_loss << ", relative difference " << loss_diff << "), gradient norm " << norm << " (" << ref_norm
              << ", " << norm_diff << ")";
    if (precision == "bf16") {
      const auto expected = io_tensor(file, "output_bf16");
      const auto ours = logits.to(torch::kCPU, torch::kFloat).view(expected.sizes());
      const double scale = expected.abs().max().item<double>();
      const double diff = (ours - expected).abs().max().item<double>();
      // The positions whose logits differ by more than bf16's few roundings: none in a dense model; in
      // a routed one, the tokens whose top-k experts flip between two router scores closer than bf16
      // tells apart (the loss and gradient norm above still agree).
      const auto off = (ours - expected).abs().amax(-1).gt(5e-2 * scale);
      const double off_share = off.to(torch::kDouble).mean().item<double>();
      EXPECT_LE(off_share, routed_share) << name << ": bf16 logits differ by up to " << diff << " of up to " << scale
                                         << " at " << off_share << " of the positions";
      std::cout << ", bf16 logits: relative difference " << diff / scale << " (" << off_share
                << " of the positions beyond 5e-2)";
    }
    std::cout << "\n";
  }
  at::globalContext().setAllowTF32CuBLAS(tf32);
}

bool have_cuda_and_reference(const std::string& model, const std::string& dir) {
  return torch::cuda::is_available() && hf_reference(model, dir);
}

TEST(LanguageModels, Gpt2FirstStepMatchesHuggingFaceInFp32AndBf16OnTheGpu) {
  test::TempDir dir;
  if (!have_cuda_and_reference("gpt2", dir.path())) GTEST_SKIP() << "needs CUDA and Hugging Face transformers";
  auto m = GptLMHeadModel(GptConfig::gpt2_small());
  torchrt::load_weights(*m, dir.path() + "/gpt2.weights.pt", GptLMHeadModelImpl::tied_weights());
  const auto ids = io_tensor(dir.path() + "/gpt2.io.pt", "input").cuda();
  expect_same_first_step(*m, dir.path(), "gpt2", [&] {
    // Hugging Face's logits are for every position, its loss each position's next token.
    const auto logits = m->forward(ids);
    return std::make_pair(next_token_loss(logits, ids), logits);
  });
  // The training case's own loss (the padded output layer) through the cross-entropy kernels.
  m->fused_kernels = true;
  expect_same_first_step(
      *m, dir.path(), "gpt2", [&] { return std::make_pair(m->loss(ids), m->forward(ids)); }, ", fused kernels,");
}

// The llama training case's model at a small size with Llama 3.2's features (tied output layer,
// rope scaling, 128,256 ids): its first step against LlamaForCausalLM's from the same weights.
TEST(LanguageModels, Llama3FirstStepMatchesHuggingFaceInFp32AndBf16OnTheGpu) {
  test::TempDir dir;
  if (!have_cuda_and_reference("llama3", dir.path())) GTEST_SKIP() << "needs CUDA and Hugging Face transformers";
  LlamaConfig c = llama_small();
  c.vocab = 128256, c.max_positions = 131072, c.rope_theta = 500000.0, c.rope_factor = 32;
  c.tie_word_embeddings = true;
  auto m = LlamaForCausalLM(c);
  torchrt::load_weights(*m, dir.path() + "/llama3.weights.pt", m->tied_weights());
  const auto ids = io_tensor(dir.path() + "/llama3.io.pt", "input").cuda();
  expect_same_first_step(*m, dir.path(), "llama3", [&] {
    const auto logits = m->forward(ids);
    return std::make_pair(next_token_loss(logits, ids), logits);
  });
  m->fused_kernels = true;  // the training case's loss, through the cross-entropy kernels
  expect_same_first_step(
      *m, dir.path(), "llama3", [&] { return std::make_pair(m->loss(ids), m->forward(ids)); }, ", fused kernels,");
}

// The mixtral case's model at a small size: its first step against MixtralForCausalLM's from the same
// weights (eval mode: no router losses on either side, as Hugging Face's without output_router_logits).
TEST(LanguageModels, MixtralFirstStepMatchesHuggingFaceInFp32AndBf16OnTheGpu) {
  test::TempDir dir;
  if (!have_cuda_and_reference("mixtral", dir.path())) GTEST_SKIP() << "needs CUDA and Hugging Face transformers";
  auto m = LlamaForCausalLM(mixtral_small());
  torchrt::load_weights(*m, dir.path() + "/mixtral.weights.pt", {}, mixtral_experts);
  const auto ids = io_tensor(dir.path() + "/mixtral.io.pt", "input").cuda();
  // A token in 50 may take other experts in bf16 (Hugging Face's first step flips 0.136 of a logit's
  // scale at a few positions on the H100).
  expect_same_first_step(
      *m, dir.path(), "mixtral",
      [&] {
        const auto logits = m->forward(ids);
        return std::make_pair(next_token_loss(logits, ids), logits);
      },
      "", 0.02);
}

TEST(LanguageModels, BertFirstStepMatchesHuggingFaceInFp32AndBf16OnTheGpu) {
  test::TempDir dir;
  if (!have_cuda_and_reference("bert", dir.path())) GTEST_SKIP() << "needs CUDA and Hugging Face transformers";
  auto m = BertForMaskedLM(BertConfig::base());
  torchrt::load_weights(*m, dir.path() + "/bert.weights.pt", BertForMaskedLMImpl::tied_weights());
  const auto ids = io_tensor(dir.path() + "/bert.io.pt", "input").cuda();
  const auto labels = io_tensor(dir.path() + "/bert.io.pt", "labels").cuda();
  const auto types = torch::zeros_like(ids);
  const auto step = [&] {
    const auto hidden = m->bert(ids, types, torch::Tensor());
    const auto logits = m->predict(hidden, torch::zeros_like(labels));  // every position, as Hugging Face's
    const auto loss = m->loss_and_accuracy(ids, types, torch::Tensor(), labels).first;
    return std::make_pair(loss, logits);
  };
  expect_same_first_step(*m, dir.path(), "bert", step);
  m->use_fused_kernels(true);  // the loss through the cross-entropy kernels
  expect_same_first_step(*m, dir.path(), "bert", step, ", fused kernels,");
}

// GLM against the plain-PyTorch GLM of bench/glm_reference.py (Hugging Face's transformers has no
// GLM-large), from the same weights in GLM's own names; where Python's torch is (the GPU machine).
bool glm_reference(const std::string& dir) {
  if (std::system("python3 -c 'import torch' 2>/dev/null") != 0) return false;
  const std::string command =
      "python3 " + std::string(XPUPERF_SOURCE_DIR) + "/bench/glm_reference.py " + dir + " > " + dir + "/ref.log 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0) << test::read_file(dir + "/ref.log");
  return true;
}

// glm_reference.py's GLM_SMALL, loaded from its weights, and its batch.
std::pair<GlmModel, GlmInputs> glm_small_from(const std::string& dir) {
  auto m = GlmModel(GlmConfig{1024, 128, 4, 256, 8, 0.0});
  const torchrt::StateDictConversion convert = [](std::map<std::string, torch::Tensor>& tensors) {
    return convert_glm_names(tensors) ? std::string("GLM's names") : std::string();
  };
  EXPECT_EQ(torchrt::load_weights(*m, dir + "/glm.weights.pt", {}, convert),
            "PyTorch state_dict in GLM's names, converted");
  const std::string io = dir + "/glm.io.pt";
  GlmInputs in{io_tensor(io, "input"),           io_tensor(io, "targets"), io_tensor(io, "positions"),
               io_tensor(io, "block_positions"), io_tensor(io, "sep"),     0};
  return {m, in};
}

TEST(LanguageModels, GlmGivesThePlainPyTorchGlmsLogitsAndLoss) {
  test::TempDir dir;
  if (!glm_reference(dir.path())) GTEST_SKIP() << "needs Python's torch";
  auto [m, in] = glm_small_from(dir.path());
  m->eval();
  torch::NoGradGuard no_grad;
  expect_same_logits_and_loss(m->forward(in), m->loss(in), dir.path() + "/glm.io.pt", "glm");
}

TEST(LanguageModels, GlmFirstStepMatchesThePlainPyTorchGlmInFp32AndBf16OnTheGpu) {
  test::TempDir dir;
  if (!torch::cuda::is_available() || !glm_reference(dir.path())) GTEST_SKIP() << "needs CUDA and Python's torch";
  auto loaded = glm_small_from(dir.path());
  GlmModel m = loaded.first;
  GlmInputs in = loaded.second;
  for (auto* t : {&in.ids, &in.targets, &in.positions, &in.block_positions, &in.sep}) *t = t->cuda();
  const auto step = [&] { return std::make_pair(m->loss(in), m->forward(in)); };
  expect_same_first_step(*m, dir.path(), "glm", step);
  m->fused_kernels = true;  // the residual adds with their layer norms, and the loss, through the kernels
  expect_same_first_step(*m, dir.path(), "glm", step, ", fused kernels,");
}

}  // namespace
}  // namespace xpuperf::models
