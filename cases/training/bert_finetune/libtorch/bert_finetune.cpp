// BERT fine-tuning for sequence classification (Rapidformer's Finetuner): Hugging Face's
// BertForSequenceClassification layout (models/bert_classifier.h) started from a pretrained BERT
// (init_checkpoint: what the bert case saved, or a Hugging Face state_dict; the pooler and the
// classifier start new), trained on JSON lines of labelled texts (train/text_classification.h).
// The metrics are the validation accuracy and loss.

#include "xpuperf/models/bert_classifier.h"
#include "xpuperf/train/families/text_classification.h"

namespace xpuperf::cases {
namespace {

class BertFinetuneCase : public train::TextClassificationCase {
 public:
  train::Datasets datasets(const train::CaseContext& ctx) override {
    const Config& cfg = ctx.config;
    config_ = models::bert_config_from(cfg, models::BertConfig::base());
    config_.dropout = config_.attention_dropout = cfg.get_number("dropout", config_.dropout);
    const text::WordPiece wordpiece = datasets::wordpiece_from(cfg);
    if (wordpiece.vocab_size() != config_.vocab)
      throw ConfigError("vocab_file " + datasets::data_file(cfg, "vocab_file") + " has " +
                        std::to_string(wordpiece.vocab_size()) + " tokens, the model's vocab_size is " +
                        std::to_string(config_.vocab) + ": they must be the same vocabulary");
    return labelled_datasets(
        ctx, [&wordpiece](std::string_view text) { return wordpiece.encode(text); },
        datasets::wordpiece_framing(wordpiece), 128, config_.positions, "max_position_embeddings");
  }

  std::shared_ptr<torch::nn::Module> model(const train::CaseContext& ctx) override {
    model_ = models::BertForSequenceClassification(config_, labels_);
    model_->to(ctx.device);
    return model_.ptr();
  }

  // A BertForMaskedLM checkpoint's word-embedding copy in its decoder is left out with the rest of
  // its head.
  std::map<std::string, std::string> tied_weights() const override {
    return {{"cls.predictions.decoder.weight", "bert.embeddings.word_embeddings.weight"}};
  }

 protected:
  std::pair<torch::Tensor, torch::Tensor> loss_and_correct(const train::Batch& b) override {
    return model_->loss_and_correct(b[0], b[1], b[2], b[3]);
  }
  double training_flops_per_sequence(std::int64_t tokens) const override {
    return model_ ? model_->training_flops_per_sequence(tokens) : 0.0;
  }

 private:
  models::BertConfig config_;
  models::BertForSequenceClassification model_{nullptr};
};

XPUPERF_REGISTER_TRAINING_CASE("bert_finetune", "libtorch", BertFinetuneCase);

}  // namespace
}  // namespace xpuperf::cases
