// The language training cases (gpt2, llama, bert, cpm, glm) as a user runs them on the CPU: a slice of
// the Linux kernel's documentation (Debian's linux-doc-6.1) tokenised with GPT-2's and Llama 3's
// BPEs and BERT's WordPiece, and Debian's Chinese text with a SentencePiece model trained on it,
// by `xpuperf data tokenize`, then each case through `xpuperf run` in tiny sizes for a few dozen
// steps, the loss falling and perplexity / masked-LM accuracy reported; synthetic data labelled;
// a dataset of the wrong tokeniser or a missing one refused with the file named.

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "cli_util.h"
#include "perflog_util.h"

namespace xpuperf {
namespace {
namespace fs = std::filesystem;

const std::string kDocs = "/usr/share/doc/linux-doc-6.1/Documentation";
const std::string kVocab = std::string(XPUPERF_SOURCE_DIR) + "/.cache/vocab";

// Tiny sizes of both models, 40 steps, every step logged.
const char* kGptSmoke =
    "n_layer: 2, n_embd: 64, n_head: 4, seq_length: 32, train_batch_size: 8, eval_batch_size: 32, lr: 0.003, "
    "warmup_steps: 5, max_steps: 40, log_freq: 1, eval_interval_steps: 0, num_threads: 2, valid_share: 0.05";
// Llama 3's 128,256-token vocabulary with two layers of 64, grouped-query attention (4 heads, 2
// key/value heads) and the tied output layer of _base.yaml's Llama-3.2-1B shape.
const char* kLlamaSmoke =
    "num_hidden_layers: 2, hidden_size: 64, intermediate_size: 128, num_attention_heads: 4, num_key_value_heads: 2, "
    "seq_length: 32, train_batch_size: 8, eval_batch_size: 8, lr: 0.003, warmup_steps: 5, max_steps: 40, "
    "log_freq: 1, eval_interval_steps: 0, num_threads: 2, valid_share: 0.05";
// CPM-1's layout on the 8,000-piece SentencePiece vocabulary of Debian's Chinese text.
const char* kCpmSmoke =
    "vocab_size: 8000, n_layer: 2, n_embd: 64, n_head: 4, seq_length: 32, train_batch_size: 32, eval_batch_size: 32, "
    "lr: 0.003, warmup_steps: 5, max_steps: 40, log_freq: 1, eval_interval_steps: 0, num_threads: 2";
// Chinese text and its SentencePiece model (`make language-data`: scripts/chinese-text.sh).
const std::string kZh = std::string(XPUPERF_SOURCE_DIR) + "/data/text/zh-debian";
const char* kBertSmoke =
    "num_hidden_layers: 2, hidden_size: 64, num_attention_heads: 4, intermediate_size: 256, seq_length: 64, "
    "train_batch_size: 16, eval_batch_size: 64, lr: 0.002, warmup_steps: 5, max_steps: 40, log_freq: 1, "
    "eval_interval_steps: 0, num_threads: 2, valid_share: 0.05";

// GLM's blank infilling in the same tiny sizes, on the WordPiece dataset.
const char* kGlmSmoke =
    "num_layers: 2, hidden_size: 64, num_attention_heads: 4, max_position_embeddings: 64, seq_length: 64, "
    "train_batch_size: 16, eval_batch_size: 32, lr: 0.003, warmup_steps: 5, max_steps: 40, log_freq: 1, "
    "eval_interval_steps: 0, num_threads: 2, valid_share: 0.05";

// The folder `xpuperf sweep` wrote under its --log-dir (sweep<stamp>); "" when there is none.
std::string sweep_folder_in(const std::string& log_dir) {
  std::string sweep;
  for (const auto& d : fs::directory_iterator(log_dir))
    if (d.path().filename().string().rfind("sweep", 0) == 0) sweep = d.path().string();
  return sweep;
}

// `first`, then `more`: a test's shared --set values and one run's own.
std::vector<std::string> with(const std::vector<std::string>& first, std::vector<std::string> more) {
  more.insert(more.begin(), first.begin(), first.end());
  return more;
}

// A Llama small enough for a CPU test, on synthetic ids.
const std::vector<std::string> kTinyLlama = {"synthetic_data=true",   "synthetic_tokens=65536", "num_hidden_layers=2",
                                             "hidden_size=32",        "intermediate_size=64",   "num_attention_heads=4",
                                             "num_key_value_heads=2", "seq_length=16",          "train_batch_size=4"};

class LanguageCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::is_directory(kDocs) || !fs::exists(kVocab + "/bert-base-uncased/vocab.txt") ||
        !fs::exists(kVocab + "/llama3/tokenizer.model"))
      return;
    data_ = new test::TempDir();
    // A slice: the kernel's development-process guides (about 1 MB of text).
    const std::string slice = kDocs + "/process";
    Result r = xpuperf({"data", "tokenize", "--tokenizer", "gpt2", "--vocab", kVocab + "/gpt2/encoder.json", "--merges",
                        kVocab + "/gpt2/vocab.bpe", slice, "-o", data_->path() + "/linux-doc-gpt2"},
                       XPUPERF_SOURCE_DIR, {}, 600);
    ASSERT_EQ(r.code, 0) << r.output;
    r = xpuperf({"data", "tokenize", "--tokenizer", "llama3", "--vocab", kVocab + "/llama3/tokenizer.model", slice,
                 "-o", data_->path() + "/linux-doc-llama3"},
                XPUPERF_SOURCE_DIR, {}, 600);
    ASSERT_EQ(r.code, 0) << r.output;
    // Two labels' paragraphs for bert_finetune: the kernel's process guides and its hwmon drivers.
    ASSERT_TRUE(run_ok({"python3", std::string(XPUPERF_SOURCE_DIR) + "/scripts/linux-doc-topics.py", kDocs,
                        data_->path() + "/linux-doc-topics", "--folders", "process,hwmon", "--per-label", "150"},
                       {}, 120));
    fs::copy_file(kVocab + "/bert-base-uncased/vocab.txt", data_->path() + "/linux-doc-topics/vocab.txt");
    fs::copy_file(kVocab + "/llama3/tokenizer.model", data_->path() + "/linux-doc-topics/tokenizer.model");
    r = xpuperf({"data", "tokenize", "--tokenizer", "wordpiece", "--vocab", kVocab + "/bert-base-uncased/vocab.txt",
                 slice, "-o", data_->path() + "/linux-doc-bert"},
                XPUPERF_SOURCE_DIR, {}, 600);
    ASSERT_EQ(r.code, 0) << r.output;
    if (fs::exists(kZh + "/documents.jsonl") && fs::exists(kZh + "/zh.model")) {
      r = xpuperf({"data", "tokenize", "--tokenizer", "sentencepiece", "--model", kZh + "/zh.model",
                   kZh + "/documents.jsonl", "-o", data_->path() + "/zh-debian-cpm"},
                  XPUPERF_SOURCE_DIR, {}, 600);
      ASSERT_EQ(r.code, 0) << r.output;
    }
  }
  static void TearDownTestSuite() {
    delete data_;
    data_ = nullptr;
  }
  void SetUp() override {
    if (!data_)
      GTEST_SKIP() << "needs " << kDocs << " (apt-get install linux-doc-6.1) and " << kVocab
                   << " (scripts/text-vocabularies.sh)";
  }
  static std::string data() { return data_->path(); }

  static Result train_on_cpu(const std::string& model, const std::vector<std::string>& sets) {
    std::vector<std::string> all = {"train",      "--case", model,        "--vendor", "cpu",
                                    "--hardware", "CPU",    "--data-dir", data()};
    for (const auto& set : sets) all.insert(all.end(), {"--set", set});
    return xpuperf(all, XPUPERF_SOURCE_DIR, {}, 600);
  }

  // `xpuperf sweep MODEL` on two CPU ranks over this suite's data, under `dir`: `steps` timed after
  // `warmup`, one repeat, the loss tolerance, the strategies and the cases' --set values.
  // A sweep of two strategies on a tiny Llama over two ranks, 3 steps after 1: both rows run and the
  // second keeps the first's loss at every step (1e-5). Returns the second row.
  nlohmann::json tiny_llama_pair_keeps_the_loss_on_two_ranks(const std::string& reference, const std::string& other,
                                                             const std::vector<std::string>& extra = {}) {
    auto sets = with(kTinyLlama, {"eval_batch_size=8", "num_threads=1", "valid_share=0.02", "lr=0.003"});
    sets.insert(sets.end(), extra.begin(), extra.end());
    const Result r = sweep_on_two_ranks("llama", 3, 1, "0.00001", reference + "; " + other, sets);
    EXPECT_EQ(r.code, 0) << r.output;
    const std::string sweep = sweep_folder_in(dir.path());
    if (sweep.empty()) {
      ADD_FAILURE() << "no sweep folder: " << r.output;
      return nlohmann::json::object();
    }
    const auto summary = nlohmann::json::parse(test::read_file(sweep + "/summary.json"));
    if (summary["rows"].size() != 2u) {
      ADD_FAILURE() << summary.dump();
      return nlohmann::json::object();
    }
    for (const auto& row : summary["rows"]) EXPECT_EQ(row["status"], "ok") << row.dump();
    const auto& row = summary["rows"][1];
    EXPECT_TRUE(row.contains("parity") && row["parity"]["within"].get<bool>()) << row.dump();
    EXPECT_EQ(row["rounds"][0]["loss_curve"].size(), 4u) << row.dump();
    return row;
  }

  Result sweep_on_two_ranks(const std::string& model, int steps, int warmup, const std::string& tolerance,
                            const std::string& strategies, const std::vector<std::string>& sets) {
    std::vector<std::string> args = {"sweep",
                                     model,
                                     "--vendor",
                                     "cpu",
                                     "--hardware",
                                     "CPUx1x2",
                                     "--data-dir",
                                     data(),
                                     "--steps",
                                     std::to_string(steps),
                                     "--warmup-steps",
                                     std::to_string(warmup),
                                     "--repeats",
                                     "1",
                                     "--log-dir",
                                     dir.path(),
                                     "--loss-tolerance",
                                     tolerance,
                                     "--strategies",
                                     strategies};
    for (const auto& set : sets) args.insert(args.end(), {"--set", set});
    return xpuperf(args, XPUPERF_SOURCE_DIR, {}, 600);
  }

  static test::TempDir* data_;
  test::TempDir dir;
};
test::TempDir* LanguageCli::data_ = nullptr;

// What a language case's tiny run is and is checked against.
struct LanguageRun {
  const char* smoke;        // the tiny sizes and steps
  std::string dataset;      // the token dataset it reads
  std::string tokenizer;    // what made that dataset
  int length;               // tokens a sample
  double perplexity_below;  // the causal models' bound after 40 steps; 0: a masked or blank-infilling LM (accuracy)
};

// Perplexity is exp(the mean token loss), and a few dozen steps take it far below the
// vocabulary's 50,257 or 128,256 (a uniform guess); Chinese pieces are spread more evenly than
// English ones, so CPM's 8,000 come down less in as many steps.
LanguageRun language_run(const std::string& model) {
  if (model == "gpt2") return {kGptSmoke, "linux-doc-gpt2", "gpt2", 32, 50257 / 10.0};
  if (model == "llama" || model == "mixtral") return {kLlamaSmoke, "linux-doc-llama3", "llama3", 32, 128256 / 10.0};
  if (model == "cpm") return {kCpmSmoke, "zh-debian-cpm", "sentencepiece", 32, 8000 / 2.0};
  if (model == "glm") return {kGlmSmoke, "linux-doc-bert", "wordpiece", 64, 0};
  return {kBertSmoke, "linux-doc-bert", "wordpiece", 64, 0};
}

// One case through `xpuperf run` (a test each, so that ctest runs them side by side).
void expect_trains_through_run(const std::string& model, const std::string& data, const std::string& plan_dir) {
  const LanguageRun expected = language_run(model);
  const std::string plan_path = plan_dir + "/plan.yaml";
  std::ofstream(plan_path) << "vendor: cpu\nlog_dir: " << plan_dir << "/results\ncases:\n  \"" << model
                           << ":libtorch:CPU:1:1:1\": {data_dir: " << data << ", " << expected.smoke << "}\n";
  const Result r = xpuperf({"run", plan_path}, XPUPERF_SOURCE_DIR, {}, 600);
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string run = run_folder_in(plan_dir + "/results");
  const std::string log = run + "/" + model + "_libtorch_CPU_1_1_1/round1/localhost_noderank0/rank0.out.log";
  const auto events = events_of(test::read_file(log));
  const auto losses = step_losses(events);
  ASSERT_EQ(losses.size(), 40u) << model << ": " << log;
  EXPECT_LT(mean(losses, 30, 40), mean(losses, 0, 10) - 0.5) << model;
  const auto* info = event_value(events, "SUBMIT_INFO");
  ASSERT_TRUE(info) << model;
  const auto train_data = (*info)["train_data"].get<std::string>();
  EXPECT_TRUE(has(train_data, expected.dataset)) << train_data;
  EXPECT_TRUE(has(train_data, "tokenised with " + expected.tokenizer)) << train_data;
  EXPECT_TRUE(has((*info)["eval_data"].get<std::string>(), "held-out documents")) << info->dump();
  const auto* eval = event_value(events, "EVALUATE");
  ASSERT_TRUE(eval) << model;
  const auto* finished = event_value(events, "FINISHED");
  ASSERT_TRUE(finished) << model;
  EXPECT_EQ((*finished)["global_steps"], 40);
  EXPECT_EQ((*finished)["tokens_per_sample"], expected.length);
  EXPECT_NEAR((*finished)["training_tokens_per_second"].get<double>(),
              expected.length * (*finished)["training_samples_per_second"].get<double>(), 1e-6);
  EXPECT_GT((*finished)["train_flops_per_sample"].get<double>(), 0.0);
  if (expected.perplexity_below > 0) {
    const double loss = (*eval)["loss"].get<double>();
    EXPECT_NEAR((*eval)["perplexity"].get<double>(), std::exp(loss), 1e-6 * std::exp(loss));
    EXPECT_LT((*eval)["perplexity"].get<double>(), expected.perplexity_below);
    EXPECT_EQ((*finished)["final_metric"]["name"], "perplexity") << finished->dump();
  } else {
    const double accuracy = (*eval)["accuracy"].get<double>();
    EXPECT_GT(accuracy, 0.0);
    EXPECT_LT(accuracy, 1.0);
  }
}

TEST_F(LanguageCli, Gpt2TrainsThroughRunOnKernelDocumentationWithTheLossFalling) {
  expect_trains_through_run("gpt2", data(), dir.path());
}

TEST_F(LanguageCli, LlamaTrainsThroughRunOnKernelDocumentationWithTheLossFalling) {
  expect_trains_through_run("llama", data(), dir.path());
}

// Mixtral's case in the same tiny sizes: 8 experts, 2 a token, in both layers, its own output layer.
TEST_F(LanguageCli, MixtralTrainsThroughRunOnKernelDocumentationWithTheLossFalling) {
  expect_trains_through_run("mixtral", data(), dir.path());
}

TEST_F(LanguageCli, CpmTrainsThroughRunOnChineseTextWithTheLossFalling) {
  if (!fs::exists(data() + "/zh-debian-cpm.bin"))
    GTEST_SKIP() << "needs " << kZh << "/documents.jsonl and zh.model (make language-data)";
  expect_trains_through_run("cpm", data(), dir.path());
}

// sequence_packing for a causal case: each document of a sample attends within itself, said in the
// data's description; the loss still falls.
TEST_F(LanguageCli, Gpt2WithPackedDocumentsTrainsWithTheLossFalling) {
  const Result r =
      train_on_cpu("gpt2", {"n_layer=2", "n_embd=64", "n_head=4", "seq_length=64", "train_batch_size=8", "lr=0.003",
                            "warmup_steps=5", "max_steps=30", "log_freq=1", "eval_interval_steps=0", "num_threads=2",
                            "valid_share=0.05", "sequence_packing=true"});
  ASSERT_EQ(r.code, 0) << r.output;
  const auto events = events_of(r.output);
  const auto* info = event_value(events, "SUBMIT_INFO");
  ASSERT_TRUE(info);
  EXPECT_TRUE(has((*info)["train_data"].get<std::string>(), "each document attending within itself")) << info->dump();
  const auto losses = step_losses(events);
  ASSERT_EQ(losses.size(), 30u);
  EXPECT_LT(mean(losses, 20, 30), mean(losses, 0, 10) - 0.5);
}

TEST_F(LanguageCli, GlmTrainsThroughRunOnKernelDocumentationWithTheLossFalling) {
  expect_trains_through_run("glm", data(), dir.path());
}

// FlagPerf's glm case: GLM fine-tuned on ReCoRD from a blank-infilling checkpoint, here the glm
// case's own in tiny sizes, on a hand-made file in SuperGLUE's format. Evaluated on the queries it
// trains on, it learns their fills and reaches the exact-match target.
TEST_F(LanguageCli, GlmFineTunesOnReCoRDFromTheGlmCasesCheckpoint) {
  const std::vector<std::string> tiny = {"num_layers=2",  "hidden_size=64", "num_attention_heads=4",
                                         "seq_length=64", "num_threads=2",  "max_position_embeddings=64"};
  std::vector<std::string> pretrain = tiny;
  pretrain.insert(pretrain.end(), {"max_steps=20", "valid_share=0.05", "save_checkpoint=" + dir.path() + "/glm.pt"});
  Result r = train_on_cpu("glm", pretrain);
  ASSERT_EQ(r.code, 0) << r.output;
  fs::create_directories(dir.path() + "/ReCoRD");
  for (const char* file : {"train.jsonl", "val.jsonl"})
    fs::copy_file(std::string(XPUPERF_SOURCE_DIR) + "/tests/fixtures/record/" + file, dir.path() + "/ReCoRD/" + file);
  fs::copy_file(kVocab + "/bert-base-uncased/vocab.txt", dir.path() + "/ReCoRD/vocab.txt");
  std::vector<std::string> all = {"train",      "--case", "glm_record", "--vendor", "cpu",
                                  "--hardware", "CPU",    "--data-dir", dir.path()};
  for (const auto& set : tiny) all.insert(all.end(), {"--set", set});
  for (const char* set : {"init_checkpoint=glm.pt", "eval_data=ReCoRD/train.jsonl", "dropout=0", "lr=0.002",
                          "lr_scheduler=constant", "max_epochs=30", "eval_interval_epochs=4", "log_freq=3"})
    all.insert(all.end(), {"--set", set});
  r = xpuperf(all, XPUPERF_SOURCE_DIR, {}, 600);
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "glm.pt (LibTorch archive)")) << r.output;
  const auto events = events_of(r.output);
  const auto* info = event_value(events, "SUBMIT_INFO");
  ASSERT_TRUE(info);
  EXPECT_TRUE(has((*info)["train_data"].get<std::string>(), "6 queries, 6 candidate rows each")) << info->dump();
  const auto* eval = event_value(events, "EVALUATE");
  ASSERT_TRUE(eval);
  EXPECT_GE((*eval)["f1"].get<double>(), (*eval)["exact_match"].get<double>());
  const auto* finished = event_value(events, "FINISHED");
  ASSERT_TRUE(finished);
  EXPECT_EQ((*finished)["final_metric"]["name"], "exact_match") << finished->dump();
  EXPECT_TRUE((*finished)["converged"].get<bool>()) << finished->dump();
  EXPECT_GE((*finished)["final_metric"]["value"].get<double>(), 0.8);
  // Six rows of 64 positions a query: what tokens/s counts.
  EXPECT_EQ((*finished)["tokens_per_sample"], 6 * 64);
}

// LoRA fine-tuning as FlagPerf's llama2_7b_finetune runs it, in a tiny size: a Llama trained from
// scratch and saved, then fine-tuned from that checkpoint with adapters on q_proj and v_proj only,
// the adapters saved as PEFT saves them.
TEST_F(LanguageCli, LlamaFineTunesWithLoraFromItsOwnCheckpoint) {
  const std::vector<std::string> tiny = {"num_hidden_layers=2",   "hidden_size=64",        "intermediate_size=128",
                                         "num_attention_heads=4", "num_key_value_heads=2", "seq_length=32",
                                         "train_batch_size=8",    "eval_batch_size=8",     "lr=0.003",
                                         "warmup_steps=2",        "max_steps=12",          "log_freq=1",
                                         "eval_interval_steps=0", "num_threads=2",         "valid_share=0.01"};
  const std::string base = dir.path() + "/base.pt", adapter = dir.path() + "/adapter";
  Result r = train_on_cpu("llama", with(tiny, {"save_checkpoint=" + base}));
  ASSERT_EQ(r.code, 0) << r.output;
  const auto scratch = step_losses(events_of(r.output));
  ASSERT_EQ(scratch.size(), 12u);

  r = train_on_cpu("llama", with(tiny, {"init_checkpoint=" + base, "lora_rank=4", "lora_alpha=8", "lora_dropout=0",
                                        "save_checkpoint=" + adapter}));
  ASSERT_EQ(r.code, 0) << r.output;
  const auto events = events_of(r.output);
  const auto tuned = step_losses(events);
  ASSERT_EQ(tuned.size(), 12u);
  // It starts where the saved model ended, far below a fresh model's ln(128,256) = 11.76.
  EXPECT_LT(tuned.front(), scratch.front() - 1.0) << "first losses: " << scratch.front() << ", " << tuned.front();
  const auto* finished = event_value(events, "FINISHED");
  ASSERT_TRUE(finished);
  const auto& lora = (*finished)["lora"];
  EXPECT_EQ(lora["adapted_layers"], 4) << finished->dump();
  // q_proj: A 4 × 64, B 64 × 4; v_proj: A 4 × 64, B 32 × 4; two layers.
  EXPECT_EQ(lora["trained_parameters"], 2 * (4 * 64 + 64 * 4 + 4 * 64 + 32 * 4)) << finished->dump();
  EXPECT_GT(lora["frozen_parameters"].get<std::int64_t>(), 128256 * 64) << finished->dump();
  EXPECT_TRUE(fs::exists(adapter + "/adapter_model.safetensors"));
  const auto config = nlohmann::json::parse(test::read_file(adapter + "/adapter_config.json"));
  EXPECT_EQ(config["r"], 4);
  EXPECT_EQ(config["task_type"], "CAUSAL_LM");
}

// Sequence packing (dynamic shapes): BERT's samples packed into rows, several a row, so that an
// epoch has fewer rows with a larger share of real tokens, and the loss falls as it does padded.
TEST_F(LanguageCli, BertPacksSequencesIntoFewerRowsOfMoreRealTokens) {
  const std::vector<std::string> tiny = {"num_hidden_layers=2",   "hidden_size=64",  "num_attention_heads=4",
                                         "intermediate_size=256", "seq_length=64",   "train_batch_size=16",
                                         "eval_batch_size=64",    "lr=0.002",        "warmup_steps=5",
                                         "max_steps=30",          "log_freq=1",      "eval_interval_steps=0",
                                         "num_threads=2",         "valid_share=0.05"};
  std::map<bool, double> share;
  std::map<bool, std::string> described;
  for (const bool packing : {false, true}) {
    const Result r = train_on_cpu("bert", with(tiny, {packing ? "sequence_packing=true" : "sequence_packing=false"}));
    ASSERT_EQ(r.code, 0) << r.output;
    const auto events = events_of(r.output);
    const auto losses = step_losses(events);
    ASSERT_EQ(losses.size(), 30u);
    EXPECT_LT(mean(losses, 20, 30), mean(losses, 0, 5) - 0.5) << "packing " << packing;
    const auto* step = event_value(events, "STEP_END");
    ASSERT_TRUE(step && step->contains("real_token_share")) << r.output;
    share[packing] = (*step)["real_token_share"].get<double>();
    described[packing] = (*event_value(events, "SUBMIT_INFO"))["train_data"].get<std::string>();
    const auto* eval = event_value(events, "EVALUATE");
    ASSERT_TRUE(eval);
    EXPECT_GT((*eval)["accuracy"].get<double>(), 0.0);
  }
  EXPECT_GT(share[true], share[false] + 0.05) << described[false] << " | " << described[true];
  EXPECT_GT(share[true], 0.85) << described[true];
  EXPECT_TRUE(has(described[true], "packed into")) << described[true];
}

// A fine-tuning run's training data described with `data_says`, and its held-out accuracy: two
// labels of about as many held-out paragraphs each, so chance is one half.
void expect_classifier_beats_chance(const std::vector<PerfLogEvent>& events, const std::string& data_says) {
  const auto* info = event_value(events, "SUBMIT_INFO");
  ASSERT_TRUE(info);
  EXPECT_TRUE(has((*info)["train_data"].get<std::string>(), data_says)) << info->dump();
  const auto* finished = event_value(events, "FINISHED");
  ASSERT_TRUE(finished);
  EXPECT_EQ((*finished)["final_metric"]["name"], "accuracy") << finished->dump();
  EXPECT_GT((*finished)["final_metric"]["value"].get<double>(), 0.6) << finished->dump();
}

// Rapidformer's Finetuner in a tiny size: a BERT pretrained on the kernel's documentation and
// saved, then fine-tuned from that file to tell the process guides' paragraphs from hwmon's; the
// pooler and the classifier start new, and the log says so.
TEST_F(LanguageCli, BertFineTunesToClassifyParagraphsFromItsOwnCheckpoint) {
  const std::vector<std::string> tiny = {"num_hidden_layers=2", "hidden_size=64", "num_attention_heads=4",
                                         "intermediate_size=128", "num_threads=2"};
  const std::string base = dir.path() + "/bert.pt";
  Result r = train_on_cpu("bert", with(tiny, {"seq_length=64", "train_batch_size=16", "eval_batch_size=64", "lr=0.002",
                                              "warmup_steps=2", "max_steps=10", "log_freq=10", "eval_interval_steps=0",
                                              "valid_share=0.05", "save_checkpoint=" + base}));
  ASSERT_EQ(r.code, 0) << r.output;
  r = train_on_cpu("bert_finetune",
                   with(tiny, {"init_checkpoint=" + base, "seq_length=64", "train_batch_size=16", "eval_batch_size=64",
                               "lr=0.003", "warmup_steps=2", "max_steps=50", "log_freq=1", "max_epochs=0"}));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output,
                  "tensors loaded; new, as initialised: bert.pooler.dense.bias, bert.pooler.dense.weight, "
                  "classifier.bias, classifier.weight"))
      << r.output;
  const auto events = events_of(r.output);
  const auto losses = step_losses(events);
  // It may stop before 50 steps: at an epoch's end (19 steps) it is validated and stops once
  // the case's target is reached.
  ASSERT_GE(losses.size(), 19u);
  const std::size_t n = losses.size();
  EXPECT_LT(mean(losses, n - 5, n), mean(losses, 0, 5)) << "the classifier learns";
  expect_classifier_beats_chance(events, "labelled texts, 2 labels");
}

// The same on a decoder: a tiny Llama pretrained on the kernel's documentation and saved, then
// fine-tuned from that file with its last token scored; `score` starts new.
TEST_F(LanguageCli, LlamaFineTunesToClassifyParagraphsFromItsOwnCheckpoint) {
  const std::vector<std::string> tiny = {"num_hidden_layers=2",   "hidden_size=64",        "intermediate_size=128",
                                         "num_attention_heads=4", "num_key_value_heads=2", "num_threads=2"};
  const std::string base = dir.path() + "/llama.pt";
  Result r = train_on_cpu(
      "llama", with(tiny, {"tie_word_embeddings=false", "seq_length=32", "train_batch_size=8", "eval_batch_size=8",
                           "lr=0.003", "warmup_steps=2", "max_steps=10", "log_freq=10", "eval_interval_steps=0",
                           "valid_share=0.01", "save_checkpoint=" + base}));
  ASSERT_EQ(r.code, 0) << r.output;
  r = train_on_cpu("llama_finetune",
                   with(tiny, {"init_checkpoint=" + base, "seq_length=64", "train_batch_size=16", "eval_batch_size=64",
                               "lr=0.003", "warmup_steps=2", "max_steps=50", "log_freq=1", "max_epochs=0"}));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "tensors loaded; new, as initialised: score.weight")) << r.output;
  expect_classifier_beats_chance(events_of(r.output), "2 labels, Llama 3 BPE");
}

TEST_F(LanguageCli, BertTrainsThroughRunOnKernelDocumentationWithTheLossFalling) {
  expect_trains_through_run("bert", data(), dir.path());
}

// Rapidformer's table on the CPU: two Gloo ranks of a tiny GPT on the kernel's documentation. The
// sharded and the pipelined (two micro-batches a step) rows compute what the plain one does, so
// their loss curves match it within a tolerance far below bf16's. (Every switch's curve, ZeRO-2 and
// accumulation's among them, is held still by golden_curves_test.cpp; three rows show the sweep.)
TEST_F(LanguageCli, SweepTabulatesStrategiesWithLossParityOnTwoRanks) {
  const Result r =
      sweep_on_two_ranks("gpt2", 4, 2, "0.001", "fp32; fp32+zero1; fp32+pp2+train_batch_size=8+global_batch_size=16",
                         {"n_layer=2", "n_embd=32", "n_head=2", "seq_length=32", "num_threads=1", "valid_share=0.02",
                          "eval_batch_size=64", "lr=0.003"});
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string sweep = sweep_folder_in(dir.path());
  ASSERT_FALSE(sweep.empty()) << r.output;
  const auto summary = nlohmann::json::parse(test::read_file(sweep + "/summary.json"));
  ASSERT_EQ(summary["rows"].size(), 3u);
  EXPECT_EQ(summary["reference"], "fp32");
  for (const auto& row : summary["rows"]) {
    SCOPED_TRACE(row["name"].get<std::string>());
    EXPECT_EQ(row["status"], "ok") << row.dump();
    EXPECT_EQ(row["rounds"][0]["loss_curve"].size(), 6u);
    EXPECT_GT(row["aggregate"]["tokens_per_second"].get<double>(), 0.0);
    if (row["name"] != "fp32") {
      EXPECT_TRUE(row["parity"]["within"].get<bool>()) << row["parity"].dump();
    }
    // Each row is a run of its own, with the result tree of `xpuperf run`.
    EXPECT_TRUE(fs::exists(row["run_dir"].get<std::string>() + "/gpt2_libtorch_CPU_1_2_1/round1/round_status.json"));
  }
  EXPECT_LT(summary["rows"][1]["parity"]["max_relative_difference"].get<double>(), 1e-5) << "ZeRO-1 is exact";
  const std::string table = test::read_file(sweep + "/summary.md");
  EXPECT_TRUE(has(table, "| fp32+pp2+train_batch_size=8+global_batch_size=16 |")) << table;
  EXPECT_TRUE(has(r.output, "| strategy | samples/s |")) << r.output;
  EXPECT_TRUE(fs::exists(sweep + "/report.html"));
}

// Expert parallelism between processes (Gloo's all-to-all over a subgroup of two real ranks): a
// tiny Llama with 4 experts, whole on each rank and split over both, the same loss at every step.
TEST_F(LanguageCli, SweepOfExpertParallelismKeepsTheLossOnTwoRanks) {
  tiny_llama_pair_keeps_the_loss_on_two_ranks("moe4", "moe4+ep2", {"moe_capacity_factor=1.0"});
}

// bf16_weights on two ranks with the experts split over them: the shared weights' bf16 gradients
// are summed over both ranks in fp32, each rank steps its own experts' masters, and the loss curve
// is the one of fp32 weights under autocast (Distributed.Bf16GradientsAreSummedInFp32AndStayBf16
// checks the sums themselves).
TEST_F(LanguageCli, SweepOfBf16WeightsWithExpertParallelismKeepsTheLossOnTwoRanks) {
  const std::string base = "bf16+optimizer=adamw+fused_optimizer=foreach+moe4+ep2";
  const auto row =
      tiny_llama_pair_keeps_the_loss_on_two_ranks(base, base + "+bf16_weights=true", {"moe_capacity_factor=1.0"});
  const std::string log =
      test::read_file(row.value("run_dir", "") + "/llama_libtorch_CPU_1_2_1/round1/localhost_noderank0/rank0.out.log");
  EXPECT_TRUE(has(log, "\"bf16_weights\":true")) << "the row ran with its switch: " << log.substr(0, 2000);
}

TEST_F(LanguageCli, SweepRefusesACombinationBeforeAnythingStarts) {
  const Result r = xpuperf({"sweep", "gpt2", "--vendor", "cpu", "--hardware", "CPUx1x2", "--data-dir", data(),
                            "--log-dir", dir.path(), "--strategies", "fp32; fp32+graphs; bf16+pp3"},
                           XPUPERF_SOURCE_DIR, {}, 600);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "'pipeline_parallel' 3 × tensor_parallel 1 does not divide the 2 ranks")) << r.output;
  EXPECT_FALSE(has(r.output, "'max_steps' is not a mutable parameter")) << "the sweep's own settings: " << r.output;
  EXPECT_TRUE(fs::is_empty(dir.path())) << "nothing ran";
  const Result graphs = xpuperf({"sweep", "gpt2", "--vendor", "cpu", "--hardware", "CPUx1x2", "--data-dir", data(),
                                 "--log-dir", dir.path(), "--strategies", "fp32; fp32+graphs"},
                                XPUPERF_SOURCE_DIR, {}, 600);
  EXPECT_EQ(graphs.code, 2) << graphs.output;
  EXPECT_TRUE(has(graphs.output, "cuda_graphs: not yet with data parallelism")) << graphs.output;
  EXPECT_TRUE(fs::is_empty(dir.path())) << "nothing ran";
}

// FlagPerf's bertLarge inference case at a small size on the held-out documents the bert training
// case validates on: masked-LM accuracy at the masked positions, the engines agreeing with validation.
// The llm case's prefill prompts from the gpt2 token dataset's held-out documents (a tiny GPT).
TEST_F(LanguageCli, LlmPrefillsPromptsFromTheGpt2AndLlama3TokenDatasets) {
  const auto run = [&](const std::string& architecture, const std::string& dataset, const std::string& vocab) {
    std::vector<std::string> args = {"infer",      "--case", "llm",   "--vendor", "cpu",
                                     "--data-dir", data(),   "--out", dir.path()};
    for (const std::string& set : {"architecture=" + architecture,        "train_data=" + dataset,
                                   std::string("valid_share=0.1"),        "vocab_size=" + vocab,
                                   std::string("hidden_size=32"),         std::string("intermediate_size=48"),
                                   std::string("num_hidden_layers=1"),    std::string("num_attention_heads=2"),
                                   std::string("num_key_value_heads=2"),  std::string("max_position_embeddings=128"),
                                   std::string("seq_length=32"),          std::string("prefill_samples=6"),
                                   std::string("batch_size=4"),           std::string("latency_queries=2"),
                                   std::string("decode_batch_sizes=[1]"), std::string("decode_prompt_tokens=8"),
                                   std::string("decode_output_tokens=3"), std::string("max_batch=2"),
                                   std::string("max_seq_len=64"),         std::string("length_bucket=16"),
                                   std::string("offline_queries=0"),      std::string("sweep_lengths=[]")})
      args.insert(args.end(), {"--set", set});
    return xpuperf(args, XPUPERF_SOURCE_DIR, {}, 600);
  };
  const Result r = run("gpt2", "linux-doc-gpt2", "50257");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto events = events_of(r.output);
  const auto* finished = event_value(events, "FINISHED");
  ASSERT_NE(finished, nullptr) << r.output;
  EXPECT_EQ((*finished)["samples"], 6.0);
  EXPECT_EQ((*finished)["metric"], "next_token_accuracy");
  EXPECT_TRUE(has((*finished)["data"].get<std::string>(), "6 prompts of 32 tokens")) << finished->dump();
  EXPECT_TRUE(has((*finished)["data"].get<std::string>(), "linux-doc-gpt2")) << finished->dump();
  EXPECT_TRUE(has((*finished)["caveat"].get<std::string>(), "synthetic weights")) << finished->dump();
  EXPECT_FALSE(has((*finished)["caveat"].get<std::string>(), "synthetic prompts")) << finished->dump();
  EXPECT_EQ((*finished)["generation"]["decode"].size(), 2u);
  EXPECT_FALSE((*finished)["generation"].contains("offline"));  // offline_queries: 0
  const Result wrong = run("llama", "linux-doc-gpt2", "50257");
  EXPECT_EQ(wrong.code, 1);
  EXPECT_TRUE(has(wrong.output, "prompts for llama come from a token dataset made with Llama 3's tokeniser"))
      << wrong.output;
  const Result llama = run("llama", "linux-doc-llama3", "128256");
  ASSERT_EQ(llama.code, 0) << llama.output;
  const auto llama_events = events_of(llama.output);
  const auto* llama_finished = event_value(llama_events, "FINISHED");
  ASSERT_NE(llama_finished, nullptr) << llama.output;
  EXPECT_TRUE(has((*llama_finished)["data"].get<std::string>(), "linux-doc-llama3")) << llama_finished->dump();
  EXPECT_FALSE(has((*llama_finished)["caveat"].get<std::string>(), "synthetic prompts")) << llama_finished->dump();
}

TEST_F(LanguageCli, BertLargeInferenceReadsTheTokenDatasetAndMatchesValidation) {
  for (const char* engine : {"libtorch", "libtorch-graph"}) {
    SCOPED_TRACE(engine);
    std::vector<std::string> args = {"infer",
                                     "--case",
                                     "bertLarge",
                                     "--vendor",
                                     "cpu",
                                     "--data-dir",
                                     data(),
                                     "--out",
                                     data(),
                                     "--set",
                                     std::string("compiler=") + engine};
    for (const char* set :
         {"fp16=false", "batch_size=4", "max_samples=10", "seq_length=64", "num_hidden_layers=1", "hidden_size=32",
          "num_attention_heads=2", "intermediate_size=64", "latency_queries=3", "valid_share=0.05"})
      args.insert(args.end(), {"--set", set});
    const Result r = xpuperf(args, XPUPERF_SOURCE_DIR, {}, 600);
    ASSERT_EQ(r.code, 0) << r.output;
    const auto events = events_of(r.output);
    const auto* finished = event_value(events, "FINISHED");
    ASSERT_NE(finished, nullptr) << r.output;
    EXPECT_EQ((*finished)["samples"], 10.0);
    EXPECT_EQ((*finished)["metric"], "masked_lm_accuracy");
    EXPECT_EQ((*finished)["top1_agreement_vs_validation"], 1.0) << finished->dump();
    EXPECT_NEAR((*finished)["inference_accuracy"].get<double>(), (*finished)["validation_accuracy"].get<double>(),
                1e-9);
    EXPECT_TRUE(has((*finished)["caveat"].get<std::string>(), "random weights")) << finished->dump();
    EXPECT_TRUE(has(r.output, "linux-doc-bert")) << r.output;
    EXPECT_TRUE(has(r.output, "10 sequences of 64 tokens, 15 % masked")) << r.output;
  }
}

// A Llama with experts says in each STEP_END how many (token, expert) pairs its routers sent and how
// many a capacity dropped, over the steps since the previous one — counted once per forward, also
// where checkpointing runs the layers' forward again in backward.
TEST_F(LanguageCli, LlamaWithExpertsReportsRoutedAndDroppedTokensEachStep) {
  const auto tiny = with(kTinyLlama, {"max_steps=4", "log_freq=2", "eval_interval_steps=0", "num_local_experts=4",
                                      "num_experts_per_tok=2"});
  // 2 steps a STEP_END × 4 × 16 tokens × 2 experts a token × 2 sparse layers.
  const double routed = 2 * 4 * 16 * 2 * 2;
  for (const bool capacity : {true, false}) {
    const Result r = train_on_cpu(
        "llama", with(tiny, {capacity ? "moe_capacity_factor=0.5" : "moe_capacity_factor=0",
                             capacity ? "activation_checkpointing=true" : "activation_checkpointing=false"}));
    ASSERT_EQ(r.code, 0) << r.output;
    int steps = 0;
    for (const auto& e : events_of(r.output)) {
      if (e.event != "STEP_END") continue;
      ++steps;
      ASSERT_TRUE(e.value.contains("moe_routed_pairs")) << e.value.dump();
      EXPECT_EQ(e.value["moe_routed_pairs"].get<double>(), routed) << e.value.dump();
      const double dropped = e.value["moe_dropped_pairs"].get<double>();
      EXPECT_DOUBLE_EQ(e.value["moe_dropped_share"].get<double>(), dropped / routed);
      // A capacity of half the pairs (ceil(0.5 × 128 / 4) = 16 an expert) drops at least half.
      if (capacity)
        EXPECT_GE(dropped, routed / 2) << e.value.dump();
      else
        EXPECT_EQ(dropped, 0.0) << e.value.dump();
    }
    EXPECT_EQ(steps, 2) << r.output;
  }
}

TEST_F(LanguageCli, SyntheticTokensAreLabelledSo) {
  const Result r = train_on_cpu(
      "gpt2", {"synthetic_data=true", "synthetic_tokens=65536", "n_layer=1", "n_embd=32", "n_head=2", "seq_length=32",
               "train_batch_size=4", "max_steps=3", "log_freq=1", "eval_interval_steps=0"});
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "synthetic (65,536 random token ids: throughput only")) << r.output;
}

TEST_F(LanguageCli, ADatasetOfTheOtherTokeniserOrNoneIsRefusedNamingTheFile) {
  // bert's WordPiece ids given to GPT-2.
  Result r = train_on_cpu("gpt2", {"train_data=linux-doc-bert", "max_steps=1"});
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(has(r.output, data() + "/linux-doc-bert.json: the dataset was tokenised with wordpiece")) << r.output;
  EXPECT_TRUE(has(r.output, "--tokenizer gpt2")) << r.output;
  // No dataset under the name.
  r = train_on_cpu("bert", {"train_data=missing", "max_steps=1"});
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(has(r.output, "train_data: no token dataset " + data() + "/missing.bin / .idx")) << r.output;
  EXPECT_TRUE(has(r.output, "xpuperf data tokenize")) << r.output;
}

}  // namespace
}  // namespace xpuperf
