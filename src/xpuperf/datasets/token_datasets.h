#pragma once
// The language cases' data: a token dataset made by `xpuperf data tokenize` (text/token_file.h),
// read through its mmap a batch at a time, or a synthetic one written for the run and labelled
// so. Validation is a separate token dataset (`eval_data`) or the held-out last documents of the
// training one (`valid_share`).

#include <cstdint>
#include <memory>
#include <string>

#include "xpuperf/datasets/dataset.h"
#include "xpuperf/text/samples.h"

namespace xpuperf::datasets {

// n with thousands separated by commas, for the datasets' descriptions.
std::string thousands(std::int64_t n);

// One split: the file (shared by both splits when validation is held out of it), its documents
// and what to call it.
struct TokenSplit {
  std::shared_ptr<const text::TokenFile> file;
  text::DocumentRange documents;
  std::string description;
};

struct TokenCorpus {
  TokenSplit train, eval;
  // BERT's special ids, from the dataset's PREFIX.json (wordpiece) or bert-base-uncased's.
  std::int32_t cls = 101, sep = 102, mask = 103, pad = 0;
};

// The case's token datasets, from config keys data_dir, train_data, eval_data, valid_share,
// synthetic_data, synthetic_tokens and seed. `tokenizer` is the one the case's model was made
// for ("gpt2" or "wordpiece"): a dataset that says another made it is refused, and so is one with
// ids of `vocab_size` or more, or special ids (PREFIX.json's special_ids) outside it; `bound`
// names where that limit comes from for the message. Errors name the file and the key to change.
TokenCorpus open_token_corpus(const CaseContext& ctx, const std::string& tokenizer, std::int64_t vocab_size,
                              const std::string& bound = "the model's vocab_size");

// GPT: samples of `length` + 1 consecutive tokens (inputs and next-token targets), one int64
// tensor (batch, length + 1); with `documents` (sequence_packing: true) a second, each token's
// document numbered from 0 in its sample (models/documents.h masks attention by it).
class GptTokenDataset : public IndexedDataset {
 public:
  GptTokenDataset(TokenSplit split, std::int64_t length, bool documents = false);
  std::int64_t size() const override { return samples_.size(); }
  std::string description() const override { return description_; }
  Batch get(const torch::Tensor& indices) const override;

 private:
  TokenSplit split_;
  text::GptSamples samples_;
  std::int64_t length_;
  bool documents_;
  std::string description_;
};

// BERT masked-LM: ids, token types, the padding mask (true at real tokens) and labels (−100 but
// at masked positions), each (batch, length). Training draws a sample's masking anew each epoch
// (RoBERTa's dynamic masking); evaluation masks the same way every time, so its accuracy compares.
//
// With `packing` (sequence_packing: true) a sample is a row of `length` tokens holding several
// [CLS] span [SEP] samples (text::pack_best_fit), each masked as on its own; the third tensor is
// then the segment of each token (1, 2, ... for the row's samples, 0 at padding), from which the
// case makes the attention mask (tokens of one segment see each other only) and the positions,
// counted from 0 in each segment (models/documents.h).
class BertTokenDataset : public IndexedDataset {
 public:
  BertTokenDataset(TokenSplit split, std::int64_t length, text::BertSamples::Special special, std::uint64_t seed,
                   bool dynamic_masking, bool packing = false);
  std::int64_t size() const override { return packing_ ? static_cast<std::int64_t>(rows_.size()) : samples_.size(); }
  std::string description() const override { return description_; }
  void start_epoch(const EpochPlan& plan) override;
  Batch get(const torch::Tensor& indices) const override;
  // The most masked positions any sample (packed row) of this dataset has: a bound the model's
  // prediction head can be sized by ahead of the batch.
  std::int64_t max_masked_per_sample() const { return max_masked_; }
  // The share of the samples' positions that are real tokens, not padding.
  double real_token_share() const { return real_share_; }

 private:
  Batch get_packed(const torch::Tensor& indices, std::uint64_t seed) const;

  TokenSplit split_;
  text::BertSamples samples_;
  std::int64_t length_;
  std::uint64_t seed_;
  bool dynamic_, packing_;
  std::int32_t pad_;
  std::vector<std::vector<std::int64_t>> rows_;  // packing: the samples of each row
  std::int64_t max_masked_ = 0;
  double real_share_ = 0;
  std::int64_t epoch_ = 0;
  std::string description_;
};

}  // namespace xpuperf::datasets
