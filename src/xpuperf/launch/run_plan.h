#pragma once
// `xpuperf run`: a plan's four steps — check, prepare, run every round of every case through
// the plan's launcher, collect and report — with FlagPerf-like progress output.

#include <string>

#include "xpuperf/core/plan.h"
#include "xpuperf/core/repo.h"

namespace xpuperf {

struct RunOptions {
  std::string plan_path;   // the plan to run, or
  std::string resume_dir;  // a run folder to finish (its plan.yaml), skipping finished rounds
  std::string xpuperf;     // this binary, to start node agents
  bool dry_run = false;    // print every command that would run, on every host; start nothing
};

// Exit code: 0 every round ok, 1 a round failed or did not converge... see README, 2 the plan
// cannot run, 130 interrupted (SIGINT/SIGTERM).
int run_plan(const Repo& repo, const RunOptions& options);

}  // namespace xpuperf
