#pragma once
// Runs the xpuperf binary as a user would, for the command-line tests.

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "test_util.h"
#include "xpuperf/core/process.h"

namespace xpuperf {

struct Result {
  int code = -1;
  std::string output;  // stdout and stderr together
};

// Runs xpuperf in `cwd` (the fixture content tree unless given), with `env` added. The limit only
// ends a command that hangs: generous, so that a loaded machine never fails a test by its clock.
inline Result xpuperf(std::vector<std::string> args, const std::string& cwd = test::test_path("fixtures/repo"),
                      const std::map<std::string, std::string>& env = {}, double limit_s = 300) {
  test::TempDir dir;
  ProcessSpec spec;
  spec.argv = {XPUPERF_BINARY};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.cwd = cwd;
  spec.env = env;
  // Runs recorded by tests go to a throw-away history, never the user's.
  if (!spec.env.count("XPUPERF_HISTORY")) spec.env["XPUPERF_HISTORY"] = dir.path() + "/history.db";
  spec.unset_env = {"XPUPERF_ROOT",     "RANK",        "WORLD_SIZE", "LOCAL_RANK",
                    "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"};
  spec.log_path = dir.path() + "/out.log";
  const ExitStatus status = run_process(spec, std::chrono::duration<double>(limit_s));
  Result r;
  r.code = status.kind == ExitStatus::Kind::Exited ? status.code : 128 + status.signal;
  r.output = test::read_file(spec.log_path);
  return r;
}

// Runs a helper program (ssh-keygen, srun, ...) to its end: true when it succeeded.
inline bool run_ok(std::vector<std::string> argv, const std::map<std::string, std::string>& env = {},
                   double limit_s = 10) {
  ProcessSpec spec;
  spec.argv = std::move(argv);
  spec.env = env;
  try {
    return run_process(spec, std::chrono::duration<double>(limit_s)).ok();
  } catch (const ProcessError&) {
    return false;
  }
}

// Polls `ready` until it holds or `process` has ended (then the event will never come); no
// deadline of its own that a loaded machine could pass: ctest's TIMEOUT is the backstop.
template <typename Ready>
bool wait_until(Process& process, Ready ready) {
  for (;;) {
    if (ready()) return true;
    if (!process.running()) return ready();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// The run folder `xpuperf run` made under `results_dir` (the tests make one a results folder).
inline std::string run_folder_in(const std::string& results_dir) {
  std::string folder;
  for (const auto& e : std::filesystem::directory_iterator(results_dir)) folder = e.path().string();
  return folder;
}

inline bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace xpuperf
