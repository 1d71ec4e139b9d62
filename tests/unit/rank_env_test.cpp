#include "xpuperf/core/rank_env.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "xpuperf/core/process.h"

namespace xpuperf {
namespace {

TEST(RankEnv, ARanksEnvironmentNamesItsPlaceAndStopsOpenBlasSpinning) {
  RankEnv env;
  env.rank = 3;
  env.world_size = 4;
  env.master_addr = "10.0.0.1";
  env.master_port = free_local_port();  // nothing listens: the value is only written out
  const char* before = std::getenv("OPENBLAS_THREAD_TIMEOUT");
  const std::string saved = before ? before : "";
  ::unsetenv("OPENBLAS_THREAD_TIMEOUT");
  auto vars = env.to_env();
  EXPECT_EQ(vars.at("RANK"), "3");
  EXPECT_EQ(vars.at("WORLD_SIZE"), "4");
  EXPECT_EQ(vars.at("MASTER_ADDR"), "10.0.0.1");
  EXPECT_EQ(vars.at("MASTER_PORT"), std::to_string(env.master_port));
  EXPECT_EQ(vars.at("OPENBLAS_THREAD_TIMEOUT"), "4");
  // A user's own value is inherited by the rank, not replaced.
  ::setenv("OPENBLAS_THREAD_TIMEOUT", "20", 1);
  vars = env.to_env();
  EXPECT_EQ(vars.count("OPENBLAS_THREAD_TIMEOUT"), 0u);
  if (before)
    ::setenv("OPENBLAS_THREAD_TIMEOUT", saved.c_str(), 1);
  else
    ::unsetenv("OPENBLAS_THREAD_TIMEOUT");
}

}  // namespace
}  // namespace xpuperf
