#include "xpuperf/train/lr_schedule.h"

#include <algorithm>
#include <cmath>

#include "xpuperf/core/config.h"

namespace xpuperf::train {

double scheduled_lr(const std::string& schedule, double base_lr, std::int64_t step, std::int64_t warmup_steps,
                    std::int64_t total_steps, std::int64_t steps_per_epoch, double gamma) {
  if (warmup_steps > 0 && step < warmup_steps)
    return base_lr * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
  if (schedule == "exponential") {
    if (steps_per_epoch <= 0) return base_lr;
    return base_lr * std::pow(gamma, static_cast<double>(step / steps_per_epoch));
  }
  if (schedule == "constant" || total_steps <= warmup_steps) return base_lr;
  const double progress =
      std::min(1.0, static_cast<double>(step - warmup_steps) / static_cast<double>(total_steps - warmup_steps));
  if (schedule == "cosine") return base_lr * 0.5 * (1.0 + std::cos(M_PI * progress));
  if (schedule == "linear") return base_lr * (1.0 - progress);
  throw ConfigError("'lr_scheduler' must be constant, cosine, linear or exponential, got '" + schedule + "'");
}

}  // namespace xpuperf::train
