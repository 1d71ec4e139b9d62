#pragma once
// What a rank sets up before its first step (runtime.cpp's TrainingRun): the process (device,
// numerics switches, seeds, threads) and the model it trains (starting weights, LoRA, layout,
// activation checkpointing).

#include <torch/torch.h>

#include <memory>
#include <string>

#include "xpuperf/core/config.h"
#include "xpuperf/parallel/lora.h"
#include "xpuperf/train/runtime.h"
#include "xpuperf/train/training_case.h"
#include "xpuperf/train/training_settings.h"

namespace xpuperf::train {

// The process's side of the settings: the device, its numerics switches, the seeds, the threads.
torch::Device prepare_process(const Config& cfg, const TrainingSettings& s, const RunInfo& info);

// The model as this rank trains it: the case's, with its starting weights, LoRA adapters, layout
// and block hooks, the same on every rank (split over the model-parallel groups afterwards).
std::shared_ptr<torch::nn::Module> prepare_model(TrainingCase& c, const CaseContext& ctx, const TrainingSettings& s,
                                                 const std::string& case_name);

parallel::LoraSettings lora_settings(const TrainingSettings& s);

}  // namespace xpuperf::train
