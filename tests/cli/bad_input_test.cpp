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
#include <limits>
#include <thread>

#include "cli_util.h"
#include "xpuperf/core/host_memory.h"
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

// A safetensors file of F32 tensors from its header's JSON (the data, `data_bytes` of zeros,
// follows): for files whose header lies.
std::string safetensors_file(const test::TempDir& dir, const std::string& name, const std::string& header,
                             std::size_t data_bytes) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  bytes += header + std::string(data_bytes, '\0');
  return dir.write(name, bytes);
}

// LeNet-5's weights (conv1 ... fc3, the case's names and shapes) as safetensors, all zeros but
// one NaN in fc3.bias.
std::string lenet5_weights_with_a_nan(const test::TempDir& dir) {
  const std::vector<std::pair<std::string, std::vector<int>>> shapes = {
      {"conv1.weight", {6, 1, 5, 5}}, {"conv1.bias", {6}}, {"conv2.weight", {16, 6, 5, 5}}, {"conv2.bias", {16}},
      {"fc1.weight", {120, 400}},     {"fc1.bias", {120}}, {"fc2.weight", {84, 120}},       {"fc2.bias", {84}},
      {"fc3.weight", {10, 84}},       {"fc3.bias", {10}}};
  std::string header = "{";
  std::size_t at = 0;
  for (const auto& [name, shape] : shapes) {
    std::size_t n = 4;
    std::string dims;
    for (const int d : shape) {
      n *= static_cast<std::size_t>(d);
      dims += (dims.empty() ? "" : ",") + std::to_string(d);
    }
    header += (at ? "," : "") + std::string("\"") + name + "\":{\"dtype\":\"F32\",\"shape\":[" + dims +
              "],\"data_offsets\":[" + std::to_string(at) + "," + std::to_string(at + n) + "]}";
    at += n;
  }
  header += "}";
  std::string path = safetensors_file(dir, "lenet5.safetensors", header, at);
  // fc3.bias is last: its first value becomes NaN.
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  f.seekp(static_cast<std::streamoff>(8 + header.size() + at - 40));
  f.write(reinterpret_cast<const char*>(&nan), 4);
  return path;
}

// `xpuperf config gpt2:libtorch:CPU:1:1:1` with one --set.
std::vector<std::string> config_set(const std::string& set) {
  return {"config", "gpt2:libtorch:CPU:1:1:1", "--vendor", "cpu", "--set", set};
}

// `xpuperf train --case lenet5` on synthetic data with one more setting.
std::vector<std::string> synthetic_lenet5_train(const std::vector<std::string>& sets) {
  std::vector<std::string> all = {"synthetic_data=true", "max_steps=3"};
  all.insert(all.end(), sets.begin(), sets.end());
  return cpu_train("lenet5", all);
}

// LeNet-5 trained from a safetensors file whose header is `header` (then `data_bytes` of zeros).
std::vector<std::string> synthetic_lenet5_from_safetensors(const test::TempDir& dir, const std::string& header,
                                                           std::size_t data_bytes) {
  return synthetic_lenet5_train({"init_checkpoint=" + safetensors_file(dir, "w.safetensors", header, data_bytes)});
}

// A token dataset under `dir` whose PREFIX.json is `meta` (what tokenised it, its special ids).
std::string token_dataset_with(const test::TempDir& dir, const std::vector<std::vector<std::int32_t>>& documents,
                               const std::string& meta) {
  const std::string prefix = token_dataset(dir, documents);
  std::ofstream(prefix + ".json") << meta;
  return prefix;
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
               {"'num_local_experts' must be 0 (a dense model) or 2 or more, got 1"},
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

  // Long, odd and hostile values: a clean error naming the key, never a crash or an internal error.
  const std::string digits(50000, '1'), letters(50000, 'a');
  p.push_back({"AValueOf50000DigitsIsRefusedNotACrash",
               [digits](Dir, std::string&) { return config_set("lr=" + digits); },
               1,
               {"'lr' must be a finite number", "(50000 characters)"},
               {"internal error", digits}});
  p.push_back({"AValueOf50000LettersIsCutInTheMessage",
               [letters](Dir, std::string&) { return config_set("lr=" + letters); },
               1,
               {"'lr' must be a number", "(50000 characters)"},
               {"internal error", letters}});
  p.push_back({"ANumberPastADoubleIsRefused",
               [](Dir, std::string&) { return config_set("lr=1e400"); },
               1,
               {"'lr' must be a finite number, got 1e400"},
               {"internal error"}});
  p.push_back({"AnIntegerOf20000DigitsIsRefused",
               [](Dir, std::string&) { return config_set("max_steps=" + std::string(20000, '7')); },
               1,
               {"'max_steps' must be a finite number", "an integer larger than any number can hold"},
               {"internal error"}});
  p.push_back({"HexadecimalAndOctalAreNumbers",
               [](Dir, std::string&) {
                 auto args = config_set("lr=0x10");
                 args.insert(args.end(), {"--set", "weight_decay=0o17"});
                 return args;
               },
               0,
               {"lr: 0x10", "weight_decay: 0o17"},
               {"internal error"}});
  p.push_back({"InfinityIsRefused",
               [](Dir, std::string&) { return config_set("lr=.inf"); },
               1,
               {"'lr' must be a finite number, got .inf"},
               {"internal error"}});
  p.push_back({"ControlCharactersAreEscapedInMessages",
               [](Dir, std::string&) { return config_set("lr=1\x1b[2J\x07"); },
               1,
               {"\\x1b[2J\\x07"},
               {"\x1b", "\x07", "internal error"}});
  p.push_back({"ALongDurationInAPlanIsRefused",
               [digits](Dir d, std::string&) {
                 auto args = check_plan(d, "  \"lenet5:libtorch:CPU:1:1:1\": " + d.path() + "\n");
                 std::ofstream(args.back(), std::ios::app) << "case_time_limit: " << digits << digits << "\n";
                 return args;
               },
               1,
               {"'case_time_limit' must be a duration like 3600", "(100000 characters)"},
               {"internal error"}});
  p.push_back({"ALongImageNameInAPlanIsRefused",
               [letters](Dir d, std::string&) {
                 auto args = check_plan(d, "  \"lenet5:libtorch:CPU:1:1:1\": " + d.path() + "\n");
                 std::ofstream(args.back(), std::ios::app)
                     << "container: {engine: podman, image: " << letters << letters << "}\n";
                 return args;
               },
               1,
               {"the image name is 100000 characters long"},
               {"internal error"}});
  p.push_back({"AConfigThatNeverEndsIsRefused",
               [](Dir, std::string&) {
                 return std::vector<std::string>{"--root", kSource, "check", "/dev/zero"};
               },
               1,
               {"/dev/zero", "is larger than 16 MiB"},
               {"internal error"}});
  p.push_back({"ASetWithoutAnEqualsSignStopsTrainBeforeItStarts",
               [](Dir, std::string&) { return synthetic_lenet5_train({"max_steps"}); },
               1,
               {"expected key=value"},
               {"INIT_START", "internal error"}});
  p.push_back(
      {"CheckListsEveryBadSwitchValueOfAPlan",
       [](Dir d, std::string&) {
         return check_plan(d, "  \"llama:libtorch:CPU:1:1:1\": {data_dir: " + d.path() +
                                  ", lora_rank: 4, lora_alpha: -5, lora_targets: [nope], num_local_experts: -2, "
                                  "moe_capacity_factor: -1, precision: fp16, zero_stage: 1, zero_stage: 2}\n"
                                  "  \"mixtral:libtorch:CPU:1:1:1\": {data_dir: " +
                                  d.path() + ", num_experts_per_tok: 9, moe_capacity_factor: .nan, tokenizer: foo}\n");
       },
       1,
       {"lora_alpha must be positive", "lora_targets: no layer of the model is named 'nope'",
        "'num_local_experts' must be 0 (a dense model) or 2 or more, got -2",
        "'moe_capacity_factor' must be 0 (no cap: every routed token is kept) or more, got -1",
        "'num_experts_per_tok' must be 1 to the 8 experts", "'tokenizer' must be llama3 or sentencepiece, got 'foo'",
        "precision: fp16 needs a CUDA device with this LibTorch", "'zero_stage' is set twice",
        "'moe_capacity_factor' must be a finite number, got .nan"},
       {"internal error"}});

  // Weights files.
  p.push_back(
      {"ACheckpointWithNanWeightsIsRefused",
       [](Dir d, std::string&) { return synthetic_lenet5_train({"init_checkpoint=" + lenet5_weights_with_a_nan(d)}); },
       1,
       {"lenet5.safetensors: fc3.bias holds 1 values that are infinite or not a number"},
       {"internal error", "CONVERGED"}});
  p.push_back({"ARunWhoseLossBecomesNanFailsNamingTheStep",
               [](Dir, std::string&) {
                 return synthetic_lenet5_train({"lr=1e30", "max_steps=20"});
               },
               1,
               {"the run failed: the training loss became infinite or not a number at step"},
               {"internal error", "NOT CONVERGED", "\"event\":\"FINISHED\""}});
  p.push_back({"ASafetensorsShapePast64BitsIsRefused",
               [](Dir d, std::string&) {
                 return synthetic_lenet5_from_safetensors(
                     d, R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", 0);
               },
               1,
               {"w.safetensors: not a safetensors file: a's shape [4294967296, 4294967296] holds more bytes"},
               {"internal error"}});
  p.push_back({"ASafetensorsNegativeShapeIsRefused",
               [](Dir d, std::string&) {
                 return synthetic_lenet5_from_safetensors(
                     d, R"({"a":{"dtype":"F32","shape":[-1,-1],"data_offsets":[0,4]}})", 4);
               },
               1,
               {"a's shape [-1, -1] has a negative dimension"},
               {"internal error"}});
  p.push_back({"ASafetensorsFileCutShortSaysWhereItEnds",
               [](Dir d, std::string&) {
                 return synthetic_lenet5_from_safetensors(
                     d, R"({"a":{"dtype":"F32","shape":[1000],"data_offsets":[0,4000]}})", 100);
               },
               1,
               {"the file ends at byte", "but a's bytes run to byte", "cut short"},
               {"internal error"}});
  p.push_back({"AShardIndexWithANumberIsNamed",
               [](Dir d, std::string&) {
                 return synthetic_lenet5_train(
                     {"init_checkpoint=" + d.write("model.safetensors.index.json", R"({"weight_map": {"a": 5}})")});
               },
               1,
               {"weight_map[\"a\"] must name a shard file, got 5"},
               {"internal error"}});
  p.push_back({"AShardOutsideTheCheckpointFolderIsRefused",
               [](Dir d, std::string&) {
                 return synthetic_lenet5_train(
                     {"init_checkpoint=" +
                      d.write("model.safetensors.index.json", R"({"weight_map": {"a": "../../../../etc/passwd"}})")});
               },
               1,
               {"names '../../../../etc/passwd', which is not a file name beside the index"},
               {"internal error"}});
  p.push_back({"AnInitCheckpointThatIsAFolderIsSaidToBeOne",
               [](Dir d, std::string&) {
                 fs::create_directories(d.path() + "/weights");
                 return synthetic_lenet5_train({"init_checkpoint=" + d.path() + "/weights"});
               },
               1,
               {"/weights' is a folder: give the file in it"},
               {"internal error"}});

  // Vocabularies and inputs of `data tokenize`.
  p.push_back({"AMergesFolderIsSaidToBeOne",
               [vocab_skip](Dir d, std::string& skip) {
                 if (vocab_skip(skip)) return std::vector<std::string>{};
                 fs::create_directories(d.path() + "/merges");
                 return std::vector<std::string>{"data",
                                                 "tokenize",
                                                 "--tokenizer",
                                                 "gpt2",
                                                 "--vocab",
                                                 kVocab + "/gpt2/encoder.json",
                                                 "--merges",
                                                 d.path() + "/merges",
                                                 d.write("a.txt", "Words.\n"),
                                                 "-o",
                                                 d.path() + "/ds"};
               },
               1,
               {"--merges ", "/merges is a folder: give the vocabulary file in it"},
               {"internal error"}});
  for (const std::string tokenizer : {"wordpiece", "llama3", "sentencepiece"})
    p.push_back({"AVocabularyFolderIsSaidToBeOneFor_" + tokenizer,
                 [tokenizer](Dir d, std::string&) {
                   fs::create_directories(d.path() + "/vocabulary");
                   return std::vector<std::string>{"data",
                                                   "tokenize",
                                                   "--tokenizer",
                                                   tokenizer,
                                                   tokenizer == "sentencepiece" ? "--model" : "--vocab",
                                                   d.path() + "/vocabulary",
                                                   d.write("a.txt", "Words.\n"),
                                                   "-o",
                                                   d.path() + "/ds"};
                 },
                 1,
                 {"/vocabulary is a folder: give the vocabulary file in it"},
                 {"internal error"}});
  p.push_back({"NegativeSyntheticTokensAreRefusedByName",
               [](Dir d, std::string&) {
                 return std::vector<std::string>{"data", "tokenize", "--synthetic-tokens",
                                                 "-5",   "-o",       d.path() + "/ds"};
               },
               1,
               {"--synthetic-tokens"},
               {"no inputs", "internal error"}});
  p.push_back({"AStreamInputIsSaidToBeOne",
               [vocab_skip](Dir d, std::string& skip) {
                 if (vocab_skip(skip)) return std::vector<std::string>{};
                 return tokenize_args("/dev/stdin", d.path() + "/ds");
               },
               1,
               {"/dev/stdin: not a regular file or folder"},
               {"no such file", "internal error"}});

  // Token datasets whose special ids lie outside the model's vocabulary.
  p.push_back({"SpecialIdsOutsideTheVocabularyAreNamed",
               [](Dir d, std::string&) {
                 const std::string prefix = token_dataset_with(
                     d, {{5, 6, 7}, {8, 9, 10}}, R"({"tokenizer": "wordpiece", "special_ids": {"cls": 99999}})");
                 return std::vector<std::string>{"train",
                                                 "--case",
                                                 "bert",
                                                 "--vendor",
                                                 "cpu",
                                                 "--hardware",
                                                 "CPU",
                                                 "--data-dir",
                                                 d.path(),
                                                 "--set",
                                                 "train_data=" + fs::path(prefix).filename().string()};
               },
               1,
               {"tokens.json: special_ids/cls is 99999, but ids must be below 30522 (the model's vocab_size)"},
               {"index out of range", "internal error"}});
  p.push_back(
      {"GlmTextIdsAreBoundedBySopIdNotVocabSize",
       [](Dir d, std::string&) {
         const std::string prefix = token_dataset_with(d, {{5, 30530, 7}, {8, 9, 10}}, R"({"tokenizer": "wordpiece"})");
         return std::vector<std::string>{"train",
                                         "--case",
                                         "glm",
                                         "--vendor",
                                         "cpu",
                                         "--hardware",
                                         "CPU",
                                         "--data-dir",
                                         d.path(),
                                         "--set",
                                         "train_data=" + fs::path(prefix).filename().string()};
       },
       1,
       {"holds token id 30530, but ids must be below 30522 (sop_id and eop_id"},
       {"internal error"}});

  // Image folders: a bomb with no pixel limit, and a limit below 0.
  p.push_back(
      {"AJpegBombWithNoPixelLimitIsRefusedNotAllocated",
       [](Dir d, std::string& skip) {
         if (host_memory_available_bytes() > 2 * std::int64_t{65000} * 65000 * 3) {
           skip = "this machine could decode a 65000x65000 image";
           return std::vector<std::string>{};
         }
         return std::vector<std::string>{
             "data",      "check", image_folder(d, {{"00_bomb.JPEG", with_frame_size(small_jpeg(), 65000, 65000)}}),
             "--threads", "1",     "--max-image-pixels",
             "0"};
       },
       2,
       {"00_bomb.JPEG", "65000x65000", "more than half of this machine's available memory"},
       {"internal error", "bad_alloc"}});
  p.push_back({"ANegativePixelLimitIsRefused",
               [](Dir d, std::string&) {
                 return std::vector<std::string>{"data", "check", image_folder(d, {}), "--max-image-pixels", "-1"};
               },
               1,
               {"--max-image-pixels"},
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
        "'jpeg_decoder' must be one of auto, cpu, device, nvjpeg, got 'foo'",
        "'train_batch_size' must be positive, got 0", "'seq_length' 5000 is more than the model's n_positions 1024",
        "'tensor_parallel' must be 1 or more, got 0", "'global_batch_size' must be 0 or more, got -8"},
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
                 fs::create_directories(run + "/summary.md/in_the_way");  // a folder the rename cannot replace
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

// XPUPERF_ROOT pointing nowhere is named, not taken for an empty checkout.
TEST(BadInputEnvironment, AnXpuperfRootThatIsNoCheckoutIsNamed) {
  test::TempDir dir;
  const Result r = xpuperf({"list"}, dir.path(), {{"XPUPERF_ROOT", dir.path() + "/nowhere"}});
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "XPUPERF_ROOT=" + dir.path() + "/nowhere has no cases/ folder")) << r.output;
}

// Every output xpuperf writes under a name the user gives replaces a symbolic link there, and never
// writes through it: in a shared results folder the link could point at any file.
TEST(BadInputSymlinks, NoOutputIsWrittenThroughASymbolicLink) {
  test::TempDir dir;
  const std::string sentinel = dir.write("sentinel.txt", "not to be overwritten\n");
  const auto link = [&](const std::string& name) {
    fs::create_symlink(sentinel, dir.path() + "/" + name);
    return dir.path() + "/" + name;
  };
  // compare --html
  const std::string run = run_copy(dir);
  const Result compare = xpuperf({"compare", run, run, "--html", link("compare.html")}, kSource);
  EXPECT_EQ(compare.code, 0) << compare.output;
  // a training run's save_checkpoint
  const Result train =
      xpuperf(synthetic_lenet5_train({"max_steps=1", "save_checkpoint=" + link("lenet5.pt")}), kSource);
  EXPECT_EQ(train.code, 0) << train.output;
  // report's summary files
  for (const char* name : {"summary.json", "summary.md", "report.html"}) {
    fs::remove(run + "/" + name);
    fs::create_symlink(sentinel, run + "/" + name);
  }
  const Result report = xpuperf({"report", run}, kSource);
  EXPECT_EQ(report.code, 0) << report.output;
  EXPECT_EQ(test::read_file(sentinel), "not to be overwritten\n");
  for (const auto& path : {dir.path() + "/compare.html", dir.path() + "/lenet5.pt", run + "/summary.md"}) {
    EXPECT_FALSE(fs::is_symlink(path)) << path;
    EXPECT_TRUE(fs::is_regular_file(path)) << path;
  }
}

// Long and odd scalars through a --set, a plan's values and a case's overrides: each is a value
// or a clean error, never a crash (139), an internal error (70) or a raw control character.
TEST(BadInputFuzz, OddScalarsNeverCrashConfigPlanOrSet) {
  std::vector<std::string> values = {"",
                                     "-",
                                     "+",
                                     ".",
                                     "e",
                                     "1e",
                                     "1e+",
                                     ".e1",
                                     "0x",
                                     "0o",
                                     "0x1g",
                                     "0o8",
                                     "--1",
                                     "1..2",
                                     "1e99999",
                                     "-1e99999",
                                     "0x" + std::string(40, 'f'),
                                     "0o" + std::string(40, '7'),
                                     ".NaN",
                                     "-.Inf",
                                     "~",
                                     "null",
                                     "[",
                                     "{",
                                     "]",
                                     "&a",
                                     "*a",
                                     "!!int x",
                                     "'",
                                     "\"",
                                     "\xff\xfe",
                                     "\xe2\x82",
                                     "a\tb",
                                     "\x1b]0;title\x07",
                                     std::string(70000, '9'),
                                     std::string(70000, '.'),
                                     std::string(70000, '[')};
  for (int i = 0; i < 4; ++i) values.push_back(std::string(30000 * (i + 1), "1a.e"[i]));
  test::TempDir dir;
  for (const auto& v : values) {
    SCOPED_TRACE("value of " + std::to_string(v.size()) + " bytes: " + v.substr(0, 20));
    const Result set = xpuperf(config_set("lr=" + v), kSource);
    EXPECT_TRUE(set.code == 0 || set.code == 1) << set.code << ": " << set.output.substr(0, 400);
    EXPECT_EQ(set.output.find('\x1b'), std::string::npos);
    // The same value as YAML in a plan: quoted (a string) and plain, as case_time_limit and as an override.
    std::string quoted;
    for (const char c : v) quoted += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
    for (const std::string& text : {"\"" + quoted + "\"", v}) {
      std::string plan = "vendor: cpu\nlog_dir: " + dir.path() + "/results\ncase_time_limit: " + text +
                         "\ncases:\n  \"lenet5:libtorch:CPU:1:1:1\": {data_dir: " + dir.path() + ", lr: " + text +
                         "}\n";
      const Result check = xpuperf({"--root", kSource, "check", dir.write("plan.yaml", plan)}, kSource);
      EXPECT_TRUE(check.code == 0 || check.code == 1) << check.code << ": " << check.output.substr(0, 400);
      EXPECT_EQ(check.output.find('\x1b'), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace xpuperf
