#include "xpuperf/core/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

namespace xpuperf {
namespace {

TEST(ParallelItems, RunsEveryItemOnceAndNoneForZero) {
  std::vector<std::atomic<int>> runs(1000);
  std::atomic<int> worker_out_of_range{0};
  parallel_items(runs.size(), 4, [&](std::size_t i, int worker) {
    runs[i].fetch_add(1);
    if (worker < 0 || worker >= 4) worker_out_of_range.fetch_add(1);
  });
  for (std::size_t i = 0; i < runs.size(); ++i) EXPECT_EQ(runs[i].load(), 1) << "item " << i;
  EXPECT_EQ(worker_out_of_range.load(), 0);
  parallel_items(0, 4, [](std::size_t, int) { FAIL() << "no item to run"; });
  int serial = 0;  // one thread (and a thread count below 1): the caller's, worker 0, in order
  parallel_items(5, 0, [&](std::size_t i, int worker) {
    EXPECT_EQ(i, static_cast<std::size_t>(serial++));
    EXPECT_EQ(worker, 0);
  });
  EXPECT_EQ(serial, 5);
}

// The point of the helper: the items really run side by side. Item 0 waits (up to a generous bound,
// so that a serial implementation fails instead of hanging) until another thread has started item 1.
TEST(ParallelItems, RunsItemsOnSeveralThreadsAtOnce) {
  std::mutex mutex;
  std::condition_variable started;
  bool second_started = false;
  std::set<std::thread::id> ids;
  std::set<int> workers;
  parallel_items(2, 2, [&](std::size_t i, int worker) {
    std::unique_lock<std::mutex> lock(mutex);
    ids.insert(std::this_thread::get_id());
    workers.insert(worker);
    if (i == 1) {
      second_started = true;
      started.notify_all();
    } else {
      EXPECT_TRUE(started.wait_for(lock, std::chrono::seconds(30), [&] { return second_started; }))
          << "item 1 never ran beside item 0";
    }
  });
  EXPECT_EQ(ids.size(), 2u);
  EXPECT_EQ(workers, (std::set<int>{0, 1}));  // each thread its own worker index
}

TEST(ParallelItems, RethrowsTheFirstFailureAfterTheThreadsStop) {
  std::atomic<int> ran{0};
  EXPECT_THROW(parallel_items(100, 3,
                              [&](std::size_t i, int) {
                                ran.fetch_add(1);
                                if (i == 10) throw std::runtime_error("item 10");
                              }),
               std::runtime_error);
  EXPECT_LE(ran.load(), 100);
}

}  // namespace
}  // namespace xpuperf
