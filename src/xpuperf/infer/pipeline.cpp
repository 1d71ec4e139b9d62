// The pipeline of FlagPerf's inference framework: (a) logger and config, (b) dataset and model, (c) framework
// validation, (d) export, (e) engine compile, (f) engine inference, (g) results; with its four switches:
//   compiler: null          → no (e) and (f): the inference figures are null
//   no_validation: true     → no model, no (c) and (d); needs exist_onnx_path
//   exist_onnx_path: <file> → no (d)
//   exist_compiler_path: <file> → no (e): the engine loads that file
// *_whole times include moving data, compute and evaluation; *_core only compute, synchronised.

#include <torch/torch.h>

#include <algorithm>
#include <iomanip>
#include <iostream>
#include <thread>

#include "xpuperf/core/files.h"
#include "xpuperf/core/host_memory.h"
#include "xpuperf/core/load_generator.h"
#include "xpuperf/core/perflog.h"
#include "xpuperf/data/data_error.h"
#include "xpuperf/infer/engine.h"
#include "xpuperf/infer/entry.h"
#include "xpuperf/infer/generation.h"
#include "xpuperf/infer/inference_case.h"
#include "xpuperf/infer/op_profile.h"
#include "xpuperf/torchrt/device.h"
#include "xpuperf/torchrt/op_census.h"
#include "xpuperf/torchrt/vendor_runtime.h"

namespace xpuperf::infer {

using nlohmann::json;

std::vector<std::string> built_inference_cases() {
  return registered_inference_cases();
}
std::vector<std::string> built_engines() {
  return registered_engines();
}

namespace {

struct PassResult {
  double whole = 0, core = 0, foo = 0;
  Evaluation evaluation;
  torch::Tensor first_outputs;  // of the first batch, float32 on the CPU
};

// `repeat` passes over the batches after one untimed warm-up batch; the accuracy is the first
// pass's. Loading a batch counts in *_whole, as FlagPerf's inference framework says.
template <typename Forward>
PassResult timed_passes(const Batches& batches, int repeat, const torch::Device& device, InferenceCase& c,
                        const Forward& forward) {
  PassResult r;
  if (batches.count > 0) {  // one untimed batch first: lazy initialisation, kernel selection
    double foo = 0;
    forward(batches.load(0).input.to(device), foo);
    torchrt::synchronize(device);
  }
  const double start = steady_seconds();
  for (int pass = 0; pass < repeat; ++pass) {
    for (std::size_t i = 0; i < batches.count; ++i) {
      const Batch batch = batches.load(i);
      const torch::Tensor input = batch.input.to(device);
      torchrt::synchronize(device);
      const double t0 = steady_seconds();
      double foo = 0;
      const torch::Tensor out = forward(input, foo);
      torchrt::synchronize(device);
      r.core += steady_seconds() - t0 - foo;
      r.foo += foo;
      if (pass == 0) {
        const torch::Tensor host = out.to(torch::kCPU).to(torch::kFloat);
        c.evaluator(host, batch.labels, r.evaluation);
        if (i == 0) r.first_outputs = host;
      }
    }
  }
  r.whole = steady_seconds() - start - r.foo;
  return r;
}

// fp16: true runs the engine in half precision: half_precision float16 or bfloat16, or auto
// (float16 on CUDA, bfloat16 on the CPU, whose float16 kernels are few).
torch::Dtype engine_dtype(const Config& config, const torch::Device& device) {
  if (!config.get_bool("fp16")) return torch::kFloat;
  const std::string half = config.get_string("half_precision", "auto");
  if (half == "float16") return torch::kHalf;
  if (half == "bfloat16") return torch::kBFloat16;
  if (half == "auto") return device.is_cuda() ? torch::kHalf : torch::kBFloat16;
  throw ConfigError("half_precision: '" + half + "' (" + config.at("half_precision").source.str() +
                    ") is not auto, float16 or bfloat16");
}

std::vector<std::int64_t> latency_batch_sizes(const Config& config, const Batches& batches) {
  std::vector<std::int64_t> sizes;
  if (!config.has("latency_batch_sizes")) return sizes;
  for (const auto& text : config.get_string_list("latency_batch_sizes")) {
    std::int64_t bs = 0;
    try {
      bs = std::stoll(text);
    } catch (const std::exception&) {
    }
    if (bs <= 0 || bs > batches.batch_size || bs > batches.samples)
      throw ConfigError("latency_batch_sizes: " + text + " is not a batch size in 1.." +
                        std::to_string(std::min(batches.batch_size, batches.samples)) + " (batch_size " +
                        std::to_string(batches.batch_size) + ")");
    sizes.push_back(bs);
  }
  return sizes;
}

}  // namespace

namespace {

// FlagPerf's inference framework as one object, a method a step: (a) config, (b) dataset and
// model, (c) framework validation, (d) export, (e) compile, (f) engine inference (with latency and
// the operator profile), (h) generation, (g) results. Each step logs INFER_STEP with what it did.
class InferenceRun {
 public:
  InferenceRun(const InferenceRequest& request, InferenceCase& c, std::ostream& out)
      : request_(request),
        config_(request.config),
        c_(c),
        name_(request.name + ":" + request.framework),
        out_(out),
        log_(out, 0) {}

  void run() {
    check_config();
    load_data_and_model();
    validate();
    export_model();
    if (engine_) {
      compile_engine();
      engine_inference();
      engine_.reset();  // its CUDA graphs and buffers: the memory generation needs
    } else {
      step("e_compile", "skipped: compiler null");
      step("f_inference", "skipped: compiler null");
    }
    generate();
    results();
    print_table();
  }

 private:
  void step(const std::string& id, const std::string& what) {
    steps_[id] = what;
    log_.log("INFER_STEP", {{"step", id}, {"status", what}}, __FILE__, __LINE__);
  }

  // (a) config and the switches, checked before anything runs (null and "" both read as "": off).
  void check_config() {
    compiler_ = config_.get_string("compiler");
    no_validation_ = config_.get_bool("no_validation");
    onnx_ = config_.get_string("exist_onnx_path");
    compiled_given_ = config_.get_string("exist_compiler_path");
    if (no_validation_ && onnx_.empty())
      throw ConfigError("no_validation: true (" + config_.at("no_validation").source.str() +
                        ") needs exist_onnx_path: the model is not built, so nothing could be exported; set "
                        "exist_onnx_path, or no_validation: false");
    if (!compiler_.empty()) {
      engine_ = make_engine(compiler_);
      if (!engine_) {
        std::string built;
        for (const auto& e : registered_engines()) built += (built.empty() ? "" : ", ") + e;
        throw ConfigError("compiler '" + compiler_ + "' (" + config_.at("compiler").source.str() +
                          ") is not an engine of this build (built: " + built + "; null runs validation only)");
      }
    }
    device_ = torchrt::choose_device(config_.get_string("device", "auto"), 0);
    if (!device_.is_cuda()) {
      torchrt::set_cpu_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
      keep_freed_host_memory();
    }
    ctx_ = std::make_unique<InferContext>(InferContext{config_, device_});
    dtype_ = engine_dtype(config_, device_);
    repeat_ = static_cast<int>(std::max<std::int64_t>(1, config_.get_int("repeat")));
    step("a_config", "ran: case " + name_ + ", vendor " + request_.vendor + ", compiler " +
                         (compiler_.empty() ? "null" : compiler_) + ", device " + torchrt::device_text(device_.str()));
  }

  // One context for the whole run: cases and engines may keep a reference to it.
  const InferContext& ctx() const { return *ctx_; }

  // (b) dataset and model.
  void load_data_and_model() {
    batches_ = c_.build_dataloader(ctx());
    latency_sizes_ = latency_batch_sizes(config_, batches_);
    if (!latency_sizes_.empty() && config_.get_int("latency_queries") < 1)
      throw ConfigError(config_.at("latency_queries").source.str() + ": latency_queries must be 1 or more, got " +
                        std::to_string(config_.get_int("latency_queries")) +
                        " (no query gives no latency); set latency_batch_sizes: [] to leave latency out");
    if (!no_validation_) model_ = c_.create_model(ctx(), "");
    samples_ = static_cast<double>(batches_.samples) * repeat_;
    step("b_data_model", "ran: " + batches_.description + (model_ ? "" : "; no model (no_validation)"));
  }

  // (c) framework validation.
  void validate() {
    if (no_validation_) {
      step("c_validation", "skipped: no_validation");
      return;
    }
    const PassResult v = timed_passes(batches_, repeat_, device_, c_, [&](const torch::Tensor& x, double&) {
      const torch::NoGradGuard no_grad;
      return c_.model_forward(*model_, x);
    });
    figures_["validation_whole"] = samples_ / v.whole;
    figures_["validation_core"] = samples_ / v.core;
    figures_["validation_accuracy"] = v.evaluation.value();
    validation_outputs_ = v.first_outputs;
    figures_["metric"] = v.evaluation.metric;
    step("c_validation", "ran");
  }

  // (d) export.
  void export_model() {
    if (no_validation_) {
      step("d_export", "skipped: no_validation (no model to export)");
    } else if (!onnx_.empty()) {
      step("d_export", "skipped: exist_onnx_path " + onnx_);
    } else {
      onnx_ = c_.export_model(*model_, ctx(), request_.out_dir);
      step("d_export", onnx_.empty() ? "skipped: " + name_ + " has no ONNX exporter yet" : "ran: " + onnx_);
    }
  }

  // (e) compile, for every batch size the passes and the latency queries use.
  void compile_engine() {
    const double t0 = steady_seconds();
    std::vector<std::int64_t> sizes = batches_.batch_sizes();
    for (const std::int64_t bs : latency_sizes_)
      if (std::find(sizes.begin(), sizes.end(), bs) == sizes.end()) sizes.push_back(bs);
    engine_->compile(
        {ctx(), c_, model_, onnx_, compiled_given_, dtype_, batches_.sample_shape, sizes, batches_.sample_dtype});
    figures_["compile_time"] = steady_seconds() - t0;
    step("e_compile", compiled_given_.empty() ? "ran: " + engine_->describe()
                                              : "skipped: exist_compiler_path " + compiled_given_ + " loaded");
  }

  // (f) engine inference: the timed passes, the outputs against validation's, MFU, latency, the profile.
  void engine_inference() {
    const PassResult f = timed_passes(batches_, repeat_, device_, c_, [&](const torch::Tensor& x, double& foo) {
      EngineOutput o = engine_->infer(x);
      foo = o.foo_time;
      return o.outputs;
    });
    figures_["inference_whole"] = samples_ / f.whole;
    figures_["inference_core"] = samples_ / f.core;
    figures_["inference_accuracy"] = f.evaluation.value();
    figures_["metric"] = f.evaluation.metric;
    figures_["foo_time"] = f.foo;
    figures_["foo_time_flagged"] = f.foo != 0.0;  // FlagPerf: any non-zero foo_time is reviewed
    figures_["engine"] = engine_->describe();
    compare_with_validation(f.first_outputs);
    const double flops = config_.get_number("flops") > 0 ? config_.get_number("flops") : c_.flops_per_sample();
    if (request_.peak_tflops > 0 && flops > 0)
      figures_["mfu"] = flops * (samples_ / f.core) / (request_.peak_tflops * 1e12);
    const torch::Tensor first = batches_.count > 0 ? batches_.load(0).input : torch::Tensor();
    figures_["latency"] = latency(first);
    if (const std::int64_t n = config_.get_int("profile_batches", 0); n > 0 && first.defined()) profile(first, n);
    if (const std::int64_t n = config_.get_int("census_batches", 0); n > 0 && first.defined())
      take_census(first, n, 1e3 * f.core / static_cast<double>(samples_));
    step("f_inference", "ran");
  }

  // The engine's outputs against the framework's on the same first batch.
  void compare_with_validation(const torch::Tensor& outputs) {
    if (!validation_outputs_.defined() || !outputs.defined() || validation_outputs_.sizes() != outputs.sizes()) return;
    const double diff = (outputs - validation_outputs_).abs().max().item<double>();
    const double scale = validation_outputs_.abs().max().item<double>();
    figures_["max_abs_diff_vs_validation"] = diff;
    figures_["relative_diff_vs_validation"] = scale > 0 ? diff / scale : diff;  // of the largest output
    if (const double agreement = c_.output_agreement(outputs, validation_outputs_); agreement >= 0)
      figures_["top1_agreement_vs_validation"] = agreement;
  }

  // Latency, one query at a time (MLPerf's SingleStream): p50/p90/p99 over latency_queries, for
  // each of latency_batch_sizes, from the first batch's samples.
  json latency(const torch::Tensor& first) {
    json latency = json::array();
    for (const std::int64_t bs : latency_sizes_) {
      std::vector<double> ms;
      const std::int64_t queries = config_.get_int("latency_queries");
      for (std::int64_t q = 0; q < queries; ++q) {
        const std::int64_t at = (q * bs) % (first.size(0) - bs + 1);
        const torch::Tensor x = first.slice(0, at, at + bs).to(device_);
        torchrt::synchronize(device_);
        const double t = steady_seconds();
        const EngineOutput o = engine_->infer(x);
        torchrt::synchronize(device_);
        ms.push_back((steady_seconds() - t - o.foo_time) * 1e3);
      }
      // As LoadGen takes percentiles (the generation scenarios too): index ⌊n × p⌋ of the sorted.
      const loadgen::Percentiles p = loadgen::percentiles(ms);
      latency.push_back(
          {{"batch_size", bs}, {"queries", queries}, {"p50_ms", p.p50}, {"p90_ms", p.p90}, {"p99_ms", p.p99}});
    }
    return latency;
  }

  // Where the engine's time goes, operator by operator (--set profile_batches=N), outside the timings.
  void profile(const torch::Tensor& first, std::int64_t n) {
    const torch::Tensor x = first.narrow(0, 0, std::min(batches_.batch_size, first.size(0))).to(device_);
    engine_->infer(x);  // warm, so first-call work is not counted
    torchrt::synchronize(device_);
    const std::vector<OpTime> ops = profile_ops(
        [&] {
          for (std::int64_t i = 0; i < n; ++i) engine_->infer(x);
        },
        device_);
    figures_["op_profile"] = {{"batches", n},
                              {"batch_size", x.size(0)},
                              {"timing", op_profile_timing(device_)},
                              {"operators", op_profile_json(ops, 30)}};
    out_ << "\nATen operators of " << n << " batch(es) of " << x.size(0) << " through " << engine_->describe()
         << " (self time: less the operators each calls):\n"
         << (ops.empty() ? "none ran: the engine replays a device graph or runs compiled code; profile it with "
                           "compiler libtorch\n"
                         : op_profile_table(ops, 15));
  }

  // Every operator call of N batches through the engine, for `xpuperf op --census` to replay
  // (--set census_batches=N), outside the timings; `sample_ms`: the timed passes' core time a sample.
  void take_census(const torch::Tensor& first, std::int64_t n, double sample_ms) {
    const torch::Tensor x = first.narrow(0, 0, std::min(batches_.batch_size, first.size(0))).to(device_);
    engine_->infer(x);  // warm, so first-call work is not counted
    torchrt::synchronize(device_);
    torchrt::Census census;
    census.what = name_ + " through " + engine_->describe() + " on " + torchrt::device_text(device_.str());
    census.unit = "batch";
    census.units = static_cast<double>(n);
    {
      torchrt::OperatorCensus recording;
      for (std::int64_t i = 0; i < n; ++i) engine_->infer(x);
      census.calls = recording.stop();
      census.opaque_backward = recording.opaque_backward();
    }
    torchrt::synchronize(device_);
    census.step_ms = sample_ms * static_cast<double>(x.size(0));
    census.step_ms_source = "the timed passes' core time a batch of " + std::to_string(x.size(0));
    figures_["operator_census"] = census.to_json();
    out_ << "\nOperator census of " << n << " batch(es) of " << x.size(0) << ": " << census.calls.size()
         << " distinct calls"
         << (census.calls.empty() ? " (the engine replays a device graph or runs compiled code; take the census "
                                    "with compiler libtorch)"
                                  : "; xpuperf op --census on this run replays them")
         << "\n";
  }

  // (h) generation: decoding and serving, for the cases that generate.
  void generate() {
    if (!c_.generates()) return;
    if (!model_) {
      step("h_generation", "skipped: no_validation (no model to generate with)");
      return;
    }
    figures_["generation"] = c_.generation(ctx(), model_, dtype_, out_);
    step("h_generation", "ran: " + figures_["generation"].value("engine", std::string()));
  }

  // (g) results: the FINISHED event.
  void results() {
    figures_["case"] = name_;
    figures_["vendor"] = request_.vendor;
    figures_["samples"] = samples_;
    figures_["data"] = batches_.description;
    figures_["steps"] = steps_;
    figures_["e2e_time"] = steady_seconds() - started_;
    if (const std::string caveat = c_.caveat(); !caveat.empty()) figures_["caveat"] = caveat;
    step("g_results", "ran");
    log_.log(perflog_event::kFinished, figures_, __FILE__, __LINE__);
  }

  void print_table() {
    auto show = [&](const char* key, int digits) -> std::string {
      if (!figures_.contains(key) || figures_[key].is_null()) return "null";
      std::ostringstream s;
      s << std::fixed << std::setprecision(digits) << figures_[key].get<double>();
      return s.str();
    };
    out_ << "\n| figure | value |\n| --- | ---: |\n"
         << "| validation_whole (items/s) | " << show("validation_whole", 1) << " |\n"
         << "| validation_core (items/s) | " << show("validation_core", 1) << " |\n"
         << "| inference_whole (items/s) | " << show("inference_whole", 1) << " |\n"
         << "| inference_core (items/s) | " << show("inference_core", 1) << " |\n"
         << "| validation accuracy | " << show("validation_accuracy", 4) << " |\n"
         << "| inference accuracy | " << show("inference_accuracy", 4) << " |\n"
         << "| MFU | " << show("mfu", 6) << " |\n";
    if (figures_.contains("latency"))
      for (const auto& l : figures_["latency"])
        out_ << "| latency batch " << l["batch_size"].get<std::int64_t>() << " p50 / p90 / p99 (ms) | " << std::fixed
             << std::setprecision(3) << l["p50_ms"].get<double>() << " / " << l["p90_ms"].get<double>() << " / "
             << l["p99_ms"].get<double>() << " |\n";
    if (figures_.contains("generation")) out_ << generation_tables(figures_["generation"]);
    if (figures_.value("foo_time_flagged", false))
      out_ << "\nfoo_time " << figures_["foo_time"].get<double>() << " s: the engine spent time outside inference\n";
    if (figures_.contains("caveat")) out_ << "\nNOTE: " << figures_["caveat"].get<std::string>() << "\n";
  }

  const InferenceRequest& request_;
  const Config& config_;
  InferenceCase& c_;
  const std::string name_;
  std::ostream& out_;
  PerfLogWriter log_;
  const double started_ = steady_seconds();
  json steps_ = json::object();
  json figures_ = {{"validation_whole", nullptr}, {"validation_core", nullptr}, {"validation_accuracy", nullptr},
                   {"inference_whole", nullptr},  {"inference_core", nullptr},  {"inference_accuracy", nullptr}};

  std::string compiler_, onnx_, compiled_given_;
  bool no_validation_ = false;
  std::unique_ptr<Engine> engine_;
  torch::Device device_{torch::kCPU};
  std::unique_ptr<InferContext> ctx_;
  torch::Dtype dtype_ = torch::kFloat;
  int repeat_ = 1;
  Batches batches_;
  std::vector<std::int64_t> latency_sizes_;
  double samples_ = 0;
  std::shared_ptr<torch::nn::Module> model_;
  torch::Tensor validation_outputs_;  // of the first batch, to compare the engine's with
};

}  // namespace

int run_inference(const InferenceRequest& request, std::ostream& out, std::ostream& err) {
  auto c = make_inference_case(request.name, request.framework);
  if (!c) {
    err << "xpuperf: error: inference case " << request.name << ":" << request.framework
        << " is not built into this binary (built: ";
    const auto built = registered_inference_cases();
    for (std::size_t i = 0; i < built.size(); ++i) err << (i ? ", " : "") << built[i];
    err << (built.empty() ? "none" : "") << ")\n";
    return 3;
  }
  try {
    torchrt::activate_vendor(request.vendor_spec);
    InferenceRun(request, *c, out).run();
    return 0;
  } catch (const ConfigError& e) {
    err << "xpuperf: error: " << e.what() << "\n";
  } catch (const data::DataError& e) {
    err << "xpuperf: error: data: " << e.what() << "\n";
  } catch (const std::runtime_error& e) {
    err << "xpuperf: error: " << e.what() << "\n";
  } catch (const c10::Error& e) {
    err << "xpuperf: error: LibTorch: " << e.what_without_backtrace() << "\n";
  } catch (const std::logic_error& e) {  // a setting the generation engine cannot take
    err << "xpuperf: error: " << e.what() << "\n";
  }
  return 1;
}

}  // namespace xpuperf::infer
