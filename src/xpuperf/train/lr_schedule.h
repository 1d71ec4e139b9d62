#pragma once
// The learning-rate schedules (lr_scheduler, warmup_steps/warmup_epochs, lr_gamma).

#include <cstdint>
#include <string>

namespace xpuperf::train {

// Learning rate at `step` of `total_steps`: linear warm-up, then constant, cosine or linear decay,
// or exponential: multiplied by `gamma` once an epoch (torchvision's StepLR with step size 1).
double scheduled_lr(const std::string& schedule, double base_lr, std::int64_t step, std::int64_t warmup_steps,
                    std::int64_t total_steps, std::int64_t steps_per_epoch = 0, double gamma = 1.0);

}  // namespace xpuperf::train
