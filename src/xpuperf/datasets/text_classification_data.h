#pragma once
// Sequence-classification data for fine-tuning (Rapidformer's Finetuner): JSON lines, one
// {"text": "...", "label": "..."} a line (the label a string or an integer), which a user brings;
// tokenised (BERT's WordPiece as [CLS] text [SEP], or any tokeniser with its framing), cut to the
// sequence length and padded.
// Labels are numbered in the sorted order of the training file's label names; a validation label
// the training file lacks is an error naming it.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "xpuperf/core/config.h"
#include "xpuperf/datasets/dataset.h"
#include "xpuperf/text/wordpiece.h"

namespace xpuperf::datasets {

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

}  // namespace xpuperf::datasets
