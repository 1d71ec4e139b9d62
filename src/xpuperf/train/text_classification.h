#pragma once
// Sequence-classification data for fine-tuning (Rapidformer's Finetuner): JSON lines, one
// {"text": "...", "label": "..."} a line (the label a string or an integer), which a user brings;
// tokenised with BERT's WordPiece as [CLS] text [SEP], cut to the sequence length and padded.
// Labels are numbered in the sorted order of the training file's label names; a validation label
// the training file lacks is an error naming it.

#include <memory>
#include <string>
#include <vector>

#include "xpuperf/text/wordpiece.h"
#include "xpuperf/train/training_case.h"

namespace xpuperf::train {

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

// Batches of (ids, token types, keep, label), each (n, length) but the labels (n).
ClassificationData wordpiece_classification_data(const std::string& train_path, const std::string& eval_path,
                                                 const text::WordPiece& wordpiece, std::int64_t length);

}  // namespace xpuperf::train
