// Llama fine-tuning for sequence classification (Rapidformer's Finetuner on a decoder): Hugging
// Face's LlamaForSequenceClassification layout (models/llama_classifier.h; the last real token
// classified) started from a pretrained Llama (init_checkpoint: what the llama case saved, or a
// Hugging Face LlamaForCausalLM state_dict; `score` starts new), trained on JSON lines of labelled
// texts tokenised with Llama 3's BPE (train/text_classification.h). The metrics are the
// validation accuracy and loss.

#include <memory>

#include "xpuperf/data/idx.h"
#include "xpuperf/models/llama_classifier.h"
#include "xpuperf/text/byte_bpe.h"
#include "xpuperf/text/tokenizer_error.h"
#include "xpuperf/train/families/text_classification.h"

namespace xpuperf::cases {
namespace {

class LlamaFinetuneCase : public train::TextClassificationCase {
 public:
  train::Datasets datasets(const train::CaseContext& ctx) override {
    const Config& cfg = ctx.config;
    config_ = models::llama_config_from(cfg, models::LlamaConfig::llama3_2_1b());
    config_.tie_word_embeddings = false;  // no output layer: a classifier scores the last token
    std::shared_ptr<text::ByteBpe> bpe;
    const std::string file = datasets::data_file(cfg, "tokenizer_file");
    try {
      bpe = std::make_shared<text::ByteBpe>(text::ByteBpe::load_single_file(file));
    } catch (const text::TokenizerError& e) {
      throw data::DataError(std::string("tokenizer_file: ") + e.what());
    }
    if (bpe->pre_tokenizer() != text::PreTokenizer::llama3 || bpe->begin_of_text() < 0)
      throw ConfigError("tokenizer_file " + file + " is not Llama 3's tokeniser (tokenizer.model or tokenizer.json)");
    if (bpe->vocab_size() != config_.vocab)
      throw ConfigError("tokenizer_file " + file + " has " + std::to_string(bpe->vocab_size()) +
                        " ids, the model's vocab_size is " + std::to_string(config_.vocab));
    // <|begin_of_text|> text, as Hugging Face's Llama 3 tokenizer frames a text; padded with
    // <|end_of_text|> on the right, which the classifier never reads.
    const datasets::TextFraming framing{bpe->begin_of_text(), -1, bpe->end_of_text(), "Llama 3 BPE"};
    return labelled_datasets(
        ctx, [bpe](std::string_view text) { return bpe->encode(text); }, framing, 256, config_.max_positions,
        "max_position_embeddings");
  }

  std::shared_ptr<torch::nn::Module> model(const train::CaseContext& ctx) override {
    model_ = models::LlamaForSequenceClassification(config_, labels_);
    model_->to(ctx.device);
    return model_.ptr();
  }

 protected:
  std::pair<torch::Tensor, torch::Tensor> loss_and_correct(const train::Batch& b) override {
    return model_->loss_and_correct(b[0], b[2], b[3]);
  }
  double training_flops_per_sequence(std::int64_t tokens) const override {
    return model_ ? model_->training_flops_per_sequence(tokens) : 0.0;
  }

 private:
  models::LlamaConfig config_;
  models::LlamaForSequenceClassification model_{nullptr};
};

XPUPERF_REGISTER_TRAINING_CASE("llama_finetune", "libtorch", LlamaFinetuneCase);

}  // namespace
}  // namespace xpuperf::cases
