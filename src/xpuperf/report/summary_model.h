#pragma once
// The result model: a run's result tree parsed once (build_summary, summary.h) into cases, their
// rounds with the figures each measured, and the statistics over the ok rounds. Every writer
// (summary.json, summary.md, summary.csv, report.html) and every reader (`xpuperf compare`,
// `xpuperf report --from-json`, the history, the sweep) goes through it. summary.json is its
// stored form: to_json writes it, from_json reads it back and names the key of a damaged file.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "xpuperf/report/curves.h"
#include "xpuperf/report/stats.h"

namespace xpuperf::report {

inline constexpr const char* kSummarySchema = "xpuperf.summary/1";

// A summary.json that does not read as one: the message names the file and the key.
class SummaryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The round figures the statistics are taken over (a case's "aggregate"); summary.csv lists them too.
const std::vector<const char*>& aggregated_figures();

enum class CaseFamilyKind { Training, Inference, Base, Operation };
const char* family_text(CaseFamilyKind family);

// One round of a case, as its folder says.
struct Round {
  int number = 0;
  std::string status;          // "ok", "failed", "timeout", ...
  std::string reason;          // why it is not ok; "" when it is
  std::string device, plugin;  // the leader's SUBMIT_INFO; "" when it named none

  // The figures the statistics are taken over (aggregated_figures), by name: only those measured.
  std::map<std::string, double> figures;

  // Training.
  std::optional<bool> converged;
  std::optional<std::int64_t> global_steps, num_trained_samples;
  std::optional<double> steps_to_target;
  std::optional<std::string> final_metric_name;
  std::optional<double> final_metric_target;

  // A base case: its headline figure's name and unit, and what the check said.
  std::optional<std::string> figure, unit, perf_per_watt_unit, check, implementation;
  std::optional<bool> correct;
  std::optional<double> datasheet_ratio;

  // An inference case: what its inputs were ("synthetic ..." claims no accuracy) and its caveat.
  std::optional<std::string> data, caveat;

  // The records written whole, in their own formats, kept as written: a training round's `curves`
  // (TrainingCurves), a base case's `figures` list, an inference case's `latency` per batch size
  // and `generation` (decoding, LoadGen's scenarios), its `engine`, `steps`, `samples`, ...; an
  // operator case's `operators` (its rows, op_measure.h's OperatorRow::to_json), `failed_rows` and
  // `datasheet_roof`.
  nlohmann::json records = nlohmann::json::object();

  bool ok() const { return status == "ok"; }
  // A figure of `figures`; nullptr when the round did not measure it.
  const double* find(const std::string& figure_name) const;
  // A record of `records`; nullptr when the round has none (or it is null).
  const nlohmann::json* record(const std::string& key) const;
  // The leader's curves (report.html's and compare's charts); nothing for a round without them.
  std::optional<TrainingCurves> curves() const;
};

// A case of the run and its rounds.
struct CaseResult {
  std::string key;                       // as the plan names it (a FlagPerf tree: its folder's name)
  std::optional<CaseFamilyKind> family;  // absent in a FlagPerf tree: training
  std::string dir, model, framework, hardware;
  int nnodes = 0, nproc = 0;
  int rounds_planned = 0;
  std::vector<Round> rounds;  // those that ran, in order

  // Statistics over the ok rounds (aggregate_case).
  std::map<std::string, Aggregate> aggregate;
  int rounds_used = 0, rounds_converged = 0;
  std::string final_metric_name;

  CaseFamilyKind family_or_training() const { return family.value_or(CaseFamilyKind::Training); }
  bool is(CaseFamilyKind kind) const { return family_or_training() == kind; }
  const Aggregate* stat(const std::string& figure_name) const;
  const Round* last_ok() const;
  // The case without its repeat count (model:framework:hardware:nnodes:nproc): the same case in
  // two runs whatever their repeats.
  std::string identity() const;
};

struct Summary {
  std::string schema = kSummarySchema;
  std::string xpuperf_version;
  std::string run;     // the run folder's name
  std::string source;  // "flagperf" for a FlagPerf result tree; "" for ours
  std::string vendor, launcher;
  std::vector<std::string> hosts;
  nlohmann::json system;  // sys_info.json of the first node that wrote one; null when none did
  std::vector<CaseResult> cases;

  nlohmann::json to_json() const;
  // Throws SummaryError naming `where` (a file) and the key that is missing or of the wrong type.
  static Summary from_json(const nlohmann::json& j, const std::string& where);
};

// summary.json of a run folder, or the file itself, read through the model.
Summary read_summary_file(const std::string& path);

}  // namespace xpuperf::report
