#pragma once
// PerfLog: the event lines a case prints, FlagPerf-compatible:
//   [PerfLog] {"event": "STEP_END", "value": {...}, "metadata": {"file": ..., "lineno": ...,
//              "time_ms": ..., "rank": ...}}
// One JSON object a line. The reader also takes FlagPerf's own lines and skips anything else.

#include <cstdint>
#include <istream>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace xpuperf {

inline constexpr const char* kPerfLogTag = "[PerfLog] ";

// The event names of DESIGN.md.
namespace perflog_event {
inline constexpr const char* kInitStart = "INIT_START";
inline constexpr const char* kInitEnd = "INIT_END";
inline constexpr const char* kTrainStart = "TRAIN_START";
inline constexpr const char* kEpochBegin = "EPOCH_BEGIN";
inline constexpr const char* kStepEnd = "STEP_END";
inline constexpr const char* kEvaluate = "EVALUATE";
inline constexpr const char* kEpochEnd = "EPOCH_END";
inline constexpr const char* kTrainEnd = "TRAIN_END";
inline constexpr const char* kFinished = "FINISHED";
inline constexpr const char* kSubmitInfo = "SUBMIT_INFO";
}  // namespace perflog_event

struct PerfLogEvent {
  std::string event;
  nlohmann::json value;     // null when the line has none
  nlohmann::json metadata;  // file, lineno, time_ms, rank
  int line = 0;             // line number in the log it was read from
};

// One line, without a newline at the end. `value` is left out when null.
std::string format_perflog(const std::string& event, const nlohmann::json& value, const std::string& file, int lineno,
                           std::int64_t time_ms, int rank);

// Writes events for one rank, stamping the wall-clock time.
class PerfLogWriter {
 public:
  PerfLogWriter(std::ostream& out, int rank) : out_(out), rank_(rank) {}
  void log(const std::string& event, const nlohmann::json& value = nullptr, const char* file = "", int lineno = 0);

 private:
  std::ostream& out_;
  int rank_;
};

struct PerfLogParse {
  std::vector<PerfLogEvent> events;
  int other_lines = 0;            // lines without the tag (the rank's other output)
  std::vector<int> broken_lines;  // lines with the tag whose JSON did not parse (e.g. cut off)
};

// Reads every PerfLog line of a log; text before the tag on a line (a prefix added by a
// launcher, a timestamp) is ignored.
PerfLogParse parse_perflog(std::istream& in);
std::optional<PerfLogEvent> parse_perflog_line(const std::string& line);

struct FinalMetric {
  std::string name;  // e.g. "accuracy", "mlm_accuracy"
  double value = 0;
  std::optional<double> target;
};

// FINISHED's value: the same keys for every training case (DESIGN.md, Formats).
struct FinishedInfo {
  std::optional<double> e2e_time;  // seconds
  std::optional<double> init_time;
  std::optional<double> raw_train_time;
  std::optional<double> training_samples_per_second;
  std::optional<bool> converged;
  std::optional<FinalMetric> final_metric;
  std::optional<std::int64_t> global_steps;
  std::optional<std::int64_t> num_trained_samples;
  std::optional<double> mfu;
  nlohmann::json extra = nlohmann::json::object();  // keys this struct does not know, kept as read

  // Writes the standard keys, plus training_sequences_per_second for FlagPerf's readers.
  nlohmann::json to_json() const;
  // Reads ours and FlagPerf's (training_sequences_per_second, final_<metric> keys).
  static FinishedInfo from_json(const nlohmann::json& value);
};

// The last FINISHED event of a rank's log; nothing when the file cannot be read or has none.
std::optional<FinishedInfo> finished_in(const std::string& log_path);

}  // namespace xpuperf
