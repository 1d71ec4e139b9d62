#include "xpuperf/opbench/census_replay.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>

#include "xpuperf/core/perflog.h"
#include "xpuperf/core/strings.h"
#include "xpuperf/torchrt/compat.h"
#include "xpuperf/torchrt/device.h"
#include "xpuperf/torchrt/vendor_runtime.h"

namespace xpuperf::opbench {

using json = nlohmann::json;
using torchrt::CensusCall;
namespace fs = std::filesystem;

namespace {

using Inputs = std::vector<torch::Tensor>;

// ---- reading a census ----

std::optional<json> census_in_log(std::istream& in) {
  std::optional<json> found;
  for (const auto& e : parse_perflog(in).events)
    if (e.event == perflog_event::kFinished && e.value.is_object() && e.value.contains("operator_census"))
      found = e.value["operator_census"];  // the last one, as finished_in takes the last FINISHED
  return found;
}

std::optional<json> census_in_file(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path.string() + ": cannot be read");
  const char first = static_cast<char>(in.peek());
  if (first == '{') {  // a census written as JSON (or a FINISHED value holding one)
    json j;
    try {
      in >> j;
    } catch (const json::exception& e) {
      throw std::runtime_error(path.string() + ": not JSON (" + e.what() + ")");
    }
    return j.contains("operator_census") ? j["operator_census"] : j;
  }
  return census_in_log(in);
}

// ---- FLOPs ----

std::vector<std::int64_t> sizes_of(const json& argument) {
  if (!argument.contains("tensor")) return {};
  return argument["tensor"].value("sizes", std::vector<std::int64_t>());
}

double numel(const std::vector<std::int64_t>& s) {
  double n = 1;
  for (const auto v : s) n *= static_cast<double>(v);
  return n;
}

// The argument called `name` in the schema's order; null when there is none.
const json* argument(const CensusCall& call, const std::vector<std::string>& names, const std::string& name) {
  for (std::size_t i = 0; i < names.size() && i < call.arguments.size(); ++i)
    if (names[i] == name) return &call.arguments[i];
  return nullptr;
}

std::vector<std::int64_t> ints_or(const json* a, std::vector<std::int64_t> fallback) {
  return a && a->contains("ints") ? (*a)["ints"].get<std::vector<std::int64_t>>() : fallback;
}

// 2 × multiply-adds of a convolution from its input, weight and output sizes (N C H W layouts).
double convolution_flops(const std::vector<std::int64_t>& weight, const std::vector<std::int64_t>& output) {
  if (weight.size() < 3 || output.size() != weight.size()) return 0;
  double per_output = 1;  // C/groups × the kernel's window
  for (std::size_t i = 1; i < weight.size(); ++i) per_output *= static_cast<double>(weight[i]);
  return 2 * numel(output) * per_output;
}

// The output of a convolution of `input` by `weight` (no transposed convolutions).
std::vector<std::int64_t> convolution_output(const CensusCall& call, const std::vector<std::string>& names,
                                             const std::vector<std::int64_t>& input,
                                             const std::vector<std::int64_t>& weight) {
  if (input.size() != weight.size() || input.size() < 3) return {};
  const std::size_t spatial = input.size() - 2;
  const auto stride = ints_or(argument(call, names, "stride"), std::vector<std::int64_t>(spatial, 1));
  const auto padding = ints_or(argument(call, names, "padding"), std::vector<std::int64_t>(spatial, 0));
  const auto dilation = ints_or(argument(call, names, "dilation"), std::vector<std::int64_t>(spatial, 1));
  auto at = [](const std::vector<std::int64_t>& v, std::size_t i) { return v.size() == 1 ? v[0] : v.at(i); };
  std::vector<std::int64_t> out = {input[0], weight[0]};
  for (std::size_t i = 0; i < spatial; ++i)
    out.push_back((input[i + 2] + 2 * at(padding, i) - at(dilation, i) * (weight[i + 2] - 1) - 1) / at(stride, i) + 1);
  return out;
}

double attention_flops(const CensusCall& call, const std::vector<std::string>& names, bool backward) {
  const json* q = argument(call, names, "query");
  const json* k = argument(call, names, "key");
  if (!q || !k) return 0;
  const auto qs = sizes_of(*q), ks = sizes_of(*k);
  if (qs.size() != 4 || ks.size() != 4) return 0;
  // [B, H, L, D] against [B, H, S, D]: the scores and the weighted sum, 2 × 2·B·H·L·S·D; a causal mask
  // halves the pairs; the backward runs five such products to the forward's two.
  double flops = 4 * static_cast<double>(qs[0] * qs[1] * qs[2]) * static_cast<double>(ks[2] * qs[3]);
  if (const json* causal = argument(call, names, "is_causal"); causal && causal->value("bool", false)) flops /= 2;
  return backward ? flops * 2.5 : flops;
}

// ---- replay ----

c10::ScalarType scalar_type_of(const std::string& name) {
  static const std::map<std::string, c10::ScalarType> types = {
      {"Float", c10::kFloat}, {"Double", c10::kDouble}, {"Half", c10::kHalf},   {"BFloat16", c10::kBFloat16},
      {"Long", c10::kLong},   {"Int", c10::kInt},       {"Short", c10::kShort}, {"Char", c10::kChar},
      {"Byte", c10::kByte},   {"Bool", c10::kBool}};
  const auto found = types.find(name);
  if (found == types.end()) throw std::runtime_error("a tensor of dtype " + name + ", which a replay cannot make");
  return found->second;
}

// Elements of storage a tensor of these sizes and strides spans.
std::int64_t storage_elements(const std::vector<std::int64_t>& sizes, const std::vector<std::int64_t>& strides) {
  std::int64_t last = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) return 0;
    last += (sizes[i] - 1) * strides.at(i);
  }
  return last + 1;
}

double tensor_bytes(const json& t) {
  const auto sizes = t.value("sizes", std::vector<std::int64_t>());
  const auto strides = t.value("strides", std::vector<std::int64_t>());
  if (strides.size() != sizes.size()) return 0;
  return static_cast<double>(storage_elements(sizes, strides)) *
         static_cast<double>(c10::elementSize(scalar_type_of(t.value("dtype", std::string()))));
}

// A new tensor like the recorded one, with its sizes and strides: normal draws, or zeros for
// integers and booleans. Overlapping strides (an expanded tensor) are a view of a storage filled
// first; others are tensors of their own (an in-place detach_ refuses a view).
torch::Tensor make_tensor(const json& t, const torch::Device& device) {
  const auto sizes = t.at("sizes").get<std::vector<std::int64_t>>();
  const auto strides = t.at("strides").get<std::vector<std::int64_t>>();
  const c10::ScalarType dtype = scalar_type_of(t.at("dtype").get<std::string>());
  const torch::Device where = t.value("on", std::string("device")) == "cpu" ? torch::Device(torch::kCPU) : device;
  const auto options = torch::TensorOptions().dtype(dtype).device(where);
  // Drawn where the tensor lives: a census's calls rotate through hundreds of MiB of inputs.
  auto values = [&](std::vector<std::int64_t> shape) {
    return c10::isFloatingType(dtype) ? torch::randn(shape, options) : torch::zeros(shape, options);
  };
  const std::int64_t elements = storage_elements(sizes, strides);
  bool overlaps = false;
  for (std::size_t i = 0; i < sizes.size(); ++i) overlaps = overlaps || (sizes[i] > 1 && strides[i] == 0);
  if (overlaps) return values({elements}).as_strided(sizes, strides);
  torch::Tensor out = at::empty_strided(sizes, strides, options);
  out.copy_(values(sizes));
  return out;
}

// The tensors of every argument, in order.
void each_tensor(const json& arguments, const std::function<void(const json&)>& f) {
  for (const json& a : arguments) {
    if (a.contains("tensor")) f(a["tensor"]);
    if (a.contains("tensors"))
      for (const json& t : a["tensors"]) f(t);
    if (a.contains("optional_tensors"))
      for (const json& t : a["optional_tensors"])
        if (!t.is_null()) f(t);
  }
}

Inputs make_inputs(const CensusCall& call, const torch::Device& device) {
  Inputs inputs;
  each_tensor(call.arguments, [&](const json& t) { inputs.push_back(make_tensor(t, device)); });
  return inputs;
}

double number_of(const json& v) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    return std::numeric_limits<double>::quiet_NaN();
  }
  return v.get<double>();
}

// The dispatcher's stack for one call: the recorded arguments with `inputs` as its tensors.
torch::jit::Stack make_stack(const CensusCall& call, const std::vector<c10::Argument>& schema, const Inputs& inputs,
                             const torch::Device& device) {
  torch::jit::Stack stack;
  std::size_t next = 0;
  for (std::size_t i = 0; i < call.arguments.size(); ++i) {
    const json& a = call.arguments[i];
    if (a.contains("none") && schema.at(i).type()->kind() == c10::TypeKind::TensorType) {
      stack.emplace_back(torch::Tensor());  // an undefined tensor where the schema wants one
    } else if (a.contains("tensor")) {
      stack.emplace_back(inputs.at(next++));
    } else if (a.contains("tensors")) {
      std::vector<torch::Tensor> list;
      for (std::size_t k = 0; k < a["tensors"].size(); ++k) list.push_back(inputs.at(next++));
      stack.emplace_back(list);
    } else if (a.contains("optional_tensors")) {
      c10::List<c10::optional<torch::Tensor>> list;
      for (const json& t : a["optional_tensors"])
        list.push_back(t.is_null() ? c10::optional<torch::Tensor>() : c10::optional<torch::Tensor>(inputs.at(next++)));
      stack.emplace_back(list);
    } else if (a.contains("none") || a.contains("generator")) {
      stack.emplace_back();  // a generator: the default one
    } else if (a.contains("int")) {
      stack.emplace_back(a["int"].get<std::int64_t>());
    } else if (a.contains("double")) {
      stack.emplace_back(number_of(a["double"]));
    } else if (a.contains("bool")) {
      stack.emplace_back(a["bool"].get<bool>());
    } else if (a.contains("string")) {
      stack.emplace_back(a["string"].get<std::string>());
    } else if (a.contains("ints")) {
      stack.emplace_back(a["ints"].get<std::vector<std::int64_t>>());
    } else if (a.contains("doubles")) {
      std::vector<double> list;
      for (const json& d : a["doubles"]) list.push_back(number_of(d));
      stack.emplace_back(list);
    } else if (a.contains("bools")) {
      c10::List<bool> list;
      for (const json& b : a["bools"]) list.push_back(b.get<bool>());
      stack.emplace_back(list);
    } else if (a.contains("device")) {
      stack.emplace_back(a["device"] == "cpu" ? torch::Device(torch::kCPU) : device);
    } else {
      throw std::runtime_error("an argument the census could not write down (" + a.dump() + ")");
    }
  }
  return stack;
}

// Bytes of the outputs that are not an input written in place.
double output_bytes(const torch::jit::Stack& outputs, const Inputs& inputs) {
  double bytes = 0;
  auto add = [&](const torch::Tensor& t) {
    if (!t.defined()) return;
    for (const auto& in : inputs)
      if (in.defined() && in.data_ptr() == t.data_ptr()) return;
    bytes += static_cast<double>(t.numel()) * static_cast<double>(t.element_size());
  };
  for (const c10::IValue& v : outputs) {
    if (v.isTensor()) add(v.toTensor());
    if (v.isTensorList())
      for (const auto& t : v.toTensorVector()) add(t);
  }
  return bytes;
}

// The row's dtype: its first floating tensor's, else its first tensor's.
std::string row_dtype(const CensusCall& call) {
  std::string first, floating;
  each_tensor(call.arguments, [&](const json& t) {
    const std::string c10_name = t.value("dtype", std::string());
    if (first.empty()) first = torchrt::census_dtype_text(c10_name);
    if (floating.empty() && c10::isFloatingType(scalar_type_of(c10_name)))
      floating = torchrt::census_dtype_text(c10_name);
  });
  return !floating.empty() ? floating : first.empty() ? "-" : first;
}

}  // namespace

Census read_census(const std::string& path) {
  const fs::path p(path);
  if (!fs::exists(p)) throw std::runtime_error(path + ": no such file or folder");
  std::vector<fs::path> files;
  if (fs::is_directory(p)) {
    for (const auto& e : fs::recursive_directory_iterator(p))
      if (e.is_regular_file() && (e.path().extension() == ".log" || e.path().extension() == ".json"))
        files.push_back(e.path());
    std::sort(files.begin(), files.end());
  } else {
    files.push_back(p);
  }
  // A folder may hold a census a round: the first of each case; several cases are a choice to make.
  std::vector<Census> found;
  for (const auto& f : files) {
    std::optional<json> census;
    try {
      census = census_in_file(f);
    } catch (const std::runtime_error&) {
      if (!fs::is_directory(p)) throw;
      continue;  // in a folder, a file that is not one
    }
    if (!census || !census->is_object() || !census->contains("calls")) continue;
    Census c = Census::from_json(*census, f.string());
    if (std::none_of(found.begin(), found.end(), [&c](const Census& o) { return o.what == c.what; }))
      found.push_back(std::move(c));
  }
  if (found.size() == 1) return found[0];
  if (found.size() > 1) {
    std::string which;
    for (const auto& c : found) which += "\n  " + c.source + " (" + c.what + ")";
    throw std::runtime_error(path + " holds the censuses of " + std::to_string(found.size()) +
                             " cases: name one's log instead:" + which);
  }
  throw std::runtime_error(path +
                           ": has no operator census (run the case with --set census_steps=N for a training case, "
                           "census_batches=N for an inference case)");
}

std::optional<double> census_call_flops(const CensusCall& call, const std::vector<std::string>& names) {
  const std::string& op = call.op;
  std::vector<std::vector<std::int64_t>> t;  // the tensor arguments' sizes, in order
  for (const json& a : call.arguments)
    if (a.contains("tensor")) t.push_back(sizes_of(a));
  auto matrix_product = [](const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b) -> double {
    if (a.empty() || b.empty()) return 0;
    const double k = static_cast<double>(a.back());
    if (b.size() == 1) return 2 * numel(a);
    double rows = numel(a) / std::max(k, 1.0);
    const double n = static_cast<double>(b.back());
    if (a.size() == 2 && b.size() > 2) rows *= numel(b) / std::max(k * n, 1.0);
    return 2 * rows * n * k;
  };
  if ((op == "aten::mm" || op == "aten::bmm" || op == "aten::matmul") && t.size() >= 2)
    return matrix_product(t[0], t[1]);
  if ((op == "aten::addmm" || op == "aten::baddbmm" || op == "aten::addbmm" || op == "aten::addmm_") && t.size() >= 3)
    return matrix_product(t[1], t[2]);
  if (op == "aten::linear" && t.size() >= 2 && t[1].size() == 2) {
    const double k = static_cast<double>(t[1][1]);
    return 2 * numel(t[0]) / std::max(k, 1.0) * static_cast<double>(t[1][0]) * k;
  }
  if ((op == "aten::convolution" || op == "aten::_convolution" || op == "aten::conv2d" ||
       op == "aten::cudnn_convolution" || op == "aten::conv1d" || op == "aten::conv3d") &&
      t.size() >= 2) {
    const json* transposed = argument(call, names, "transposed");
    if (transposed && transposed->value("bool", false)) return std::nullopt;
    return convolution_flops(t[1], convolution_output(call, names, t[0], t[1]));
  }
  if (op == "aten::convolution_backward" && t.size() >= 3) {
    const json* transposed = argument(call, names, "transposed");
    if (transposed && transposed->value("bool", false)) return std::nullopt;
    // The input's and the weight's gradients are each a convolution as large as the forward.
    double grads = 2;
    if (const json* mask = argument(call, names, "output_mask"); mask && mask->contains("bools"))
      grads =
          static_cast<double>((*mask)["bools"][0].get<bool>()) + static_cast<double>((*mask)["bools"][1].get<bool>());
    return grads * convolution_flops(t[2], t[0]);
  }
  const bool attention =
      op.find("scaled_dot_product") != std::string::npos && op.find("attention") != std::string::npos;
  if (attention) {
    const double f = attention_flops(call, names, op.find("backward") != std::string::npos);
    if (f > 0) return f;
  }
  return std::nullopt;
}

OperatorRow replay_call(const CensusCall& call, double calls_per_step, const torch::Device& device,
                        const MeasureOptions& options) {
  const auto handle = c10::Dispatcher::singleton().findSchema({call.op, call.overload});
  if (!handle)
    throw std::runtime_error(call.op + (call.overload.empty() ? "" : "." + call.overload) +
                             " is not an operator of this process (a vendor's operator whose plug-in is not loaded?)");
  std::vector<std::string> names;
  for (const auto& a : handle->schema().arguments()) names.push_back(a.name());
  if (names.size() != call.arguments.size())
    throw std::runtime_error(call.op + " takes " + std::to_string(names.size()) + " arguments here, the census has " +
                             std::to_string(call.arguments.size()) + " (a census of another LibTorch version?)");

  OperatorRow row;
  row.op = call.op + (call.overload.empty() ? "" : "." + call.overload);
  row.implementation = call.op.substr(0, call.op.find("::"));
  // Under autocast, the dtype its products ran in.
  row.dtype = call.autocast.empty() ? row_dtype(call) : torchrt::census_dtype_text(call.autocast);
  row.device = torchrt::device_text(device.str());
  row.call = torchrt::census_call_text(call);
  row.calls_per_step = calls_per_step;
  row.backward = call.backward;

  torch::NoGradGuard no_grad;
  // Autocast as the call ran under it, on the replay's device (the dispatcher casts the arguments).
  struct AutocastAs {
    c10::DeviceType type;
    bool was;
    at::ScalarType was_dtype;
    AutocastAs(c10::DeviceType t, const std::string& dtype)
        : type(t), was(compat::autocast_enabled(t)), was_dtype(compat::autocast_dtype(t)) {
      if (dtype.empty()) return;
      compat::set_autocast_enabled(t, true);
      compat::set_autocast_dtype(t, scalar_type_of(dtype));
    }
    ~AutocastAs() {
      compat::set_autocast_enabled(type, was);
      compat::set_autocast_dtype(type, was_dtype);
    }
  } autocast(device.type(), call.autocast);
  torch::manual_seed(options.seed);
  double set_bytes = 0;
  each_tensor(call.arguments, [&](const json& t) { set_bytes += tensor_bytes(t); });
  const std::size_t copies =
      static_cast<std::size_t>(std::clamp(std::ceil(options.rotate_bytes / std::max(set_bytes, 1.0)), 1.0, 64.0));
  const OperatorCall run = [&](const Inputs& in) {
    torch::jit::Stack stack = make_stack(call, handle->schema().arguments(), in, device);
    handle->callBoxed(stack);
  };
  try {
    std::vector<Inputs> sets;
    for (std::size_t i = 0; i < copies; ++i) sets.push_back(make_inputs(call, device));
    torchrt::synchronize(device);
    torch::jit::Stack first = make_stack(call, handle->schema().arguments(), sets[0], device);
    const auto t0 = std::chrono::steady_clock::now();
    handle->callBoxed(first);
    torchrt::synchronize(device);
    row.cold_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    row.bytes = set_bytes + output_bytes(first, sets[0]);
    first.clear();
    time_operator_call(run, sets, device, options, row);
  } catch (const c10::Error& e) {
    const std::string message = e.what_without_backtrace();
    throw std::runtime_error(row.op + "(" + row.call + ") did not replay: " + message.substr(0, message.find('\n')));
  } catch (const std::exception& e) {  // an argument the census wrote down wrongly
    throw std::runtime_error(row.op + "(" + row.call + ") did not replay: " + e.what());
  }
  const std::optional<double> flops = census_call_flops(call, names);
  row.flops = flops.value_or(0);
  row.flops_known = flops.has_value();
  if (row.median_ms > 0) {
    row.tflops = row.flops / (row.median_ms * 1e-3) / 1e12;
    row.gb_per_s = row.bytes / (row.median_ms * 1e-3) / 1e9;
  }
  row.intensity = row.bytes > 0 ? row.flops / row.bytes : 0;
  return row;
}

bool census_call_on_device(const CensusCall& call) {
  bool on_device = false;
  each_tensor(call.arguments, [&](const json& t) { on_device = on_device || t.value("on", std::string()) != "cpu"; });
  for (const json& a : call.arguments) on_device = on_device || (a.contains("device") && a["device"] == "device");
  return on_device;
}

std::vector<OperatorTotal> by_operator(const std::vector<OperatorRow>& rows) {
  std::map<std::string, OperatorTotal> totals;
  for (const auto& r : rows) {
    OperatorTotal& t = totals[r.op];
    t.op = r.op;
    t.calls += r.calls_per_step;
    t.ms += r.calls_per_step * r.median_ms;
  }
  std::vector<OperatorTotal> out;
  for (auto& [op, t] : totals) out.push_back(t);
  std::stable_sort(out.begin(), out.end(), [](const OperatorTotal& a, const OperatorTotal& b) { return a.ms > b.ms; });
  return out;
}

Explanation explain(const std::vector<OperatorRow>& rows, const Census& census, std::size_t top_count,
                    double host_calls) {
  Explanation e;
  e.host_calls = host_calls;
  double warm = 0;
  bool all_warm = !rows.empty();
  for (const auto& r : rows) {
    e.explained_ms += r.calls_per_step * r.median_ms;
    e.host_issue_ms += r.calls_per_step * r.host_ms;
    e.replayed_calls += r.calls_per_step;
    all_warm = all_warm && r.warm_ms.has_value();
    warm += r.calls_per_step * r.warm_ms.value_or(0);
  }
  if (all_warm) e.explained_warm_ms = warm;
  double recorded = 0;
  for (const auto& c : census.calls) recorded += static_cast<double>(c.calls) / census.units;
  e.unreplayed_calls = std::max(0.0, recorded - e.replayed_calls - host_calls);
  if (census.step_ms && *census.step_ms > 0) {
    e.share = e.explained_ms / *census.step_ms;
    if (e.explained_warm_ms) e.warm_share = *e.explained_warm_ms / *census.step_ms;
  }
  std::vector<std::size_t> order(rows.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&rows](std::size_t a, std::size_t b) {
    return rows[a].calls_per_step * rows[a].median_ms > rows[b].calls_per_step * rows[b].median_ms;
  });
  order.resize(std::min(order.size(), top_count));
  e.top = order;
  for (const std::size_t i : e.top) {
    const auto& fraction = rows[i].measured_fraction ? rows[i].measured_fraction : rows[i].datasheet_fraction;
    if (fraction && *fraction < 0.5) e.below_half.push_back(i);
  }
  return e;
}

json Explanation::to_json(const std::vector<OperatorRow>& rows, const Census& census) const {
  json top_rows = json::array(), below = json::array();
  for (const std::size_t i : top) top_rows.push_back(i);
  for (const std::size_t i : below_half) below.push_back(i);
  json operators = json::array();
  for (const auto& t : by_operator(rows)) operators.push_back({{"op", t.op}, {"calls", t.calls}, {"ms", t.ms}});
  json j = {{"what", census.what},
            {"unit", census.unit},
            {"by_operator", operators},
            {"census", census.source},
            {"explained_ms", explained_ms},
            {"host_issue_ms", host_issue_ms},
            {"replayed_calls_per_step", replayed_calls},
            {"unreplayed_calls_per_step", unreplayed_calls},
            {"host_calls_per_step", host_calls},
            {"top_rows", top_rows},
            {"below_half_rows", below},
            {"distinct_calls", census.calls.size()},
            {"rows", rows.size()}};
  if (census.step_ms) j["step_ms"] = *census.step_ms;
  if (!census.step_ms_source.empty()) j["step_ms_source"] = census.step_ms_source;
  if (share) j["explained_share"] = *share;
  if (explained_warm_ms) j["explained_warm_ms"] = *explained_warm_ms;
  if (warm_share) j["explained_warm_share"] = *warm_share;
  if (!census.opaque_backward.empty()) j["opaque_backward"] = census.opaque_backward;
  return j;
}

std::string explanation_markdown(const Explanation& e, const std::vector<OperatorRow>& rows, const Census& census) {
  std::ostringstream md;
  const std::string unit = census.unit;
  md << "\n"
     << (census.what.empty() ? "The " + unit : census.what + ": a " + unit) << " explained by its operators ("
     << census.source << ")\n\n";
  md << "| | ms a " << unit << " |\n| --- | ---: |\n";
  if (census.step_ms)
    md << "| measured " << unit << " (" << (census.step_ms_source.empty() ? "the case's" : census.step_ms_source)
       << ") | " << fixed_digits(*census.step_ms, 3) << " |\n";
  md << "| Σ calls × isolated time, " << fixed_digits(e.replayed_calls, 0) << " calls a " << unit
     << " (caches flushed) | " << fixed_digits(e.explained_ms, 3) << " |\n";
  if (e.share) md << "| explained | " << fixed_digits(100 * *e.share, 1) << " % |\n";
  if (e.explained_warm_ms)
    md << "| Σ calls × isolated time with warm caches | " << fixed_digits(*e.explained_warm_ms, 3) << " |\n";
  if (e.warm_share) md << "| explained, warm | " << fixed_digits(100 * *e.warm_share, 1) << " % |\n";
  md << "| Σ calls × the host's time to issue one (eager; past the sums above, the " << unit
     << " waits for the host) | " << fixed_digits(e.host_issue_ms, 3) << " |\n";
  if (e.host_calls > 0)
    md << "| calls a " << unit << " on the host alone (every tensor on the CPU; not replayed) | "
       << fixed_digits(e.host_calls, 1) << " |\n";
  if (e.unreplayed_calls > 0)
    md << "| calls a " << unit << " not replayed (the failed rows) | " << fixed_digits(e.unreplayed_calls, 1) << " |\n";
  if (!census.opaque_backward.empty()) {
    md << "\nNot in the sum: the backward of custom autograd functions that launch their kernels without "
          "the dispatcher, so no call holds their time (a "
       << unit << "):";
    for (const auto& [name, count] : census.opaque_backward)
      md << " " << name << " ×" << fixed_digits(static_cast<double>(count) / census.units, 1) << ";";
    md << "\n";
  }
  md << "\nThe " << e.top.size() << " that cost most:\n\n"
     << "| operator | call | calls a " << unit << " | ms each | ms a " << unit << " | share | of datasheet | "
     << "of measured roof | pass |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n";
  for (const std::size_t i : e.top) {
    const OperatorRow& r = rows[i];
    auto percent = [&r](const std::optional<double>& f) {
      return f ? fixed_digits(100 * *f, 1) + " %" + (r.flops_known ? "" : " (bytes)") : std::string("–");
    };
    const double per_step = r.calls_per_step * r.median_ms;
    md << "| " << r.op << " | " << r.call << " | " << fixed_digits(r.calls_per_step, 2) << " | "
       << fixed_digits(r.median_ms, 4) << " | " << fixed_digits(per_step, 3) << " | "
       << (e.explained_ms > 0 ? fixed_digits(100 * per_step / e.explained_ms, 1) + " %" : "–") << " | "
       << percent(r.datasheet_fraction) << " | " << percent(r.measured_fraction) << " | "
       << (r.backward ? "backward" : "forward") << " |\n";
  }
  md << "\nBy operator (all its calls):\n\n| operator | calls a " << unit << " | ms a " << unit
     << " | share |\n| --- | ---: | ---: | ---: |\n";
  const auto by_op = by_operator(rows);
  for (std::size_t i = 0; i < by_op.size() && i < e.top.size(); ++i)
    md << "| " << by_op[i].op << " | " << fixed_digits(by_op[i].calls, 1) << " | " << fixed_digits(by_op[i].ms, 3)
       << " | " << (e.explained_ms > 0 ? fixed_digits(100 * by_op[i].ms / e.explained_ms, 1) + " %" : "–") << " |\n";
  md << "\n";
  if (e.below_half.empty()) {
    md << "None of them is below 50 % of its roof.\n";
  } else {
    md << "Below 50 % of their roof:";
    for (const std::size_t i : e.below_half) md << " " << rows[i].op << " (" << rows[i].call << ");";
    md << "\n";
  }
  md << "(bytes): no FLOP formula for the operator, so its roof is its bytes' alone.\n";
  return md.str();
}

}  // namespace xpuperf::opbench
