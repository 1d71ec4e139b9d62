#include "xpuperf/train/run_setup.h"

#include <algorithm>
#include <filesystem>
#include <thread>

#include "xpuperf/core/host_memory.h"
#include "xpuperf/core/log.h"
#include "xpuperf/datasets/image_dataset.h"
#include "xpuperf/parallel/activation_checkpoint.h"
#include "xpuperf/torchrt/compat.h"
#include "xpuperf/torchrt/device.h"
#include "xpuperf/torchrt/weights.h"
#include "xpuperf/train/precision.h"

namespace xpuperf::train {
namespace fs = std::filesystem;

namespace {

std::string resolve_in(const std::string& dir, const std::string& path) {
  if (path.empty() || fs::path(path).is_absolute() || dir.empty()) return path;
  return (fs::path(dir) / path).string();
}

}  // namespace

torch::Device prepare_process(const Config& cfg, const TrainingSettings& s, const RunInfo& info) {
  datasets::prepare_device_decoding(cfg, info.env.local_world_size);
  const torch::Device device = torchrt::choose_device(s.device, info.env.local_rank);
  if (s.precision == Precision::FP16 && !device.is_cuda() && !compat::cpu_autocast_supports_fp16())
    throw ConfigError(s.where("precision").str() + ": precision: fp16 needs a CUDA device with this LibTorch (" +
                      "this run is on " + device.str() + "); use bf16 or fp32 on the CPU");
  if (!device.is_cuda()) keep_freed_host_memory();
  apply_tf32_setting(s.precision);
  // Lets cuDNN time its convolution algorithms on the first batch of each shape and keep the fastest.
  if (device.is_cuda()) at::globalContext().setBenchmarkCuDNN(s.cudnn_benchmark);
  if (device.is_cuda()) torch::cuda::manual_seed_all(static_cast<std::uint64_t>(s.seed));
  torch::manual_seed(static_cast<std::uint64_t>(s.seed));
  if (s.num_threads > 0) {
    torchrt::set_cpu_threads(static_cast<int>(s.num_threads));
  } else {
    // LibTorch may default to one thread; share the cores between the ranks of this host.
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    torchrt::set_cpu_threads(static_cast<int>(std::max(1u, cores / static_cast<unsigned>(info.env.local_world_size))));
  }
  return device;
}

parallel::LoraSettings lora_settings(const TrainingSettings& s) {
  return {s.lora_rank, s.lora_alpha, s.lora_dropout, s.lora_targets};
}

std::shared_ptr<torch::nn::Module> prepare_model(TrainingCase& c, const CaseContext& ctx, const TrainingSettings& s,
                                                 const std::string& case_name) {
  // LoRA builds the model on the host and casts the frozen base to the compute type there, so the
  // device never holds the fp32 base (a 7B model's 27 GB, for 13.5 GB of bf16 that train).
  const bool build_on_host = s.lora_rank > 0 && !ctx.device.is_cpu();
  const CaseContext host_ctx{ctx.config, ctx.switches,   torch::Device(torch::kCPU),
                             ctx.rank,   ctx.world_size, ctx.local_world_size};
  auto model = c.model(build_on_host ? host_ctx : ctx);
  if (!s.init_checkpoint.empty()) {
    const std::string path = resolve_in(s.data_dir, s.init_checkpoint);
    if (!fs::exists(path))
      throw ConfigError(s.where("init_checkpoint").str() + ": init_checkpoint '" + path + "' does not exist");
    const torchrt::StateDictConversion convert = [&c](std::map<std::string, torch::Tensor>& tensors) {
      return c.convert_checkpoint(tensors);
    };
    try {
      if (c.starts_from_pretrained()) {
        const auto r = torchrt::load_pretrained(*model, path, c.tied_weights(), convert);
        std::string fresh;
        for (const auto& name : r.fresh) fresh += (fresh.empty() ? "" : ", ") + name;
        log::info("init_checkpoint " + path + " (" + r.format + "): " + std::to_string(r.loaded.size()) +
                  " tensors loaded; new, as initialised: " + (fresh.empty() ? "none" : fresh) +
                  (r.unused.empty() ? "" : "; " + std::to_string(r.unused.size()) + " of the file's left out"));
      } else {
        // A LibTorch archive or a state_dict saved in Python.
        log::info("init_checkpoint " + path + ": " + torchrt::load_weights(*model, path, c.tied_weights(), convert));
      }
    } catch (const std::runtime_error& e) {
      throw ConfigError(std::string("init_checkpoint: ") + e.what());
    }
  }
  if (s.lora_rank > 0) {
    // The base model frozen in the step's compute type; only the adapters train.
    const auto frozen = s.precision == Precision::BF16   ? torch::kBFloat16
                        : s.precision == Precision::FP16 ? torch::kHalf
                                                         : torch::kFloat;
    try {
      parallel::apply_lora(*model, lora_settings(s), frozen);
    } catch (const std::invalid_argument& e) {
      throw ConfigError(s.where("lora_targets").str() + ": " + e.what());
    }
    if (build_on_host) model->to(ctx.device);
  }
  if (s.channels_last) {
    // Convolution weights in NHWC, as the inputs will be: the layout Tensor Cores read directly.
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters())
      if (p.dim() == 4) p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));
  }
  if (s.activation_checkpointing && parallel::set_activation_checkpointing(*model, true) == 0)
    throw ConfigError(s.where("activation_checkpointing").str() + ": activation_checkpointing: the model of " +
                      case_name + " has no blocks to checkpoint; set activation_checkpointing: false");
  return model;
}

}  // namespace xpuperf::train
