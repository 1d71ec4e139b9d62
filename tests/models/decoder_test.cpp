// The decoders used for generation: Llama's sizes against Hugging Face's counts, and the KV cache:
// prefilling and then decoding a token at a time gives the logits of one full forward pass, for
// sequences of different lengths side by side (continuous batching), for GPT and for Llama with
// grouped-query attention.

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <functional>

#include "parameter_count.h"
#include "xpuperf/infer/decoder_engine.h"
#include "xpuperf/models/bert.h"
#include "xpuperf/models/fused_ops.h"
#include "xpuperf/models/gpt.h"
#include "xpuperf/models/llama.h"
#include "xpuperf/models/moe.h"
#include "xpuperf/models/vit.h"
#include "xpuperf/parallel/activation_checkpoint.h"
#include "xpuperf/torchrt/compat.h"

namespace xpuperf::models {
namespace {

LlamaConfig small_llama() {
  LlamaConfig c;
  c.vocab = 97, c.hidden = 32, c.intermediate = 48, c.layers = 2, c.heads = 4, c.kv_heads = 2;
  return c;
}

GptConfig small_gpt() {
  GptConfig c;
  c.vocab = 97, c.positions = 64, c.layers = 2, c.hidden = 32, c.heads = 4, c.dropout = 0;
  return c;
}

TEST(Decoders, LlamaSizesAreHuggingFaces) {
  // LlamaForCausalLM's counts (TinyLlama-1.1B, Llama-2-7B): the formula, and built at a small size.
  EXPECT_EQ(LlamaConfig::tinyllama_1_1b().parameter_count(), 1'100'048'384);
  EXPECT_EQ(LlamaConfig::llama2_7b().parameter_count(), 6'738'415'616);
  EXPECT_EQ(parameters(*LlamaForCausalLM(small_llama())), small_llama().parameter_count());
  std::vector<std::string> names;
  for (const auto& p : LlamaForCausalLM(small_llama())->named_parameters()) names.push_back(p.key());
  for (const char* expected :
       {"model.embed_tokens.weight", "model.layers.1.self_attn.k_proj.weight", "model.layers.0.mlp.gate_proj.weight",
        "model.layers.0.post_attention_layernorm.weight", "model.norm.weight", "lm_head.weight"})
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  // 2 × the multiply-adds: the linears a token, the causal attention products, one row of logits.
  const LlamaConfig c = small_llama();
  const double linears = 32.0 * 32 * 2 + 2 * 32.0 * 16 + 3 * 32.0 * 48;
  EXPECT_DOUBLE_EQ(c.forward_flops(10, 1), 2 * (2 * (10 * linears + 100 * 32.0) + 32.0 * 97));
}

TEST(Decoders, ALargeLlamaLayerIsBuiltWithItsShapeAndOnlyTheNormalValues) {
  // A layer of 4 M weights or more is built 1 × 1 and then shaped, so that LibTorch's own Kaiming
  // pass (one thread) is skipped: its options, shape, count and values must be a whole layer's.
  LlamaConfig c = small_llama();
  c.hidden = 64, c.intermediate = 65536, c.layers = 1;  // the MLP's three: 64 × 65,536 = 4,194,304 each
  torch::manual_seed(5);
  auto m = LlamaForCausalLM(c);
  EXPECT_EQ(parameters(*m), c.parameter_count());
  const auto& mlp = m->model->layers[0]->as<LlamaDecoderLayer>()->mlp;
  EXPECT_EQ(mlp->gate_proj->options.in_features(), 64);
  EXPECT_EQ(mlp->gate_proj->options.out_features(), 65536);
  EXPECT_EQ(mlp->down_proj->weight.sizes(), (std::vector<std::int64_t>{64, 65536}));
  // Hugging Face's normal(0, 0.02), not Kaiming-uniform's (a standard deviation of 0.072 here).
  EXPECT_NEAR(mlp->down_proj->weight.std().item<double>(), 0.02, 2e-4);
  torch::manual_seed(5);
  EXPECT_TRUE(torch::equal(LlamaForCausalLM(c)->model->layers[0]->as<LlamaDecoderLayer>()->mlp->down_proj->weight,
                           mlp->down_proj->weight));
}

TEST(Decoders, ALargeLlamaEmbeddingIsBuiltWithItsShapeAndOnlyTheNormalValues) {
  // A table of 4 M values or more is built 1 × 1 and then shaped, so that LibTorch's own normal(0, 1)
  // pass (one thread) is skipped: its options and shape are the whole table's, its values Hugging
  // Face's normal(0, 0.02), the same from the same seed.
  LlamaConfig c = small_llama();
  c.vocab = 65536, c.hidden = 64, c.layers = 1;  // 65,536 × 64 = 4,194,304
  torch::manual_seed(9);
  auto m = LlamaForCausalLM(c);
  EXPECT_EQ(parameters(*m), c.parameter_count());
  auto embed = m->model->embed_tokens;
  EXPECT_EQ(embed->options.num_embeddings(), 65536);
  EXPECT_EQ(embed->options.embedding_dim(), 64);
  EXPECT_NEAR(embed->weight.std().item<double>(), 0.02, 2e-4);
  EXPECT_NEAR(embed->weight.mean().item<double>(), 0.0, 2e-4);
  torch::manual_seed(9);
  EXPECT_TRUE(torch::equal(LlamaForCausalLM(c)->model->embed_tokens->weight, embed->weight));
  EXPECT_EQ(embed->forward(torch::tensor({3, 65535})).sizes(), (std::vector<std::int64_t>{2, 64}));
}

TEST(Decoders, Llama3SizesAreMetasAndATiedOutputLayerIsTheEmbedding) {
  // Hugging Face's LlamaForCausalLM counts of Meta's Llama 3 shapes (1B and 3B tie the output layer).
  EXPECT_EQ(LlamaConfig::llama3_2_1b().parameter_count(), 1'235'814'400);
  EXPECT_EQ(LlamaConfig::llama3_2_3b().parameter_count(), 3'212'749'824);
  EXPECT_EQ(LlamaConfig::llama3_8b().parameter_count(), 8'030'261'248);
  LlamaConfig c = small_llama();
  c.tie_word_embeddings = true;
  auto m = LlamaForCausalLM(c);
  EXPECT_EQ(parameters(*m), c.parameter_count());
  for (const auto& p : m->named_parameters()) EXPECT_NE(p.key(), "lm_head.weight");
  EXPECT_EQ(m->tied_weights().at("lm_head.weight"), "model.embed_tokens.weight");
  EXPECT_TRUE(m->output_weight().is_same(m->model->embed_tokens->weight));
  const auto ids = torch::randint(0, c.vocab, {2, 7});
  const auto hidden = m->model->forward(ids, nullptr);
  EXPECT_TRUE(torch::allclose(m->forward(ids), torch::matmul(hidden, m->model->embed_tokens->weight.t()), 1e-5, 1e-5));
  EXPECT_THROW(m->split_for_tensor_parallel(nullptr), c10::Error) << "a tied head cannot be split by vocabulary";
}

TEST(Decoders, Llama3RopeScalingIsHuggingFaces) {
  // Hugging Face's _compute_llama3_parameters, one frequency at a time in double precision.
  const LlamaConfig c = LlamaConfig::llama3_2_1b();
  const auto inv = c.inverse_frequencies(torch::TensorOptions());
  const auto dim = c.head_dim();
  ASSERT_EQ(inv.size(0), dim / 2);
  const double low_wavelength = 8192 / 1.0, high_wavelength = 8192 / 4.0;
  int stretched = 0, kept = 0, blended = 0;
  for (std::int64_t i = 0; i < dim / 2; ++i) {
    const double base = 1.0 / std::pow(500000.0, static_cast<double>(2 * i) / static_cast<double>(dim));
    const double wavelength = 2 * M_PI / base;
    double want = base;
    if (wavelength > low_wavelength) {
      want = base / 32, ++stretched;
    } else if (wavelength < high_wavelength) {
      ++kept;
    } else {
      const double smooth = (8192 / wavelength - 1.0) / (4.0 - 1.0);
      want = (1 - smooth) * base / 32 + smooth * base, ++blended;
    }
    EXPECT_NEAR(inv[i].item<double>(), want, 1e-6 * want) << "frequency " << i;
  }
  EXPECT_GT(stretched, 0);
  EXPECT_GT(kept, 0);
  EXPECT_GT(blended, 0);
  LlamaConfig plain = c;
  plain.rope_factor = 0;
  EXPECT_NEAR(plain.inverse_frequencies(torch::TensorOptions())[dim / 2 - 1].item<double>(),
              1.0 / std::pow(500000.0, static_cast<double>(dim - 2) / static_cast<double>(dim)), 1e-12);
}

TEST(Decoders, LlamaLayersRunWholeUnderCheckpointingWithTheSameLossAndGradients) {
  // With checkpointing (or ZeRO-3's hooks) each layer runs as x → x + attention + MLP through
  // run_block; without, a layer hands its MLP output to the next norm. The same numbers either way.
  torch::manual_seed(5);
  LlamaConfig c = small_llama();
  c.rope_factor = 8, c.rope_original_max_positions = 16;
  auto m = LlamaForCausalLM(c);
  const auto ids = torch::randint(0, c.vocab, {3, 12});
  const auto gradients = [&] {
    m->zero_grad();
    const auto loss = m->loss(ids);
    loss.backward();
    std::vector<torch::Tensor> g{loss.detach()};
    for (const auto& p : m->parameters()) g.push_back(p.grad().clone());
    return g;
  };
  const auto plain = gradients();
  EXPECT_EQ(parallel::set_activation_checkpointing(*m, true), 1);
  const auto checkpointed = gradients();
  ASSERT_EQ(plain.size(), checkpointed.size());
  for (std::size_t i = 0; i < plain.size(); ++i)
    EXPECT_TRUE(torch::allclose(plain[i], checkpointed[i], 1e-6, 1e-7)) << (i == 0 ? "loss" : "gradient ") << i;
  EXPECT_NEAR(plain[0].item<double>(), std::log(static_cast<double>(c.vocab)), 0.5) << "a fresh model guesses evenly";
}

TEST(MixtureOfExperts, TheBatchedExpertsGiveWhatEachTokenThroughItsExpertsGives) {
  torch::manual_seed(11);
  MoeConfig c;
  c.experts = 4, c.top_k = 2;
  auto block = SparseMoeBlock(16, 24, c);
  const auto x = torch::randn({3, 5, 16});
  const auto y = block->forward(x);
  EXPECT_TRUE(torch::allclose(y, block->forward_per_token(x), 1e-5, 1e-6));
  EXPECT_EQ(block->dropped, 0);
  EXPECT_EQ(block->routed, 30);

  // Hugging Face's load_balancing_loss_func and ST-MoE's z-loss, written out.
  const auto logits = block->gate(x.reshape({-1, 16}));
  const auto p = torch::softmax(logits, -1);
  const auto selected = std::get<1>(p.topk(2, -1));
  double lb = 0;
  for (std::int64_t slot = 0; slot < 2; ++slot)
    for (std::int64_t e = 0; e < 4; ++e)
      lb +=
          selected.select(1, slot).eq(e).to(torch::kFloat).mean().item<double>() * p.select(1, e).mean().item<double>();
  EXPECT_NEAR(block->load_balancing_loss.item<double>(), 4 * lb, 1e-6);
  EXPECT_NEAR(block->z_loss.item<double>(), torch::logsumexp(logits, -1).pow(2).mean().item<double>(), 1e-6);

  // A capacity: each expert takes its first ceil(0.5 × 15 × 2 / 4) = 4 (token, expert) pairs.
  block->config.capacity_factor = 0.5;
  const auto capped = block->forward(x);
  std::int64_t expected_dropped = 0;
  std::vector<std::int64_t> taken(4, 0);
  for (std::int64_t t = 0; t < 15; ++t)
    for (std::int64_t slot = 0; slot < 2; ++slot)
      if (++taken[static_cast<std::size_t>(selected[t][slot].item<std::int64_t>())] > 4) ++expected_dropped;
  EXPECT_GT(expected_dropped, 0);
  EXPECT_EQ(block->dropped, expected_dropped);
  EXPECT_FALSE(torch::allclose(capped, y, 1e-5, 1e-6)) << "dropped pairs add nothing";
}

// Qwen1.5-MoE's block: experts narrower than the dense MLP, a shared expert under a sigmoid gate,
// the top-k probabilities as they are. The batched path against each token written out: the shared
// expert's SwiGLU and gate by hand, the routed experts weighted by the raw probabilities.
TEST(MixtureOfExperts, TheSharedExpertAndRawTopKProbabilitiesAreQwensBlock) {
  torch::manual_seed(13);
  MoeConfig c;
  c.experts = 6, c.top_k = 3, c.expert_intermediate = 8, c.shared_intermediate = 20, c.normalize_top_k = false;
  auto block = SparseMoeBlock(16, 48, c);
  EXPECT_EQ(block->w_gate.sizes(), (std::vector<std::int64_t>{6, 8, 16}));
  const auto x = torch::randn({2, 5, 16});
  const auto y = block->forward(x);
  EXPECT_TRUE(torch::allclose(y, block->forward_per_token(x), 1e-5, 1e-6));
  const auto flat = x.reshape({-1, 16});
  const auto p = torch::softmax(block->gate(flat), -1);
  const auto [w, e] = p.topk(3, -1);
  for (std::int64_t t = 0; t < 10; t += 3) {
    auto want =
        torch::sigmoid(torch::dot(block->shared_expert_gate->weight[0], flat[t])) *
        torch::mv(block->shared_down_proj->weight, torch::silu(torch::mv(block->shared_gate_proj->weight, flat[t])) *
                                                       torch::mv(block->shared_up_proj->weight, flat[t]));
    for (std::int64_t j = 0; j < 3; ++j) {
      const auto k = e[t][j].item<std::int64_t>();
      want = want + w[t][j] * torch::mv(block->w_down[k], torch::silu(torch::mv(block->w_gate[k], flat[t])) *
                                                              torch::mv(block->w_up[k], flat[t]));
    }
    EXPECT_TRUE(torch::allclose(y.reshape({-1, 16})[t], want, 1e-5, 1e-6)) << "token " << t;
  }
  EXPECT_LT(w.sum(-1).max().item<double>(), 1.0) << "3 of 6 probabilities, not renormalised";
}

// gather_rows gives index_select's rows and, through its gathering backward, index_select's
// gradients (ATen's index_add): rows read twice (the tokens into their experts' rows) and rows read
// once or never (the experts' rows back to their pairs, padding unread).
TEST(MixtureOfExperts, GatheredRowsGiveIndexSelectsValuesAndGradients) {
  torch::manual_seed(53);
  const auto check = [](const torch::Tensor& x0, const torch::Tensor& source, const torch::Tensor& readers,
                        const torch::Tensor& unread, const std::string& what) {
    SCOPED_TRACE(what);
    auto x = x0.clone().requires_grad_(true), xr = x0.clone().requires_grad_(true);
    const auto y = gather_rows(x, source, readers, unread), yr = xr.index_select(0, source);
    EXPECT_TRUE(torch::equal(y, yr));
    const auto r = torch::randn(y.sizes());
    (y * r).sum().backward();
    (yr * r).sum().backward();
    EXPECT_TRUE(torch::allclose(x.grad(), xr.grad(), 1e-6, 1e-7)) << x.grad() << xr.grad();
  };
  const auto ids = [](std::vector<std::int64_t> v) { return torch::tensor(v, torch::kLong); };
  // 5 tokens, 2 choices each, into 10 rows: token t's choices at rows readers[t].
  const auto source = ids({3, 0, 3, 1, 4, 0, 2, 1, 2, 4});
  const auto readers = ids({1, 5, 3, 7, 6, 8, 0, 2, 4, 9}).view({5, 2});
  check(torch::randn({5, 8}), source, readers, {}, "each row read twice");
  // 6 expert rows back to 3 pairs; rows 1, 3 and 4 are padding.
  const auto unread = torch::tensor({false, true, false, true, true, false});
  check(torch::randn({6, 8}), ids({5, 0, 2}), ids({1, 0, 2, 0, 0, 0}).view({6, 1}), unread, "padding unread");
  // bf16 rows, two readers: the pair's gradients added once in float and rounded, as index_add adds
  // two to a zero.
  check(torch::randn({5, 8}).to(torch::kBFloat16), source, readers, {}, "bf16");
}

TEST(MixtureOfExperts, MixtralsSizesAreHuggingFaces) {
  // MixtralForCausalLM's count for Mixtral-8x7B (every expert counted), by the formula; and the
  // mixtral case's reduced shape (cases/training/mixtral: 16 layers of 1,024, experts of 3,584),
  // built on one layer here and counted whole by the formula.
  EXPECT_EQ(LlamaConfig::mixtral_8x7b().parameter_count(), 46'702'792'704);
  LlamaConfig reduced = LlamaConfig::mixtral_8x7b();
  reduced.vocab = 128256, reduced.hidden = 1024, reduced.intermediate = 3584, reduced.layers = 16;
  reduced.heads = 16, reduced.kv_heads = 4;
  EXPECT_EQ(reduced.parameter_count(), 1'714'062'336);
  LlamaConfig one_layer = reduced;
  one_layer.layers = 1;
  EXPECT_EQ(parameters(*LlamaForCausalLM(one_layer)), one_layer.parameter_count());
}

TEST(MixtureOfExperts, ALlamaWithExpertsCountsItsParametersAndFlopsAndTrains) {
  torch::manual_seed(12);
  LlamaConfig c = small_llama();
  c.moe.experts = 4, c.moe.top_k = 2, c.moe.every = 2;  // layer 0 sparse, layer 1 dense
  auto m = LlamaForCausalLM(c);
  EXPECT_EQ(parameters(*m), c.parameter_count());
  std::vector<std::string> names;
  for (const auto& p : m->named_parameters()) names.push_back(p.key());
  for (const char* expected : {"model.layers.0.block_sparse_moe.gate.weight", "model.layers.0.block_sparse_moe.w_gate",
                               "model.layers.1.mlp.gate_proj.weight"})
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  // FLOPs count the experts a token uses: the sparse layer is two dense MLPs and the router.
  LlamaConfig dense = small_llama();
  const double mlp = 3.0 * 32 * 48;
  EXPECT_DOUBLE_EQ(c.forward_flops(10, 1), dense.forward_flops(10, 1) + 2 * 10 * (mlp + 32.0 * 4));
  // Qwen's: narrow experts and a shared one, counted as parameters and, for every token, as FLOPs.
  LlamaConfig qwen = c;
  qwen.moe.expert_intermediate = 12, qwen.moe.shared_intermediate = 40, qwen.moe.normalize_top_k = false;
  EXPECT_EQ(parameters(*LlamaForCausalLM(qwen)), qwen.parameter_count());
  EXPECT_DOUBLE_EQ(qwen.forward_flops(10, 1),
                   dense.forward_flops(10, 1) + 2 * 10 * (2 * 3.0 * 32 * 12 + 32.0 * 4 + 3.0 * 32 * 40 + 32 - mlp));

  const auto ids = torch::randint(0, c.vocab, {4, 12});
  m->eval();
  const double eval_loss = m->loss(ids).item<double>();
  m->train();
  const double train_loss = m->loss(ids).item<double>();
  EXPECT_GT(train_loss, eval_loss) << "training adds the routers' auxiliary losses";
  EXPECT_LT(train_loss - eval_loss, 0.1);
  // ... and takes them out of the block: kept there, they would hold the step's autograd graph into
  // the next step, which a CUDA graph's capture then fails on.
  const auto& block = m->model->layers[0]->as<LlamaDecoderLayer>()->moe;
  EXPECT_FALSE(block->load_balancing_loss.defined());
  EXPECT_FALSE(block->z_loss.defined());
  torch::optim::AdamW opt(m->parameters(), torch::optim::AdamWOptions(3e-3));
  for (int step = 0; step < 20; ++step) {
    opt.zero_grad();
    m->loss(ids).backward();
    opt.step();
  }
  EXPECT_LT(m->loss(ids).item<double>(), train_loss - 0.5);
  EXPECT_EQ(m->dropped_tokens(), (std::pair<std::int64_t, std::int64_t>{0, 4 * 11 * 2}));
}

// The logits of every position of `ids` (batch, tokens) from a full forward pass, against
// prefilling the first `prompt[b]` tokens of row b into slot b and decoding the rest one token at
// a time, each step feeding the true next token (teacher forcing), rows of different lengths in
// one step.
void expect_cached_decoding_matches(torch::nn::Module& module, CausalDecoder& decoder, const torch::Tensor& ids,
                                    const std::vector<std::int64_t>& prompt) {
  torch::NoGradGuard no_grad;
  module.eval();
  const auto full = decoder.decoder_logits(ids, nullptr, 0);
  const auto rows = ids.size(0), tokens = ids.size(1);
  const auto device = ids.device();
  auto cache = KvCache::allocate(decoder.decoder_layers(), rows + 1, tokens + 3, decoder.kv_heads(), decoder.head_dim(),
                                 torch::TensorOptions().dtype(torch::kFloat).device(device));
  std::vector<std::int64_t> next(static_cast<std::size_t>(rows));
  for (std::int64_t b = 0; b < rows; ++b) {
    const auto p = prompt[static_cast<std::size_t>(b)];
    const auto step = KvStep::prefill(cache, torch::tensor({b}).to(device), p);
    const auto logits = decoder.decoder_logits(ids.slice(0, b, b + 1).narrow(1, 0, p), &step, 1);
    EXPECT_TRUE(torch::allclose(logits[0][0], full[b][p - 1], 1e-4, 1e-4)) << "prefill of row " << b;
    next[static_cast<std::size_t>(b)] = p;
  }
  // Every row one token a step until the longest is done; a row already done repeats its last
  // position (what an idle slot in a decode batch does) and is not checked.
  for (int guard = 0; guard < tokens; ++guard) {
    std::vector<std::int64_t> positions, input;
    bool any = false;
    for (std::int64_t b = 0; b < rows; ++b) {
      const auto at = std::min(next[static_cast<std::size_t>(b)], tokens - 1);
      any = any || next[static_cast<std::size_t>(b)] < tokens;
      positions.push_back(at);
      input.push_back(ids[b][at].item<std::int64_t>());
    }
    if (!any) break;
    const auto step = KvStep::decode(cache, torch::tensor(positions).view({rows, 1}).to(device), tokens + 2);
    const auto logits = decoder.decoder_logits(torch::tensor(input).view({rows, 1}).to(device), &step, 1);
    for (std::int64_t b = 0; b < rows; ++b) {
      auto& n = next[static_cast<std::size_t>(b)];
      if (n >= tokens) continue;
      EXPECT_TRUE(torch::allclose(logits[b][0], full[b][n], 1e-4, 1e-4))
          << "row " << b << " position " << n << ": largest difference "
          << (logits[b][0] - full[b][n]).abs().max().item<double>();
      ++n;
    }
  }
}

TEST(Decoders, LlamaKvCacheDecodingGivesTheFullForwardsLogits) {
  torch::manual_seed(3);
  auto m = LlamaForCausalLM(small_llama());
  for (auto& p : m->named_parameters())  // norms away from one, so they are tested
    if (p.key().find("norm") != std::string::npos) p.value().data().uniform_(0.5, 1.5);
  expect_cached_decoding_matches(*m, *m, torch::randint(0, 97, {3, 12}), {5, 2, 9});
}

TEST(Decoders, LlamasFusedProjectionsGiveTheSameLogitsAndUndoWhenMoved) {
  torch::manual_seed(6);
  auto m = LlamaForCausalLM(small_llama());
  torch::NoGradGuard no_grad;
  m->eval();
  const auto ids = torch::randint(0, 97, {2, 7});
  const auto plain = m->forward(ids);
  m->fuse_for_inference();
  auto* attention = m->model->layers[0]->as<LlamaDecoderLayer>()->self_attn.get();
  EXPECT_EQ(attention->qkv_weight.size(0), 32 + 2 * 16);
  EXPECT_EQ(attention->k_proj->weight.data_ptr<float>(), attention->qkv_weight.data_ptr<float>() + 32 * 32);
  EXPECT_TRUE(torch::allclose(m->forward(ids), plain, 1e-5, 1e-5));
  EXPECT_EQ(m->named_parameters().size(), LlamaForCausalLM(small_llama())->named_parameters().size());
  // Moved to another type, the weights are copies: the forward runs them apart, still right.
  m->to(torch::kDouble);
  EXPECT_TRUE(torch::allclose(m->forward(ids).to(torch::kFloat), plain, 1e-5, 1e-5));
}

// Sequence packing for the causal decoders: with each token's document, a sample of two documents
// gives each document's logits as it gives them alone, its positions from 0 (models/documents.h).
TEST(Decoders, PackedDocumentsEachGiveTheirOwnLogits) {
  const auto d = document_attention(torch::tensor({{0, 0, 0, 1, 1}, {0, 1, 1, 1, 2}}));
  EXPECT_TRUE(torch::equal(d.positions, torch::tensor({{0, 1, 2, 0, 1}, {0, 0, 1, 2, 0}})));
  EXPECT_TRUE(torch::equal(
      d.mask[0][0], torch::tensor({{1, 0, 0, 0, 0}, {1, 1, 0, 0, 0}, {1, 1, 1, 0, 0}, {0, 0, 0, 1, 0}, {0, 0, 0, 1, 1}})
                        .to(torch::kBool)));
  torch::manual_seed(9);
  const auto first = torch::randint(0, 97, {1, 6}), second = torch::randint(0, 97, {1, 5});
  const auto packed = torch::cat({first, second}, 1);
  const auto documents = torch::cat({torch::zeros({1, 6}, torch::kLong), torch::ones({1, 5}, torch::kLong)}, 1);
  torch::NoGradGuard no_grad;
  auto gpt = GptLMHeadModel(small_gpt());
  gpt->eval();
  const auto gpt_alone = torch::cat({gpt->transformer->forward(first), gpt->transformer->forward(second)}, 1);
  const auto gd = document_attention(documents);
  GptExtraInputs extra{gd.positions, {}, gd.mask};
  EXPECT_TRUE(torch::allclose(gpt->transformer->forward(packed, false, &extra), gpt_alone, 1e-5, 1e-5));
  EXPECT_FALSE(torch::allclose(gpt->transformer->forward(packed), gpt_alone, 1e-5, 1e-5))
      << "the stream attends across";
  auto llama = LlamaForCausalLM(small_llama());
  llama->eval();
  const auto llama_alone =
      torch::cat({llama->model->forward(first, nullptr), llama->model->forward(second, nullptr)}, 1);
  EXPECT_TRUE(torch::allclose(llama->model->forward(packed, nullptr, false, &gd), llama_alone, 1e-5, 1e-5));
  // The loss of ids (tokens + 1) with their documents: the mean over the targets, as the case trains.
  const auto ids = torch::cat({packed, torch::randint(0, 97, {1, 1})}, 1);
  const auto id_documents = torch::cat({documents, torch::ones({1, 1}, torch::kLong)}, 1);
  EXPECT_TRUE(std::isfinite(gpt->loss(ids, id_documents).item<double>()));
  EXPECT_FALSE(torch::allclose(gpt->loss(ids, id_documents), gpt->loss(ids)));
  EXPECT_FALSE(torch::allclose(llama->loss(ids, id_documents), llama->loss(ids)));
}

TEST(Decoders, GptKvCacheDecodingGivesTheFullForwardsLogits) {
  torch::manual_seed(4);
  auto m = GptLMHeadModel(small_gpt());
  expect_cached_decoding_matches(*m, *m, torch::randint(0, 97, {2, 10}), {3, 7});
}

// The engine's greedy tokens against the full forward's, on `device` (CUDA: with CUDA graphs, and
// the fused kernels when `kernels`).
void expect_engine_generates_greedy_tokens(torch::Device device, bool kernels = false) {
  torch::manual_seed(5);
  auto m = LlamaForCausalLM(small_llama());
  m->use_fused_kernels(kernels);
  const auto prompts = torch::randint(0, 97, {2, 6});
  // Greedy reference: the full forward pass over the growing sequence, 4 tokens.
  auto seq = prompts.clone();
  {
    torch::NoGradGuard no_grad;
    m->eval();
    for (int i = 0; i < 4; ++i) seq = torch::cat({seq, m->forward(seq).select(1, -1).argmax(-1, true)}, 1);
  }
  infer::DecoderOptions o;
  o.slots = 4, o.max_tokens = 16, o.length_bucket = 8;
  o.cuda_graphs = device.is_cuda();
  infer::DecoderEngine engine(m.ptr(), *m, device, torch::kFloat, o);
  // Row 1 is prefilled into slot 2 (slot 1 idle), so the decode batch has a hole.
  engine.prefill(0, prompts.slice(0, 0, 1));
  engine.prefill(2, prompts.slice(0, 1, 2));
  std::vector<std::vector<std::int64_t>> got(2);
  for (int i = 0; i < 4; ++i) {
    const auto last = engine.last_tokens(3);
    got[0].push_back(last[0].item<std::int64_t>());
    got[1].push_back(last[2].item<std::int64_t>());
    if (i < 3) engine.decode({0, 2});
  }
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(got[r][i], seq[r][6 + i].item<std::int64_t>()) << "row " << r << " token " << i;
  EXPECT_THROW(engine.prefill(3, torch::zeros({2, 3}, torch::kLong)), std::invalid_argument);   // past the slots
  EXPECT_THROW(engine.prefill(0, torch::zeros({1, 16}, torch::kLong)), std::invalid_argument);  // no room to decode
}

TEST(Decoders, TheDecoderEngineGeneratesWhatGreedyFullForwardsDo) {
  expect_engine_generates_greedy_tokens(torch::kCPU);
}

// The fused CUDA kernels (fused_ops.h) against ATen's operators, and a Llama decoding with them.
bool no_kernels() {
  return !torch::cuda::is_available() || !fused::kernels_built();
}

void expect_close(const torch::Tensor& got, const torch::Tensor& want, const std::string& what,
                  double float_tolerance = 1e-5) {
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  // A bit or two of the type: the kernels round where ATen's kernels do, but may contract a
  // multiply-add or sum in another order.
  const double tolerance = got.scalar_type() == torch::kFloat  ? float_tolerance
                           : got.scalar_type() == torch::kHalf ? 2e-3
                                                               : 1.6e-2;
  const auto g = got.to(torch::kFloat), w = want.to(torch::kFloat);
  const double diff = ((g - w).abs() / (w.abs() + 1)).max().item<double>();
  EXPECT_LE(diff, tolerance) << what << " in " << got.scalar_type();
}

TEST(FusedKernels, EachGivesWhatAtensOperatorsGiveInEveryType) {
  if (no_kernels()) GTEST_SKIP() << "needs a CUDA device and LibTorch built with CUDA";
  torch::manual_seed(7);
  torch::NoGradGuard no_grad;
  for (const auto dtype : {torch::kFloat, torch::kHalf, torch::kBFloat16}) {
    const auto o = torch::TensorOptions().device(torch::kCUDA).dtype(dtype);
    // 264 wide: whole 16-byte packs; 36: not for half types (ATen's path runs, the same result).
    for (const std::int64_t width : {264, 36}) {
      const auto x = torch::randn({3, 5, width}, o), delta = torch::randn({3, 5, width}, o);
      const auto weight = torch::rand({width}, o) + 0.5;
      for (const auto& d : {delta, torch::Tensor()}) {
        const auto [sum, normed] = fused::add_rms_norm(x, d, weight, 1e-5, true);
        const auto [sum_aten, normed_aten] = fused::add_rms_norm(x, d, weight, 1e-5, false);
        EXPECT_TRUE(torch::equal(sum, sum_aten)) << "the residual add in " << dtype;
        expect_close(normed, normed_aten, "add_rms_norm " + std::to_string(width));
      }
      const auto bias = torch::randn({width}, o);
      for (const auto& d : {delta, torch::Tensor()}) {
        const auto [sum, normed] = fused::add_layer_norm(x * 2 + 1, d, weight, bias, 1e-12, true);
        const auto [sum_aten, normed_aten] = fused::add_layer_norm(x * 2 + 1, d, weight, bias, 1e-12, false);
        EXPECT_TRUE(torch::equal(sum, sum_aten)) << "the residual add in " << dtype;
        expect_close(normed, normed_aten, "add_layer_norm " + std::to_string(width));
      }
      const auto gate_up = torch::randn({3, 5, 2 * width}, o) * 3;
      expect_close(fused::silu_mul(gate_up, true), fused::silu_mul(gate_up, false), "silu_mul");
    }
    // The row argmax as ATen's: rows of 30,522 (a row starts off 16 bytes), of whole packs and of 5;
    // equal largest elements (the first wins), a NaN (it wins), a row of −inf; 3 rows: ATen's own.
    for (const std::int64_t width : {30522, 264, 5}) {
      for (const std::int64_t rows : {70, 3}) {
        auto x = torch::randn({rows, width}, o);
        x.index_put_({0, width - 1}, 9.0);
        x.index_put_({0, width / 2}, 9.0);
        x.index_put_({1}, -INFINITY);
        x.index_put_({2, width - 1}, NAN);
        const auto got = fused::argmax(x, true);
        EXPECT_TRUE(torch::equal(got, x.argmax(-1))) << "argmax of rows of " << width << " in " << dtype;
        EXPECT_EQ(got.index({0}).item<std::int64_t>(), width / 2);
      }
      const auto batch = torch::randn({4, 20, width}, o);  // (batch, tokens, vocab)
      EXPECT_TRUE(torch::equal(fused::argmax(batch, true), batch.argmax(-1)));
    }
    // The GEMV for a decoding step's 1 to 4 rows (5: ATen's product): 37 weight rows (not whole
    // blocks of 4), widths of whole unrolled passes, a tail, or no whole pack for the half types.
    for (const std::int64_t k : {4096, 1000, 264, 36}) {
      const auto weight = torch::randn({37, k}, o) / std::sqrt(static_cast<double>(k));
      for (const std::int64_t rows : {1, 2, 3, 4, 5}) {
        const auto x = torch::randn({rows, 1, k}, o);
        const auto got = fused::linear(x, weight, true);
        EXPECT_EQ(got.sizes(), (std::vector<std::int64_t>{rows, 1, 37}));
        expect_close(got, fused::linear(x, weight, false), "gemv " + std::to_string(rows) + "x" + std::to_string(k));
      }
      // The gate and up GEMV with SiLU × up after it: the two kernels' result to the bit.
      const auto gate_up = torch::randn({2 * 37, k}, o) / std::sqrt(static_cast<double>(k));
      for (const std::int64_t rows : {1, 4, 5}) {
        const auto x = torch::randn({rows, 1, k}, o);
        const auto got = fused::linear_silu_mul(x, gate_up, true);
        EXPECT_EQ(got.sizes(), (std::vector<std::int64_t>{rows, 1, 37}));
        EXPECT_TRUE(torch::equal(got, fused::silu_mul(fused::linear(x, gate_up, true), true)))
            << "gemv_silu_mul " << rows << "x" << k << " in " << dtype;
        expect_close(got, fused::silu_mul(fused::linear(x, gate_up, false), false), "gemv_silu_mul");
      }
      const auto transposed = torch::randn({k, 37}, o).t();  // not contiguous: ATen's product
      const auto x = torch::randn({1, k}, o);
      EXPECT_TRUE(torch::equal(fused::linear(x, transposed, true), fused::linear(x, transposed, false)));
    }
    // Rotary over q and k of a stacked projection: 4 query heads, 2 key/value heads of 16; tables
    // shared by the batch (prefill) or a row each (decode), then written into a cache.
    const std::int64_t heads = 4, kv = 2, dim = 16, tokens = 3;
    const auto qkv = torch::randn({2, tokens, heads + 2 * kv, dim}, o);
    for (const std::int64_t table_rows : {1, 2}) {
      const auto angles = torch::rand({table_rows, tokens, 1, dim / 2}, o.dtype(torch::kFloat)) * 6;
      const auto emb = torch::cat({angles, angles}, -1);
      const auto sign = torch::cat({-torch::ones({dim / 2}, emb.options()), torch::ones({dim / 2}, emb.options())});
      const auto cos = emb.cos().to(dtype), sin = (emb.sin() * sign).to(dtype);
      const auto got = fused::rotary_qkv(qkv, heads, kv, cos, sin, nullptr, 0, true);
      const auto want = fused::rotary_qkv(qkv, heads, kv, cos, sin, nullptr, 0, false);
      EXPECT_FALSE(got.cached);
      expect_close(got.q, want.q, "rotary q");
      expect_close(got.k, want.k, "rotary k");
      EXPECT_TRUE(torch::equal(got.v, want.v));
      // Written into slots 2 and 0 of a cache at positions 0..2: what the ATen path computes, there.
      auto cache = KvCache::allocate(1, 3, 5, kv, dim, o);
      const auto step = KvStep::prefill(cache, torch::tensor({2, 0}, o.dtype(torch::kLong)), tokens);
      const auto written = fused::rotary_qkv(qkv, heads, kv, cos, sin, &step, 0, true);
      ASSERT_TRUE(written.cached);
      expect_close(cache.k[0].index({2}).narrow(0, 0, tokens), want.k[0], "k in slot 2");
      expect_close(cache.k[0].index({0}).narrow(0, 0, tokens), want.k[1], "k in slot 0");
      EXPECT_TRUE(torch::equal(cache.v[0].index({0}).narrow(0, 0, tokens), want.v[1]));
      EXPECT_EQ(cache.k[0].index({1}).abs().sum().item<double>(), 0.0) << "slot 1 was not in the step";
      EXPECT_EQ(cache.k[0].narrow(1, tokens, 2).abs().sum().item<double>(), 0.0) << "past the prompts";
    }
    // A decoding step's q/k/v product and rotary as one kernel: what the product and then the rotary
    // kernel give, to the bit (q back; k and v at each row's position in slots 0 and 1).
    for (const std::int64_t width : {264, 1000}) {
      const auto weight = torch::randn({(heads + 2 * kv) * dim, width}, o) / std::sqrt(static_cast<double>(width));
      const auto x = torch::randn({2, 1, width}, o);
      const auto angles = torch::rand({2, 1, 1, dim / 2}, o.dtype(torch::kFloat)) * 6;
      const auto emb = torch::cat({angles, angles}, -1);
      const auto sign = torch::cat({-torch::ones({dim / 2}, emb.options()), torch::ones({dim / 2}, emb.options())});
      const auto cos = emb.cos().to(dtype), sin = (emb.sin() * sign).to(dtype);
      const auto positions = torch::tensor({3, 1}, o.dtype(torch::kLong)).view({2, 1});
      std::vector<KvCache> caches;
      for (int c = 0; c < 2; ++c) caches.push_back(KvCache::allocate(1, 2, 5, kv, dim, o));
      const auto fused_step = KvStep::decode(caches[0], positions, 5);
      const auto plain_step = KvStep::decode(caches[1], positions, 5);
      const auto got = fused::linear_rotary_qkv(x, weight, heads, kv, dim, cos, sin, &fused_step, 0, true);
      const auto product = fused::linear(x, weight, true).view({2, 1, heads + 2 * kv, dim});
      const auto want = fused::rotary_qkv(product, heads, kv, cos, sin, &plain_step, 0, true);
      ASSERT_TRUE(got.cached);
      EXPECT_TRUE(torch::equal(got.q, want.q)) << "q of gemv_rotary_qkv " << width << " in " << dtype;
      EXPECT_TRUE(torch::equal(caches[0].k[0], caches[1].k[0])) << "k in the cache";
      EXPECT_TRUE(torch::equal(caches[0].v[0], caches[1].v[0])) << "v in the cache";
      EXPECT_GT(caches[0].v[0].index({0, 3}).abs().sum().item<double>(), 0.0) << "row 0's v at position 3";
    }
  }
}

// The loss's kernels against ATen's log-softmax and negative log-likelihood: the value and the
// gradient, with −inf columns (the padded vocabulary), an ignored row and a scaled loss; 36 wide is
// no whole pack for the half types (ATen's path).
TEST(FusedKernels, TheCrossEntropyAndItsGradientAreAtens) {
  if (no_kernels()) GTEST_SKIP() << "needs a CUDA device and LibTorch built with CUDA";
  torch::manual_seed(10);
  for (const auto dtype : {torch::kFloat, torch::kHalf, torch::kBFloat16}) {
    const auto o = torch::TensorOptions().device(torch::kCUDA).dtype(dtype);
    for (const std::int64_t vocab : {4096, 64, 36}) {
      auto logits = torch::randn({6, vocab}, o) * 3;
      logits.narrow(1, vocab - 4, 4).fill_(-INFINITY);
      const auto targets =
          torch::tensor(std::vector<std::int64_t>{3, vocab - 5, -100, 0, 17, 31}, o.dtype(torch::kLong));
      auto a = logits.clone().requires_grad_(true), b = logits.clone().requires_grad_(true);
      auto c = logits.clone().requires_grad_(true);
      const auto la = fused::cross_entropy(a, targets, true), lb = fused::cross_entropy(b, targets, false);
      // The gradient written over logits made for the loss (c × 1, which c's gradient flows through).
      const auto made = c * 1;
      const auto lc = fused::cross_entropy(made, targets, true, /*gradient_in_logits=*/true);
      (la * 2.5).backward();
      (lb * 2.5).backward();
      (lc * 2.5).backward();
      const std::string what = "cross_entropy " + std::to_string(vocab);
      expect_close(la, lb, what);
      expect_close(a.grad(), b.grad(), what + " gradient");
      EXPECT_EQ(a.grad()[2].abs().sum().item<double>(), 0.0) << "the ignored row";
      EXPECT_TRUE(torch::equal(c.grad(), a.grad())) << what << ": the gradient written over the logits";
      if (vocab == 4096) {
        EXPECT_TRUE(torch::equal(made, c.grad())) << "the logits' memory holds their gradient";
      }
    }
  }
}

// The training kernels (forward and backward) against ATen's operators where autograd records: the
// residual add with RMSNorm, in one type or with a float residual stream and bf16 / half
// projections (autocast's types), with and without the add; SiLU × up of two tensors. The values,
// and every input's gradient from a loss that uses both the norm's output and the sum.
// The residual stream's and the added projection's types the norm kernels take: one type, or a float
// stream with a half or bfloat16 projection (autocast).
std::vector<std::pair<torch::ScalarType, torch::ScalarType>> norm_type_pairs() {
  return {{torch::kFloat, torch::kFloat},
          {torch::kFloat, torch::kBFloat16},
          {torch::kFloat, torch::kHalf},
          {torch::kBFloat16, torch::kBFloat16},
          {torch::kHalf, torch::kHalf}};
}

TEST(FusedKernels, TheTrainingKernelsGiveAtensValuesAndGradients) {
  if (no_kernels()) GTEST_SKIP() << "needs a CUDA device and LibTorch built with CUDA";
  torch::manual_seed(11);
  const auto cuda = torch::TensorOptions().device(torch::kCUDA);
  // 2048: Llama-3.2-1B's rows; 264: a thread's packs not all used; 36: no whole pack for the half
  // types (ATen's path); 12288: wider than the kernels take in float (ATen's path). With a float x and
  // a half-type delta, also the output in delta's type (Llama's norms before whole products under
  // autocast), against ATen's norm and cast.
  for (const std::int64_t width : {2048, 264, 36, 12288}) {
    for (const auto& [x_type, delta_type] : norm_type_pairs()) {
      std::vector<std::optional<torch::ScalarType>> out_types{std::nullopt};
      if (delta_type != x_type) out_types.push_back(delta_type);
      for (const auto out_type : out_types) {
        for (const bool with_delta : {true, false}) {
          const auto x0 = torch::randn({3, 7, width}, cuda).to(x_type);
          const auto delta0 = torch::randn({3, 7, width}, cuda).to(delta_type);
          const auto weight0 = (torch::rand({width}, cuda) + 0.5).to(x_type);
          const auto r1 = torch::randn({3, 7, width}, cuda), r2 = torch::randn({3, 7, width}, cuda);
          std::vector<torch::Tensor> got, want;
          for (const bool kernels : {true, false}) {
            auto x = x0.clone().requires_grad_(true), delta = delta0.clone().requires_grad_(true);
            auto weight = weight0.clone().requires_grad_(true);
            const auto [sum, out] =
                fused::add_rms_norm(x, with_delta ? delta : torch::Tensor(), weight, 1e-5, kernels, out_type);
            ((out.to(torch::kFloat) * r1).sum() + (sum.to(torch::kFloat) * r2).sum()).backward();
            auto& into = kernels ? got : want;
            into = std::vector<torch::Tensor>{sum, out, x.grad(), weight.grad()};
            if (with_delta) into.push_back(delta.grad());
          }
          const std::string what = "add_rms_norm " + std::to_string(width) + (with_delta ? " with delta " : " ") +
                                   std::string(c10::toString(delta_type)) +
                                   (out_type ? " out " + std::string(c10::toString(*out_type)) : "");
          EXPECT_TRUE(torch::equal(got[0], want[0])) << what << ": the residual add";
          const char* names[] = {"sum", "out", "x's gradient", "weight's gradient", "delta's gradient"};
          for (std::size_t i = 1; i < got.size(); ++i) {
            ASSERT_TRUE(got[i].defined()) << what << ": " << names[i];
            EXPECT_EQ(got[i].scalar_type(), want[i].scalar_type()) << what << ": " << names[i];
            if (i != 3 || x_type == torch::kFloat) expect_close(got[i], want[i], what + ": " + names[i]);
          }
          // The weight's gradient sums a product a row over the rows: ATen rounds each product to a half
          // type first, the kernel sums them in float. Both against the sum in double, the kernel's
          // nearer or as near. The gradient reaching out is r1 in out's type.
          const auto s = got[0].to(torch::kDouble);
          const auto normed = (s * torch::rsqrt(s.pow(2).mean(-1, true) + 1e-5)).to(x_type).to(torch::kDouble);
          const auto exact =
              (r1.to(out_type.value_or(x_type)).to(torch::kDouble) * normed).sum(std::vector<std::int64_t>{0, 1});
          const double ours = ((got[3].to(torch::kDouble) - exact).abs() / (exact.abs() + 1)).max().item<double>();
          const double atens = ((want[3].to(torch::kDouble) - exact).abs() / (exact.abs() + 1)).max().item<double>();
          EXPECT_LE(ours, std::max(atens, x_type == torch::kFloat ? 1e-5 : 8e-3)) << what << ": the weight's gradient";
        }
      }
    }
  }
  for (const auto dtype : {torch::kFloat, torch::kHalf, torch::kBFloat16}) {
    for (const std::int64_t width : {8192, 36}) {
      const auto gate0 = torch::randn({3, 5, width}, cuda).to(dtype) * 3;
      const auto up0 = torch::randn({3, 5, width}, cuda).to(dtype);
      const auto r = torch::randn({3, 5, width}, cuda);
      std::vector<torch::Tensor> got, want;
      for (const bool kernels : {true, false}) {
        auto gate = gate0.clone().requires_grad_(true), up = up0.clone().requires_grad_(true);
        const auto out = fused::silu_mul(gate, up, kernels);
        (out.to(torch::kFloat) * r).sum().backward();
        (kernels ? got : want) = std::vector<torch::Tensor>{out, gate.grad(), up.grad()};
      }
      for (std::size_t i = 0; i < got.size(); ++i)
        expect_close(got[i], want[i], "silu_mul " + std::to_string(width) + " output/gate/up " + std::to_string(i));
    }
  }
}

// Rotary positions on a joined q/k/v in training (Llama's): q and k rotated and v, and qkv's gradient,
// from the kernels as from ATen's operators (fused::rotary on q and k together), with tables of qkv's
// type or float (autocast's), and a table a sequence or one for all.
TEST(FusedKernels, TheRotaryKernelsGiveAtensValuesAndGradients) {
  if (no_kernels()) GTEST_SKIP() << "needs a CUDA device and LibTorch built with CUDA";
  torch::manual_seed(14);
  const auto cuda = torch::TensorOptions().device(torch::kCUDA);
  const std::int64_t heads = 4, kv_heads = 2, dim = 64, batch = 3, tokens = 5;
  const std::vector<std::pair<torch::ScalarType, torch::ScalarType>> types = {{torch::kBFloat16, torch::kFloat},
                                                                              {torch::kBFloat16, torch::kBFloat16},
                                                                              {torch::kHalf, torch::kFloat},
                                                                              {torch::kFloat, torch::kFloat}};
  for (const auto& [type, table_type] : types) {
    for (const std::int64_t table_batch : {std::int64_t{1}, batch}) {
      const auto qkv0 = torch::randn({batch, tokens, heads + 2 * kv_heads, dim}, cuda).to(type);
      const auto cos = (torch::rand({table_batch, tokens, 1, dim}, cuda) * 2 - 1).to(table_type);
      const auto sin = (torch::rand({table_batch, tokens, 1, dim}, cuda) * 2 - 1).to(table_type);
      // The gradients reaching q, k and v as the attention gives them: values of qkv's type.
      const auto r = torch::randn({batch, tokens, heads + 2 * kv_heads, dim}, cuda).to(type).to(torch::kFloat);
      std::vector<torch::Tensor> got, want;
      for (const bool kernels : {true, false}) {
        auto qkv = qkv0.clone().requires_grad_(true);
        fused::RotatedQkv out;
        if (kernels) {
          out = fused::rotary_qkv(qkv, heads, kv_heads, cos, sin, nullptr, 0, true);
        } else {
          const auto qk = fused::rotary(qkv.narrow(2, 0, heads + kv_heads), cos, sin);
          out = {qk.narrow(2, 0, heads), qk.narrow(2, heads, kv_heads), qkv.narrow(2, heads + kv_heads, kv_heads)};
        }
        const auto all = torch::cat({out.q.to(type), out.k.to(type), out.v}, 2);
        (all.to(torch::kFloat) * r).sum().backward();
        (kernels ? got : want) = std::vector<torch::Tensor>{all, qkv.grad()};
      }
      const std::string what = "rotary " + std::string(c10::toString(type)) + " with " +
                               std::string(c10::toString(table_type)) + " tables of " + std::to_string(table_batch) +
                               ": ";
      ASSERT_TRUE(got[1].defined()) << what << "qkv's gradient";
      expect_close(got[0], want[0], what + "q, k and v");
      expect_close(got[1], want[1], what + "qkv's gradient");
      // In the half types, the same numbers (but where a multiply-add rounds otherwise than ATen's and
      // the float result sits at a tie).
      if (type != torch::kFloat) {
        EXPECT_GE(got[0].eq(want[0]).to(torch::kFloat).mean().item<double>(), 0.99) << what << "q, k and v";
        EXPECT_GE(got[1].eq(want[1]).to(torch::kFloat).mean().item<double>(), 0.99) << what << "qkv's gradient";
      }
    }
  }
}

TEST(FusedKernels, TheAddLayerNormKernelsGiveAtensValuesAndGradients) {
  if (no_kernels()) GTEST_SKIP() << "needs a CUDA device and LibTorch built with CUDA";
  torch::manual_seed(12);
  const auto cuda = torch::TensorOptions().device(torch::kCUDA);
  // 768 and 1024: GPT-2's and CPM-1 medium's rows; 264: a thread's packs not all used; 36: no whole
  // pack for the half types (ATen's path); 12288: wider than the kernels take in float (ATen's path).
  // With a float x and a half-type delta, also the output in delta's type (ViT's norms under autocast).
  for (const std::int64_t width : {768, 1024, 264, 36, 12288}) {
    for (const auto& [x_type, delta_type] : norm_type_pairs()) {
      std::vector<std::optional<torch::ScalarType>> out_types{std::nullopt};
      if (delta_type != x_type) out_types.push_back(delta_type);
      for (const auto out_type : out_types) {
        for (const bool with_delta : {true, false}) {
          const auto x0 = (torch::randn({3, 7, width}, cuda) * 2 + 0.5).to(x_type);
          const auto delta0 = torch::randn({3, 7, width}, cuda).to(delta_type);
          const auto weight0 = (torch::rand({width}, cuda) + 0.5).to(x_type);
          const auto bias0 = torch::randn({width}, cuda).to(x_type);
          const auto r1 = torch::randn({3, 7, width}, cuda), r2 = torch::randn({3, 7, width}, cuda);
          std::vector<torch::Tensor> got, want;
          for (const bool kernels : {true, false}) {
            auto x = x0.clone().requires_grad_(true), delta = delta0.clone().requires_grad_(true);
            auto weight = weight0.clone().requires_grad_(true), bias = bias0.clone().requires_grad_(true);
            const auto [sum, out] = fused::add_layer_norm(x, with_delta ? delta : torch::Tensor(), weight, bias, 1e-5,
                                                          kernels, 0, out_type);
            ((out.to(torch::kFloat) * r1).sum() + (sum.to(torch::kFloat) * r2).sum()).backward();
            auto& into = kernels ? got : want;
            into = std::vector<torch::Tensor>{sum, out, x.grad(), weight.grad(), bias.grad()};
            if (with_delta) into.push_back(delta.grad());
          }
          EXPECT_EQ(got[1].scalar_type(), out_type.value_or(x_type));
          const std::string what = "add_layer_norm " + std::to_string(width) + (with_delta ? " with delta " : " ") +
                                   std::string(c10::toString(x_type)) + "/" + std::string(c10::toString(delta_type)) +
                                   (out_type ? " out " + std::string(c10::toString(*out_type)) : "");
          EXPECT_TRUE(torch::equal(got[0], want[0])) << what << ": the residual add";
          const char* names[] = {
              "sum", "out", "x's gradient", "weight's gradient", "bias's gradient", "delta's gradient"};
          for (std::size_t i = 1; i < got.size(); ++i) {
            ASSERT_TRUE(got[i].defined()) << what << ": " << names[i];
            EXPECT_EQ(got[i].scalar_type(), want[i].scalar_type()) << what << ": " << names[i];
            expect_close(got[i], want[i], what + ": " + names[i]);
          }
        }
      }
    }
  }
}

// The add + LayerNorm kernel with the output's copy in delta's type (BERT's post-norm residual under
// autocast): the float output is ATen's layer norm, the copy is its cast, and the gradients reaching
// both (the copy's in bf16 or half) give ATen's gradients of x, delta, the weight and the bias.
TEST(FusedKernels, TheAddLayerNormKernelWritesTheOutputsCopyAsItsCast) {
  if (no_kernels()) GTEST_SKIP() << "needs a CUDA device and LibTorch built with CUDA";
  torch::manual_seed(13);
  const auto cuda = torch::TensorOptions().device(torch::kCUDA);
  for (const auto low_type : {torch::kBFloat16, torch::kHalf}) {
    for (const std::int64_t width : {768, 1024, 264}) {
      const auto x0 = (torch::randn({3, 7, width}, cuda) * 2 + 0.5);
      const auto delta0 = torch::randn({3, 7, width}, cuda).to(low_type);
      const auto weight0 = torch::rand({width}, cuda) + 0.5, bias0 = torch::randn({width}, cuda);
      const auto r1 = torch::randn({3, 7, width}, cuda), r2 = torch::randn({3, 7, width}, cuda);
      const auto r3 = torch::randn({3, 7, width}, cuda);
      std::vector<torch::Tensor> got, want;
      for (const bool kernels : {true, false}) {
        auto x = x0.clone().requires_grad_(true), delta = delta0.clone().requires_grad_(true);
        auto weight = weight0.clone().requires_grad_(true), bias = bias0.clone().requires_grad_(true);
        const auto [sum, out, low] = fused::add_layer_norm_with_copy(x, delta, weight, bias, 1e-5, kernels);
        ((out * r1).sum() + (low.to(torch::kFloat) * r2).sum() + (sum * r3).sum()).backward();
        auto& into = kernels ? got : want;
        into = std::vector<torch::Tensor>{sum, out, low, x.grad(), delta.grad(), weight.grad(), bias.grad()};
      }
      const std::string what =
          "add_layer_norm_with_copy " + std::to_string(width) + " " + std::string(c10::toString(low_type));
      EXPECT_EQ(got[2].scalar_type(), low_type) << what;
      EXPECT_TRUE(torch::equal(got[2], got[1].to(low_type))) << what << ": the copy is the output's cast";
      const char* names[] = {
          "sum", "out", "copy", "x's gradient", "delta's gradient", "weight's gradient", "bias's gradient"};
      for (std::size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], what + ": " + names[i]);
    }
  }
}

// GELU (both forms) of a bias-free projection's output plus its bias (GPT-2's c_fc, ViT's mlp.0), one kernel each way:
// the values and the gradients of h and the bias (the backward kernel's column sums) are ATen's, in every type; a bias
// of fp32 with a bf16 h (autocast's weights) is cast first.
TEST(FusedKernels, TheBiasGeluKernelsGiveAtensValuesAndGradients) {
  if (no_kernels()) GTEST_SKIP() << "needs a CUDA device and LibTorch built with CUDA";
  torch::manual_seed(23);
  const auto cuda = torch::TensorOptions().device(torch::kCUDA);
  // 3072 and 4096: GPT-2's and CPM/GLM's MLP widths; 264: a block's columns not all used; 36: no whole
  // pack for the half types; 20480: wider than the norm kernels take (these take any width). Rows: 21 (a
  // block's rows not all used), and 1,301 (several blocks down the rows, the last pass partly empty).
  for (const std::int64_t width : {3072, 4096, 264, 36, 20480}) {
    for (const auto& [h_type, bias_type] :
         std::vector<std::pair<torch::ScalarType, torch::ScalarType>>{{torch::kFloat, torch::kFloat},
                                                                      {torch::kBFloat16, torch::kBFloat16},
                                                                      {torch::kHalf, torch::kHalf},
                                                                      {torch::kBFloat16, torch::kFloat}}) {
      for (const auto& [batch, tokens] : std::vector<std::pair<std::int64_t, std::int64_t>>{{3, 7}, {1, 1301}}) {
        const auto h0 = (torch::randn({batch, tokens, width}, cuda) * 2).to(h_type);
        const auto bias0 = torch::randn({width}, cuda).to(bias_type);
        const auto r = torch::randn(h0.sizes(), cuda);
        for (const auto form : {fused::Gelu::Tanh, fused::Gelu::Erf}) {
          std::vector<torch::Tensor> got, want;
          for (const bool kernels : {true, false}) {
            auto h = h0.clone().requires_grad_(true), bias = bias0.clone().requires_grad_(true);
            const auto out = fused::bias_gelu(h, bias, kernels, form);
            (out.to(torch::kFloat) * r).sum().backward();
            auto& into = kernels ? got : want;
            into = std::vector<torch::Tensor>{out, h.grad(), bias.grad()};
          }
          const std::string what = std::string(form == fused::Gelu::Erf ? "bias_gelu (erf) " : "bias_gelu (tanh) ") +
                                   std::to_string(batch * tokens) + " × " + std::to_string(width) + " " +
                                   std::string(c10::toString(h_type)) + "/" + std::string(c10::toString(bias_type));
          const char* names[] = {"out", "h's gradient", "bias's gradient"};
          for (std::size_t i = 0; i < got.size(); ++i) {
            ASSERT_TRUE(got[i].defined()) << what << ": " << names[i];
            EXPECT_EQ(got[i].scalar_type(), want[i].scalar_type()) << what << ": " << names[i];
            // The bias's gradient sums 1,301 rows in another order than ATen's (float: a few float
            // roundings of the sum), and with a bf16 h it is bf16's sum cast to float (a bf16 rounding).
            const double float_tolerance = i < 2 ? 1e-5 : h_type == torch::kFloat ? 5e-5 : 1.6e-2;
            expect_close(got[i], want[i], what + ": " + names[i], float_tolerance);
          }
        }
      }
    }
  }
}

// The residual dropout inside the add + LayerNorm kernel (GPT's, before each add): every delta element
// is dropped or kept and scaled by 1 / (1 − p), about 1 − p of them kept; through the mask the kernel
// drew, the sum, the norm and every gradient are ATen's dropout, add and layer norm; each call draws
// another mask.
TEST(FusedKernels, TheAddLayerNormKernelDropsDeltaOutAsAtensDropout) {
  if (no_kernels()) GTEST_SKIP() << "needs a CUDA device and LibTorch built with CUDA";
  torch::manual_seed(21);
  const auto cuda = torch::TensorOptions().device(torch::kCUDA);
  const double p = 0.1;
  for (const auto& types : norm_type_pairs()) {
    const auto x_type = types.first, delta_type = types.second;  // named, for the lambda to capture
    const std::string what = std::string(c10::toString(x_type)) + "/" + std::string(c10::toString(delta_type));
    const std::int64_t width = 768;
    const auto x0 = (torch::randn({64, 33, width}, cuda) * 2).to(x_type);
    // |delta| in [1, 2): a kept element moves the sum by more than 1, so the mask reads back from sum − x.
    const auto sign = torch::randint(0, 2, {64, 33, width}, cuda) * 2 - 1;
    const auto delta0 = ((torch::rand({64, 33, width}, cuda) + 1) * sign).to(delta_type);
    const auto weight0 = (torch::rand({width}, cuda) + 0.5).to(x_type);
    const auto bias0 = torch::randn({width}, cuda).to(x_type);
    const auto r1 = torch::randn({64, 33, width}, cuda), r2 = torch::randn({64, 33, width}, cuda);
    const auto run = [&](bool kernels, const torch::Tensor& mask) {
      auto x = x0.clone().requires_grad_(true), delta = delta0.clone().requires_grad_(true);
      auto weight = weight0.clone().requires_grad_(true), bias = bias0.clone().requires_grad_(true);
      torch::Tensor sum, out;
      if (kernels) {
        std::tie(sum, out) = fused::add_layer_norm(x, delta, weight, bias, 1e-5, true, p);
      } else {  // ATen's dropout through the given mask: input × mask × scale, rounded to delta's type once
        const auto dropped = delta * mask.to(delta_type) * (1.0 / (1.0 - p));
        std::tie(sum, out) = fused::add_layer_norm(x, dropped, weight, bias, 1e-5, false);
      }
      ((out.to(torch::kFloat) * r1).sum() + (sum.to(torch::kFloat) * r2).sum()).backward();
      return std::vector<torch::Tensor>{sum, out, x.grad(), weight.grad(), bias.grad(), delta.grad()};
    };
    const auto got = run(true, {});
    const auto keep = (got[0].to(torch::kFloat) - x0.to(torch::kFloat)).abs() > 0.5;
    const double kept = keep.to(torch::kFloat).mean().item<double>();
    EXPECT_NEAR(kept, 1 - p, 0.002) << what << ": the share of delta kept";  // 1.6 M draws: σ 2.4e-4
    const auto want = run(false, keep);
    const char* names[] = {"sum", "out", "x's gradient", "weight's gradient", "bias's gradient", "delta's gradient"};
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].scalar_type(), want[i].scalar_type()) << what << ": " << names[i];
      // The weight's and bias's gradients sum 2,112 rows, in another order than ATen's: float's
      // rounding grows with the count (measured up to 1.7e-5 on an H100).
      expect_close(got[i], want[i], what + ": " + names[i], i == 3 || i == 4 ? 5e-5 : 1e-5);
    }
    // The next call draws another mask.
    const auto again = fused::add_layer_norm(x0, delta0, weight0, bias0, 1e-5, true, p).first;
    const auto keep_again = (again.to(torch::kFloat) - x0.to(torch::kFloat)).abs() > 0.5;
    EXPECT_GT(keep.ne(keep_again).to(torch::kFloat).mean().item<double>(), 0.1) << what << ": the second mask";
  }
}

// Where the kernels do not run (the CPU), the residual dropout is ATen's: kept elements scaled by 1 / (1 − p).
TEST(Decoders, AddLayerNormDropsDeltaOutOnTheCpu) {
  torch::manual_seed(22);
  const double p = 0.25;
  const auto x = torch::zeros({256, 768}), delta = torch::ones({256, 768});
  const auto sum = fused::add_layer_norm(x, delta, torch::ones({768}), torch::zeros({768}), 1e-5, true, p).first;
  EXPECT_NEAR(sum.ne(0).to(torch::kFloat).mean().item<double>(), 1 - p, 0.01);
  EXPECT_TRUE(torch::allclose(sum.masked_select(sum.ne(0)), torch::full({1}, 1 / (1 - p))));
  EXPECT_TRUE(torch::equal(fused::add_layer_norm(x, delta, torch::ones({768}), torch::zeros({768}), 1e-5, true).first,
                           delta));  // no dropout asked for
}

// GPT's blocks with each residual add joined to the next layer norm give the blocks' loss and
// gradients: on the CPU (ATen's operators in the joined order) and on CUDA (the kernels).
void expect_gpt_trains_with_the_kernels_as_without(torch::Device device) {
  torch::manual_seed(13);
  auto m = GptLMHeadModel(small_gpt());
  for (auto& p : m->named_parameters())
    if (p.key().find("ln_") != std::string::npos) p.value().data().uniform_(0.5, 1.5);
  m->to(device);
  const auto ids = torch::randint(0, 97, {2, 17}).to(device);
  std::vector<torch::Tensor> got, want;
  for (const bool kernels : {true, false}) {
    m->zero_grad();
    m->fused_kernels = kernels;
    const auto loss = m->loss(ids);
    loss.backward();
    auto& into = kernels ? got : want;
    into = {loss.detach().clone()};
    for (const auto& p : m->parameters()) into.push_back(p.grad().clone());
  }
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(torch::allclose(got[i], want[i], 1e-5, 1e-6)) << device << ": tensor " << i << " of loss, gradients";
}

TEST(Decoders, GptsJoinedResidualAndNormGiveTheBlocksLossAndGradients) {
  expect_gpt_trains_with_the_kernels_as_without(torch::kCPU);
}

TEST(FusedKernels, GptTrainsWithTheKernelsAsWithout) {
  if (no_kernels()) GTEST_SKIP() << "needs a CUDA device and LibTorch built with CUDA";
  expect_gpt_trains_with_the_kernels_as_without(torch::kCUDA);
}

TEST(FusedKernels, LlamaOnCudaDecodesWithTheKernelsAsWithout) {
  if (no_kernels()) GTEST_SKIP() << "needs a CUDA device and LibTorch built with CUDA";
  torch::manual_seed(8);
  auto m = LlamaForCausalLM(small_llama());
  for (auto& p : m->named_parameters())
    if (p.key().find("norm") != std::string::npos) p.value().data().uniform_(0.5, 1.5);
  m->to(torch::kCUDA);
  m->fuse_for_inference();  // stacked q/k/v and gate/up: what the kernels take
  m->use_fused_kernels(true);
  const auto ids = torch::randint(0, 97, {3, 12}).to(torch::kCUDA);
  {
    torch::NoGradGuard no_grad;
    m->eval();
    const auto with = m->forward(ids);
    m->use_fused_kernels(false);
    const auto without = m->forward(ids);
    m->use_fused_kernels(true);
    EXPECT_TRUE(torch::allclose(with, without, 1e-4, 1e-4));
  }
  // Rotary writing the cache, the residual adds in the norms: prefill and decode as the full forward.
  expect_cached_decoding_matches(*m, *m, ids, {5, 2, 9});
  expect_engine_generates_greedy_tokens(torch::kCUDA, /*kernels=*/true);
  // Heads of 64 elements: the decoding steps' attention is the split-key kernel's.
  auto wide_config = small_llama();
  wide_config.hidden = 128, wide_config.heads = 2, wide_config.kv_heads = 1;
  auto wide = LlamaForCausalLM(wide_config);
  wide->to(torch::kCUDA);
  wide->fuse_for_inference();
  wide->use_fused_kernels(true);
  expect_cached_decoding_matches(*wide, *wide, ids, {5, 2, 9});
}

// XPUPERF_KERNELS_OFF's list: whole names, spaces around them ignored, a name that only starts
// another's (gemv, gemv_silu_mul) not taken for it.
TEST(Decoders, TheKernelsOffListNamesWholeKernels) {
  EXPECT_TRUE(fused::kernel_listed("decode_attention", "decode_attention"));
  EXPECT_TRUE(fused::kernel_listed("gemv, decode_attention ", "decode_attention"));
  EXPECT_TRUE(fused::kernel_listed("gemv_silu_mul,gemv", "gemv"));
  EXPECT_FALSE(fused::kernel_listed("gemv_silu_mul", "gemv"));
  EXPECT_FALSE(fused::kernel_listed("gemv", "gemv_silu_mul"));
  EXPECT_FALSE(fused::kernel_listed("", "gemv"));
  EXPECT_FALSE(fused::kernel_listed(",,", "gemv"));
}

// The decoding step's attention kernel against ATen's attention with the step's mask, both against
// the same attention in double: near in float (1e-5), and in bf16 and fp16 as near as ATen's (which
// rounds the softmax's weights to the type). Heads of 32 to 256 elements; grouped-query heads; rows
// whose tokens see 1 key, part of a chunk, several chunks, and every visible key (a position past the
// window); one chunk in all (no combining kernel) and several; two tokens a row.
TEST(FusedKernels, TheDecodeAttentionKernelIsAtensAttention) {
  if (no_kernels()) GTEST_SKIP() << "needs a CUDA device and LibTorch built with CUDA";
  torch::manual_seed(12);
  const std::int64_t heads = 4, kv_heads = 2, slots = 5, max_tokens = 300;
  for (const std::int64_t dim : {32, 64, 128, 256}) {
    for (const auto dtype : {torch::kFloat, torch::kBFloat16, torch::kHalf}) {
      const auto options = torch::TensorOptions().dtype(dtype).device(torch::kCUDA);
      auto cache = KvCache::allocate(1, slots, max_tokens, kv_heads, dim, options);
      cache.k[0].normal_();
      cache.v[0].normal_();
      auto exact = KvCache::allocate(1, slots, max_tokens, kv_heads, dim, options.dtype(torch::kDouble));
      exact.k[0].copy_(cache.k[0]);
      exact.v[0].copy_(cache.v[0]);
      for (const std::int64_t visible : {40, 260}) {
        for (const std::int64_t tokens : {1, 2}) {
          std::vector<std::int64_t> at = {0, 17, 39, 150, 299};
          auto positions = torch::tensor(at).view({slots, 1}).repeat({1, tokens});
          if (tokens == 2) positions.select(1, 1).add_(1).clamp_max_(max_tokens - 1);
          positions = positions.to(torch::kCUDA);
          const auto q = torch::randn({slots, tokens, heads, dim}, options).transpose(1, 2);
          const auto step = KvStep::decode(cache, positions, visible);
          const auto exact_step = KvStep::decode(exact, positions, visible);
          const auto kernel = fused::decode_attention(q, step, 0);
          ASSERT_TRUE(kernel.has_value()) << "the operator has a CUDA kernel";
          const auto aten = decoder_attention(q, {}, {}, 0, &step, /*cached=*/true);
          if (dtype == torch::kFloat && dim == 256) {  // 64 packs of 16 bytes, more than a warp's lanes:
            EXPECT_TRUE(torch::allclose(*kernel, aten, 1e-5, 1e-6)) << "ATen's attention serves heads of 256 floats";
            continue;
          }
          const auto truth = decoder_attention(q.to(torch::kDouble), {}, {}, 0, &exact_step, /*cached=*/true);
          ASSERT_EQ(kernel->sizes(), aten.sizes());
          const auto kernel_error = (kernel->to(torch::kDouble) - truth).abs();
          const auto aten_error = (aten.to(torch::kDouble) - truth).abs();
          const auto what = "heads of " + std::to_string(dim) + ", " + std::string(c10::toString(dtype)) + ", " +
                            std::to_string(visible) + " visible, " + std::to_string(tokens) + " token(s) a row";
          if (dtype == torch::kFloat) {
            EXPECT_LT(kernel_error.max().item<double>(), 1e-5) << what;
          } else {
            EXPECT_LE(kernel_error.mean().item<double>(), aten_error.mean().item<double>() * 1.1)
                << what << ": the mean error";
            EXPECT_LE(kernel_error.max().item<double>(), aten_error.max().item<double>() * 1.5 + 1e-4)
                << what << ": the largest error";
          }
        }
      }
    }
  }
  // Not CUDA: nothing, the caller's attention serves; a head size the kernel does not take: ATen's
  // attention, through the operator.
  auto cpu = KvCache::allocate(1, 1, 8, 1, 64, torch::kFloat);
  EXPECT_FALSE(fused::decode_attention(torch::randn({1, 1, 1, 64}),
                                       KvStep::decode(cpu, torch::zeros({1, 1}, torch::kLong), 8), 0));
  auto odd = KvCache::allocate(1, 1, 8, 1, 48, torch::TensorOptions().device(torch::kCUDA));
  const auto odd_q = torch::randn({1, 1, 1, 48}, torch::kCUDA);
  const auto odd_step = KvStep::decode(odd, torch::zeros({1, 1}, torch::kLong).to(torch::kCUDA), 8);
  const auto served = fused::decode_attention(odd_q, odd_step, 0);
  ASSERT_TRUE(served.has_value());
  EXPECT_TRUE(torch::allclose(*served, decoder_attention(odd_q, {}, {}, 0, &odd_step, /*cached=*/true), 1e-5, 1e-6))
      << "the operator's CUDA implementation hands a head it does not take to ATen's attention";
}

TEST(FusedKernels, BertOnCudaGivesTheSameWithTheKernelsAsWithout) {
  if (no_kernels()) GTEST_SKIP() << "needs a CUDA device and LibTorch built with CUDA";
  torch::manual_seed(9);
  const BertConfig c{97, 32, 2, 2, 64, 4, 128, 0.0, 0.0, 1e-12};
  BertForMaskedLM m(c);
  m->to(torch::kCUDA);
  m->eval();
  torch::NoGradGuard no_grad;
  const auto ids = torch::randint(0, 97, {3, 16}).to(torch::kCUDA);
  auto keep = torch::ones({3, 16}, torch::TensorOptions().dtype(torch::kBool).device(torch::kCUDA));
  keep.index_put_({1, torch::indexing::Slice(9, torch::indexing::None)}, false);  // padding
  for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
    m->to(dtype);
    m->use_fused_kernels(false);
    const auto without = m->predict_tokens(ids, keep);
    m->use_fused_kernels(true);
    m->join_projections_for_inference();  // as the bertLarge case does
    const auto with = m->predict_tokens(ids, keep);
    EXPECT_GE(with.eq(without).to(torch::kFloat).mean().item<double>(), dtype == torch::kFloat ? 1.0 : 0.95)
        << "the predicted tokens in " << dtype;
  }
}

// In inference, q, k and v as one product of the stacked weights compute what the three products
// did (the parameters become views of the stack); a cast of the model makes copies and the three
// products run again. The padding's mask is made once, added to the scores.
TEST(Bert, JoinedProjectionsPredictAsTheThreeProducts) {
  torch::manual_seed(10);
  const BertConfig c{97, 32, 2, 2, 64, 4, 128, 0.0, 0.0, 1e-12};
  BertForMaskedLM m(c);
  m->eval();
  torch::NoGradGuard no_grad;
  const auto ids = torch::randint(0, 97, {3, 16});
  auto keep = torch::ones({3, 16}, torch::kBool);
  keep.index_put_({2, torch::indexing::Slice(5, torch::indexing::None)}, false);
  const auto hidden = m->bert(ids, torch::zeros_like(ids), keep);
  const auto tokens = m->predict_tokens(ids, keep);
  const auto state = m->named_parameters().size();
  m->join_projections_for_inference();
  auto& attention = *m->bert->encoder->layer[0]->as<BertLayer>()->attention;
  ASSERT_TRUE(attention.qkv_weight.defined());
  EXPECT_EQ(attention.self->key->weight.data_ptr(),
            static_cast<void*>(static_cast<char*>(attention.qkv_weight.data_ptr()) + 64 * 64 * sizeof(float)));
  EXPECT_EQ(m->named_parameters().size(), state);
  EXPECT_TRUE(torch::allclose(m->bert(ids, torch::zeros_like(ids), keep), hidden, 1e-5, 1e-6));
  EXPECT_TRUE(torch::equal(m->predict_tokens(ids, keep), tokens));
  m->to(torch::kDouble);
  EXPECT_NE(attention.self->query->weight.data_ptr(), attention.qkv_weight.data_ptr());
  EXPECT_TRUE(torch::allclose(m->bert(ids, torch::zeros_like(ids), keep).to(torch::kFloat), hidden, 1e-5, 1e-6));
  // A padded key takes part in no query's attention: changing it changes no real position's output.
  auto other = ids.clone();
  other.index_put_({2, 10}, (ids.index({2, 10}) + 1) % 97);
  EXPECT_TRUE(torch::allclose(m->bert(other, torch::zeros_like(ids), keep).index({2}).narrow(0, 0, 5),
                              m->bert(ids, torch::zeros_like(ids), keep).index({2}).narrow(0, 0, 5), 1e-9, 1e-9));
}

// One training step of two copies of a model from the same weights, one on ATen's operators and one on
// the kernels (`loss_of(net, kernels)`), in fp32 and under bf16 autocast as the training runtime runs
// it: the same loss, and gradients to each precision's rounding.
template <typename Net>
void expect_trains_on_kernels_as_on_aten(const std::function<Net()>& make,
                                         const std::function<torch::Tensor(Net&, bool)>& loss_of,
                                         const std::string& what) {
  for (const bool bf16 : {false, true}) {
    torch::manual_seed(41);
    Net plain = make(), fused_net = make();
    copy_parameters(*plain, *fused_net);
    std::vector<torch::Tensor> losses, grads;
    for (auto* net : {&plain, &fused_net}) {
      (*net)->to(torch::kCUDA);
      (*net)->train();
      compat::set_autocast_enabled(torch::kCUDA, bf16);
      compat::set_autocast_dtype(torch::kCUDA, torch::kBFloat16);
      const auto loss = loss_of(*net, net == &fused_net).to(torch::kFloat);
      compat::set_autocast_enabled(torch::kCUDA, false);
      at::autocast::clear_cache();
      loss.backward();
      losses.push_back(loss.detach());
      std::vector<torch::Tensor> g;
      for (const auto& p : (*net)->parameters())
        g.push_back(p.grad().defined() ? p.grad().flatten().to(torch::kFloat) : torch::zeros({p.numel()}, p.device()));
      grads.push_back(torch::cat(g));
    }
    const std::string precision = bf16 ? " bf16" : " fp32";
    const double tolerance = bf16 ? 2e-2 : 1e-5;
    EXPECT_NEAR(losses[1].item<double>(), losses[0].item<double>(), tolerance * losses[0].item<double>())
        << what << precision;
    const double norm = grads[0].norm().item<double>();
    EXPECT_GT(norm, 0) << what << precision;
    EXPECT_LE((grads[1] - grads[0]).norm().item<double>(), (bf16 ? 5e-2 : 1e-4) * norm) << what << precision;
  }
}

// ViT's blocks on the kernels (the LayerNorms with the residual add, bias + GELU) as on ATen's operators.
TEST(FusedKernels, ViTTrainsOnTheKernelsAsOnAtensOperators) {
  if (no_kernels()) GTEST_SKIP() << "needs a CUDA device and LibTorch built with CUDA";
  ViTConfig c;
  c.image_size = 32, c.patch_size = 8, c.layers = 2, c.hidden = 64, c.heads = 4, c.mlp = 128, c.classes = 10;
  torch::manual_seed(31);
  const auto images = torch::randn({6, 3, 32, 32}, torch::kCUDA);
  const auto labels = torch::randint(0, 10, {6}, torch::TensorOptions().device(torch::kCUDA).dtype(torch::kLong));
  expect_trains_on_kernels_as_on_aten<VisionTransformer>(
      [&] {
        VisionTransformer v(c);
        // A head that is not zero, so that the gradients reach the blocks.
        const torch::NoGradGuard no_grad;
        v->heads[0]->as<torch::nn::Linear>()->weight.normal_(0, 0.05);
        return v;
      },
      [&](VisionTransformer& v, bool kernels) {
        v->use_fused_kernels(kernels);
        return torch::cross_entropy_loss(v->forward(images).to(torch::kFloat), labels);
      },
      "vit");
}

// BERT's post-norm layers in training on the kernels (the add + LayerNorm with the bf16 copy of its
// output under autocast, q/k/v as one product, the intermediate's bias + GELU) as on ATen's operators.
TEST(FusedKernels, BertTrainsOnTheKernelsAsOnAtensOperators) {
  if (no_kernels()) GTEST_SKIP() << "needs a CUDA device and LibTorch built with CUDA";
  const BertConfig c{97, 32, 2, 2, 64, 4, 128, 0.0, 0.0, 1e-12};  // no dropout: the same step both ways
  torch::manual_seed(42);
  const auto cuda = torch::TensorOptions().device(torch::kCUDA);
  const auto ids = torch::randint(0, 97, {3, 16}, cuda.dtype(torch::kLong));
  const auto types = torch::zeros({3, 16}, cuda.dtype(torch::kLong));
  const auto keep = torch::ones({3, 16}, cuda.dtype(torch::kBool));
  const auto labels = torch::where(torch::rand({3, 16}, cuda) < 0.3, ids, torch::full_like(ids, -100));
  expect_trains_on_kernels_as_on_aten<BertForMaskedLM>([&] { return BertForMaskedLM(c); },
                                                       [&](BertForMaskedLM& m, bool kernels) {
                                                         m->use_fused_kernels(kernels);
                                                         return m->loss_and_accuracy(ids, types, keep, labels).first;
                                                       },
                                                       "bert");
}

// Llama's layers in training on the kernels (the residual add + RMSNorm written in the products' type
// under autocast, q/k/v as one product, SiLU × up, the loss's cross entropy) as on ATen's operators.
TEST(FusedKernels, LlamaTrainsOnTheKernelsAsOnAtensOperators) {
  if (no_kernels()) GTEST_SKIP() << "needs a CUDA device and LibTorch built with CUDA";
  torch::manual_seed(43);
  const auto ids = torch::randint(0, 97, {3, 17}, torch::TensorOptions().device(torch::kCUDA).dtype(torch::kLong));
  const auto loss_of = [&](LlamaForCausalLM& m, bool kernels) {
    m->use_fused_kernels(kernels);
    return m->loss(ids);
  };
  expect_trains_on_kernels_as_on_aten<LlamaForCausalLM>([] { return LlamaForCausalLM(small_llama()); }, loss_of,
                                                        "llama");
  // Mixtral's block: the experts take the norm's output in the products' type and their SiLU × up
  // kernel. Every token to every expert, so that no bf16 rounding can flip a token's choice.
  LlamaConfig experts = small_llama();
  experts.moe.experts = 4, experts.moe.top_k = 4;
  expect_trains_on_kernels_as_on_aten<LlamaForCausalLM>([&] { return LlamaForCausalLM(experts); }, loss_of, "mixtral");
}

// Mixtral's block with the kernels, bf16, on a Hopper or Blackwell GPU runs its experts as ATen's grouped
// GEMMs over the pairs sorted by expert; without them, as batched products over buffers as long as
// the busiest expert's. The same routing (computed the same way before the paths part), so the same
// outputs and gradients to bf16's rounding; 2 of 8 experts a token, so the experts' counts differ.
TEST(MixtureOfExperts, OnCudaTheGroupedProductsGiveTheBatchedOnes) {
  if (no_kernels()) GTEST_SKIP() << "needs a CUDA device and LibTorch built with CUDA";
  torch::manual_seed(47);
  MoeConfig c;
  c.experts = 8, c.top_k = 2;
  auto batched = SparseMoeBlock(64, 96, c), grouped = SparseMoeBlock(64, 96, c);
  copy_parameters(*batched, *grouped);
  const auto cuda = torch::TensorOptions().device(torch::kCUDA);
  const auto x0 = torch::randn({4, 37, 64}, cuda), r = torch::randn({4, 37, 64}, cuda);
  std::vector<std::vector<torch::Tensor>> got;
  for (auto* block : {&batched, &grouped}) {
    const bool kernels = block == &grouped;
    (*block)->to(torch::kCUDA);
    auto x = x0.clone().requires_grad_(true);
    compat::set_autocast_enabled(torch::kCUDA, true);
    compat::set_autocast_dtype(torch::kCUDA, torch::kBFloat16);
    if (kernels && !(*block)->runs_grouped(x.reshape({-1, 64}), true)) {
      compat::set_autocast_enabled(torch::kCUDA, false);
      GTEST_SKIP() << "ATen's grouped GEMM kernels need PyTorch 2.9 and a Hopper or Blackwell GPU";
    }
    const auto y = (*block)->forward(x, kernels);
    compat::set_autocast_enabled(torch::kCUDA, false);
    at::autocast::clear_cache();
    (y.to(torch::kFloat) * r).sum().backward();
    EXPECT_EQ((*block)->routed, 4 * 37 * 2);
    EXPECT_EQ((*block)->dropped, 0);
    got.push_back({y, x.grad(), (*block)->w_gate.grad(), (*block)->w_up.grad(), (*block)->w_down.grad(),
                   (*block)->gate->weight.grad()});
  }
  const char* names[] = {"outputs",         "x's gradient",      "w_gate's gradient",
                         "w_up's gradient", "w_down's gradient", "the router's gradient"};
  for (std::size_t i = 0; i < got[0].size(); ++i) {
    ASSERT_TRUE(got[1][i].defined()) << names[i];
    expect_close(got[1][i], got[0][i], std::string("grouped ") + names[i], 2e-2);
  }
}

}  // namespace
}  // namespace xpuperf::models
