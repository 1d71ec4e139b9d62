#include "xpuperf/datasets/token_datasets.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "xpuperf/core/files.h"
#include "xpuperf/data/data_error.h"
#include "xpuperf/text/tokenize_corpus.h"
#include "xpuperf/text/tokenizer_error.h"

namespace xpuperf::datasets {
namespace fs = std::filesystem;
using nlohmann::json;

std::string thousands(std::int64_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

namespace {

// PREFIX from what a user may write: PREFIX, PREFIX.bin or PREFIX.idx, relative to data_dir.
std::string token_prefix(const std::string& data_dir, std::string name) {
  for (const char* ext : {".bin", ".idx"})
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ext) == 0) name.resize(name.size() - 4);
  if (fs::path(name).is_absolute() || data_dir.empty()) return name;
  return (fs::path(data_dir) / name).string();
}

// PREFIX.json, written beside the dataset by `xpuperf data tokenize`; absent for other tools'.
json read_metadata(const std::string& prefix) {
  std::ifstream in(prefix + ".json");
  if (!in) return json::object();
  json meta;
  try {
    meta = json::parse(in);
  } catch (const json::exception& e) {
    throw data::DataError(prefix + ".json: not valid JSON (" + e.what() + ")");
  }
  // The keys read from it, with the types `xpuperf data tokenize` writes: an edited file is named.
  const auto wrong = [&](const std::string& key, const char* type) {
    return data::DataError(prefix + ".json: '" + key + "' must be " + type + ", got " +
                           meta.at(json::json_pointer("/" + key)).dump() +
                           " (the dataset's metadata, written by `xpuperf data tokenize`; fix or remove the file)");
  };
  if (!meta.is_object())
    throw data::DataError(prefix + ".json: not a JSON object (the metadata `xpuperf data tokenize` writes)");
  if (meta.contains("synthetic") && !meta["synthetic"].is_boolean()) throw wrong("synthetic", "true or false");
  if (meta.contains("tokenizer") && !meta["tokenizer"].is_string()) throw wrong("tokenizer", "a string");
  if (meta.contains("special_ids")) {
    if (!meta["special_ids"].is_object()) throw wrong("special_ids", "an object of token ids");
    for (const auto& [name, id] : meta["special_ids"].items())
      if (!id.is_number_integer()) throw wrong("special_ids/" + name, "a token id (an integer)");
  }
  return meta;
}

std::shared_ptr<const text::TokenFile> open_file(const std::string& prefix, const std::string& key) {
  if (!fs::exists(prefix + ".bin") && !fs::exists(prefix + ".idx"))
    throw data::DataError(key + ": no token dataset " + prefix +
                          ".bin / .idx (make one with `xpuperf data tokenize`, " +
                          "docs/DATA.md; `make language-data` makes data/text), or set synthetic_data: true");
  std::shared_ptr<const text::TokenFile> file;
  try {
    file = std::make_shared<const text::TokenFile>(prefix);
  } catch (const text::TokenizerError& e) {
    throw data::DataError(key + ": " + e.what());
  }
  if (file->documents() == 0 || file->tokens() == 0)
    throw data::DataError(key + ": " + prefix + ".bin / .idx hold no document (no tokens); tokenise some text into it");
  return file;
}

// The tokeniser PREFIX.json says made a dataset of text; "" for synthetic ids or no metadata.
std::string tokenizer_of(const json& meta) {
  if (meta.value("synthetic", false) || !meta.contains("tokenizer") || !meta["tokenizer"].is_string()) return "";
  return meta["tokenizer"].get<std::string>();
}

// Refuses a dataset another tokeniser made, or with ids the model has no row for.
void check_vocabulary(const text::TokenFile& file, const json& meta, const std::string& prefix,
                      const std::string& tokenizer, std::int64_t vocab_size, const std::string& bound) {
  if (const std::string made_by = tokenizer_of(meta); !made_by.empty() && made_by != tokenizer)
    throw data::DataError(prefix + ".json: the dataset was tokenised with " + made_by + ", this case's model reads " +
                          tokenizer + " ids; tokenise the text again with --tokenizer " + tokenizer);
  const auto [min_id, max_id] = file.id_range();
  if (min_id < 0)
    throw data::DataError(prefix + ".bin: holds token id " + std::to_string(min_id) +
                          ": ids are never negative; the file is damaged or was not written as token ids");
  if (max_id >= vocab_size)
    throw data::DataError(prefix + ".bin: holds token id " + std::to_string(max_id) + ", but ids must be below " +
                          std::to_string(vocab_size) + " (" + bound +
                          "); the dataset was made with another vocabulary");
  if (meta.contains("special_ids") && meta["special_ids"].is_object())
    for (const auto& [name, id] : meta["special_ids"].items())
      if (id.is_number_integer() && (id.get<std::int64_t>() < 0 || id.get<std::int64_t>() >= vocab_size))
        throw data::DataError(prefix + ".json: special_ids/" + name + " is " + std::to_string(id.get<std::int64_t>()) +
                              ", but ids must be below " + std::to_string(vocab_size) + " (" + bound +
                              "); the dataset was made with another vocabulary");
}

std::string describe(const std::string& name, const text::TokenFile& file, text::DocumentRange docs, const json& meta,
                     const std::string& which) {
  const std::int64_t tokens = file.document_start(docs.last) - file.document_start(docs.first);
  std::string d =
      name + ", " + which + ": " + thousands(tokens) + " tokens in " + thousands(docs.last - docs.first) + " documents";
  if (meta.value("synthetic", false)) d += " (synthetic: random token ids; throughput only)";
  if (const std::string made_by = tokenizer_of(meta); !made_by.empty()) d += ", tokenised with " + made_by;
  return d;
}

}  // namespace

TokenCorpus open_token_corpus(const CaseContext& ctx, const std::string& tokenizer, std::int64_t vocab_size,
                              const std::string& bound) {
  const Config& cfg = ctx.config;
  TokenCorpus corpus;
  const double valid_share = cfg.get_number("valid_share", 0.02);
  if (valid_share < 0 || valid_share >= 1)
    throw ConfigError(cfg.at("valid_share").source.str() + ": 'valid_share' must be in [0, 1), got " +
                      std::to_string(valid_share));
  const std::string eval_name = cfg.get_string("eval_data", "");
  if (eval_name.empty() && valid_share <= 0)
    throw ConfigError("no validation data: set eval_data (a token dataset) or valid_share (a share of train_data)");

  if (cfg.get_bool("synthetic_data", false)) {
    // Written for this run (every rank the same, from the seed), read as a real one would be.
    const std::int64_t tokens = cfg.get_int("synthetic_tokens", 16 << 20);
    if (tokens < 1024) throw ConfigError("synthetic_tokens must be 1024 or more, got " + std::to_string(tokens));
    const fs::path dir = fs::temp_directory_path() / ("xpuperf-synthetic-tokens-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    text::TokenizeOptions o;
    o.synthetic_tokens = tokens;
    o.vocab_size = vocab_size;
    o.seed = static_cast<std::uint64_t>(cfg.get_int("seed", 1234));
    o.prefix = (dir / "tokens").string();
    std::shared_ptr<const text::TokenFile> file;
    try {
      text::tokenize_corpus(o, {});
      file = std::make_shared<const text::TokenFile>(o.prefix);
    } catch (const text::TokenizerError& e) {
      remove_tree(dir.string());
      throw data::DataError(std::string("synthetic tokens: ") + e.what());
    }
    remove_tree(dir.string());  // the mapping stays valid; nothing is left behind
    const std::string what = "synthetic (" + thousands(tokens) + " random token ids: throughput only, no " +
                             "perplexity or accuracy claimed)";
    corpus.train = {file, text::split_documents(*file, std::max(valid_share, 0.02), false), what + ", train"};
    corpus.eval = {file, text::split_documents(*file, std::max(valid_share, 0.02), true), what + ", held out"};
    return corpus;
  }

  const std::string data_dir = cfg.get_string("data_dir", "");
  const std::string train_name = cfg.get_string("train_data", "");
  if (data_dir.empty() && !fs::path(train_name).is_absolute())
    throw ConfigError(
        "data_dir is empty: set it to the folder holding the token dataset train_data names (`xpuperf "
        "data tokenize ... -o DIR/" +
        train_name + "`, docs/DATA.md; `make language-data` makes data/text), or set synthetic_data: true");
  const std::string train_prefix = token_prefix(data_dir, train_name);
  auto train_file = open_file(train_prefix, "train_data");
  const json meta = read_metadata(train_prefix);
  check_vocabulary(*train_file, meta, train_prefix, tokenizer, vocab_size, bound);
  if (meta.contains("special_ids")) {
    const json& s = meta["special_ids"];
    corpus.cls = s.value("cls", corpus.cls);
    corpus.sep = s.value("sep", corpus.sep);
    corpus.mask = s.value("mask", corpus.mask);
    corpus.pad = s.value("pad", corpus.pad);
  }
  const std::string name = fs::path(train_prefix).filename().string() + " (" + train_prefix + ")";
  if (eval_name.empty()) {
    corpus.train = {train_file, text::split_documents(*train_file, valid_share, false), ""};
    corpus.eval = {train_file, text::split_documents(*train_file, valid_share, true), ""};
    if (corpus.eval.documents.last <= corpus.eval.documents.first)
      throw data::DataError(train_prefix + ": one document only, none to hold out for validation; set eval_data");
    corpus.train.description = describe(name, *train_file, corpus.train.documents, meta, "training documents");
    corpus.eval.description = describe(name, *train_file, corpus.eval.documents, meta, "held-out documents");
  } else {
    const std::string eval_prefix = token_prefix(data_dir, eval_name);
    auto eval_file = open_file(eval_prefix, "eval_data");
    const json eval_meta = read_metadata(eval_prefix);
    check_vocabulary(*eval_file, eval_meta, eval_prefix, tokenizer, vocab_size, bound);
    corpus.train = {train_file, {0, train_file->documents()}, ""};
    corpus.eval = {eval_file, {0, eval_file->documents()}, ""};
    corpus.train.description = describe(name, *train_file, corpus.train.documents, meta, "all documents");
    corpus.eval.description = describe(fs::path(eval_prefix).filename().string() + " (" + eval_prefix + ")", *eval_file,
                                       corpus.eval.documents, eval_meta, "all documents");
  }
  return corpus;
}

GptTokenDataset::GptTokenDataset(TokenSplit split, std::int64_t length, bool documents)
    : split_(std::move(split)),
      samples_(*split_.file, split_.documents, length),
      length_(length),
      documents_(documents) {
  description_ =
      split_.description + "; " + thousands(samples_.size()) + " sequences of " + std::to_string(length) + " tokens";
  if (documents_) description_ += ", each document attending within itself (sequence packing)";
}

Batch GptTokenDataset::get(const torch::Tensor& indices) const {
  const auto n = indices.size(0);
  auto ids = torch::empty({n, length_ + 1}, torch::kInt);
  const auto* index = indices.data_ptr<std::int64_t>();
  for (std::int64_t i = 0; i < n; ++i) samples_.read(index[i], ids.data_ptr<std::int32_t>() + i * (length_ + 1));
  if (!documents_) return {ids.to(torch::kLong)};
  auto documents = torch::empty({n, length_ + 1}, torch::kInt);
  for (std::int64_t i = 0; i < n; ++i)
    samples_.documents(index[i], documents.data_ptr<std::int32_t>() + i * (length_ + 1));
  return {ids.to(torch::kLong), documents.to(torch::kLong)};
}

BertTokenDataset::BertTokenDataset(TokenSplit split, std::int64_t length, text::BertSamples::Special special,
                                   std::uint64_t seed, bool dynamic_masking, bool packing)
    : split_(std::move(split)),
      samples_(*split_.file, split_.documents, length, special),
      length_(length),
      seed_(seed),
      dynamic_(dynamic_masking),
      packing_(packing),
      pad_(special.pad) {
  std::vector<std::int64_t> lengths(static_cast<std::size_t>(samples_.size()));
  std::int64_t real = 0;
  for (std::int64_t i = 0; i < samples_.size(); ++i) {
    lengths[static_cast<std::size_t>(i)] = samples_.real_length(i);
    real += lengths[static_cast<std::size_t>(i)];
  }
  if (packing_) {
    rows_ = text::pack_best_fit(lengths, length);
    for (const auto& row : rows_) {
      std::int64_t masked = 0;
      for (const auto i : row) masked += text::BertSamples::masked_count(lengths[static_cast<std::size_t>(i)]);
      max_masked_ = std::max(max_masked_, masked);
    }
  } else {
    for (const auto l : lengths) max_masked_ = std::max(max_masked_, text::BertSamples::masked_count(l));
  }
  const std::int64_t rows = size();
  real_share_ = rows > 0 ? static_cast<double>(real) / static_cast<double>(rows * length) : 0.0;
  description_ = split_.description + "; " + thousands(samples_.size()) + " spans of up to " + std::to_string(length) +
                 " tokens, 15 % masked";
  if (packing_)
    description_ += ", packed into " + thousands(rows) + " rows of " + std::to_string(length) + " (" +
                    std::to_string(static_cast<int>(std::lround(100 * real_share_))) + " % real tokens)";
  else
    description_ += " (" + std::to_string(static_cast<int>(std::lround(100 * real_share_))) + " % real tokens)";
}

void BertTokenDataset::start_epoch(const EpochPlan& plan) {
  IndexedDataset::start_epoch(plan);
  epoch_ = plan.epoch;
}

Batch BertTokenDataset::get_packed(const torch::Tensor& indices, std::uint64_t seed) const {
  const auto n = indices.size(0);
  auto ids = torch::full({n, length_}, 0, torch::kLong);
  auto labels = torch::full({n, length_}, -100, torch::kLong);
  auto segments = torch::zeros({n, length_}, torch::kLong);
  const auto* index = indices.data_ptr<std::int64_t>();
  for (std::int64_t r = 0; r < n; ++r) {
    auto* row_ids = ids.data_ptr<std::int64_t>() + r * length_;
    auto* row_labels = labels.data_ptr<std::int64_t>() + r * length_;
    auto* row_segments = segments.data_ptr<std::int64_t>() + r * length_;
    std::int64_t at = 0, segment = 0;
    const auto& row = rows_.at(static_cast<std::size_t>(index[r]));
    for (const auto sample : row) {
      const text::BertSample s = samples_.get(sample, seed);
      const auto real = samples_.real_length(sample);
      ++segment;
      for (std::int64_t i = 0; i < real; ++i) {
        row_ids[at + i] = s.ids[static_cast<std::size_t>(i)];
        row_labels[at + i] = s.labels[static_cast<std::size_t>(i)];
        row_segments[at + i] = segment;
      }
      at += real;
    }
    for (std::int64_t i = at; i < length_; ++i) row_ids[i] = pad_;  // segment 0: never attended to from a sample
  }
  return {ids, torch::zeros({n, length_}, torch::kLong), segments, labels};
}

Batch BertTokenDataset::get(const torch::Tensor& indices) const {
  if (packing_) return get_packed(indices, dynamic_ ? seed_ + 1000003ull * static_cast<std::uint64_t>(epoch_) : seed_);
  const auto n = indices.size(0);
  auto ids = torch::empty({n, length_}, torch::kLong);
  auto labels = torch::empty({n, length_}, torch::kLong);
  auto keep = torch::empty({n, length_}, torch::kBool);
  const auto* index = indices.data_ptr<std::int64_t>();
  const std::uint64_t seed = dynamic_ ? seed_ + 1000003ull * static_cast<std::uint64_t>(epoch_) : seed_;
  for (std::int64_t i = 0; i < n; ++i) {
    const text::BertSample s = samples_.get(index[i], seed);
    std::copy(s.ids.begin(), s.ids.end(), ids.data_ptr<std::int64_t>() + i * length_);
    std::copy(s.labels.begin(), s.labels.end(), labels.data_ptr<std::int64_t>() + i * length_);
    std::copy(s.keep.begin(), s.keep.end(), keep.data_ptr<bool>() + i * length_);
  }
  return {ids, torch::zeros({n, length_}, torch::kLong), keep, labels};
}

}  // namespace xpuperf::datasets
