#pragma once
// An operator case (`xpuperf op --case NAME`): the config's shapes × dtypes measured on the
// device (op_measure.h), printed as one table and, on request, written as JSON.

#include <ostream>

#include "xpuperf/core/torch_requests.h"

namespace xpuperf::opbench {

// Runs the case; the table goes to `out`, problems to `err`. Returns the exit status: 0 when every
// row ran and is accurate, 1 when a row is not (it is still printed), 2 when the request is wrong.
int run_operator_case(const OperatorRequest& request, std::ostream& out, std::ostream& err);

}  // namespace xpuperf::opbench
