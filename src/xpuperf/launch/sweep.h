#pragma once
// `xpuperf sweep`: one training case under a list of strategies (Rapidformer's composable
// switches, "bf16+zero2+ckpt"), each for a fixed number of steps and repeats through the same
// rounds, monitors and result tree as `xpuperf run`, then Rapidformer's table with loss parity
// (sweep_report.h). Every row's config is checked before the first one starts.

#include <optional>
#include <string>
#include <vector>

#include "xpuperf/core/diagnostics.h"
#include "xpuperf/core/repo.h"

namespace xpuperf {

struct SweepRow {
  std::string name;               // the strategy as written, "bf16+zero2"
  std::vector<std::string> sets;  // what it sets, as key=value
};

// "fp32; bf16; bf16+zero1; bf16+ckpt; bf16+train_batch_size=2+global_batch_size=8" → rows.
// Tokens: fp32 tf32 bf16 fp16 (precision), zero1 zero2 zero3 (zero_stage), ckpt
// (activation_checkpointing), graphs (cuda_graphs), offload (offload_optimizer), fused foreach (fused_optimizer), pack
// (sequence_packing: several samples a row, whose loss is not compared with a padded row's), tpN
// (tensor_parallel), ppN (pipeline_parallel), loraN (lora_rank: LoRA fine-tuning, whose loss is
// not compared with a row without it), and any key=value. Unknown tokens go to `diags`
// with the reason; combinations are checked when each row's config is merged.
std::vector<SweepRow> parse_strategies(const std::string& text, Diagnostics& diags);

struct SweepOptions {
  std::string model;
  std::string framework = "libtorch";
  std::string vendor;
  std::string hardware;  // HWxNxP, e.g. H200x1x2
  std::string data_dir;
  std::string strategies;
  int steps = 20;        // timed steps a repeat
  int warmup_steps = 5;  // untimed steps before them
  int repeats = 3;       // rounds a row
  double loss_tolerance = 0.02;
  std::vector<std::string> sets;  // every row
  std::string log_dir = "results";
  int master_port = 0;  // the ranks' rendezvous port; 0: a free port each round
  std::string xpuperf;  // this binary
};

// Exit code: 0 every row ran, 1 a row failed or broke loss parity, 2 the sweep cannot start,
// 130 interrupted (the table of the rows done is written).
int run_sweep(const Repo& repo, const SweepOptions& options);

}  // namespace xpuperf
