#pragma once
// report.html's operator cases: a table of their rows and the roofline, one dot a row, drawn in
// SVG on log-log axes (FLOP per byte against TFLOP/s) under the roofs of the datasheet (dashed)
// and of the run's base cases (solid), one roof a dtype the rows use.

#include <sstream>

#include "xpuperf/core/roofline.h"
#include "xpuperf/report/operator_rows.h"
#include "xpuperf/report/summary_model.h"

namespace xpuperf::report {

void operator_section(std::ostringstream& page, const Summary& summary);

// The roofline chart alone: each row a dot; each roof and dtype a line. "" when no row has FLOPs.
std::string roofline_svg(const std::vector<OperatorRowStats>& rows, const Roof& datasheet, const Roof& measured);

}  // namespace xpuperf::report
