#pragma once
// Ranks as threads of one test process, over a real TCPStore and Gloo.

#include <gtest/gtest.h>

#include <future>
#include <vector>

#include "xpuperf/core/process.h"
#include "xpuperf/core/rank_env.h"
#include "xpuperf/torchrt/distributed.h"

namespace xpuperf::train {

inline RankEnv env_for(int rank, int world, int port) {
  RankEnv env;
  env.rank = env.local_rank = rank;
  env.world_size = env.local_world_size = world;
  env.master_port = port;
  return env;
}

#define SKIP_WITHOUT_GLOO() \
  if (!torchrt::Distributed::has_backend("gloo")) GTEST_SKIP() << "this build has no Gloo"

// Runs `body(rank, port)` on `n` ranks as threads of this process; `port` is the store's.
template <typename Body>
void on_ranks(int n, Body body) {
  const int port = free_local_port();
  std::vector<std::future<void>> ranks;
  for (int r = 0; r < n; ++r) ranks.push_back(std::async(std::launch::async, [&body, r, port] { body(r, port); }));
  for (auto& r : ranks) r.get();
}

template <typename Body>
void on_two_ranks(Body body) {
  on_ranks(2, body);
}

}  // namespace xpuperf::train
