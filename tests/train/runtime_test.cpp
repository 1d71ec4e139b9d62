#include "xpuperf/train/runtime.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_util.h"
#include "toy_case.h"
#include "xpuperf/core/switch_spec.h"
#include "xpuperf/data/device_jpeg.h"
#include "xpuperf/datasets/image_dataset.h"
#include "xpuperf/train/lr_schedule.h"
#include "xpuperf/train/step_profile.h"

namespace xpuperf::train {
namespace {

struct ToyRun {
  TrainingOutcome outcome;
  std::vector<PerfLogEvent> events;
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : events) out.push_back(e.event);
    return out;
  }
  std::vector<const PerfLogEvent*> all(const std::string& name) const {
    std::vector<const PerfLogEvent*> out;
    for (const auto& e : events)
      if (e.event == name) out.push_back(&e);
    return out;
  }
};

ToyRun train_toy(const std::string& overrides, test::ToyCase* use = nullptr) {
  test::ToyCase local;
  test::ToyCase& c = use ? *use : local;
  std::ostringstream out;
  RunInfo info;
  info.case_name = "toy:libtorch";
  info.vendor = "cpu";
  ToyRun run;
  run.outcome = run_training(c, test::toy_config_for(overrides), info, out);
  std::istringstream in(out.str());
  run.events = parse_perflog(in).events;
  return run;
}

TEST(Runtime, EmitsTheEventsInOrderWithTheStandardFinishedKeys) {
  const ToyRun run = train_toy("max_epochs: 2\n");
  // 256 samples / 32 = 8 steps an epoch, STEP_END every 2.
  const std::vector<std::string> step_ends(4, "STEP_END");
  std::vector<std::string> expected = {"INIT_START", "INIT_END", "SUBMIT_INFO", "TRAIN_START"};
  for (int epoch = 0; epoch < 2; ++epoch) {
    expected.push_back("EPOCH_BEGIN");
    expected.insert(expected.end(), step_ends.begin(), step_ends.end());
    expected.push_back("EPOCH_END");
    expected.push_back("EVALUATE");
  }
  expected.push_back("TRAIN_END");
  expected.push_back("FINISHED");
  EXPECT_EQ(run.names(), expected);

  const auto& step = run.all("STEP_END").back()->value;
  for (const char* key : {"loss", "grad_norm", "lr", "samples_per_second", "input_wait_share", "global_steps", "epoch",
                          "num_trained_samples"})
    EXPECT_TRUE(step.contains(key)) << key;
  EXPECT_GE(step["input_wait_share"].get<double>(), 0.0);
  EXPECT_LT(step["input_wait_share"].get<double>(), 1.0);
  const nlohmann::json& finished = run.events.back().value;
  for (const char* key :
       {"e2e_time", "init_time", "raw_train_time", "training_samples_per_second", "training_sequences_per_second",
        "converged", "final_metric", "global_steps", "num_trained_samples"})
    EXPECT_TRUE(finished.contains(key)) << key;
  EXPECT_EQ(finished["global_steps"], 16);
  EXPECT_EQ(finished["num_trained_samples"], 512);
  EXPECT_EQ(finished["converged"], false);
  EXPECT_EQ(finished["final_metric"]["name"], "accuracy");
  EXPECT_EQ(finished["final_metric"]["target"], 1.1);
  EXPECT_EQ(finished["stop_reason"], "max_epochs");
  EXPECT_EQ(run.outcome.reason, StopReason::MaxEpochs);
  EXPECT_GT(*run.outcome.finished.training_samples_per_second, 0.0);
  EXPECT_LE(*run.outcome.finished.raw_train_time, *run.outcome.finished.e2e_time);
}

// The toy case with a training loader that cannot keep up: each batch costs 40 products of 256 × 256
// matrices to make, far more than the toy's step, on the same core. Work, not a sleep: under load
// the loader and the step slow down together, so the share the test reads stays.
class SlowLoaderToy : public test::ToyCase {
  class Slow : public Dataset {
   public:
    explicit Slow(std::shared_ptr<Dataset> inner) : inner_(std::move(inner)) {}
    std::int64_t size() const override { return inner_->size(); }
    std::string description() const override { return inner_->description(); }
    std::int64_t batches_in_epoch(const EpochPlan& plan) const override { return inner_->batches_in_epoch(plan); }
    void start_epoch(const EpochPlan& plan) override { inner_->start_epoch(plan); }
    std::optional<Batch> next_batch() override {
      const auto mean = torch::full({256, 256}, 1.0 / 256);  // averages rows: mean · mean = mean
      auto m = mean;
      for (int i = 0; i < 40; ++i) m = torch::mm(mean, m);
      EXPECT_NEAR(m[0][0].item<double>(), 1.0 / 256, 1e-6);  // the work was done
      return inner_->next_batch();
    }

   private:
    std::shared_ptr<Dataset> inner_;
  };

 public:
  Datasets datasets(const CaseContext& ctx) override {
    Datasets d = ToyCase::datasets(ctx);
    d.train = std::make_shared<Slow>(d.train);
    return d;
  }
};

TEST(Runtime, TheHostsWaitForTrainingDataIsReportedAsAShareOfTheTime) {
  SlowLoaderToy slow;
  const ToyRun starved = train_toy("max_epochs: 1\ntiming_skip_steps: 2\n", &slow);
  const ToyRun fed = train_toy("max_epochs: 1\ntiming_skip_steps: 2\n");
  const auto share = [](const ToyRun& run) {
    return run.all("STEP_END").back()->value["input_wait_share"].get<double>();
  };
  const auto steady = [](const ToyRun& run) {
    return run.events.back().value["steady_input_wait_share"].get<double>();
  };
  // The toy's step is a 4 → 2 layer on 32 rows; making its batch is most of the time.
  EXPECT_GT(share(starved), 0.5);
  EXPECT_GT(steady(starved), 0.5);
  EXPECT_LE(steady(starved), 1.0);
  EXPECT_LT(share(fed), share(starved));
  EXPECT_LT(steady(fed), steady(starved));
}

TEST(Runtime, StopsWhenTheTargetIsReached) {
  const ToyRun run = train_toy("target_value: 0.9\nmax_epochs: 50\n");
  EXPECT_EQ(run.outcome.reason, StopReason::TargetReached);
  EXPECT_TRUE(*run.outcome.finished.converged);
  EXPECT_GE(run.outcome.finished.final_metric->value, 0.9);
  EXPECT_LT(run.all("EVALUATE").size(), 50u);
  EXPECT_EQ(run.all("EVALUATE").size(), run.all("EPOCH_END").size());  // no extra evaluation at the end
}

TEST(Runtime, StopsAtMaxStepsAndEvaluatesTheFinalModel) {
  const ToyRun run = train_toy("max_steps: 5\n");
  EXPECT_EQ(run.outcome.reason, StopReason::MaxSteps);
  EXPECT_EQ(*run.outcome.finished.global_steps, 5);
  const auto names = run.names();
  EXPECT_EQ(names[names.size() - 3], "TRAIN_END");
  EXPECT_EQ(names[names.size() - 2], "EVALUATE");
  EXPECT_EQ(run.all("EVALUATE").back()->value["global_steps"], 5);
}

// profile_steps: FINISHED lists the device's kernels of the steps after timing_skip_steps (none on
// the CPU, which says so), also when the run ends inside the window.
TEST(Runtime, ProfilesTheStepsAfterTheSkippedOnes) {
  for (const auto& [max_steps, profiled] : {std::pair{8, 3}, std::pair{4, 2}}) {
    SCOPED_TRACE(max_steps);
    const ToyRun run =
        train_toy("timing_skip_steps: 2\nprofile_steps: 3\nmax_steps: " + std::to_string(max_steps) + "\n");
    const nlohmann::json& finished = run.all("FINISHED").back()->value;
    ASSERT_TRUE(finished.contains("kernel_profile")) << finished.dump();
    const nlohmann::json& p = finished["kernel_profile"];
    ASSERT_FALSE(p.contains("error")) << p.dump();
    EXPECT_EQ(p["steps"], profiled);
    EXPECT_GT(p["step_ms"].get<double>(), 0.0);
    EXPECT_TRUE(p["kernels"].empty());
    EXPECT_EQ(p["device_ms_per_step"], 0.0);
    EXPECT_NE(p["note"].get<std::string>().find("CPU"), std::string::npos);
  }
  EXPECT_FALSE(train_toy("max_steps: 3\n").all("FINISHED").back()->value.contains("kernel_profile"));
}

TEST(Runtime, EachRankWritesItsOwnTrace) {
  EXPECT_EQ(StepProfile::trace_path_of_rank("/t/steps.json", 0, 1), "/t/steps.json");
  EXPECT_EQ(StepProfile::trace_path_of_rank("/t/steps.json", 1, 2), "/t/steps.rank1.json");
  EXPECT_EQ(StepProfile::trace_path_of_rank("steps", 0, 2), "steps.rank0");
  EXPECT_EQ(StepProfile::trace_path_of_rank("", 1, 2), "");
}

// XPUPERF_PROFILE_TRACE: the profiled steps also go to a Chrome trace, which FINISHED names (or
// says why there is none).
TEST(Runtime, ProfiledStepsGoToATraceFileWhenOneIsNamed) {
  test::TempDir dir;
  const std::string path = dir.path() + "/steps.json";
  ASSERT_EQ(setenv("XPUPERF_PROFILE_TRACE", path.c_str(), 1), 0);
  const ToyRun run = train_toy("timing_skip_steps: 1\nprofile_steps: 2\nmax_steps: 4\n");
  unsetenv("XPUPERF_PROFILE_TRACE");
  const nlohmann::json& p = run.all("FINISHED").back()->value["kernel_profile"];
  ASSERT_TRUE(p.contains("trace")) << p.dump();
  const auto said = p["trace"].get<std::string>();
  if (said != path) {  // a LibTorch without Kineto (Debian's) saves none, and FINISHED says so
    EXPECT_EQ(said.rfind("not written: ", 0), 0u) << said;
    EXPECT_FALSE(std::filesystem::exists(path));
    return;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path;
  const auto trace = nlohmann::json::parse(in);
  EXPECT_TRUE(trace.contains("traceEvents")) << trace.dump().substr(0, 200);
}

TEST(Runtime, StopsAtMaxSamples) {
  const ToyRun run = train_toy("max_samples_termination: 100\n");
  EXPECT_EQ(run.outcome.reason, StopReason::MaxSamples);
  EXPECT_EQ(*run.outcome.finished.global_steps, 4);  // ceil(100 / 32)
  EXPECT_EQ(*run.outcome.finished.num_trained_samples, 128);
}

TEST(Runtime, StopsWhenTheTimeBudgetIsSpent) {
  const ToyRun run = train_toy("time_budget: 0.000001\n");
  EXPECT_EQ(run.outcome.reason, StopReason::TimeBudget);
  EXPECT_EQ(*run.outcome.finished.global_steps, 1);
}

TEST(Runtime, EvaluatesEveryNSteps) {
  const ToyRun run = train_toy("max_steps: 7\neval_interval_steps: 3\neval_interval_epochs: 0\n");
  std::vector<int> at;
  for (const auto* e : run.all("EVALUATE")) at.push_back(e->value["global_steps"].get<int>());
  EXPECT_EQ(at, (std::vector<int>{3, 6, 7}));
}

TEST(Runtime, NeedsAStopCondition) {
  try {
    train_toy("max_epochs: 0\n");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("no stop condition"), std::string::npos);
  }
}

TEST(Runtime, BadParametersNameTheirSource) {
  try {
    train_toy("precision: fp8\n");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("test:1: 'precision' must be fp32, tf32, bf16 or fp16"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(train_toy("train_batch_size: 0\n"), ConfigError);
  EXPECT_THROW(train_toy("target_metric: bleu\n"), ConfigError);
  EXPECT_THROW(train_toy("device: tpu\n"), ConfigError);
}

TEST(Runtime, Bf16AutocastTrainsOnTheCpu) {
  const ToyRun run = train_toy("precision: bf16\ntarget_value: 0.85\nmax_epochs: 30\n");
  EXPECT_TRUE(*run.outcome.finished.converged);
  EXPECT_EQ(run.all("SUBMIT_INFO")[0]->value["precision"], "bf16");
}

// SUBMIT_INFO and FINISHED write the switches their declarations name (core/switch_spec.h), each as
// set, or its declared default, in its type.
TEST(Runtime, SubmitInfoAndFinishedWriteTheDeclaredSwitchesAsSet) {
  const ToyRun run = train_toy("max_steps: 2\nprecision: bf16\nactivation_checkpointing: false\n");
  const auto& submit = run.all("SUBMIT_INFO")[0]->value;
  const auto& finished = run.all("FINISHED")[0]->value;
  int in_submit = 0, in_finished = 0;
  for (const auto& spec : switch_specs()) {
    if (spec.in_submit_info) {
      ++in_submit;
      ASSERT_TRUE(submit.contains(spec.key)) << spec.key;
      EXPECT_EQ(submit[spec.key],
                spec.key == "precision"
                    ? nlohmann::json("bf16")
                    : nlohmann::json(spec.type == SwitchType::Bool  ? nlohmann::json(spec.default_value == "true")
                                     : spec.type == SwitchType::Int ? nlohmann::json(std::stoll(spec.default_value))
                                                                    : nlohmann::json(spec.default_value)))
          << spec.key;
    }
    if (spec.in_finished) {
      ++in_finished;
      EXPECT_EQ(finished[spec.key], submit.contains(spec.key) ? submit[spec.key] : finished[spec.key]) << spec.key;
    }
  }
  EXPECT_GE(in_submit, 10);
  EXPECT_GE(in_finished, 8);
  EXPECT_EQ(submit["zero_stage"], 0);
  EXPECT_EQ(submit["cuda_graphs"], false);
  EXPECT_EQ(finished["tensor_parallel"], 1);
}

TEST(Runtime, SavesAndLoadsCheckpoints) {
  test::TempDir dir;
  const std::string path = dir.path() + "/toy.pt";
  test::ToyCase first;
  train_toy("max_steps: 3\nsave_checkpoint: " + path + "\n", &first);
  test::ToyCase second;
  train_toy("max_steps: 1\nlr: 0.0\ninit_checkpoint: " + path + "\n", &second);  // lr 0: the step changes nothing
  EXPECT_TRUE(torch::equal(first.linear->weight, second.linear->weight));
  EXPECT_THROW(train_toy("max_steps: 1\ninit_checkpoint: /no/such.pt\n"), ConfigError);
}

TEST(Runtime, LearningRateSchedules) {
  EXPECT_DOUBLE_EQ(scheduled_lr("constant", 0.1, 50, 0, 100), 0.1);
  EXPECT_DOUBLE_EQ(scheduled_lr("cosine", 0.1, 0, 0, 100), 0.1);
  EXPECT_NEAR(scheduled_lr("cosine", 0.1, 50, 0, 100), 0.05, 1e-12);
  EXPECT_NEAR(scheduled_lr("cosine", 0.1, 100, 0, 100), 0.0, 1e-12);
  EXPECT_NEAR(scheduled_lr("linear", 0.1, 75, 0, 100), 0.025, 1e-12);
  EXPECT_NEAR(scheduled_lr("constant", 0.1, 4, 10, 100), 0.05, 1e-12);  // warm-up: (4+1)/10
  EXPECT_THROW(scheduled_lr("step", 0.1, 50, 0, 100), ConfigError);
}

}  // namespace
}  // namespace xpuperf::train

namespace xpuperf::train {
namespace {

Config vision_config(const std::string& text) {
  Diagnostics diags;
  auto cfg = load_config_text(text, "test", diags);
  EXPECT_TRUE(cfg.has_value());
  return *cfg;
}

TEST(Runtime, TheDeviceDecoderIsTheDevicesVendorsAndPreparesTheProcessOnlyWhenAskedFor) {
  // A decoder for the meta device, which only counts its preparations.
  static int prepared = 0;
  data::DeviceJpegBackend backend;
  backend.name = "testjpeg";
  backend.device_type = "meta";
  backend.before_device = [] { ++prepared; };
  data::register_device_jpeg(backend);
  const Config named = vision_config("data_dir: /data\njpeg_decoder: device\n");
  const Config cpu = vision_config("data_dir: /data\njpeg_decoder: cpu\n");
  const Config automatic = vision_config("data_dir: /data\njpeg_decoder: auto\n");
  const Config synthetic = vision_config("synthetic_data: true\njpeg_decoder: device\n");
  const Config language = vision_config("data_dir: /data\n");  // no image loader at all
  const torch::Device meta(torch::kMeta);
  const auto* registered = data::device_jpeg_for_device("meta");
  ASSERT_NE(registered, nullptr);
  EXPECT_EQ(datasets::device_decoder_for(named, meta, 64), registered);
  EXPECT_EQ(datasets::device_decoder_for(automatic, meta, 4), registered);  // few cores a rank
  EXPECT_EQ(datasets::device_decoder_for(automatic, meta, 64), nullptr);
  EXPECT_EQ(datasets::device_decoder_for(cpu, meta, 4), nullptr);
  EXPECT_EQ(datasets::device_decoder_for(synthetic, meta, 4), nullptr);
  EXPECT_EQ(datasets::device_decoder_for(language, meta, 4), nullptr);
  EXPECT_EQ(datasets::device_decoder_for(named, torch::kCPU, 4), nullptr);  // the CPU decodes on its own

  prepared = 0;
  datasets::prepare_device_decoding(cpu, 1);
  EXPECT_EQ(prepared, 0);
  datasets::prepare_device_decoding(named, 1);
  EXPECT_EQ(prepared, 1);
}

}  // namespace
}  // namespace xpuperf::train
