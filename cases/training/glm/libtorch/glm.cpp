// GLM pre-training by autoregressive blank infilling (FlagPerf's glm case's model, GLM-large,
// trained as GLM's blocklm-large-blank was) on a token dataset made with BERT's WordPiece: the
// model is models/glm.h, the samples text/blank_infilling.h (15 % of each text in Poisson(3)
// blanks, generated in a random order). The metrics: the blank-infilling loss (mean cross entropy
// a generated token, [eop] included, in nats) and the share of those tokens predicted right.
// init_checkpoint also reads GLM's own checkpoint names (models::convert_glm_names).

#include <algorithm>
#include <map>

#include "xpuperf/datasets/glm_datasets.h"
#include "xpuperf/train/families/glm_case.h"

namespace xpuperf::cases {
namespace {

class GlmCase : public train::GlmCaseBase {
 public:
  train::Datasets datasets(const train::CaseContext& ctx) override {
    read_sizes(ctx.config);
    // The text's ids must lie below GLM's added tokens, so that none is read as [sop] or [eop].
    const auto corpus = datasets::open_token_corpus(ctx, "wordpiece", std::min(sop_, eop_),
                                                    "sop_id and eop_id, GLM's tokens after the text's");
    const text::BlankSpecial special{corpus.cls, corpus.mask, sop_, eop_, corpus.pad};
    const auto seed = static_cast<std::uint64_t>(ctx.config.get_int("seed", 1234));
    train_ = std::make_shared<datasets::BlankInfillingDataset>(corpus.train, length_, special, seed, true);
    eval_ = std::make_shared<datasets::BlankInfillingDataset>(corpus.eval, length_, special, seed + 1, false);
    return {train_, eval_};
  }

  torch::Tensor forward_step(const train::Batch& batch) override { return model_->loss(inputs(batch)); }

  void evaluate(const train::Batch& batch, train::MetricSums& sums) override {
    const auto in = inputs(batch);
    const auto logits = model_->forward(in).to(torch::kFloat);
    const auto targets = in.targets.narrow(1, in.targets_from, in.targets.size(1) - in.targets_from);
    const auto counted = targets.ge(0);
    const double tokens = counted.sum().item<double>();
    const auto loss = torch::nn::functional::cross_entropy(
        logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}),
        torch::nn::functional::CrossEntropyFuncOptions().ignore_index(-100).reduction(torch::kSum));
    sums.add("loss", loss.item<double>(), tokens);
    sums.add("accuracy", logits.argmax(-1).eq(targets).logical_and(counted).sum().item<double>(), tokens);
  }

  // The decoder over every position; the output layer over the positions from the first that can
  // hold a target (part B and the padding after it).
  double train_flops_per_sample() const override {
    if (!model_ || !train_) return 0.0;
    const auto out_positions = static_cast<double>(length_ - train_->first_target());
    return model_->training_flops_per_token(length_) * static_cast<double>(length_) +
           model_->output_flops_per_position() * out_positions;
  }
  std::int64_t tokens_per_sample() const override { return length_; }

 private:
  models::GlmInputs inputs(const train::Batch& batch) const {
    return {batch[0], batch[1], batch[2], batch[3], batch[4], train_->first_target()};
  }

  std::shared_ptr<datasets::BlankInfillingDataset> train_, eval_;
};

XPUPERF_REGISTER_TRAINING_CASE("glm", "libtorch", GlmCase);

}  // namespace
}  // namespace xpuperf::cases
