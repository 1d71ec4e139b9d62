#pragma once
// summary.csv: one row per round of every case, the figures a spreadsheet or pandas reads, beside
// summary.json (all of it) and summary.md (the statistics over rounds).

#include <string>

#include "xpuperf/report/summary_model.h"

namespace xpuperf::report {

// The CSV of a summary (build_summary's): a header, then a row per round, every column in every
// row (empty where the round has no such figure), RFC 4180 quoting.
std::string summary_csv(const Summary& summary);

// operators.csv: a row per operator row of every round of the operator cases (operator_rows.h),
// each with its fractions of the datasheet's roof and of the run's measured one.
std::string operators_csv(const Summary& summary);

}  // namespace xpuperf::report
