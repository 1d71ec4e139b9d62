// GLM fine-tuned on SuperGLUE's ReCoRD (FlagPerf's glm case: GLM-large from the blocklm-large-blank
// checkpoint), as GLM's cloze: each candidate entity fills the query's blank, scored by the sum of
// the log-probabilities of its tokens and [eop] (models::GlmModelImpl::target_log_probs); the loss
// is the cross entropy of the query's candidates with the matching ones as the answer. The
// metrics: ReCoRD's exact match and F1 of the best-scored candidate (text/record.h). The data is
// ReCoRD's train.jsonl and val.jsonl as SuperGLUE ships them, which a user brings, tokenised here
// with BERT's vocab.txt (bert-large-uncased's, GLM-large's vocabulary).

#include <algorithm>
#include <limits>
#include <map>

#include "xpuperf/data/idx.h"
#include "xpuperf/datasets/glm_datasets.h"
#include "xpuperf/text/tokenizer_error.h"
#include "xpuperf/train/families/glm_case.h"
#include "xpuperf/train/families/text_classification.h"

namespace xpuperf::cases {
namespace {

class GlmRecordCase : public train::GlmCaseBase {
 public:
  train::Datasets datasets(const train::CaseContext& ctx) override {
    const Config& cfg = ctx.config;
    read_sizes(cfg);
    const text::WordPiece wordpiece = datasets::wordpiece_from(cfg);
    if (std::min(sop_, eop_) < wordpiece.vocab_size())
      throw ConfigError("sop_id " + std::to_string(sop_) + " and eop_id " + std::to_string(eop_) +
                        " must come after vocab_file's " + std::to_string(wordpiece.vocab_size()) + " tokens");
    const datasets::RecordDataset::Special special{wordpiece.cls(), wordpiece.mask(), sop_, eop_, wordpiece.pad()};
    const auto read = [&](const std::string& key) {
      const auto path = datasets::data_file(cfg, key);
      try {
        return std::make_pair(path, text::read_record_jsonl(path));
      } catch (const text::TokenizerError& e) {
        throw data::DataError(key + ": " + e.what());
      }
    };
    const auto [train_path, train_queries] = read("train_data");
    const auto [eval_path, eval_queries] = read("eval_data");
    const auto rows = cfg.get_int("max_candidates", 0);
    train_ =
        std::make_shared<datasets::RecordDataset>(train_queries, wordpiece, special, length_, rows, true, train_path);
    eval_ = std::make_shared<datasets::RecordDataset>(eval_queries, wordpiece, special, length_, 0, false, eval_path);
    return {train_, eval_};
  }

  // −log of the matching candidates' share of the softmax over the query's candidates.
  torch::Tensor forward_step(const train::Batch& batch) override {
    const auto scores = candidate_scores(batch);
    const auto matching = scores.masked_fill(batch[1].le(0), -std::numeric_limits<float>::infinity());
    return (scores.logsumexp(1) - matching.logsumexp(1)).mean();
  }

  void evaluate(const train::Batch& batch, train::MetricSums& sums) override {
    const auto pick = candidate_scores(batch).argmax(1, true);
    const auto n = static_cast<double>(pick.size(0));
    sums.add("exact_match", batch[1].gather(1, pick).sum().item<double>(), n);
    sums.add("f1", batch[2].gather(1, pick).sum().item<double>(), n);
  }

  // A query is its candidates' rows: the decoder and the output layer over each row's positions.
  double train_flops_per_sample() const override {
    if (!model_ || !train_) return 0.0;
    const auto l = static_cast<double>(length_);
    return static_cast<double>(train_->candidates()) *
           (model_->training_flops_per_token(length_) * l + model_->output_flops_per_position() * l);
  }
  std::int64_t tokens_per_sample() const override { return train_ ? train_->candidates() * length_ : 0; }
  bool starts_from_pretrained() const override { return true; }

 private:
  // Each candidate's score (queries, candidates), in fp32; −inf at the padding rows.
  torch::Tensor candidate_scores(const train::Batch& batch) {
    const models::GlmInputs in{batch[3], batch[4], batch[5], batch[6], batch[7], 0};
    const auto& valid = batch[0];
    const auto scores = model_->target_log_probs(in).view({valid.size(0), valid.size(1)});
    return scores.masked_fill(valid.logical_not(), -std::numeric_limits<float>::infinity());
  }

  std::shared_ptr<datasets::RecordDataset> train_, eval_;
};

XPUPERF_REGISTER_TRAINING_CASE("glm_record", "libtorch", GlmRecordCase);

}  // namespace
}  // namespace xpuperf::cases
