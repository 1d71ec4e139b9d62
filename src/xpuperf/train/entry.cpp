#include "xpuperf/train/entry.h"

#include <cstdio>
#include <iostream>

#include "xpuperf/core/version.h"
#include "xpuperf/data/data_error.h"
#include "xpuperf/torchrt/distributed.h"
#include "xpuperf/torchrt/vendor_runtime.h"
#include "xpuperf/train/runtime.h"

namespace xpuperf::train {

std::vector<std::string> built_training_cases() {
  return registered_training_cases();
}

namespace {

// One line a person reads; the PerfLog above it is what tools read.
void print_summary(const std::string& name, const TrainingRankRequest& request, const TrainingOutcome& outcome) {
  const FinishedInfo& f = outcome.finished;
  const FinalMetric& m = *f.final_metric;
  char line[512];
  std::snprintf(line, sizeof line,
                "%s on %s, %d rank%s: %s (%s %.4f, target %.4f) after %lld steps, %.1f samples/s, "
                "train %.1f s, e2e %.1f s, stopped by %s",
                name.c_str(), request.vendor.c_str(), request.env.world_size, request.env.world_size == 1 ? "" : "s",
                *f.converged ? "CONVERGED" : "NOT CONVERGED", m.name.c_str(), m.value, m.target.value_or(0.0),
                static_cast<long long>(*f.global_steps), *f.training_samples_per_second, *f.raw_train_time, *f.e2e_time,
                stop_reason_name(outcome.reason));
  std::cout << line << std::endl;
}

}  // namespace

int run_rank(const TrainingRankRequest& request) {
  const std::string name = request.model + ":" + request.framework;
  const std::string who = "rank " + std::to_string(request.env.rank) + ": ";
  auto training_case = make_training_case(request.model, request.framework);
  if (!training_case) {
    std::cerr << "xpuperf: error: training case " << name << " is not built into this binary (built: ";
    const auto built = registered_training_cases();
    for (std::size_t i = 0; i < built.size(); ++i) std::cerr << (i ? ", " : "") << built[i];
    std::cerr << (built.empty() ? "none" : "") << ")";
    if (std::string(kCaseSet) == "quickstart")
      std::cerr << "; this is the quickstart's build (what `make run` builds first): `make build` adds every case";
    std::cerr << "\n";
    return 3;
  }
  RunInfo info;
  info.case_name = name;
  info.vendor = request.vendor;
  info.env = request.env;
  try {
    torchrt::activate_vendor(request.vendor_spec);
    const TrainingOutcome outcome = run_training(*training_case, request.config, info, std::cout);
    if (request.env.rank == 0) print_summary(name, request, outcome);
    return 0;
  } catch (const ConfigError& e) {
    std::cerr << "xpuperf: error: " << who << e.what() << "\n";
  } catch (const RunFailed& e) {
    std::cerr << "xpuperf: error: " << who << "the run failed: " << e.what() << "\n";
  } catch (const data::DataError& e) {
    std::cerr << "xpuperf: error: " << who << "data: " << e.what() << "\n";
  } catch (const torchrt::VendorError& e) {
    std::cerr << "xpuperf: error: " << who << e.what() << "\n";
  } catch (const torchrt::DistributedError& e) {
    std::cerr << "xpuperf: error: " << who << e.what() << "\n";
  } catch (const c10::Error& e) {
    std::cerr << "xpuperf: error: " << who << "LibTorch: " << e.what_without_backtrace() << "\n";
  }
  std::cout.flush();
  return 1;
}

}  // namespace xpuperf::train
