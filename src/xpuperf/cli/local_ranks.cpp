#include "xpuperf/cli/local_ranks.h"

#include <algorithm>
#include <iostream>

#include "xpuperf/core/process.h"
#include "xpuperf/core/rank_env.h"

namespace xpuperf::cli {

namespace {

// `nproc` copies of this program with `argv`, the launcher variables set; `output` says where each
// one's output goes.
std::vector<std::unique_ptr<Process>> start_ranks(int nproc, int master_port, const std::vector<std::string>& argv,
                                                  const std::function<void(int, ProcessSpec&)>& output) {
  RankEnv env;
  env.world_size = env.local_world_size = nproc;
  env.master_addr = "127.0.0.1";
  env.master_port = master_port > 0 ? master_port : free_local_port();
  std::vector<std::unique_ptr<Process>> ranks;
  for (int r = 0; r < nproc; ++r) {
    env.rank = env.local_rank = r;
    ProcessSpec spec;
    spec.argv = argv;
    spec.argv[0] = "/proc/self/exe";
    spec.env = env.to_env();
    output(r, spec);
    ranks.push_back(Process::start(spec));
  }
  return ranks;
}

}  // namespace

std::vector<std::unique_ptr<Process>> start_local_ranks(int nproc, int master_port,
                                                        const std::vector<std::string>& argv,
                                                        const std::function<std::string(int)>& log_path) {
  return start_ranks(nproc, master_port, argv, [&](int r, ProcessSpec& spec) { spec.log_path = log_path(r); });
}

int spawn_local_ranks(int nproc, int master_port, const std::vector<std::string>& argv) {
  auto ranks = start_ranks(nproc, master_port, argv, [](int r, ProcessSpec& spec) {
    spec.echo = true;
    spec.echo_prefix = "[rank " + std::to_string(r) + "] ";
  });
  const GroupOutcome outcome = wait_all(ranks, std::nullopt, nullptr, std::chrono::seconds(5), kRankSettle);
  if (outcome.failed < 0) return 0;
  const ExitStatus& s = outcome.statuses[static_cast<std::size_t>(outcome.failed)];
  const bool stopped_others =
      std::any_of(outcome.statuses.begin(), outcome.statuses.end(), [](const ExitStatus& e) { return e.stopped; });
  std::cerr << "xpuperf: rank " << outcome.failed << " " << s.describe()
            << (stopped_others ? "; the other ranks were stopped" : "") << "\n";
  return s.kind == ExitStatus::Kind::Exited ? s.code : 128 + s.signal;
}

}  // namespace xpuperf::cli
