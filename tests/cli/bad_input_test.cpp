// Bad input, as a user gives it, on every surface that reads files or settings: each probe builds
// its input in a fresh folder, runs the xpuperf binary, and names the exit code and the words its
// message must hold (the file, key or value at fault, and what to do). Nothing may end in exit 70
// ("internal error"), be accepted silently, or leave half-written files. A new surface adds rows.

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "cli_util.h"
#include "xpuperf/data/jpeg.h"
#include "xpuperf/text/token_file.h"

namespace xpuperf {
namespace {
namespace fs = std::filesystem;

const std::string kSource = XPUPERF_SOURCE_DIR;
const std::string kVocab = kSource + "/.cache/vocab";
const std::string kFashion = "/usr/share/datasets/fashion-mnist";

struct Probe {
  std::string name;
  // Writes the input under `dir` and returns the command's arguments (after the binary); an empty
  // list skips the probe, with `skip` saying why.
  std::function<std::vector<std::string>(const test::TempDir& dir, std::string& skip)> setup;
  int code;
  std::vector<std::string> words;      // each must appear in the output
  std::vector<std::string> not_words;  // none may
};

// --- inputs ---------------------------------------------------------------------------------------

std::vector<std::uint8_t> small_jpeg() {
  data::RgbImage image{32, 32, {}};
  for (int i = 0; i < 32 * 32 * 3; ++i) image.pixels.push_back(static_cast<std::uint8_t>(i * 5));
  data::JpegCodec codec;
  return codec.encode(image, 90);
}

std::vector<std::uint8_t> with_frame_size(std::vector<std::uint8_t> jpeg, int width, int height) {
  for (std::size_t i = 2; i + 9 < jpeg.size(); ++i)
    if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xC0) {
      jpeg[i + 5] = static_cast<std::uint8_t>(height >> 8);
      jpeg[i + 6] = static_cast<std::uint8_t>(height & 0xFF);
      jpeg[i + 7] = static_cast<std::uint8_t>(width >> 8);
      jpeg[i + 8] = static_cast<std::uint8_t>(width & 0xFF);
      break;
    }
  return jpeg;
}

void write_bytes(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// An image folder of two classes with 20 good JPEGs each; `bad` (name → bytes) added to class a.
std::string image_folder(const test::TempDir& dir,
                         const std::vector<std::pair<std::string, std::vector<std::uint8_t>>>& bad) {
  const auto good = small_jpeg();
  for (int i = 10; i < 30; ++i) {
    write_bytes(dir.path() + "/images/a/" + std::to_string(i) + ".JPEG", good);
    write_bytes(dir.path() + "/images/b/" + std::to_string(i) + ".JPEG", good);
  }
  for (const auto& [name, bytes] : bad) write_bytes(dir.path() + "/images/a/" + name, bytes);
  return dir.path() + "/images";
}

bool have_vocabularies() {
  return fs::exists(kVocab + "/gpt2/vocab.bpe") && fs::exists(kVocab + "/bert-base-uncased/vocab.txt");
}

// The first `lines` lines of a file.
std::string head_of(const std::string& path, int lines) {
  std::ifstream in(path);
  std::string out, line;
  for (int i = 0; i < lines && std::getline(in, line); ++i) out += line + "\n";
  return out;
}

std::vector<std::string> tokenize_args(const std::string& input, const std::string& out) {
  return {"data",
          "tokenize",
          "--tokenizer",
          "gpt2",
          "--vocab",
          kVocab + "/gpt2/encoder.json",
          "--merges",
          kVocab + "/gpt2/vocab.bpe",
          input,
          "-o",
          out};
}

// A copy of the LeNet-5 run fixture (base cases and 3 LeNet-5 rounds) to damage.
std::string run_copy(const test::TempDir& dir) {
  const std::string run = dir.path() + "/run20261122220000";
  fs::copy(test::test_path("fixtures/run_tree_lenet5/run20261122220000"), run, fs::copy_options::recursive);
  return run;
}
const std::string kLenetRound1 = "/lenet5_libtorch_CPU_1_1_3/round1";

// A token dataset with 32-bit ids, written by the library, then changed.
std::string token_dataset(const test::TempDir& dir, const std::vector<std::vector<std::int32_t>>& documents) {
  const std::string prefix = dir.path() + "/tokens";
  text::TokenFileWriter w(prefix, 70000);
  for (const auto& d : documents) w.add_document({d});
  w.finish("{\"tokenizer\": \"gpt2\"}\n");
  return prefix;
}

// `xpuperf train --case NAME` on the CPU with each of `sets` as a `--set`.
std::vector<std::string> cpu_train(const std::string& name, const std::vector<std::string>& sets) {
  std::vector<std::string> args = {"train", "--case", name, "--vendor", "cpu", "--hardware", "CPU"};
  for (const auto& s : sets) args.insert(args.end(), {"--set", s});
  return args;
}

std::vector<std::string> gpt2_train(const std::string& data_dir, const std::string& train_data) {
  auto args = cpu_train("gpt2", {"train_data=" + train_data, "n_layer=1", "n_embd=16", "n_head=2", "seq_length=8",
                                 "max_steps=1", "eval_data=" + train_data});
  args.insert(args.end(), {"--data-dir", data_dir});
  return args;
}

// `xpuperf train --case llama` on synthetic tokens with one setting (the model is built at its default size).
std::vector<std::string> synthetic_llama_train(const std::string& set) {
  return cpu_train("llama", {"synthetic_data=true", set});
}

std::vector<std::string> check_plan(const test::TempDir& dir, const std::string& cases) {
  return {"--root", kSource, "check",
          dir.write("plan.yaml", "vendor: cpu\nlog_dir: " + dir.path() + "/results\ncases:\n" + cases)};
}

// --- the table ------------------------------------------------------------------------------------

std::vector<Probe> probes() {
  using Dir = const test::TempDir&;
  std::vector<Probe> p;

  // Image folders.
  p.push_back({"OneBadJpegIsTheOnlyOneThatFails",
               [](Dir d, std::string&) {
                 return std::vector<std::string>{
                     "data", "check", image_folder(d, {{"00_zero_width.JPEG", with_frame_size(small_jpeg(), 0, 32)}}),
                     "--threads", "1"};
               },
               2,
               {"1 file does not decode", "00_zero_width.JPEG"},
               {"41 files", "Bogus marker"}});
  p.push_back({"AJpegClaimingTooManyPixelsIsRefusedUndecoded",
               [](Dir d, std::string&) {
                 return std::vector<std::string>{
                     "data", "check", image_folder(d, {{"00_bomb.JPEG", with_frame_size(small_jpeg(), 60000, 60000)}}),
                     "--threads", "2"};
               },
               2,
               {"00_bomb.JPEG", "60000x60000", "max_image_pixels"},
               {"internal error"}});
  p.push_back({"ASymlinkLoopInAClassFolderIsNamed",
               [](Dir d, std::string&) {
                 const std::string folder = image_folder(d, {});
                 fs::create_symlink("loop.JPEG", folder + "/a/loop.JPEG");
                 return std::vector<std::string>{"data", "check", folder};
               },
               1,
               {"/images/a/loop.JPEG", "symbolic link loop"},
               {"internal error"}});
  p.push_back({"AFolderWithoutRightsIsNamed",
               [](Dir d, std::string& skip) {
                 if (::geteuid() == 0) {
                   skip = "root reads a mode-000 folder";
                   return std::vector<std::string>{};
                 }
                 const std::string folder = image_folder(d, {});
                 fs::permissions(folder + "/b", fs::perms::none);
                 return std::vector<std::string>{"data", "check", folder};
               },
               1,
               {"/images/b", "Permission denied"},
               {"internal error"}});

  // Tokenising.
  const auto vocab_skip = [](std::string& skip) {
    if (have_vocabularies()) return false;
    skip = "needs " + kVocab + " (scripts/text-vocabularies.sh)";
    return true;
  };
  p.push_back({"ASymlinkLoopInATokenizeFolderIsNamed",
               [vocab_skip](Dir d, std::string& skip) {
                 if (vocab_skip(skip)) return std::vector<std::string>{};
                 d.write("text/a.txt", "Some text.\n");
                 fs::create_symlink("loop.txt", d.path() + "/text/loop.txt");
                 return tokenize_args(d.path() + "/text", d.path() + "/out/ds");
               },
               1,
               {"/text/loop.txt", "symbolic link loop"},
               {"internal error"}});
  p.push_back({"AnOutputUnderARegularFileIsNamed",
               [vocab_skip](Dir d, std::string& skip) {
                 if (vocab_skip(skip)) return std::vector<std::string>{};
                 const std::string in = d.write("a.txt", "Some text.\n");
                 return tokenize_args(in, in + "/ds");
               },
               1,
               {"cannot make the folder", "a.txt"},
               {"internal error"}});
  p.push_back({"AnOutputWhoseJsonIsAFolderIsRefusedBeforeWriting",
               [vocab_skip](Dir d, std::string& skip) {
                 if (vocab_skip(skip)) return std::vector<std::string>{};
                 fs::create_directories(d.path() + "/ds/p.json");
                 return tokenize_args(d.write("a.txt", "Some text.\n"), d.path() + "/ds/p");
               },
               1,
               {"ds/p.json is a folder"},
               {"Wrote"}});
  p.push_back({"AnOutputWhoseIdxIsAFolderLeavesNoBin",
               [vocab_skip](Dir d, std::string& skip) {
                 if (vocab_skip(skip)) return std::vector<std::string>{};
                 fs::create_directories(d.path() + "/ds/q.idx");
                 return tokenize_args(d.write("a.txt", "Some text.\n"), d.path() + "/ds/q");
               },
               1,
               {"ds/q.idx is a folder"},
               {"Wrote"}});
  p.push_back({"AnOutputFolderWithoutAPrefixIsRefused",
               [vocab_skip](Dir d, std::string& skip) {
                 if (vocab_skip(skip)) return std::vector<std::string>{};
                 return tokenize_args(d.write("a.txt", "Some text.\n"), d.path() + "/out/");
               },
               1,
               {"give the dataset's path without .bin/.idx"},
               {"Wrote"}});
  p.push_back({"ATruncatedGzipInputIsRefused",
               [vocab_skip](Dir d, std::string& skip) {
                 if (vocab_skip(skip)) return std::vector<std::string>{};
                 std::string text;
                 for (int i = 0; i < 20000; ++i) text += "Line " + std::to_string(i) + " of a document.\n";
                 const std::string path = d.path() + "/doc.txt.gz";
                 gzFile f = gzopen(path.c_str(), "wb");
                 gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
                 gzclose(f);
                 fs::resize_file(path, fs::file_size(path) / 3);
                 return tokenize_args(path, d.path() + "/ds");
               },
               1,
               {"doc.txt.gz: the gzip data is cut short"},
               {"Wrote"}});
  p.push_back({"ASyntheticVocabularyPastInt32IsRefused",
               [](Dir d, std::string&) {
                 return std::vector<std::string>{"data",       "tokenize", "--synthetic-tokens", "1000", "--vocab-size",
                                                 "3000000000", "-o",       d.path() + "/ds"};
               },
               1,
               {"--vocab-size 3000000000", "2 to 2147483647"},
               {"Wrote"}});
  p.push_back({"AVocabTxtCutShortIsWarnedAbout",
               [vocab_skip](Dir d, std::string& skip) {
                 if (vocab_skip(skip)) return std::vector<std::string>{};
                 const std::string vocab = d.write("vocab.txt", head_of(kVocab + "/bert-base-uncased/vocab.txt", 1000));
                 return std::vector<std::string>{"data",
                                                 "tokenize",
                                                 "--tokenizer",
                                                 "wordpiece",
                                                 "--vocab",
                                                 vocab,
                                                 d.write("a.txt", "Some words here.\n"),
                                                 "-o",
                                                 d.path() + "/ds"};
               },
               0,
               {"vocab.txt: 1000 tokens and no piece for some letters", "[UNK]"},
               {}});
  p.push_back({"AVocabBpeCutShortIsWarnedAbout",
               [vocab_skip](Dir d, std::string& skip) {
                 if (vocab_skip(skip)) return std::vector<std::string>{};
                 const std::string merges = d.write("vocab.bpe", head_of(kVocab + "/gpt2/vocab.bpe", 1001));
                 return std::vector<std::string>{"data",     "tokenize",      "--tokenizer",
                                                 "gpt2",     "--vocab",       kVocab + "/gpt2/encoder.json",
                                                 "--merges", merges,          d.write("a.txt", "Some words here.\n"),
                                                 "-o",       d.path() + "/ds"};
               },
               0,
               {"vocab.bpe: 1000 merges where", "need 50000"},
               {}});

  p.push_back({"ALlamaTokenizerModelOfAnotherKindIsNamed",
               [](Dir d, std::string&) {
                 return std::vector<std::string>{"data",
                                                 "tokenize",
                                                 "--tokenizer",
                                                 "llama3",
                                                 "--vocab",
                                                 d.write("tokenizer.model", "\n\x0e\n\x05<unk>"),
                                                 d.write("a.txt", "Some words here.\n"),
                                                 "-o",
                                                 d.path() + "/ds"};
               },
               1,
               {"tokenizer.model: line 1 is not a token in base64 and its rank", "Llama 2's SentencePiece"},
               {"internal error"}});
  p.push_back({"ALlamaWhoseHeadsDoNotDivideIsNamed",
               [](Dir, std::string&) { return synthetic_llama_train("num_key_value_heads=3"); },
               1,
               {"the Llama's settings do not fit", "num_key_value_heads 3"},
               {"internal error"}});

  p.push_back({"ALlamaWithOneExpertIsNamed",
               [](Dir, std::string&) { return synthetic_llama_train("num_local_experts=1"); },
               1,
               {"num_local_experts 1", "0 experts (dense) or 2 or more"},
               {"internal error"}});
  p.push_back({"LoraWithTensorParallelismIsRefusedAtCheck",
               [](Dir d, std::string&) {
                 return check_plan(d,
                                   "  \"llama:libtorch:CPU:1:1:2\": {data_dir: /data, lora_rank: 4, "
                                   "tensor_parallel: 2, lora_dropout: 1.5, num_local_experts: 4}\n");
               },
               1,
               {"tensor_parallel: not yet with LoRA", "lora_dropout must be in [0, 1)",
                "tensor_parallel with tie_word_embeddings: true", "tensor_parallel with num_local_experts"},
               {"internal error"}});

  p.push_back({"OffloadWithSgdOrZeroIsRefusedAtCheck",
               [](Dir d, std::string&) {
                 return check_plan(d,
                                   "  \"gpt2:libtorch:CPU:1:1:2\": {data_dir: /data, offload_optimizer: true, "
                                   "optimizer: sgd, zero_stage: 1}\n");
               },
               1,
               {"optimizer sgd has none to offload", "offload_optimizer: not yet with zero_stage"},
               {"internal error"}});

  p.push_back({"Bf16WeightsWhereTheyCannotRunAreRefusedAtCheck",
               [](Dir d, std::string&) {
                 return check_plan(
                     d,
                     "  \"llama:libtorch:CPU:1:2:1\": {data_dir: /data, bf16_weights: true, "
                     "precision: fp32, fused_optimizer: off, global_batch_size: 8, train_batch_size: 2}\n");
               },
               1,
               {"which precision: fp32 does not compute in", "fused_optimizer: off is torch::optim's step",
                "bf16_weights: not yet with global_batch_size (accumulating 2 micro-batches"},
               {"internal error", "several ranks"}});  // data parallelism sums bf16 gradients in fp32

  p.push_back({"OffloadOverlapWithoutOffloadIsRefusedAtCheck",
               [](Dir d, std::string&) {
                 return check_plan(d, "  \"gpt2:libtorch:CPU:1:1:1\": {data_dir: /data, offload_overlap: true}\n");
               },
               1,
               {"offload_overlap: overlaps the host's optimizer step", "set offload_optimizer: true"},
               {"internal error"}});

  // Token datasets read by a language case.
  p.push_back({"ANegativeTokenIdIsRefused",
               [](Dir d, std::string&) {
                 return gpt2_train(d.path(), fs::path(token_dataset(d, {{5, -1, 7}, {1, 2, 3}})).filename());
               },
               1,
               {"tokens.bin: holds token id -1"},
               {"internal error"}});
  p.push_back({"AnIndexWhoseCountsOverflowIsRefused",
               [](Dir d, std::string&) {
                 const std::string prefix = token_dataset(d, {{1, 2, 3}});
                 // No sequences, 1 + 2^61 document entries: 8 × that wraps to 8 bytes.
                 std::fstream idx(prefix + ".idx", std::ios::in | std::ios::out | std::ios::binary);
                 const std::uint64_t sequences = 0, documents = 1 + (std::uint64_t{1} << 61);
                 idx.seekp(18);
                 idx.write(reinterpret_cast<const char*>(&sequences), 8);
                 idx.write(reinterpret_cast<const char*>(&documents), 8);
                 return gpt2_train(d.path(), "tokens");
               },
               1,
               {"tokens.idx: its header counts 0 sequences and 2305843009213693953 document entries"},
               {"internal error"}});
  p.push_back({"ADatasetWithoutDocumentsIsSaidToHaveNone",
               [](Dir d, std::string&) { return gpt2_train(d.path(), fs::path(token_dataset(d, {})).filename()); },
               1,
               {"hold no document"},
               {"one document only"}});
  p.push_back({"AMetadataSidecarOfWrongTypesIsNamed",
               [](Dir d, std::string&) {
                 const std::string prefix = token_dataset(d, {{1, 2, 3}, {4, 5, 6}});
                 std::ofstream(prefix + ".json")
                     << R"({"synthetic": "no", "tokenizer": [1, 2, 3], "special_ids": {"cls": "101"}})";
                 return gpt2_train(d.path(), "tokens");
               },
               1,
               {"tokens.json", "synthetic"},
               {"internal error"}});

  // Configs and plans.
  p.push_back(
      {"CheckListsEveryOutOfRangeValueAndABadTypeHidesNone",
       [](Dir d, std::string&) {
         return check_plan(d,
                           "  \"lenet5:libtorch:CPU:1:1:1\": {data_dir: /data, lr: -1, num_threads: -3, "
                           "max_steps: -1}\n"
                           "  \"resnet50:libtorch:CPU:1:1:1\": {data_dir: /data, jpeg_decoder: foo, "
                           "train_batch_size: 0}\n"
                           "  \"gpt2:libtorch:CPU:1:1:1\": {data_dir: /data, seq_length: 5000, "
                           "tensor_parallel: 0, global_batch_size: -8, cuda_graphs: maybe}\n");
       },
       1,
       {"'lr' must be 0 or more, got -1", "'num_threads' must be 0 or more, got -3",
        "'max_steps' must be 0 or more, got -1", "'cuda_graphs' must be true or false",
        "'jpeg_decoder' must be one of auto, cpu, nvjpeg, got 'foo'", "'train_batch_size' must be positive, got 0",
        "'seq_length' 5000 is more than the model's n_positions 1024", "'tensor_parallel' must be 1 or more, got 0",
        "'global_batch_size' must be 0 or more, got -8"},
       {"does not divide the 1 ranks", "is not a multiple of", "internal error"}});
  p.push_back({"Fp16OnTheCpuIsRefusedWithItsKey",
               [](Dir d, std::string& skip) {
                 if (!fs::exists(kFashion + "/train-images-idx3-ubyte.gz")) {
                   skip = "needs Fashion-MNIST";
                   return std::vector<std::string>{};
                 }
                 (void)d;
                 return std::vector<std::string>{"train",          "--case", "lenet5",     "--vendor", "cpu",
                                                 "--hardware",     "CPU",    "--data-dir", kFashion,   "--set",
                                                 "precision=fp16", "--set",  "max_steps=2"};
               },
               -1,  // 1 where this LibTorch has no fp16 autocast on the CPU, else 0 (it trains)
               {},
               {"internal error"}});
  // A held-out split that comes out empty (8,192 synthetic tokens, seed 2): the empty data is named,
  // not the target metric it could not give.
  p.push_back({"AnEmptyHeldOutSplitIsNamedNotTheMetricItLacks",
               [](Dir, std::string&) {
                 return cpu_train("gpt2", {"synthetic_data=true", "synthetic_tokens=8192", "vocab_size=256",
                                           "n_layer=1", "n_embd=16", "n_head=2", "seq_length=16", "train_batch_size=8",
                                           "eval_batch_size=16", "max_steps=2", "seed=2", "eval_interval_steps=0"});
               },
               1,
               {"the evaluation gave no metrics", "held out; 0 sequences of 16 tokens) has 0 samples"},
               {"internal error", "target_metric"}});
  p.push_back(
      {"SweepStringsWithAnEmptyOrRepeatedSwitchAreRefused",
       [](Dir d, std::string&) {
         return std::vector<std::string>{
             "--root",  kSource,      "sweep",  "lenet5",    "--vendor", "cpu",          "--hardware",
             "CPUx1x1", "--data-dir", kFashion, "--log-dir", d.path(),   "--strategies", "+; bf16+; zero1+zero3"};
       },
       2,
       {"a '+' with no switch on one side", "'zero1' and 'zero3' both set zero_stage"},
       {"internal error"}});

  // Reports of a run folder.
  p.push_back({"ARoundStatusOfWrongTypesIsNamed",
               [](Dir d, std::string&) {
                 const std::string run = run_copy(d);
                 std::ofstream(run + kLenetRound1 + "/round_status.json") << R"({"status": "failed", "reason": 42})";
                 return std::vector<std::string>{"report", run};
               },
               1,
               {"round1/round_status.json: 'reason' must be a string, got 42"},
               {"internal error"}});
  p.push_back({"ASysInfoOfWrongTypesIsNamed",
               [](Dir d, std::string&) {
                 const std::string run = run_copy(d);
                 for (const auto& e : fs::recursive_directory_iterator(run))
                   if (e.path().filename() == "sys_info.json") std::ofstream(e.path()) << R"({"cpu_model": 5})";
                 return std::vector<std::string>{"compare", run, run};
               },
               1,
               {"sys_info.json: 'cpu_model' must be a string, got 5"},
               {"internal error"}});
  p.push_back({"ARankLogWithoutFinishedIsAFailedRound",
               [](Dir d, std::string&) {
                 const std::string run = run_copy(d);
                 const std::string log = run + kLenetRound1 + "/localhost_noderank0/rank0.out.log";
                 std::string text = test::read_file(log);
                 text = text.substr(0, text.find("[PerfLog] {\"event\":\"FINISHED\""));
                 std::ofstream(log) << text;
                 return std::vector<std::string>{"report", run};
               },
               0,
               {"| lenet5:libtorch:CPU:1:1:3 | 2 / 3 |", "says ok, but no rank log has a FINISHED event"},
               {}});
  p.push_back({"CompareWithACutShortRunNamesIt",
               [](Dir d, std::string&) {
                 const std::string run = run_copy(d);
                 const std::string empty = d.path() + "/run20261122230000";
                 fs::create_directories(empty);
                 fs::copy_file(run + "/plan.yaml", empty + "/plan.yaml");
                 return std::vector<std::string>{"compare", run, empty};
               },
               1,
               {"no case with successful rounds in common", "run20261122230000: ", "0 of 0 rounds ok"},
               {"internal error"}});
  p.push_back({"AReportThatCannotBeWrittenSaysWhichFile",
               [](Dir d, std::string&) {
                 const std::string run = run_copy(d);
                 fs::create_directories(run + "/summary.md.tmp");  // in the way of the write
                 return std::vector<std::string>{"report", run};
               },
               1,
               {"summary.md: cannot be written"},
               {"internal error", "cannot rename"}});
  return p;
}

// gtest names a parameter by this, not by its bytes.
void PrintTo(const Probe& probe, std::ostream* out) {
  *out << probe.name;
}

class BadInput : public ::testing::TestWithParam<Probe> {};

TEST_P(BadInput, IsACleanErrorNamingWhatIsWrong) {
  const Probe& probe = GetParam();
  test::TempDir dir;
  std::string skip;
  const auto args = probe.setup(dir, skip);
  if (args.empty()) GTEST_SKIP() << skip;
  const Result r = xpuperf(args, kSource);
  if (probe.code >= 0) {
    EXPECT_EQ(r.code, probe.code) << r.output;
  }
  EXPECT_NE(r.code, 70) << r.output;
  for (const auto& w : probe.words) EXPECT_TRUE(has(r.output, w)) << "missing \"" << w << "\" in:\n" << r.output;
  for (const auto& w : probe.not_words)
    EXPECT_FALSE(has(r.output, w)) << "unexpected \"" << w << "\" in:\n" << r.output;
  if (probe.name == "Fp16OnTheCpuIsRefusedWithItsKey" && r.code != 0)
    EXPECT_TRUE(has(r.output, "precision: fp16 needs a CUDA device")) << r.output;
  // A refused tokenisation leaves nothing under its prefix, not even temporaries.
  for (const auto& e : fs::recursive_directory_iterator(dir.path()))
    EXPECT_EQ(e.path().string().find(".partial"), std::string::npos) << e.path();
}

INSTANTIATE_TEST_SUITE_P(Probes, BadInput, ::testing::ValuesIn(probes()),
                         [](const ::testing::TestParamInfo<Probe>& info) { return info.param.name; });

// Ctrl-C in the middle of `data tokenize`: exit 130, and neither the dataset nor a temporary is left.
TEST(BadInputSignals, CtrlCInTokenizeLeavesNothing) {
  test::TempDir dir;
  // Enough synthetic tokens to be still writing when the signal comes.
  ProcessSpec spec;
  spec.argv = {XPUPERF_BINARY, "data", "tokenize", "--synthetic-tokens", "400000000", "-o", dir.path() + "/ds/big"};
  spec.log_path = dir.path() + "/out.log";
  auto p = Process::start(spec);
  wait_until(*p, [&] { return fs::exists(dir.path() + "/ds/big.bin.partial"); });
  ASSERT_TRUE(p->running()) << test::read_file(spec.log_path);
  ::kill(p->pid(), SIGINT);
  const ExitStatus status = p->wait(std::nullopt);
  EXPECT_EQ(status.code, 130) << test::read_file(spec.log_path);
  EXPECT_TRUE(has(test::read_file(spec.log_path), "interrupted: nothing was written under"))
      << test::read_file(spec.log_path);
  EXPECT_TRUE(fs::is_empty(dir.path() + "/ds"));
}

}  // namespace
}  // namespace xpuperf
