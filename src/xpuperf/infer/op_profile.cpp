#include "xpuperf/infer/op_profile.h"

#include <ATen/record_function.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <sstream>
#include <stdexcept>

#include "xpuperf/core/strings.h"
#include "xpuperf/torchrt/device.h"

namespace xpuperf::infer {

namespace {

// One operator call: where it starts and ends (marks on the device's timeline or clock readings), and
// its caller.
struct Span {
  std::string name;
  std::size_t start = 0, end = 0;  // indexes of marks
  int parent = -1;
};

// The spans of one profile. RecordFunction's callbacks are plain functions, so the recorder in
// use is reached through a thread-local pointer (the callbacks are thread-local too).
class Recorder {
 public:
  explicit Recorder(torch::Device device) : device_(device), timeline_(torchrt::make_device_timeline(device)) {}

  void begin(const char* name) {
    Span s;
    s.name = name;
    s.parent = open_.empty() ? -1 : open_.back();
    s.start = mark();
    spans_.push_back(std::move(s));
    open_.push_back(static_cast<int>(spans_.size()) - 1);
  }

  void end() {
    if (open_.empty()) return;  // an operator that began before the profile
    spans_[static_cast<std::size_t>(open_.back())].end = mark();
    open_.pop_back();
  }

  std::vector<OpTime> result() {
    torchrt::synchronize(device_);
    std::vector<double> total(spans_.size(), 0.0), children(spans_.size(), 0.0);
    for (std::size_t i = 0; i < spans_.size(); ++i) {
      if (spans_[i].end == 0) continue;  // still open: an exception left it
      total[i] = elapsed_ms(spans_[i].start, spans_[i].end);
      if (spans_[i].parent >= 0) children[static_cast<std::size_t>(spans_[i].parent)] += total[i];
    }
    std::map<std::string, OpTime> by_name;
    for (std::size_t i = 0; i < spans_.size(); ++i) {
      OpTime& o = by_name[spans_[i].name];
      o.name = spans_[i].name;
      ++o.calls;
      // Recursion (an operator under itself) would count twice in its total: the outer call only.
      bool nested_in_itself = false;
      for (int p = spans_[i].parent; p >= 0 && !nested_in_itself; p = spans_[static_cast<std::size_t>(p)].parent)
        nested_in_itself = spans_[static_cast<std::size_t>(p)].name == spans_[i].name;
      if (!nested_in_itself) o.total_ms += total[i];
      o.self_ms += std::max(0.0, total[i] - children[i]);
    }
    std::vector<OpTime> ops;
    for (auto& [name, o] : by_name) ops.push_back(o);
    std::sort(ops.begin(), ops.end(), [](const OpTime& a, const OpTime& b) { return a.self_ms > b.self_ms; });
    return ops;
  }

 private:
  // 1-based, so 0 means "not marked".
  std::size_t mark() {
    if (timeline_) return timeline_->mark() + 1;
    // No timeline: the host's clock, after the device's queued work, so that an operator's span is
    // its work and not its launch (nothing to wait for on the CPU).
    torchrt::synchronize(device_);
    clock_.push_back(std::chrono::steady_clock::now());
    return clock_.size();
  }

  double elapsed_ms(std::size_t from, std::size_t to) const {
    if (timeline_) return timeline_->elapsed_ms(from - 1, to - 1);
    return std::chrono::duration<double, std::milli>(clock_[to - 1] - clock_[from - 1]).count();
  }

  torch::Device device_;
  std::unique_ptr<torchrt::DeviceTimeline> timeline_;
  std::vector<Span> spans_;
  std::vector<int> open_;
  std::vector<std::chrono::steady_clock::time_point> clock_;
};

thread_local Recorder* active = nullptr;

std::unique_ptr<at::ObserverContext> on_begin(const at::RecordFunction& fn) {
  if (active) active->begin(fn.name());
  return nullptr;
}

void on_end(const at::RecordFunction&, at::ObserverContext*) {
  if (active) active->end();
}

double self_sum(const std::vector<OpTime>& ops) {
  double sum = 0;
  for (const auto& o : ops) sum += o.self_ms;
  return sum;
}

}  // namespace

std::vector<OpTime> profile_ops(const std::function<void()>& work, torch::Device device) {
  if (active) throw std::logic_error("profile_ops: a profile is already running on this thread");
  Recorder recorder(device);
  {
    // Recording from here to the end of the block, whether `work` returns or throws.
    struct Recording {
      at::CallbackHandle handle;
      explicit Recording(Recorder& r) {
        active = &r;
        handle = at::addThreadLocalCallback(
            at::RecordFunctionCallback(on_begin, on_end).scopes({at::RecordScope::FUNCTION}));
      }
      ~Recording() {
        at::removeCallback(handle);
        active = nullptr;
      }
    } recording(recorder);
    work();
  }
  return recorder.result();
}

std::string op_profile_timing(const torch::Device& device) {
  return torchrt::device_has_timeline(device.type()) ? "device time between timeline marks" : "wall clock";
}

nlohmann::json op_profile_json(const std::vector<OpTime>& ops, std::size_t top) {
  const double sum = self_sum(ops);
  nlohmann::json list = nlohmann::json::array();
  for (std::size_t i = 0; i < ops.size() && i < top; ++i)
    list.push_back({{"name", ops[i].name},
                    {"calls", ops[i].calls},
                    {"total_ms", ops[i].total_ms},
                    {"self_ms", ops[i].self_ms},
                    {"self_share", sum > 0 ? ops[i].self_ms / sum : 0.0}});
  return list;
}

std::string op_profile_table(const std::vector<OpTime>& ops, std::size_t top) {
  const double sum = self_sum(ops);
  std::ostringstream s;
  s << "| operator | calls | self ms | share | total ms |\n| --- | ---: | ---: | ---: | ---: |\n";
  for (std::size_t i = 0; i < ops.size() && i < top; ++i)
    s << "| " << ops[i].name << " | " << ops[i].calls << " | " << fixed_digits(ops[i].self_ms, 3) << " | "
      << fixed_digits(sum > 0 ? 100 * ops[i].self_ms / sum : 0.0, 1) << " % | " << fixed_digits(ops[i].total_ms, 3)
      << " |\n";
  s << "| all " << ops.size() << " operators | | " << fixed_digits(sum, 3) << " | 100 % | |\n";
  return s.str();
}

}  // namespace xpuperf::infer
