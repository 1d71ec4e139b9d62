#pragma once
// A case's step explained by its operators: the calls an operator census recorded
// (torchrt/op_census.h; `census_steps` of a training case, `census_batches` of an inference case)
// each replayed alone through the dispatcher, with new inputs of the recorded sizes, strides and
// dtypes, timed like an operator case's row (op_measure.h); then the calls' isolated times × their
// counts a step, against the step the case measured.
//
// A replay runs the same operator at the same shapes, not on the same values: floating inputs are
// normal draws and integer ones zeros (an index that is always valid), so an operator whose work
// depends on its values (a sparse gather, a data-dependent branch) may take another time than in the
// step. Its accuracy is not checked: the catalogue's rows check the operators.

#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "xpuperf/core/roofline.h"
#include "xpuperf/opbench/op_measure.h"
#include "xpuperf/torchrt/op_census.h"

namespace xpuperf::opbench {

using torchrt::Census;

// A census from `path`: a census JSON file, a log with a FINISHED event that carries one (a rank's
// log, `xpuperf train`'s output), or a run folder (its first such log, in path order). Throws
// std::runtime_error naming the path and what to run when there is none.
Census read_census(const std::string& path);

// The FLOPs of one call of an operator whose count a formula gives (matrix products, convolutions
// and their backward, scaled dot-product attention and its backward); nothing otherwise.
std::optional<double> census_call_flops(const torchrt::CensusCall& call,
                                        const std::vector<std::string>& argument_names);

// One call replayed on `device`: a row whose `call`, `calls_per_step` and `backward` say what it
// was. Throws std::runtime_error when the call cannot be replayed (an argument the census could
// not write down, an operator this process does not have, an error of the operator).
OperatorRow replay_call(const torchrt::CensusCall& call, double calls_per_step, const torch::Device& device,
                        const MeasureOptions& options);

// Whether the call works on the device: it has a tensor there, or makes one there. A call whose
// tensors are all on the host (a loader's gather, a CPU-side cast) is not the device's step.
bool census_call_on_device(const torchrt::CensusCall& call);

// The rows summed by operator (all shapes): calls and ms a step, the costliest first.
struct OperatorTotal {
  std::string op;
  double calls = 0, ms = 0;
};
std::vector<OperatorTotal> by_operator(const std::vector<OperatorRow>& rows);

// What the replayed rows explain of the step.
struct Explanation {
  double explained_ms = 0;  // Σ calls a step × isolated median (caches flushed, inputs rotated)
  // The same with warm caches (the census case's `warm`), where every row has one: a step's calls
  // find some inputs in the caches (the last call's output) and not others (weights), so the step
  // lies between the two sums.
  std::optional<double> explained_warm_ms, warm_share;
  // Σ calls a step × the host's median time to issue one (without waiting for it): the eager
  // host's share of the step. Where it passes the device's sums the device waits for the host.
  double host_issue_ms = 0;
  double replayed_calls = 0;            // calls a step that were replayed
  double unreplayed_calls = 0;          // calls a step that were not (their errors are the failed rows)
  double host_calls = 0;                // calls a step on the host alone, left out of a device's replay
  std::optional<double> share;          // explained_ms over the census's step_ms
  std::vector<std::size_t> top;         // rows by time a step, largest first (at most `top_count`)
  std::vector<std::size_t> below_half;  // of `top`: rows under 50 % of their roof (measured, else datasheet)
  nlohmann::json to_json(const std::vector<OperatorRow>& rows, const Census& census) const;
};

Explanation explain(const std::vector<OperatorRow>& rows, const Census& census, std::size_t top_count,
                    double host_calls = 0);

// The explanation as Markdown: the step against its operators, the `top` rows, those below half.
std::string explanation_markdown(const Explanation& e, const std::vector<OperatorRow>& rows, const Census& census);

}  // namespace xpuperf::opbench
