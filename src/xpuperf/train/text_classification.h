#pragma once
// Sequence-classification data for fine-tuning (Rapidformer's Finetuner): JSON lines, one
// {"text": "...", "label": "..."} a line (the label a string or an integer), which a user brings;
// tokenised (BERT's WordPiece as [CLS] text [SEP], or any tokeniser with its framing), cut to the
// sequence length and padded.
// Labels are numbered in the sorted order of the training file's label names; a validation label
// the training file lacks is an error naming it.

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "xpuperf/text/wordpiece.h"
#include "xpuperf/train/training_case.h"

namespace xpuperf::train {

// A file the config names under `key`, relative to data_dir unless absolute; ConfigError naming
// the key when it is empty or data_dir is.
std::string data_file(const Config& cfg, const std::string& key);

// The WordPiece of the config's vocab_file (relative to data_dir) and lower_case; data::DataError
// naming vocab_file where it cannot be used.
text::WordPiece wordpiece_from(const Config& cfg);

struct LabelledTexts {
  std::vector<std::string> texts, labels;
};

// data::DataError naming the file and line of anything that is not such a line.
LabelledTexts read_labelled_jsonl(const std::string& path, const std::string& text_key = "text",
                                  const std::string& label_key = "label");

struct ClassificationData {
  std::shared_ptr<TensorDataset> train, eval;
  std::vector<std::string> label_names;  // by label id
};

// How a text becomes a sequence: the tokeniser's ids between an optional first and last token
// ([CLS] … [SEP] for BERT, <|begin_of_text|> … for Llama), then `pad` up to the length.
using TextEncoder = std::function<std::vector<std::int32_t>(std::string_view)>;
struct TextFraming {
  std::int32_t begin = -1, end = -1, pad = 0;  // -1: none
  std::string tokenizer;                       // for the data's description
};

// Batches of (ids, token types, keep, label), each (n, length) but the labels (n).
ClassificationData classification_data(const std::string& train_path, const std::string& eval_path,
                                       const TextEncoder& encode, const TextFraming& framing, std::int64_t length);
// BERT's framing: [CLS] WordPiece pieces [SEP], padded with [PAD].
TextFraming wordpiece_framing(const text::WordPiece& wordpiece);

// What the fine-tuning cases (bert_finetune, llama_finetune) share: a pretrained start, the loss
// as the step, and accuracy and loss as the metrics. A case adds its data and model.
class TextClassificationCase : public TrainingCase {
 public:
  torch::Tensor forward_step(const Batch& batch) override { return loss_and_correct(batch).first; }
  void evaluate(const Batch& batch, MetricSums& sums) override;
  double train_flops_per_sample() const override { return training_flops_per_sequence(length_); }
  std::int64_t tokens_per_sample() const override { return length_; }
  bool starts_from_pretrained() const override { return true; }

 protected:
  // The mean cross entropy of a batch (ids, token types, keep, labels) and how many it got right.
  virtual std::pair<torch::Tensor, torch::Tensor> loss_and_correct(const Batch& batch) = 0;
  // 0 before the model exists.
  virtual double training_flops_per_sequence(std::int64_t tokens) const = 0;
  // The config's train_data and eval_data as `classification_data` reads them, seq_length tokens a
  // text (default `default_length`; at least the framing and a token, at most `positions`, the
  // model's longest sequence, named by `positions_key`); sets length_ and labels_.
  Datasets labelled_datasets(const CaseContext& ctx, const TextEncoder& encode, const TextFraming& framing,
                             std::int64_t default_length, std::int64_t positions, const std::string& positions_key);

  std::int64_t length_ = 0, labels_ = 2;
};

}  // namespace xpuperf::train
