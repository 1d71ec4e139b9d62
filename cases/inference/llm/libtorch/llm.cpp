// A language model's inference. Steps (a)-(g) of FlagPerf's inference framework time prefill as
// its LLM cases do (a batch of prompts through the model: tokens/s, MFU); step (h) decodes with a
// KV cache and serves MLPerf LoadGen's Offline and Server scenarios (infer/generation.h). The
// model: a Llama-style decoder (Hugging Face's LlamaForCausalLM) or GPT-2's (GPT2LMHeadModel), at
// the sizes of the parameters; weights from a Hugging Face state_dict, else random ones labelled
// "synthetic weights". Prompts are random token ids, nothing claimed about accuracy, or real text
// from a token dataset (GPT-2's BPE for gpt2, Llama 3's for a Llama 3 shape).

#include <torch/torch.h>

#include <cmath>

#include "xpuperf/core/log.h"
#include "xpuperf/core/strings.h"
#include "xpuperf/datasets/token_datasets.h"
#include "xpuperf/infer/case_weights.h"
#include "xpuperf/infer/generation.h"
#include "xpuperf/infer/inference_case.h"
#include "xpuperf/models/fused_ops.h"
#include "xpuperf/models/gpt.h"
#include "xpuperf/models/llama.h"

namespace xpuperf::cases {
namespace {

std::int64_t positive(const Config& cfg, const std::string& key) {
  const std::int64_t v = cfg.get_int(key);
  if (v <= 0)
    throw ConfigError(key + ": must be a positive number, got " + std::to_string(v) + " (" + cfg.at(key).source.str() +
                      ")");
  return v;
}

std::vector<double> numbers(const Config& cfg, const std::string& key) {
  std::vector<double> values;
  for (const auto& text : cfg.get_string_list(key)) {
    try {
      values.push_back(std::stod(text));
    } catch (const std::exception&) {
      throw ConfigError(key + ": '" + text + "' is not a number (" + cfg.at(key).source.str() + ")");
    }
  }
  return values;
}

loadgen::LengthRange length_range(const Config& cfg, const std::string& key) {
  const auto v = numbers(cfg, key);
  if (v.size() != 2 || v[0] < 1 || v[1] < v[0])
    throw ConfigError(key + ": give [min, max] tokens with 1 <= min <= max (" + cfg.at(key).source.str() + ")");
  return {static_cast<std::int64_t>(v[0]), static_cast<std::int64_t>(v[1])};
}

class LlmInference : public infer::InferenceCase {
 public:
  infer::Batches build_dataloader(const infer::InferContext& ctx) override {
    const Config& cfg = ctx.config;
    read_model_config(cfg);
    length_ = positive(cfg, "seq_length");
    if (max_positions_ > 0 && length_ > max_positions_)
      throw ConfigError("seq_length: " + std::to_string(length_) + " tokens, more than max_position_embeddings " +
                        std::to_string(max_positions_));
    const std::int64_t batch = positive(cfg, "batch_size"), samples = positive(cfg, "prefill_samples");
    settings_ = generation_settings(cfg);  // read now, so a mistake stops the run before anything is timed
    fused_kernels_ = cfg.get_bool("fused_kernels");
    if (!cfg.get_string("train_data").empty()) return dataset_prompts(cfg, batch, samples);
    // One token more than a prompt: the label is the token after it (random, as the prompt).
    const auto tokens =
        infer::random_token_ids(samples, length_ + 1, vocab_, static_cast<std::uint64_t>(cfg.get_int("seed")));
    infer::Batches b = infer::Batches::in_memory(
        tokens.narrow(1, 0, length_).contiguous(), tokens.select(1, length_).contiguous(), batch,
        "synthetic prompts: " + std::to_string(samples) + " of " + std::to_string(length_) +
            " random token ids (seed " + std::to_string(cfg.get_int("seed")) + ")");
    b.sample_dtype = torch::kLong;
    synthetic_prompts_ = true;
    return b;
  }

  std::shared_ptr<torch::nn::Module> create_model(const infer::InferContext& ctx,
                                                  const std::string& checkpoint) override {
    read_model_config(ctx.config);
    torch::manual_seed(static_cast<std::uint64_t>(ctx.config.get_int("seed")));
    std::shared_ptr<torch::nn::Module> model;
    std::map<std::string, std::string> tied;
    if (architecture_ == "llama") {
      auto llama = models::LlamaForCausalLM(llama_);
      tied = llama->tied_weights();
      model = llama.ptr();
    } else {
      model = models::GptLMHeadModel(gpt_).ptr();
      tied = models::GptLMHeadModelImpl::tied_weights();
    }
    const std::string how = std::string("give checkpoint: Hugging Face ") +
                            (architecture_ == "llama" ? "LlamaForCausalLM" : "GPT2LMHeadModel") +
                            "'s state_dict (torch.save(dict(model.state_dict()), F)) or a LibTorch archive";
    const std::string random = infer::load_case_weights(*model, ctx, checkpoint, how, tied);
    caveat_ =
        infer::join_caveats(random.empty() ? "" : "synthetic weights: " + random,
                            synthetic_prompts_ ? "synthetic prompts (random token ids): no accuracy is claimed" : "");
    return model;
  }

  torch::Tensor model_forward(torch::nn::Module& model, const torch::Tensor& input) override {
    auto& d = decoder(model);
    d.fuse_for_inference();  // again after an engine moved the weights to its precision
    d.use_fused_kernels(fused_kernels_);
    return d.decoder_logits(input, nullptr, 1).select(1, 0);  // the next token's logits
  }

  void evaluator(const torch::Tensor& outputs, const torch::Tensor& labels, infer::Evaluation& e) override {
    e.metric = "next_token_accuracy";
    infer::count_top1(outputs, labels, e);
  }

  double flops_per_sample() const override {
    return architecture_ == "llama" ? llama_.forward_flops(length_, 1) : gpt_.forward_flops(length_, 1);
  }

  std::string caveat() const override { return caveat_; }
  bool generates() const override { return true; }

  nlohmann::json generation(const infer::InferContext& ctx, std::shared_ptr<torch::nn::Module> model,
                            torch::Dtype dtype, std::ostream& progress) override {
    infer::GenerationSettings s = settings_;
    // A decode step reads every weight but the input embedding's table (GPT's is its output
    // layer too, and is read whole).
    const double element = static_cast<double>(torch::elementSize(dtype));
    for (const auto& p : model->named_parameters())
      if (p.key() != "model.embed_tokens.weight" && p.key() != "transformer.wpe.weight")
        s.weight_bytes_per_step += static_cast<double>(p.value().numel()) * element;
    decoder(*model).use_fused_kernels(fused_kernels_);
    nlohmann::json g = infer::run_generation(model, decoder(*model), ctx.device, dtype, s, progress);
    // Whether the fused kernels ran: asked for, built, on CUDA, and a model that has them.
    g["fused_kernels"] =
        fused_kernels_ && models::fused::kernels_built() && ctx.device.is_cuda() && architecture_ == "llama";
    g["prefill_tokens_per_sample"] = length_;
    if (s.rules.min_duration_s < loadgen::kLoadGenMinDuration || s.rules.min_queries < loadgen::kLoadGenMinQueries)
      g["rules"]["weaker_than_loadgen"] =
          "server_min_duration_s and server_min_queries are under LoadGen's 600 s and 100 queries: the runs are "
          "shorter and do not count as valid";
    return g;
  }

 private:
  // Step (h)'s settings.
  infer::GenerationSettings generation_settings(const Config& cfg) const {
    infer::GenerationSettings s;
    s.decoder.slots = positive(cfg, "max_batch");
    s.decoder.max_tokens = positive(cfg, "max_seq_len");
    s.decoder.length_bucket = positive(cfg, "length_bucket");
    s.decoder.cuda_graphs = cfg.get_bool("cuda_graphs");
    if (max_positions_ > 0 && s.decoder.max_tokens > max_positions_)
      throw ConfigError("max_seq_len: " + std::to_string(s.decoder.max_tokens) + " tokens, more than the model's " +
                        std::to_string(max_positions_) + " positions (max_position_embeddings)");
    for (const double b : numbers(cfg, "decode_batch_sizes")) {
      if (b < 1 || b > static_cast<double>(s.decoder.slots) || b != std::floor(b))
        throw ConfigError("decode_batch_sizes: " + std::to_string(b) + " is not a batch size in 1..max_batch (" +
                          std::to_string(s.decoder.slots) + ")");
      s.decode_batch_sizes.push_back(static_cast<std::int64_t>(b));
    }
    if (s.decode_batch_sizes.empty())
      log::warning(
          "decode_batch_sizes: [] leaves out the static decode run (its tokens/s and bandwidth bound); "
          "list batch sizes, e.g. [1, 64], to measure it");
    s.decode_prompt_tokens = positive(cfg, "decode_prompt_tokens");
    s.decode_output_tokens = positive(cfg, "decode_output_tokens");
    if (s.decode_prompt_tokens + s.decode_output_tokens > s.decoder.max_tokens)
      throw ConfigError("decode_prompt_tokens + decode_output_tokens (" +
                        std::to_string(s.decode_prompt_tokens + s.decode_output_tokens) + ") exceed max_seq_len " +
                        std::to_string(s.decoder.max_tokens));
    s.temperature = cfg.get_number("temperature");
    s.top_k = cfg.get_int("top_k");
    if (!(s.temperature > 0)) throw ConfigError("temperature: the sampled decode run needs a temperature above 0");
    s.lengths.prompt = length_range(cfg, "prompt_tokens");
    s.lengths.output = length_range(cfg, "output_tokens");
    s.offline_queries = cfg.get_int("offline_queries");  // 0: no scenarios, so no lengths to fit
    if (const std::string file = cfg.get_string("lengths_file"); !file.empty()) {  // LoadGen's and the sweep's
      try {
        s.lengths = loadgen::read_lengths_csv(file, s.decoder.max_tokens);
      } catch (const std::runtime_error& e) {
        throw ConfigError("lengths_file: " + std::string(e.what()) + " (" + cfg.at("lengths_file").source.str() + ")");
      }
    } else if (s.offline_queries > 0 && s.lengths.longest() > s.decoder.max_tokens) {
      throw ConfigError("prompt_tokens' and output_tokens' maxima (" + std::to_string(s.lengths.prompt.max) + " + " +
                        std::to_string(s.lengths.output.max) + ") exceed max_seq_len " +
                        std::to_string(s.decoder.max_tokens));
    }
    s.server_load = numbers(cfg, "server_load");
    for (const double share : s.server_load)
      if (!(share > 0)) throw ConfigError("server_load: shares of the Offline rate must be above 0");
    s.rules.min_duration_s = cfg.get_number("server_min_duration_s");
    s.rules.min_queries = cfg.get_int("server_min_queries");
    s.rules.ttft_bound_ms = cfg.get_number("ttft_bound_ms");
    s.rules.tpot_bound_ms = cfg.get_number("tpot_bound_ms");
    s.seed = static_cast<std::uint64_t>(cfg.get_int("seed"));
    s.profile_steps = cfg.get_int("profile_batches", 0);  // decode steps, as prefill's batches
    s.sweep = sweep_settings(cfg, s.seed);
    if (!s.lengths.pairs.empty() && !s.sweep.lengths.empty()) s.sweep.trace = s.lengths;  // swept too
    return s;
  }

  // The serving sweep's settings (infer/serving_sweep.h).
  infer::SweepSettings sweep_settings(const Config& cfg, std::uint64_t seed) const {
    infer::SweepSettings w;
    w.seed = seed;
    const ConfigEntry& e = cfg.at("sweep_lengths");
    const std::string where = " (" + e.source.str() + ")";
    const std::string form = "sweep_lengths: a list of [input, output] token pairs, e.g. [[1024, 1024], [8192, 1024]]";
    if (!e.value.IsSequence()) throw ConfigError(form + where);
    for (const auto& pair : e.value) {
      std::int64_t input = 0, output = 0;
      try {
        if (!pair.IsSequence() || pair.size() != 2) throw ConfigError(form);
        input = pair[0].as<std::int64_t>(), output = pair[1].as<std::int64_t>();
      } catch (const std::exception&) {
        throw ConfigError(form + where);
      }
      const std::string text = "[" + std::to_string(input) + ", " + std::to_string(output) + "]";
      if (input < 1 || output < 1) throw ConfigError("sweep_lengths: " + text + ": 1 token or more each" + where);
      if (context_ > 0 && input + output > context_)
        throw ConfigError("sweep_lengths: " + text + " passes the model's " + std::to_string(context_) +
                          " positions (max_position_embeddings)" + where);
      w.lengths.emplace_back(input, output);
    }
    w.max_concurrency = cfg.get_int("max_concurrency");
    if (w.max_concurrency < 1)
      throw ConfigError("max_concurrency: " + std::to_string(w.max_concurrency) +
                        ": give 1 or more (the sweep runs concurrency 1, 2, 4, ... up to it)");
    w.queries = cfg.get_int("sweep_queries");
    if (w.queries < 0) throw ConfigError("sweep_queries: 0 (twice each point's concurrency) or more");
    w.block_size = positive(cfg, "block_size");
    w.max_num_batched_tokens = positive(cfg, "max_num_batched_tokens");
    w.kv_cache_memory_fraction = cfg.get_number("kv_cache_memory_fraction");
    if (!(w.kv_cache_memory_fraction > 0 && w.kv_cache_memory_fraction <= 1))
      throw ConfigError("kv_cache_memory_fraction: a share of the free memory above 0 and at most 1");
    w.decode_graphs = cfg.get_bool("cuda_graphs");
    w.profile_steps = cfg.get_int("profile_batches", 0);  // the highest concurrency's steps
    w.gpu_hour_cost = cfg.get_number("gpu_hour_cost");
    if (w.gpu_hour_cost < 0)
      throw ConfigError("gpu_hour_cost: " + fixed_digits(w.gpu_hour_cost, 2) +
                        " is negative: give your price of one GPU-hour, or 0 for no cost figure");
    return w;
  }

  static models::CausalDecoder& decoder(torch::nn::Module& model) {
    return dynamic_cast<models::CausalDecoder&>(model);
  }

  // Prompts from the held-out documents of a token dataset made with GPT-2's BPE (the gpt2
  // training case's reader): seq_length tokens each, labelled with the token that follows.
  infer::Batches dataset_prompts(const Config& cfg, std::int64_t batch, std::int64_t most) {
    // GPT-2's BPE for gpt2; for llama, Llama 3's (vocab_size 128256: a Llama 3 shape); Llama 2's
    // SentencePiece vocabulary is not built in.
    if (architecture_ == "llama" && vocab_ != 128256)
      throw ConfigError(
          "train_data: prompts for llama come from a token dataset made with Llama 3's tokeniser "
          "(xpuperf data tokenize --tokenizer llama3), which needs vocab_size 128256 (a Llama 3 shape), "
          "not " +
          std::to_string(vocab_) + "; or random prompts (train_data: \"\")");
    const nlohmann::json no_switches = nlohmann::json::object();  // an inference case takes no training switch
    const datasets::CaseContext data_ctx{cfg, no_switches, torch::kCPU, 0, 1, 1};
    const auto corpus = datasets::open_token_corpus(data_ctx, architecture_ == "gpt2" ? "gpt2" : "llama3", vocab_);
    auto dataset = std::make_shared<datasets::GptTokenDataset>(corpus.eval, length_);
    const std::int64_t samples = std::min(dataset->size(), most), length = length_;
    if (samples == 0)
      throw ConfigError("the prompts' data (" + dataset->description() + ") hold no sequence of " +
                        std::to_string(length_ + 1) + " tokens: lower seq_length or give more data");
    infer::Batches b;
    b.samples = samples;
    b.batch_size = batch;
    b.count = static_cast<std::size_t>((samples + batch - 1) / batch);
    b.sample_shape = {length_};
    b.sample_dtype = torch::kLong;
    b.description =
        dataset->description() + ": " + std::to_string(samples) + " prompts of " + std::to_string(length_) + " tokens";
    b.load = [dataset, batch, samples, length](std::size_t i) {
      const std::int64_t at = static_cast<std::int64_t>(i) * batch;
      const auto tokens = dataset->get(torch::arange(at, std::min(at + batch, samples), torch::kLong))[0];
      return infer::Batch{tokens.narrow(1, 0, length).contiguous(), tokens.select(1, length).contiguous()};
    };
    synthetic_prompts_ = false;
    return b;
  }

  void read_model_config(const Config& cfg) {
    architecture_ = cfg.get_string("architecture");
    if (architecture_ != "llama" && architecture_ != "gpt2")
      throw ConfigError("architecture: '" + architecture_ + "' is not llama or gpt2 (" +
                        cfg.at("architecture").source.str() + ")");
    vocab_ = positive(cfg, "vocab_size");
    if (architecture_ == "llama") {
      llama_.vocab = vocab_;
      llama_.hidden = positive(cfg, "hidden_size");
      llama_.intermediate = positive(cfg, "intermediate_size");
      llama_.layers = positive(cfg, "num_hidden_layers");
      llama_.heads = positive(cfg, "num_attention_heads");
      llama_.kv_heads = positive(cfg, "num_key_value_heads");
      llama_.max_positions = positive(cfg, "max_position_embeddings");
      llama_.rms_norm_eps = cfg.get_number("rms_norm_eps");
      llama_.rope_theta = cfg.get_number("rope_theta");
      llama_.tie_word_embeddings = cfg.get_bool("tie_word_embeddings", false);
      llama_.rope_factor = cfg.get_number("rope_scaling_factor", 0.0);
      llama_.rope_low_freq_factor = cfg.get_number("rope_low_freq_factor", 1.0);
      llama_.rope_high_freq_factor = cfg.get_number("rope_high_freq_factor", 4.0);
      llama_.rope_original_max_positions = cfg.get_int("rope_original_max_position_embeddings", 8192);
      if (const auto problem = llama_.problem(); !problem.empty()) throw ConfigError(problem);
      max_positions_ = 0;  // rotary: no table to run past
      context_ = cfg.get_int("max_position_embeddings");
    } else {
      gpt_.vocab = vocab_;
      gpt_.positions = positive(cfg, "max_position_embeddings");
      gpt_.layers = positive(cfg, "num_hidden_layers");
      gpt_.hidden = positive(cfg, "hidden_size");
      gpt_.heads = positive(cfg, "num_attention_heads");
      gpt_.dropout = 0;
      if (gpt_.hidden % gpt_.heads != 0)
        throw ConfigError("hidden_size " + std::to_string(gpt_.hidden) + " is not a multiple of num_attention_heads " +
                          std::to_string(gpt_.heads));
      max_positions_ = context_ = gpt_.positions;
    }
  }

  std::string architecture_ = "llama";
  models::LlamaConfig llama_;
  models::GptConfig gpt_;
  std::int64_t vocab_ = 32000, length_ = 1024, max_positions_ = 0;
  std::int64_t context_ = 0;  // max_position_embeddings: the context the model was made for (rotary too)
  std::string caveat_;
  bool synthetic_prompts_ = true;
  bool fused_kernels_ = false;
  infer::GenerationSettings settings_;  // from build_dataloader (step b)
};

XPUPERF_REGISTER_INFERENCE_CASE("llm", "libtorch", LlmInference);

}  // namespace
}  // namespace xpuperf::cases
