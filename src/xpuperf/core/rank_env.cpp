#include "xpuperf/core/rank_env.h"

#include <cstdlib>

namespace xpuperf {

namespace {

bool read_int(const char* name, int& out, int lo, int hi, Diagnostics& diags) {
  const char* text = std::getenv(name);
  if (!text) return true;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0' || value < lo || value > hi) {
    diags.error({std::string("environment variable ") + name, 0}, std::string("must be an integer from ") +
                                                                      std::to_string(lo) + " to " + std::to_string(hi) +
                                                                      ", got '" + text + "'");
    return false;
  }
  out = static_cast<int>(value);
  return true;
}

}  // namespace

std::map<std::string, std::string> RankEnv::to_env() const {
  std::map<std::string, std::string> vars = {{"RANK", std::to_string(rank)},
                                             {"LOCAL_RANK", std::to_string(local_rank)},
                                             {"WORLD_SIZE", std::to_string(world_size)},
                                             {"LOCAL_WORLD_SIZE", std::to_string(local_world_size)},
                                             {"NODE_RANK", std::to_string(node_rank)},
                                             {"MASTER_ADDR", master_addr},
                                             {"MASTER_PORT", std::to_string(master_port)}};
  // OpenBLAS (Debian's LibTorch multiplies on the CPU with it) keeps its worker threads spinning
  // with sched_yield for a long while after each product, on the cores the rank's own threads and
  // the other ranks need: LeNet-5 on 2 ranks of 2 cores spent 23 s of its 58 s of CPU in the
  // kernel and trained 1.3x slower. The shortest spin (2^4 cycles) keeps BLAS's threads and
  // lets them sleep. Read once when the library loads, so it is set for the rank's process; a
  // user's own value is kept.
  if (!std::getenv("OPENBLAS_THREAD_TIMEOUT")) vars["OPENBLAS_THREAD_TIMEOUT"] = "4";
  return vars;
}

bool launched_as_rank() {
  return std::getenv("RANK") != nullptr && std::getenv("WORLD_SIZE") != nullptr;
}

std::optional<RankEnv> read_rank_env(Diagnostics& diags) {
  RankEnv env;
  const int errors_before = diags.error_count();
  read_int("WORLD_SIZE", env.world_size, 1, 1 << 20, diags);
  read_int("RANK", env.rank, 0, (1 << 20) - 1, diags);
  read_int("LOCAL_WORLD_SIZE", env.local_world_size, 1, 1 << 16, diags);
  read_int("LOCAL_RANK", env.local_rank, 0, (1 << 16) - 1, diags);
  read_int("NODE_RANK", env.node_rank, 0, (1 << 16) - 1, diags);
  read_int("MASTER_PORT", env.master_port, 1, 65535, diags);
  if (const char* addr = std::getenv("MASTER_ADDR"); addr && *addr) env.master_addr = addr;
  if (diags.error_count() != errors_before) return std::nullopt;
  if (env.rank >= env.world_size)
    diags.error({"environment variable RANK", 0},
                "RANK " + std::to_string(env.rank) + " is not below WORLD_SIZE " + std::to_string(env.world_size));
  if (env.local_rank >= env.local_world_size && std::getenv("LOCAL_WORLD_SIZE"))
    diags.error({"environment variable LOCAL_RANK", 0}, "LOCAL_RANK " + std::to_string(env.local_rank) +
                                                            " is not below LOCAL_WORLD_SIZE " +
                                                            std::to_string(env.local_world_size));
  if (diags.error_count() != errors_before) return std::nullopt;
  return env;
}

}  // namespace xpuperf
