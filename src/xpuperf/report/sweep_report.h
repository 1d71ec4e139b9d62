#pragma once
// `xpuperf sweep`'s table, Rapidformer's: one row a strategy (a combination of switches), with
// throughput mean ± std over the repeats (warm-up steps excluded), tokens/s, MFU, peak device
// memory per GPU, energy per sample, speed-up and memory saving against the reference row, and
// loss parity: each row's loss curve over the same steps, data and seed against the reference's,
// flagged when it leaves the tolerance. Built from the rows' measurements alone (sweep.cpp
// gathers them from the rows' result trees), so it can be tested and rebuilt.

#include <nlohmann/json.hpp>
#include <string>

namespace xpuperf::report {

inline constexpr const char* kSweepSchema = "xpuperf.sweep/1";

// `input`: {case, vendor, hardware, world_size, steps, warmup_steps, repeats, loss_tolerance,
// rows: [{name, sets, status ("ok", "failed"), reason, rounds: [{status, reason,
// samples_per_second, tokens_per_second, mfu, peak_device_memory_mib, energy_per_sample_j,
// loss_curve}]}]}. Returns it with each row's aggregate, speedup, memory_saving and parity, and
// `reference`: the row the ratios are against (the first, or the first that ran when it failed).
nlohmann::json sweep_summary(const nlohmann::json& input);

std::string sweep_markdown(const nlohmann::json& summary);
std::string sweep_html(const nlohmann::json& summary);

}  // namespace xpuperf::report
