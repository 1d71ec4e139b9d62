// Runs the xpuperf binary as a user would and checks exit codes, messages and outputs.

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli_util.h"

namespace xpuperf {
namespace {

TEST(Cli, HelpAndVersion) {
  const Result help = xpuperf({"--help"});
  EXPECT_EQ(help.code, 0);
  for (const char* cmd : {"check", "config", "list", "--root", "--version"}) EXPECT_TRUE(has(help.output, cmd)) << cmd;
  const Result version = xpuperf({"--version"});
  EXPECT_EQ(version.code, 0);
  EXPECT_TRUE(has(version.output, "xpuperf 0.1.0 (git ")) << version.output;
  EXPECT_NE(xpuperf({}).code, 0);
  EXPECT_NE(xpuperf({"frobnicate"}).code, 0);
}

// `xpuperf` links no LibTorch, so that what needs none starts at once; a process that trains
// becomes xpuperf-torch beside it, and a binary without one says what it cannot do.
TEST(Cli, TheBinaryLinksNoLibTorchAndAloneSaysWhatItCannotDo) {
  const std::filesystem::path binary = XPUPERF_BINARY;
  if (!std::filesystem::exists(binary.parent_path() / "xpuperf-torch")) GTEST_SKIP() << "a build without LibTorch";
  test::TempDir dir;
  ProcessSpec ldd;
  ldd.argv = {"ldd", binary.string()};
  ldd.log_path = dir.path() + "/ldd.log";
  ASSERT_TRUE(run_process(ldd).ok()) << test::read_file(ldd.log_path);
  const std::string libraries = test::read_file(ldd.log_path);
  EXPECT_FALSE(has(libraries, "libtorch") || has(libraries, "libc10")) << libraries;

  std::filesystem::copy_file(binary, dir.path() + "/xpuperf");
  ProcessSpec alone;
  alone.argv = {dir.path() + "/xpuperf",
                "--root",
                XPUPERF_SOURCE_DIR,
                "train",
                "--case",
                "lenet5",
                "--vendor",
                "cpu",
                "--hardware",
                "CPU"};
  alone.unset_env = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"};
  alone.log_path = dir.path() + "/alone.log";
  const ExitStatus status = run_process(alone, std::chrono::seconds(60));
  const std::string output = test::read_file(alone.log_path);
  EXPECT_EQ(status.kind == ExitStatus::Kind::Exited ? status.code : -1, 1) << output;
  EXPECT_TRUE(
      has(output,
          "this xpuperf has no xpuperf-torch beside it (built without LibTorch, or copied alone), so it cannot train"))
      << output;
}

TEST(Cli, AnUnknownCommandIsNamedWithTheClosestOne) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"tune"}, {"tune", "--help"}, {"--root", ".", "tune", "x"}}) {
    const Result r = xpuperf(args);
    EXPECT_EQ(r.code, 1) << r.output;
    EXPECT_TRUE(has(r.output, "xpuperf: error: unknown command 'tune'")) << r.output;
    EXPECT_TRUE(has(r.output, "Commands: check, config, list")) << r.output;
    EXPECT_FALSE(has(r.output, "A subcommand is required")) << r.output;
    EXPECT_FALSE(has(r.output, "Usage:")) << "no main help for an unknown command: " << r.output;
  }
  const Result typo = xpuperf({"chek", "plans/good.yaml"});
  EXPECT_EQ(typo.code, 1);
  EXPECT_TRUE(has(typo.output, "unknown command 'chek'; did you mean 'check'?")) << typo.output;
  const Result none = xpuperf({});
  EXPECT_EQ(none.code, 1) << "a missing command is bad input: " << none.output;
  const Result bad_option = xpuperf({"check", "--no-such-option", "plans/good.yaml"});
  EXPECT_EQ(bad_option.code, 1) << bad_option.output;
}

TEST(Cli, DataWritesAFashionMnistJpegFolderAndChecksIt) {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist")) GTEST_SKIP() << "no Fashion-MNIST";
  test::TempDir dir;
  Result r = xpuperf(
      {"data", "fashion-mnist", "-o", dir.path(), "--train-per-class", "4", "--val-per-class", "2", "--size", "40"});
  if (has(r.output, "built without libjpeg-turbo")) GTEST_SKIP() << r.output;
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "(40 images) and " + dir.path() + "/val (20 images): 10 classes, 40x40 RGB JPEG"))
      << r.output;
  r = xpuperf({"data", "check", dir.path() + "/train", "--expect-classes", "10"});
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "10 classes, 40 images (4 to 4 a class")) << r.output;
  EXPECT_TRUE(has(r.output, "Every image decodes.")) << r.output;
  dir.write("train/5_sandal/empty.JPEG", "");
  r = xpuperf({"data", "check", dir.path() + "/train"});
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "1 file does not decode")) << r.output;
  EXPECT_TRUE(has(r.output, "train/5_sandal/empty.JPEG: not a JPEG file")) << r.output;
  r = xpuperf({"data", "check", dir.path() + "/train", "--expect-classes", "1000"});
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "error: 10 class folders, expected 1000")) << r.output;
  r = xpuperf({"data", "check", dir.path() + "/nothing"});
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "xpuperf: error: image folder")) << r.output;

  // The loader alone: every image of the timed batches, the bad file skipped and counted.
  r = xpuperf(
      {"data", "decode-rate", dir.path() + "/train", "--batch", "8", "--size", "32", "--threads", "2", "--json"});
  ASSERT_EQ(r.code, 0) << r.output;
  const auto line = r.output.substr(r.output.find("{\"backend\""));
  const auto rate = nlohmann::json::parse(line.substr(0, line.find('\n')));
  EXPECT_EQ(rate["decoder"], "cpu");
  // Five batches of 8 from 41 files, one of them unreadable: the first of each thread untimed.
  EXPECT_EQ(rate["untimed_first_batches"], 2);
  EXPECT_EQ(rate["images"], 24);
  EXPECT_EQ(rate["skipped_files"], 1);
  EXPECT_GT(rate["images_per_second"].get<double>(), 0);
  r = xpuperf({"data", "decode-rate", dir.path() + "/train", "--decoder", "nvjpeg", "--batch", "8"});
  if (r.code != 0) {  // a build without nvJPEG, or a machine without a GPU, says so
    EXPECT_TRUE(has(r.output, "a device decoder comes with its vendor's plug-in") || has(r.output, "no CUDA device"))
        << r.output;
  }
  r = xpuperf({"data", "decode-rate", dir.path() + "/train", "--batch", "100"});
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "too few for a batch of 100 (--batch)")) << r.output;
}

TEST(Cli, DataTokenizeWritesATokenDatasetOrSaysWhatIsMissing) {
  test::TempDir dir;
  Result r = xpuperf({"data", "tokenize", "--synthetic-tokens", "5000", "-o", dir.path() + "/synth"});
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "5000 tokens of random ids below 50257 (synthetic")) << r.output;
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/synth.idx"));
  r = xpuperf({"data", "tokenize", "-o", dir.path() + "/x"});
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "no inputs: name text files or folders")) << r.output;
  dir.write("t.txt", "Some text.\n");
  r = xpuperf({"data", "tokenize", "--tokenizer", "unigram", dir.path() + "/t.txt", "-o", dir.path() + "/x"});
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "--tokenizer must be gpt2, llama3, sentencepiece or wordpiece (got 'unigram')"))
      << r.output;
  r = xpuperf({"data", "tokenize", "--tokenizer", "gpt2", "--vocab", dir.path() + "/t.txt", dir.path() + "/t.txt", "-o",
               dir.path() + "/x"});
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "--merges is needed with --tokenizer gpt2")) << r.output;
  dir.write("vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nsome\ntext\n.\n");
  r = xpuperf({"data", "tokenize", "--tokenizer", "wordpiece", "--vocab", dir.path() + "/vocab.txt",
               dir.path() + "/t.txt", dir.path() + "/missing.txt", "-o", dir.path() + "/x"});
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(has(r.output, dir.path() + "/missing.txt: no such file or folder")) << r.output;
  r = xpuperf({"data", "tokenize", "--tokenizer", "wordpiece", "--vocab", dir.path() + "/vocab.txt",
               dir.path() + "/t.txt", "-o", dir.path() + "/bert"});
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "1 documents, 3 tokens (wordpiece, vocabulary of 8) from 1 files")) << r.output;
  // --extensions takes one comma-separated list, so a folder named after it is an input.
  dir.write("docs/a.rst", "Some text.\n");
  dir.write("docs/b.md", "Some text.\n");
  r = xpuperf({"data", "tokenize", "--tokenizer", "wordpiece", "--vocab", dir.path() + "/vocab.txt", "--extensions",
               "rst,txt", dir.path() + "/docs", "-o", dir.path() + "/docs_bert"});
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "1 documents, 3 tokens (wordpiece, vocabulary of 8) from 1 files")) << r.output;
}

TEST(Cli, CheckAcceptsAGoodPlan) {
  const Result r = xpuperf({"check", "plans/good.yaml"});
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "Plan plans/good.yaml is valid: vendor acme, 1 host (launcher local), 1 case."))
      << r.output;
}

TEST(Cli, CheckListsEveryProblemOfABadPlan) {
  const Result r = xpuperf({"check", "plans/bad_everything.yaml"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(test::compare_golden("check_bad_everything.txt", r.output), "");
}

TEST(Cli, CheckReportsMalformedYamlWithItsLine) {
  const Result r = xpuperf({"check", "plans/bad_yaml.yaml"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.output, "plans/bad_yaml.yaml:3: error: invalid YAML: end of sequence flow not found")) << r.output;
  EXPECT_FALSE(has(r.output, "yaml-cpp:")) << "no library exception text: " << r.output;
}

TEST(Cli, CheckReportsAMissingVendorFolder) {
  const Result r = xpuperf({"check", "plans/missing_vendor.yaml"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.output,
                  "plans/missing_vendor.yaml:1: error: vendor folder vendors/acne does not exist\n"
                  "    fix: did you mean 'acme'? vendors here: acme"))
      << r.output;
}

TEST(Cli, CheckReportsAMissingPlanFile) {
  const Result r = xpuperf({"check", "plans/nope.yaml"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.output, "plans/nope.yaml: error: file not found")) << r.output;
}

TEST(Cli, ConfigPrintsTheMergedConfigWithSources) {
  const Result r = xpuperf({"config", "toy:libtorch:X1:1:1:1", "--data-dir", "/data/toy", "--set", "lr=0.2"});
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(test::compare_golden("config_toy.txt", r.output), "");
}

TEST(Cli, ConfigRejectsAnImmutableVendorOverride) {
  const Result r = xpuperf({"config", "toy:libtorch:X1:1:2:1", "--vendor", "acme"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.output,
                  "vendors/acme/training/toy-libtorch/config/config_X1x1x2.yaml:2: error: 'target_value' is "
                  "not mutable: a vendor config may not change it"))
      << r.output;
  EXPECT_TRUE(has(r.output, "config_X1x1x2.yaml:3: error: 'lr' must be a number, got \"quick\"")) << r.output;
}

TEST(Cli, ConfigOfAnInferenceCaseFollowsFlagPerfInferenceRules) {
  const Result r = xpuperf({"config", "toy:libtorch"});
  EXPECT_EQ(r.code, 1);  // the vendor file "overrides" fp16 with the same value
  EXPECT_TRUE(has(r.output, "toy_configurations.yaml:1: info: vendor changes 'batch_size' from 256 to 128"))
      << r.output;
  EXPECT_TRUE(has(r.output, "toy_configurations.yaml:2: error: 'fp16' overrides")) << r.output;
  EXPECT_TRUE(has(r.output, "toy_configurations.yaml:3: warning: vendor adds a new key 'acme_cache'")) << r.output;
}

TEST(Cli, ConfigBadKeys) {
  Result r = xpuperf({"config", "toy:libtorch:X1:1:1"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.output, "command line: error: case key 'toy:libtorch:X1:1:1' has 5 fields, expected 6"))
      << r.output;
  r = xpuperf({"config", "toy:libtorch:X7:1:1:1", "--vendor", "acme"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.output, "vendor 'acme' has no X7x1x1 config for toy:libtorch")) << r.output;
  r = xpuperf({"config", "toy:libtorch:X1:1:1:1", "--vendor", "acme", "--set", "lr"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.output, "--set lr: error: expected key=value")) << r.output;
}

TEST(Cli, ListShowsCasesVendorsAndConfigs) {
  const Result r = xpuperf({"list"});
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(test::compare_golden("list_fixture.txt", r.output), "");
}

TEST(Cli, RootCanBeGivenExplicitly) {
  const Result r = xpuperf({"--root", test::test_path("fixtures/repo"), "list"}, "/");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "toy  frameworks: libtorch")) << r.output;
}

TEST(Cli, ARootWithoutContentIsAClearError) {
  const Result r = xpuperf({"--root", "/tmp", "list"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.output, "xpuperf: error: --root /tmp has no cases/ folder")) << r.output;
}

TEST(Cli, CompareTwoRuns) {
  const std::string run = test::test_path("fixtures/run_tree/run20260101000000");
  Result r = xpuperf({"compare", run, run, "--fail-on-regression", "1"});
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "| lenet5:libtorch:CPU:1:1 | training_samples_per_second | 13000 | 13000 | 1.000 |"))
      << r.output;
  EXPECT_TRUE(has(r.output, "no significant change")) << r.output;
  test::TempDir dir;
  r = xpuperf({"compare", run, run, "--html", dir.path() + "/compare.html"});
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "Wrote " + dir.path() + "/compare.html")) << r.output;
  const std::string page = test::read_file(dir.path() + "/compare.html");
  EXPECT_TRUE(has(page, "<h1>xpuperf compare</h1>")) << page;
  EXPECT_TRUE(has(page, "no significant change")) << page;
  r = xpuperf({"compare", run, run, "--html", "/nonexistent/dir/compare.html"});
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "xpuperf: error: --html /nonexistent/dir/compare.html: cannot be written")) << r.output;
  r = xpuperf({"compare", run, "/nonexistent"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.output, "xpuperf: error: /nonexistent is not a run folder")) << r.output;
}

// summary.json is read back through the result model: `report --from-json` rewrites the other
// files from it and `compare` takes it, also once the rank logs are gone.
TEST(Cli, AStoredSummaryIsReadBackByReportAndCompare) {
  namespace fs = std::filesystem;
  test::TempDir dir;
  const std::string run = dir.path() + "/run20260101000000";
  fs::copy(test::test_path("fixtures/run_tree/run20260101000000"), run, fs::copy_options::recursive);
  Result r = xpuperf({"report", run});
  ASSERT_EQ(r.code, 0) << r.output;
  const std::string json = test::read_file(run + "/summary.json"), md = test::read_file(run + "/summary.md"),
                    csv = test::read_file(run + "/summary.csv");
  for (const auto& entry : fs::directory_iterator(run))
    if (entry.is_directory()) fs::remove_all(entry.path());  // the rank logs pruned
  fs::remove(run + "/summary.md");
  fs::remove(run + "/summary.csv");
  r = xpuperf({"report", run, "--from-json"});
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "from its summary.json")) << r.output;
  EXPECT_EQ(test::read_file(run + "/summary.json"), json);
  EXPECT_EQ(test::read_file(run + "/summary.md"), md);
  EXPECT_EQ(test::read_file(run + "/summary.csv"), csv);
  EXPECT_TRUE(fs::exists(run + "/report.html"));

  const std::string fixture = test::test_path("fixtures/run_tree/run20260101000000");
  for (const std::string& a : {run, run + "/summary.json"}) {
    r = xpuperf({"compare", a, fixture});
    EXPECT_EQ(r.code, 0) << r.output;
    EXPECT_TRUE(has(r.output, "| lenet5:libtorch:CPU:1:1 | training_samples_per_second | 13000 | 13000 | 1.000 |"))
        << r.output;
  }

  const std::string db = dir.path() + "/history.db";
  r = xpuperf({"history", "--db", db, "--add", run});
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "Recorded " + run + " in " + db)) << r.output;
  EXPECT_TRUE(has(r.output, "| run20260101000000 | cpu | lenet5:libtorch:CPU:1:1:5 | 5 / 5 |")) << r.output;
  r = xpuperf({"history", "--db", db, "--add", dir.path()});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(
      has(r.output, dir.path() + "/summary.json does not exist (rebuild it with `xpuperf report " + dir.path() + "`)"))
      << r.output;

  std::string damaged = json;
  damaged.replace(damaged.find("\"round\": 1"), std::string("\"round\": 1").size(), "\"round\": \"1\"");
  dir.write("run20260101000000/summary.json", damaged);
  r = xpuperf({"report", run, "--from-json"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.output, run + "/summary.json: cases[0].rounds[0].round must be an integer, got \"1\"")) << r.output;
}

TEST(Cli, TheProjectsOwnConfigsAreValid) {
  const Result r = xpuperf({"config", "lenet5:libtorch:CPU:1:1:1", "--vendor", "cpu"}, XPUPERF_SOURCE_DIR);
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "device: cpu")) << r.output;
}

}  // namespace
}  // namespace xpuperf
