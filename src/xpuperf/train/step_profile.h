#pragma once
// `profile_steps: N`: the device kernels of the N steps after timing_skip_steps (the steady state:
// CUDA graphs captured, cuDNN's search done), summed by name, for FINISHED's `kernel_profile`. The
// bench scripts sort them into the speed issue's classes (bench/kernel_classes.py) beside PyTorch's.
// The profiler slows the steps it watches, so a run that profiles is not one to time.
// With a trace path (XPUPERF_PROFILE_TRACE), the same steps are also written as a Chrome trace: every
// stream's kernels and every thread's CUDA calls on one timeline (Perfetto, chrome://tracing), for
// what a sum by name cannot show — idle gaps, work of the loader's threads beside the step.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace xpuperf::torchrt {
class KernelProfile;
}

namespace xpuperf::train {

class StepProfile {
 public:
  StepProfile(std::int64_t skip_steps, std::int64_t steps, std::string trace_path = "");
  ~StepProfile();

  // With steps_done steps taken: whether the profile starts before the next, or ends after the last.
  // The caller lets the device finish its queued work before calling start() and stop().
  bool starts_now(std::int64_t steps_done) const { return steps_ > 0 && !started_ && steps_done == first_; }
  bool ends_now(std::int64_t steps_done) const { return running() && steps_done >= first_ + steps_; }
  bool running() const { return profile_ != nullptr; }

  void start();
  void stop(std::int64_t steps_done);  // also when the run ends early: the steps it saw
  // FINISHED's kernel_profile: steps, the wall time a step, the kernels a step (top `kShown`), or
  // why there is none.
  void describe(nlohmann::json& finished) const;

  static constexpr std::size_t kShown = 60;

  // The trace file of `rank` among `world_size` ranks: the path as given for one rank, else the
  // rank's number before its extension ("steps.json" → "steps.rank1.json"), so ranks of one host
  // do not write over each other.
  static std::string trace_path_of_rank(const std::string& path, int rank, int world_size);

 private:
  std::int64_t first_, steps_;
  std::string trace_path_;
  bool started_ = false;
  std::unique_ptr<torchrt::KernelProfile> profile_;
  double started_at_ = 0;
  nlohmann::json result_;
};

}  // namespace xpuperf::train
