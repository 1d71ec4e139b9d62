#pragma once
// Work split over plain threads, for code that must not depend on how LibTorch was built: ATen's
// at::parallel_for runs its OpenMP loop in the *caller's* translation unit (ParallelOpenMP.h), so in
// a file compiled without -fopenmp it silently runs the whole range on one thread.

#include <cstddef>
#include <functional>

namespace xpuperf {

// Runs work(i, worker) for every i in [0, n) on up to `threads` threads (the calling one among them),
// items taken in order as threads come free; `worker` (0 to threads - 1) names the thread, for state
// of its own. Returns when all are done. The first exception a call throws is rethrown here, after
// the threads have stopped taking items.
void parallel_items(std::size_t n, int threads, const std::function<void(std::size_t item, int worker)>& work);

}  // namespace xpuperf
