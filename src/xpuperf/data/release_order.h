#pragma once
// Reusable buffers handed out in the order they were given back. A consumer gives a buffer back
// as soon as it has queued the device work that reads it, often several steps before that work
// runs; its work runs in order, so the buffer given back first is the first one free again, and a
// loader that takes it waits least. The lowest-numbered free buffer may be the one whose reader
// is last in the queue.

#include <condition_variable>
#include <deque>
#include <mutex>

namespace xpuperf::data {

class ReleaseOrder {
 public:
  explicit ReleaseOrder(int count) {
    for (int i = 0; i < count; ++i) free_.push_back(i);
  }

  // The buffer given back longest ago; blocks while none is free.
  int take() {
    std::unique_lock<std::mutex> lock(mutex_);
    given_back_.wait(lock, [&] { return !free_.empty(); });
    const int buffer = free_.front();
    free_.pop_front();
    return buffer;
  }

  void give_back(int buffer) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      free_.push_back(buffer);
    }
    given_back_.notify_one();
  }

 private:
  std::deque<int> free_;
  std::mutex mutex_;
  std::condition_variable given_back_;
};

}  // namespace xpuperf::data
