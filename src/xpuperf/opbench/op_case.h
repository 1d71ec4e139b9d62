#pragma once
// An operator case (`xpuperf op --case NAME`): the config's shapes × dtypes measured on the
// device (op_measure.h), printed as one table and, on request, written as JSON. The case `census`
// is a case's step explained by its operators instead (census_replay.h).

#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "xpuperf/core/torch_requests.h"
#include "xpuperf/opbench/op_measure.h"

namespace xpuperf::opbench {

inline constexpr const char* kCensusCase = "census";

// Runs the case; the table goes to `out`, problems to `err`. Returns the exit status: 0 when every
// row ran and is accurate, 1 when a row is not (it is still printed), 2 when the request is wrong.
int run_operator_case(const OperatorRequest& request, std::ostream& out, std::ostream& err);

// The census case: each call of a case's operator census replayed and timed, then the step
// explained; exit status as above (a call that did not replay is a failed row).
int run_census_case(const OperatorRequest& request, std::ostream& out, std::ostream& err);

// The collectives (all_reduce, all_gather, reduce_scatter, all_to_all) over the request's ranks
// (collective_case.cpp); each rank calls it, rank 0 writes the rows. Exit status as above.
bool is_collective_case(const std::string& name);
std::vector<std::string> collective_names();
int run_collective_case(const OperatorRequest& request, std::ostream& out, std::ostream& err);
// The collectives' table for `xpuperf op --list`.
std::string collective_table_markdown();

// How a case's config times its rows (warmup, samples, min_seconds, rotate_mib, flush_mib, seed,
// input_values, check_accuracy); `smoke` shortens them to a check that the rows run.
MeasureOptions measure_options(const Config& config, bool smoke);

// The request's device, with the host set up as the cases run on it (all its cores; freed memory
// kept, so that a large output does not fault its pages in again on every call).
torch::Device operator_device(const OperatorRequest& request);

// The row's fractions of the request's roofs.
void place_on_roofs(OperatorRow& row, const OperatorRequest& request);

// --json's file: the case, the device and the rows; `extra`'s keys are added to it. Nothing when
// the request asks for no file.
void write_rows_json(const OperatorRequest& request, const torch::Device& device, const std::vector<OperatorRow>& rows,
                     const nlohmann::json& extra = nullptr);

// A roof fraction as "86.1 %", or "–" where there is none.
std::string percent_text(const std::optional<double>& fraction);

// The rows as a PerfLog FINISHED event, which a plan's report reads from the rank's log; `extra`'s
// keys are added to it.
void log_operator_rows(std::ostream& out, const OperatorRequest& request, const torch::Device& device,
                       const std::vector<OperatorRow>& rows, const nlohmann::json& failed,
                       const std::vector<std::string>& not_measured, const nlohmann::json& extra = nullptr);

}  // namespace xpuperf::opbench
