#include "xpuperf/train/evaluation.h"

#include <optional>
#include <string>

#include "xpuperf/core/config.h"

namespace xpuperf::train {

// A batch on the device, in the memory layout the run asks for.
void to_device(Batch& batch, const torch::Device& device, bool channels_last) {
  for (auto& t : batch) {
    t = t.to(device, /*non_blocking=*/true);
    if (channels_last && t.dim() == 4) t = t.contiguous(at::MemoryFormat::ChannelsLast);
  }
}

// Evaluates on this rank's share of the eval set and sums the metrics over ranks.
std::map<std::string, double> evaluate(TrainingCase& c, torch::nn::Module& model, Dataset& eval_set,
                                       std::int64_t batch_size, const torch::Device& device, Precision precision,
                                       bool channels_last, const EvalRanks& ranks) {
  model.eval();
  torch::NoGradGuard no_grad;
  EpochPlan plan;
  plan.batch_size = batch_size;
  plan.train = false;
  plan.rank = ranks.data.rank();
  plan.world_size = ranks.data.world_size();
  std::int64_t batches = 0, busiest = 0;
  if (ranks.lockstep) {
    auto most = torch::tensor({eval_set.batches_in_epoch(plan)}, torch::TensorOptions().dtype(torch::kLong)).to(device);
    ranks.lockstep->all_reduce_max(most);
    busiest = most.item<std::int64_t>();
  }
  eval_set.start_epoch(plan);
  MetricSums sums;
  std::optional<Batch> last;
  while (auto batch = eval_set.next_batch()) {
    to_device(*batch, device, channels_last);
    AutocastScope autocast(device, precision);
    if (ranks.pipeline)
      ranks.pipeline->forward_only((*batch)[0], [&] { c.evaluate(*batch, sums); });
    else
      c.evaluate(*batch, sums);
    ++batches;
    if (ranks.lockstep) last = std::move(batch);
  }
  if (ranks.lockstep && batches < busiest) {
    if (!last)
      throw ConfigError("expert_parallel: a rank has no evaluation batch while another has " + std::to_string(busiest) +
                        " (their forwards exchange tokens); use a larger eval set or a smaller "
                        "eval_batch_size");
    MetricSums ignored;
    AutocastScope autocast(device, precision);
    for (; batches < busiest; ++batches) c.evaluate(*last, ignored);
  }
  // Every rank must send the same metric names, whatever its share held.
  std::vector<double> flat;
  for (const auto& [name, s] : sums.sums()) {
    flat.push_back(ranks.holds_metrics ? s.first : 0.0);
    flat.push_back(ranks.holds_metrics ? s.second : 0.0);
  }
  auto t = torch::tensor(flat, torch::TensorOptions().dtype(torch::kDouble)).to(device);
  ranks.sum_over.all_reduce_sum(t);
  t = t.cpu();
  std::size_t k = 0;
  for (auto& [name, s] : sums.sums()) {
    s.first = t[static_cast<std::int64_t>(k++)].item<double>();
    s.second = t[static_cast<std::int64_t>(k++)].item<double>();
  }
  model.train();
  auto values = sums.values();
  c.derive_metrics(values);
  return values;
}

}  // namespace xpuperf::train
