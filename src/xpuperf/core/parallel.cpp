#include "xpuperf/core/parallel.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace xpuperf {

void parallel_items(std::size_t n, int threads, const std::function<void(std::size_t item, int worker)>& work) {
  const auto count = std::min<std::size_t>(n, static_cast<std::size_t>(std::max(threads, 1)));
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;  // the first, written under the mutex, read after the joins
  std::mutex failure_mutex;
  const auto take_items = [&](int worker) {
    try {
      for (std::size_t i; (i = next.fetch_add(1)) < n;) work(i, worker);
    } catch (...) {
      const std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      next = n;  // the others stop at their next item
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < count; ++t) pool.emplace_back(take_items, static_cast<int>(t));
  take_items(0);
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace xpuperf
