#include "xpuperf/torchrt/op_census.h"

#include <ATen/record_function.h>
#include <torch/torch.h>

#include <atomic>
#include <cmath>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>

#include "xpuperf/torchrt/compat.h"

namespace xpuperf::torchrt {

using json = nlohmann::json;

namespace {

json tensor_json(const at::Tensor& t) {
  return {{"sizes", t.sizes().vec()},
          {"strides", t.strides().vec()},
          {"dtype", c10::toString(t.scalar_type())},
          {"on", t.device().is_cpu() ? "cpu" : "device"}};
}

// JSON has no infinities: they are written as strings.
json number_json(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

// One argument as a replay needs it (op_census.h lists the forms).
json argument_json(const c10::IValue& v) {
  if (v.isNone()) return {{"none", true}};
  if (v.isTensor()) return v.toTensor().defined() ? json{{"tensor", tensor_json(v.toTensor())}} : json{{"none", true}};
  if (v.isBool()) return {{"bool", v.toBool()}};
  if (v.isInt()) return {{"int", v.toInt()}};
  if (v.isDouble()) return {{"double", number_json(v.toDouble())}};
  if (v.isString()) return {{"string", v.toStringRef()}};
  if (v.isDevice()) return {{"device", v.toDevice().is_cpu() ? "cpu" : "device"}};
  if (v.isGenerator()) return {{"generator", true}};
  if (v.isIntList()) return {{"ints", v.toIntVector()}};
  if (v.isDoubleList()) {
    json list = json::array();
    for (const double d : v.toDoubleVector()) list.push_back(number_json(d));
    return {{"doubles", list}};
  }
  if (v.isBoolList()) {
    std::vector<bool> bools;
    for (const bool b : v.toBoolList()) bools.push_back(b);
    return {{"bools", bools}};
  }
  if (v.isTensorList()) {
    json list = json::array();
    for (const at::Tensor& t : v.toTensorVector()) list.push_back(tensor_json(t));
    return {{"tensors", list}};
  }
  if (v.isList()) {  // a list of optional tensors (index's), or of numbers the types did not say
    json tensors = json::array(), ints = json::array();
    bool all_tensors = true, all_ints = true;
    for (const c10::IValue& e : v.toListRef()) {
      all_tensors = all_tensors && (e.isNone() || e.isTensor());
      all_ints = all_ints && e.isInt();
      if (e.isTensor() && e.toTensor().defined())
        tensors.push_back(tensor_json(e.toTensor()));
      else if (e.isNone() || e.isTensor())
        tensors.push_back(nullptr);
      if (e.isInt()) ints.push_back(e.toInt());
    }
    if (all_ints) return {{"ints", ints}};
    if (all_tensors) return {{"optional_tensors", tensors}};
  }
  return {{"unsupported", v.tagKind()}};
}

// A call's arguments as its census key: floating-point scalars left out, so that calls that differ
// only in one (a learning rate that changes every step) count as one, with the first one's values.
std::string key_of(const json& arguments) {
  json key = arguments;
  for (json& a : key)
    if (a.contains("double")) a["double"] = "x";
  return key.dump();
}

}  // namespace

// The census in progress: the distinct calls, reached from RecordFunction's callbacks (plain
// functions) through `active`.
struct OperatorCensus::Recording {
  std::mutex mutex;
  std::map<std::string, std::size_t> index;  // a call's key -> its place in `calls`
  std::vector<CensusCall> calls;
  at::CallbackHandle handle = 0;

  void add(const at::RecordFunction& fn, bool backward) {
    CensusCall call;
    if (const auto name = fn.operator_name()) {
      call.op = name->name;
      call.overload = name->overload_name;
    } else {
      call.op = fn.name();
    }
    call.backward = backward;
    call.arguments = json::array();
    c10::DeviceType where = c10::DeviceType::CPU;  // the first device tensor's type, else the CPU
    for (const c10::IValue& v : fn.inputs()) {
      call.arguments.push_back(argument_json(v));
      if (where == c10::DeviceType::CPU && v.isTensor() && v.toTensor().defined()) where = v.toTensor().device().type();
    }
    if (compat::autocast_enabled(where)) call.autocast = c10::toString(compat::autocast_dtype(where));
    const std::string key =
        call.op + "." + call.overload + (backward ? " b " : " f ") + call.autocast + " " + key_of(call.arguments);
    std::lock_guard<std::mutex> lock(mutex);
    const auto [at, added] = index.emplace(key, calls.size());
    if (added) calls.push_back(std::move(call));
    ++calls[at->second].calls;
  }

  void add_opaque(const std::string& node) {
    std::lock_guard<std::mutex> lock(mutex);
    ++opaque[node];
  }
  std::map<std::string, std::int64_t> opaque;  // OperatorCensus::opaque_backward
};

namespace {

std::atomic<OperatorCensus::Recording*> active{nullptr};

// This thread's open calls: ATen operators (only the outermost is counted) and autograd nodes, each
// with whether it has made an operator call yet.
thread_local int open_operators = 0;
thread_local std::vector<bool> open_nodes;

// A C++ autograd function's node ("torch::autograd::CppNode<ns::AddNormFunction>"): its name,
// "AddNormFunction"; "" for ATen's own nodes.
std::string custom_function_of(const std::string& node) {
  const std::string prefix = "torch::autograd::CppNode<";
  if (node.rfind(prefix, 0) != 0) return "";
  std::string name = node.substr(prefix.size());
  if (!name.empty() && name.back() == '>') name.pop_back();
  const auto colon = name.rfind("::");
  return colon == std::string::npos ? name : name.substr(colon + 2);
}

// Operators that launch no kernel: they allocate, or view what exists. A custom backward that
// made only these launched its kernels itself (xpuperf's fused kernels allocate their gradients
// with empty_like, then launch), so its time is still in no call.
bool launches_no_kernel(const char* op) {
  static const std::set<std::string> kNone = {"aten::empty",      "aten::empty_like",    "aten::empty_strided",
                                              "aten::view",       "aten::reshape",       "aten::_reshape_alias",
                                              "aten::as_strided", "aten::detach",        "aten::alias",
                                              "aten::t",          "aten::transpose",     "aten::permute",
                                              "aten::expand",     "aten::squeeze",       "aten::unsqueeze",
                                              "aten::slice",      "aten::select",        "aten::narrow",
                                              "aten::resize_",    "aten::size",          "aten::stride",
                                              "aten::numel",      "aten::is_contiguous", "aten::contiguous_format"};
  return kNone.count(op) > 0;
}

// The start callback marks what it opened, so that the end callback undoes exactly that.
struct Opened : at::ObserverContext {
  explicit Opened(bool op) : operator_scope(op) {}
  bool operator_scope;
};

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
    open_nodes.push_back(false);
    return std::make_unique<Opened>(false);
  }
  // Scopes that are not operators (the autograd engine's "evaluate_function: ..." around a node)
  // neither count nor hide the operators under them.
  if (!fn.operator_name()) return nullptr;
  if (open_operators++ == 0) {
    if (auto* r = active.load()) r->add(fn, !open_nodes.empty());
    if (!open_nodes.empty() && !launches_no_kernel(fn.name())) open_nodes.back() = true;
  }
  return std::make_unique<Opened>(true);
}

void on_end(const at::RecordFunction& fn, at::ObserverContext* context) {
  if (!context) return;
  if (static_cast<Opened*>(context)->operator_scope) {
    --open_operators;
    return;
  }
  if (open_nodes.empty()) return;
  const bool made_call = open_nodes.back();
  open_nodes.pop_back();
  // A custom function's backward that called no operator launched its kernels itself: its time is
  // in the step and in no call of the census.
  if (!made_call)
    if (const std::string name = custom_function_of(fn.name()); !name.empty())
      if (auto* r = active.load()) r->add_opaque(name);
}

}  // namespace

OperatorCensus::OperatorCensus() : recording_(std::make_unique<Recording>()) {
  Recording* expected = nullptr;
  if (!active.compare_exchange_strong(expected, recording_.get()))
    throw std::logic_error("OperatorCensus: a census is already running in this process");
  recording_->handle =
      at::addGlobalCallback(at::RecordFunctionCallback(on_start, on_end)
                                .needsInputs(true)
                                .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
}

OperatorCensus::~OperatorCensus() {
  if (recording_->handle != 0) stop();
}

std::map<std::string, std::int64_t> OperatorCensus::opaque_backward() const {
  std::lock_guard<std::mutex> lock(recording_->mutex);
  return recording_->opaque;
}

std::vector<CensusCall> OperatorCensus::stop() {
  if (recording_->handle != 0) {
    at::removeCallback(recording_->handle);
    recording_->handle = 0;
    active.store(nullptr);
  }
  std::lock_guard<std::mutex> lock(recording_->mutex);
  return recording_->calls;
}

json CensusCall::to_json() const {
  json j = {{"op", op}, {"overload", overload}, {"arguments", arguments}, {"calls", calls}, {"backward", backward}};
  if (!autocast.empty()) j["autocast"] = autocast;
  return j;
}

CensusCall CensusCall::from_json(const json& j) {
  CensusCall c;
  try {
    c.op = j.at("op").get<std::string>();
    c.overload = j.value("overload", std::string());
    c.arguments = j.at("arguments");
    c.calls = j.at("calls").get<std::int64_t>();
    c.backward = j.value("backward", false);
    c.autocast = j.value("autocast", std::string());
  } catch (const json::exception& e) {
    throw std::runtime_error(std::string("a census call lacks a key or has a wrong type (") + e.what() + ")");
  }
  if (!c.arguments.is_array()) throw std::runtime_error("a census call's 'arguments' is not a list");
  return c;
}

json Census::to_json() const {
  json list = json::array();
  for (const auto& c : calls) list.push_back(c.to_json());
  json j = {{"what", what}, {"unit", unit}, {"units", units}, {"calls", list}};
  if (!opaque_backward.empty()) j["opaque_backward"] = opaque_backward;
  if (step_ms) j["step_ms"] = *step_ms;
  if (!step_ms_source.empty()) j["step_ms_source"] = step_ms_source;
  return j;
}

Census Census::from_json(const json& j, const std::string& source) {
  Census c;
  c.source = source;
  try {
    c.what = j.value("what", std::string());
    c.unit = j.value("unit", std::string("step"));
    c.units = j.at("units").get<double>();
    if (j.contains("step_ms") && j["step_ms"].is_number()) c.step_ms = j["step_ms"].get<double>();
    c.step_ms_source = j.value("step_ms_source", std::string());
    for (const json& call : j.at("calls")) c.calls.push_back(CensusCall::from_json(call));
    if (j.contains("opaque_backward"))
      c.opaque_backward = j["opaque_backward"].get<std::map<std::string, std::int64_t>>();
  } catch (const std::exception& e) {
    throw std::runtime_error(source + ": not an operator census (" + e.what() + ")");
  }
  if (c.units <= 0) throw std::runtime_error(source + ": the census watched no " + c.unit);
  return c;
}

std::string census_dtype_text(const std::string& c10_name) {
  static const std::map<std::string, std::string> short_names = {
      {"BFloat16", "bf16"}, {"Half", "fp16"},   {"Float", "fp32"}, {"Double", "fp64"}, {"Long", "int64"},
      {"Int", "int32"},     {"Short", "int16"}, {"Bool", "bool"},  {"Byte", "uint8"},  {"Char", "int8"}};
  const auto found = short_names.find(c10_name);
  return found != short_names.end() ? found->second : c10_name;
}

std::string census_tensor_text(const json& t) {
  std::string out = t.value("on", std::string()) == "cpu" ? "cpu:" : "";
  out += census_dtype_text(t.value("dtype", std::string("?")));
  const std::vector<std::int64_t> sizes = t.value("sizes", std::vector<std::int64_t>());
  const std::vector<std::int64_t> strides = t.value("strides", std::vector<std::int64_t>());
  auto list = [](const std::vector<std::int64_t>& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s + "]";
  };
  out += list(sizes);
  // Contiguous strides say nothing the sizes do not.
  std::int64_t expected = 1;
  bool contiguous = strides.size() == sizes.size();
  for (std::size_t i = sizes.size(); contiguous && i-- > 0;) {
    if (sizes[i] != 1 && strides[i] != expected) contiguous = false;
    expected *= sizes[i];
  }
  if (!contiguous) out += "s" + list(strides);
  return out;
}

std::string census_call_text(const CensusCall& call, std::size_t width) {
  std::string out;
  for (const json& a : call.arguments) {
    std::string part;
    if (a.contains("tensor")) {
      part = census_tensor_text(a["tensor"]);
    } else if (a.contains("tensors") || a.contains("optional_tensors")) {
      const json& list = a.contains("tensors") ? a["tensors"] : a["optional_tensors"];
      part = std::to_string(list.size()) + "×";
      part += list.empty() || list[0].is_null() ? "[]" : census_tensor_text(list[0]);
    } else if (a.contains("none")) {
      part = "None";
    } else if (!a.empty()) {
      const json& value = a.begin().value();
      part = value.is_string() ? value.get<std::string>() : value.dump();
    }
    out += (out.empty() ? "" : ", ") + part;
  }
  if (out.size() > width) out = out.substr(0, width) + "…";
  return out;
}

}  // namespace xpuperf::torchrt
