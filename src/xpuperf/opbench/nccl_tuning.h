#pragma once
// Which algorithm and protocol NCCL chose for a collective, in NCCL's own words: with
// NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=TUNING, NCCL (2.23 and later) writes one line a collective
// on rank 0, "AllReduce: 268435456 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..31}", to
// NCCL_DEBUG_FILE. Torch-free.

#include <map>
#include <string>
#include <vector>

namespace xpuperf::opbench {

// The choices of the collective `func` (NCCL's name: AllReduce, AllGather, ReduceScatter, ...) in
// `text`: "ALGO/PROTO" → how many calls made it.
std::map<std::string, int> nccl_choices(const std::string& text, const std::string& func);

// "RING/SIMPLE", or "RING/LL ×3, TREE/LL ×1" when the calls differed (most first); "" for none.
std::string nccl_choice_text(const std::map<std::string, int>& choices);

// NCCL's tuning lines of this process, read as they come.
class NcclTuningLog {
 public:
  // Points NCCL's debug output at `path` (TUNING lines, and its warnings), unless NCCL_DEBUG is set
  // already: then the user's settings stand and `why_not()` says so. Call before NCCL starts: it
  // reads its environment once.
  explicit NcclTuningLog(std::string path);
  // The choices of `func` in the lines written since the last take; "" when NCCL wrote none.
  std::string take(const std::string& func);
  // The warnings NCCL wrote to the file (they would have gone to stderr), since the last call.
  std::vector<std::string> take_warnings();
  // Why no choice can be read ("" when it can).
  const std::string& why_not() const { return why_not_; }
  const std::string& path() const { return path_; }

 private:
  std::string read_new();
  std::string path_, why_not_, unread_warnings_;
  std::size_t offset_ = 0;
};

}  // namespace xpuperf::opbench
