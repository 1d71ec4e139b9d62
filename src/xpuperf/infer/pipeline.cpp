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
#include "xpuperf/data/idx.h"
#include "xpuperf/infer/engine.h"
#include "xpuperf/infer/entry.h"
#include "xpuperf/infer/generation.h"
#include "xpuperf/infer/inference_case.h"
#include "xpuperf/infer/op_profile.h"
#include "xpuperf/torchrt/device.h"

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

int run_inference(const InferRequest& request, std::ostream& out, std::ostream& err) {
  const std::string name = request.name + ":" + request.framework;
  auto c = make_inference_case(request.name, request.framework);
  if (!c) {
    err << "xpuperf: error: inference case " << name << " is not built into this binary (built: ";
    const auto built = registered_inference_cases();
    for (std::size_t i = 0; i < built.size(); ++i) err << (i ? ", " : "") << built[i];
    err << (built.empty() ? "none" : "") << ")\n";
    return 3;
  }
  const Config& config = request.config;
  PerfLogWriter log(out, 0);
  const double started = steady_seconds();
  json steps = json::object();
  auto step = [&](const std::string& id, const std::string& what) {
    steps[id] = what;
    log.log("INFER_STEP", {{"step", id}, {"status", what}}, __FILE__, __LINE__);
  };
  try {
    // (a) config and the switches, checked before anything runs.
    // null and "" both read as "" (off).
    const std::string compiler = config.get_string("compiler");
    const bool no_validation = config.get_bool("no_validation");
    const std::string onnx_given = config.get_string("exist_onnx_path");
    const std::string compiled_given = config.get_string("exist_compiler_path");
    if (no_validation && onnx_given.empty())
      throw ConfigError("no_validation: true (" + config.at("no_validation").source.str() +
                        ") needs exist_onnx_path: the model is not built, so nothing could be exported; set "
                        "exist_onnx_path, or no_validation: false");
    std::unique_ptr<Engine> engine;
    if (!compiler.empty()) {
      engine = make_engine(compiler);
      if (!engine) {
        std::string built;
        for (const auto& e : registered_engines()) built += (built.empty() ? "" : ", ") + e;
        throw ConfigError("compiler '" + compiler + "' (" + config.at("compiler").source.str() +
                          ") is not an engine of this build (built: " + built + "; null runs validation only)");
      }
    }
    const torch::Device device = torchrt::choose_device(config.get_string("device", "auto"), 0);
    if (!device.is_cuda()) {
      torch::set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
      keep_freed_host_memory();
    }
    const torch::Dtype dtype = engine_dtype(config, device);
    const int repeat = static_cast<int>(std::max<std::int64_t>(1, config.get_int("repeat")));
    const InferContext ctx{config, device};
    step("a_config", "ran: case " + name + ", vendor " + request.vendor + ", compiler " +
                         (compiler.empty() ? "null" : compiler) + ", device " + (device.is_cuda() ? "cuda" : "cpu"));

    // (b) dataset and model.
    const Batches batches = c->build_dataloader(ctx);
    const std::vector<std::int64_t> latency_sizes = latency_batch_sizes(config, batches);
    std::shared_ptr<torch::nn::Module> model;
    if (!no_validation) model = c->create_model(ctx, "");
    torch::Tensor validation_outputs;  // of the first batch, to compare the engine's with
    step("b_data_model", "ran: " + batches.description + (model ? "" : "; no model (no_validation)"));

    json figures = {{"validation_whole", nullptr}, {"validation_core", nullptr}, {"validation_accuracy", nullptr},
                    {"inference_whole", nullptr},  {"inference_core", nullptr},  {"inference_accuracy", nullptr}};
    const double samples = static_cast<double>(batches.samples) * repeat;

    // (c) framework validation.
    if (no_validation) {
      step("c_validation", "skipped: no_validation");
    } else {
      const PassResult v = timed_passes(batches, repeat, device, *c, [&](const torch::Tensor& x, double&) {
        const torch::NoGradGuard no_grad;
        return c->model_forward(*model, x);
      });
      figures["validation_whole"] = samples / v.whole;
      figures["validation_core"] = samples / v.core;
      figures["validation_accuracy"] = v.evaluation.value();
      validation_outputs = v.first_outputs;
      figures["metric"] = v.evaluation.metric;
      step("c_validation", "ran");
    }

    // (d) export.
    std::string onnx = onnx_given;
    if (no_validation) {
      step("d_export", "skipped: no_validation (no model to export)");
    } else if (!onnx_given.empty()) {
      step("d_export", "skipped: exist_onnx_path " + onnx_given);
    } else {
      onnx = c->export_model(*model, ctx, request.out_dir);
      step("d_export", onnx.empty() ? "skipped: " + name + " has no ONNX exporter yet" : "ran: " + onnx);
    }

    // (e) compile and (f) engine inference.
    if (!engine) {
      step("e_compile", "skipped: compiler null");
      step("f_inference", "skipped: compiler null");
    } else {
      const double t0 = steady_seconds();
      std::vector<std::int64_t> sizes = batches.batch_sizes();
      for (const std::int64_t bs : latency_sizes)
        if (std::find(sizes.begin(), sizes.end(), bs) == sizes.end()) sizes.push_back(bs);
      engine->compile({ctx, *c, model, onnx, compiled_given, dtype, batches.sample_shape, sizes, batches.sample_dtype});
      figures["compile_time"] = steady_seconds() - t0;
      step("e_compile", compiled_given.empty() ? "ran: " + engine->describe()
                                               : "skipped: exist_compiler_path " + compiled_given + " loaded");
      const PassResult f = timed_passes(batches, repeat, device, *c, [&](const torch::Tensor& x, double& foo) {
        EngineOutput o = engine->infer(x);
        foo = o.foo_time;
        return o.outputs;
      });
      figures["inference_whole"] = samples / f.whole;
      figures["inference_core"] = samples / f.core;
      figures["inference_accuracy"] = f.evaluation.value();
      figures["metric"] = f.evaluation.metric;
      figures["foo_time"] = f.foo;
      figures["foo_time_flagged"] = f.foo != 0.0;  // FlagPerf: any non-zero foo_time is reviewed
      figures["engine"] = engine->describe();
      // The engine's outputs against the framework's on the same first batch.
      if (validation_outputs.defined() && f.first_outputs.defined() &&
          validation_outputs.sizes() == f.first_outputs.sizes()) {
        const double diff = (f.first_outputs - validation_outputs).abs().max().item<double>();
        const double scale = validation_outputs.abs().max().item<double>();
        figures["max_abs_diff_vs_validation"] = diff;
        figures["relative_diff_vs_validation"] = scale > 0 ? diff / scale : diff;  // of the largest output
        if (const double agreement = c->output_agreement(f.first_outputs, validation_outputs); agreement >= 0)
          figures["top1_agreement_vs_validation"] = agreement;
      }
      const double flops = config.get_number("flops") > 0 ? config.get_number("flops") : c->flops_per_sample();
      if (request.peak_tflops > 0 && flops > 0)
        figures["mfu"] = flops * (samples / f.core) / (request.peak_tflops * 1e12);
      // Latency, one query at a time (MLPerf's SingleStream): p50/p90/p99 over latency_queries.
      json latency = json::array();
      const torch::Tensor first = batches.count > 0 ? batches.load(0).input : torch::Tensor();
      for (const std::int64_t bs : latency_sizes) {
        std::vector<double> ms;
        const std::int64_t queries = config.get_int("latency_queries");
        for (std::int64_t q = 0; q < queries; ++q) {
          const std::int64_t at = (q * bs) % (first.size(0) - bs + 1);
          const torch::Tensor x = first.slice(0, at, at + bs).to(device);
          torchrt::synchronize(device);
          const double t = steady_seconds();
          const EngineOutput o = engine->infer(x);
          torchrt::synchronize(device);
          ms.push_back((steady_seconds() - t - o.foo_time) * 1e3);
        }
        // As LoadGen takes percentiles (the generation scenarios too): index ⌊n × p⌋ of the sorted.
        const loadgen::Percentiles p = loadgen::percentiles(ms);
        latency.push_back(
            {{"batch_size", bs}, {"queries", queries}, {"p50_ms", p.p50}, {"p90_ms", p.p90}, {"p99_ms", p.p99}});
      }
      figures["latency"] = latency;
      // Where the engine's time goes, operator by operator (--set profile_batches=N), outside the timings.
      if (const std::int64_t n = config.get_int("profile_batches", 0); n > 0 && first.defined()) {
        const torch::Tensor x = first.narrow(0, 0, std::min(batches.batch_size, first.size(0))).to(device);
        engine->infer(x);  // warm, so first-call work is not counted
        torchrt::synchronize(device);
        const std::vector<OpTime> ops = profile_ops(
            [&] {
              for (std::int64_t i = 0; i < n; ++i) engine->infer(x);
            },
            device);
        figures["op_profile"] = {{"batches", n},
                                 {"batch_size", x.size(0)},
                                 {"timing", device.is_cuda() ? "GPU time between CUDA events" : "wall clock"},
                                 {"operators", op_profile_json(ops, 30)}};
        out << "\nATen operators of " << n << " batch(es) of " << x.size(0) << " through " << engine->describe()
            << " (self time: less the operators each calls):\n"
            << (ops.empty() ? "none ran: the engine replays a CUDA graph or runs compiled code; profile it with "
                              "compiler libtorch\n"
                            : op_profile_table(ops, 15));
      }
      step("f_inference", "ran");
      engine.reset();  // its CUDA graphs and buffers: the memory generation needs
    }

    // (h) generation: decoding and serving, for the cases that generate.
    if (c->generates()) {
      if (!model) {
        step("h_generation", "skipped: no_validation (no model to generate with)");
      } else {
        figures["generation"] = c->generation(ctx, model, dtype, out);
        step("h_generation", "ran: " + figures["generation"].value("engine", std::string()));
      }
    }

    // (g) results.
    figures["case"] = name;
    figures["vendor"] = request.vendor;
    figures["samples"] = samples;
    figures["data"] = batches.description;
    figures["steps"] = steps;
    figures["e2e_time"] = steady_seconds() - started;
    if (const std::string caveat = c->caveat(); !caveat.empty()) figures["caveat"] = caveat;
    step("g_results", "ran");
    log.log(perflog_event::kFinished, figures, __FILE__, __LINE__);

    auto show = [&](const char* key, int digits) -> std::string {
      if (!figures.contains(key) || figures[key].is_null()) return "null";
      std::ostringstream s;
      s << std::fixed << std::setprecision(digits) << figures[key].get<double>();
      return s.str();
    };
    out << "\n| figure | value |\n| --- | ---: |\n"
        << "| validation_whole (items/s) | " << show("validation_whole", 1) << " |\n"
        << "| validation_core (items/s) | " << show("validation_core", 1) << " |\n"
        << "| inference_whole (items/s) | " << show("inference_whole", 1) << " |\n"
        << "| inference_core (items/s) | " << show("inference_core", 1) << " |\n"
        << "| validation accuracy | " << show("validation_accuracy", 4) << " |\n"
        << "| inference accuracy | " << show("inference_accuracy", 4) << " |\n"
        << "| MFU | " << show("mfu", 6) << " |\n";
    if (figures.contains("latency"))
      for (const auto& l : figures["latency"])
        out << "| latency batch " << l["batch_size"].get<std::int64_t>() << " p50 / p90 / p99 (ms) | " << std::fixed
            << std::setprecision(3) << l["p50_ms"].get<double>() << " / " << l["p90_ms"].get<double>() << " / "
            << l["p99_ms"].get<double>() << " |\n";
    if (figures.contains("generation")) out << generation_tables(figures["generation"]);
    if (figures.value("foo_time_flagged", false))
      out << "\nfoo_time " << figures["foo_time"].get<double>() << " s: the engine spent time outside inference\n";
    if (figures.contains("caveat")) out << "\nNOTE: " << figures["caveat"].get<std::string>() << "\n";
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
