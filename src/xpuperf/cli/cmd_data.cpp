// `xpuperf data`: image folders for the vision cases — one written from Fashion-MNIST, so that
// tests and benchmarks have real JPEGs to decode, and the check of a folder before a long run.

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "xpuperf/cli/commands.h"
#include "xpuperf/core/progress.h"
#include "xpuperf/core/repo.h"
#include "xpuperf/data/device_jpeg.h"
#include "xpuperf/data/idx.h"
#include "xpuperf/data/image_folder.h"
#include "xpuperf/data/image_loader.h"
#include "xpuperf/data/image_tools.h"
#include "xpuperf/data/jpeg.h"
#include "xpuperf/text/tokenize_corpus.h"
#include "xpuperf/text/tokenizer_error.h"

namespace xpuperf::cli {

namespace {

constexpr int kUnreadable = 2;  // `data check`: the folder has files that do not decode

data::ProgressFn progress_to_stderr(std::unique_ptr<ProgressBar>& bar, const std::string& label) {
  return [&bar, label](std::size_t done, std::size_t total) {
    if (!bar) bar = std::make_unique<ProgressBar>(label, total, std::cerr, ::isatty(STDERR_FILENO) != 0);
    bar->update(done);
    if (done >= total) bar->finish();
  };
}

void require_jpeg() {
  if (!data::have_jpeg_codec())
    throw CommandError("this xpuperf was built without libjpeg-turbo (Debian: libturbojpeg0-dev; then rebuild)");
}

int run_fashion(const data::FashionJpegOptions& o) {
  require_jpeg();
  std::unique_ptr<ProgressBar> bar;
  data::FashionJpegResult r;
  try {
    r = data::write_fashion_mnist_jpeg(o, progress_to_stderr(bar, "writing JPEGs"));
  } catch (const data::DataError& e) {
    throw CommandError(e.what());
  }
  std::cout << "Wrote " << o.out_dir << "/train (" << r.train_images << " images) and " << o.out_dir << "/val ("
            << r.val_images << " images): 10 classes, " << o.size << "x" << o.size << " RGB JPEG at quality "
            << o.quality << ", " << std::fixed << std::setprecision(1)
            << static_cast<double>(r.bytes) / static_cast<double>(r.train_images + r.val_images) / 1024
            << " KiB a file on average. Upscaled Fashion-MNIST: for tests and decode timing, not ImageNet accuracy.\n";
  return 0;
}

int run_photos(const data::PhotoCropOptions& o) {
  require_jpeg();
  std::unique_ptr<ProgressBar> bar;
  data::PhotoCropResult r;
  try {
    r = data::write_photo_crops(o, progress_to_stderr(bar, "writing JPEGs"));
  } catch (const data::DataError& e) {
    throw CommandError(e.what());
  }
  const auto files = static_cast<double>(std::max<std::int64_t>(1, r.train_images + r.val_images));
  std::cout << "Wrote " << o.out_dir << "/train (" << r.train_images << " images) and " << o.out_dir << "/val ("
            << r.val_images << " images): " << o.classes << " classes, crops of " << r.sources
            << " photographs, mean size " << std::fixed << std::setprecision(0) << r.mean_width << "x" << r.mean_height
            << ", JPEG quality " << o.quality << ", " << std::setprecision(1)
            << static_cast<double>(r.bytes) / files / 1024
            << " KiB a file on average (ImageNet's: about 110). Labels are assigned in turn: for throughput and "
               "decode timing, not accuracy.\n";
  return 0;
}

int run_check(const std::string& dir, int threads, std::int64_t expect_classes, std::size_t show,
              std::int64_t max_pixels) {
  require_jpeg();
  std::unique_ptr<ProgressBar> bar;
  data::FolderCheck c;
  try {
    c = data::check_image_folder(dir, threads, progress_to_stderr(bar, "decoding"), max_pixels);
  } catch (const data::DataError& e) {
    throw CommandError(e.what());
  }
  std::cout << dir << ": " << c.classes << " classes, " << c.images << " images (" << c.min_per_class << " to "
            << c.max_per_class << " a class; fewest: " << c.smallest_class << "), " << std::fixed
            << std::setprecision(1) << static_cast<double>(c.bytes) / 1e6 << " MB, "
            << static_cast<double>(c.bytes) / static_cast<double>(std::max<std::size_t>(1, c.images)) / 1024
            << " KiB a file, mean size " << std::setprecision(0) << c.mean_width << "x" << c.mean_height << ".\n";
  int code = 0;
  if (expect_classes > 0 && static_cast<std::int64_t>(c.classes) != expect_classes) {
    std::cout << "error: " << c.classes << " class folders, expected " << expect_classes << "\n";
    code = kUnreadable;
  }
  if (!c.unreadable.empty()) {
    std::cout << c.unreadable.size() << (c.unreadable.size() == 1 ? " file does" : " files do")
              << " not decode (a training run skips and counts them):\n";
    for (std::size_t i = 0; i < c.unreadable.size() && i < show; ++i)
      std::cout << "  " << c.unreadable[i].first << ": " << c.unreadable[i].second << "\n";
    if (c.unreadable.size() > show) std::cout << "  ... and " << c.unreadable.size() - show << " more\n";
    code = kUnreadable;
  }
  if (code == 0) std::cout << "Every image decodes.\n";
  return code;
}

struct DecodeRateOptions {
  std::string dir;
  std::vector<std::string> decoders{"cpu"};
  int threads = 0;
  std::int64_t batch_size = 256;
  std::int64_t batches = 40;
  int device = 0;
  int image_size = 224;
  std::int64_t max_image_pixels = data::kDefaultMaxImagePixels;
  bool json = false;
};

// --decoder's device decoder: `device`, the one this build has (one vendor's plug-in is built in),
// or one by its name; null for none.
const data::DeviceJpegBackend* decode_rate_decoder(const std::string& decoder) {
  const std::vector<std::string> names = data::device_jpeg_names();
  if (decoder == "device") return names.size() == 1 ? data::device_jpeg_named(names.front()) : nullptr;
  return data::device_jpeg_named(decoder);
}

// What one decoder's timed batches gave.
struct DecodeRate {
  std::int64_t warmup = 0, timed = 0;  // batches: untimed first ones, then timed ones
  double seconds = 0;
};

// Takes the epoch's batches as a consumer would. Each thread makes whole batches, so the first round
// (a batch from each thread, with the threads' start) arrives together after one batch's time: timed
// from the epoch's start, 40 batches of 16 threads read about 15 % low. The clock starts when that
// round is in and runs for whole rounds after it. The consumer takes each batch at once, so no batch
// is made ahead of the clock but the ones the threads were making when it started, as at its end.
DecodeRate time_loader(data::ImageFolderLoader& loader, const DecodeRateOptions& o, const std::string& decoder,
                       std::size_t images) {
  auto start = std::chrono::steady_clock::now();
  loader.start_epoch(0);
  const std::int64_t in_epoch = loader.batches_in_epoch();
  if (in_epoch <= 0)
    throw CommandError(o.dir + " has " + std::to_string(images) + " images: too few for a batch of " +
                       std::to_string(o.batch_size) + " (--batch)");
  const std::int64_t threads = loader.threads();
  DecodeRate r;
  r.warmup = std::min(threads, in_epoch - 1);
  const std::int64_t rounds = (std::max<std::int64_t>(o.batches, 1) + threads - 1) / threads;
  r.timed = std::min(rounds * threads, in_epoch - r.warmup);
  std::unique_ptr<ProgressBar> bar;
  auto progress = progress_to_stderr(bar, decoder + " batches");
  for (std::int64_t b = 0; b < r.warmup + r.timed; ++b) {
    auto batch = loader.next();
    if (!batch) throw CommandError("the loader ended its epoch early");
    loader.release(*batch, nullptr);
    if (b + 1 == r.warmup) start = std::chrono::steady_clock::now();
    progress(static_cast<std::size_t>(b + 1), static_cast<std::size_t>(r.warmup + r.timed));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

void print_decode_rate(const data::ImageFolderLoader& loader, const DecodeRateOptions& o, const std::string& decoder,
                       const DecodeRate& r) {
  const std::int64_t images = r.timed * o.batch_size;
  const double rate = static_cast<double>(images) / r.seconds;
  const auto skipped = loader.skipped_files().size();
  if (o.json) {
    std::cout << nlohmann::json{{"decoder", decoder},
                                {"backend", loader.decoder()},
                                {"images_per_second", rate},
                                {"images", images},
                                {"seconds", r.seconds},
                                {"untimed_first_batches", r.warmup},
                                {"batch_size", o.batch_size},
                                {"image_size", o.image_size},
                                {"skipped_files", skipped},
                                {"device_decoded", loader.device_decoded()},
                                {"cpu_fallbacks", loader.cpu_fallbacks()}}
                     .dump()
              << "\n";
    return;
  }
  std::cout << std::fixed << std::setprecision(0) << loader.decoder() << ": " << rate << " images/s (" << images
            << " images in " << std::setprecision(2) << r.seconds
            << (r.warmup > 0 ? " s, timed after the first " + std::to_string(r.warmup) + " (a batch a thread)"
                             : std::string(" s, timed from the start (one batch in the folder)"))
            << "; batches of " << o.batch_size << ", " << o.image_size << "x" << o.image_size
            << " random-resized crops with flips" << (skipped ? ", " + std::to_string(skipped) + " files skipped" : "")
            << (loader.cpu_fallbacks() ? ", " + std::to_string(loader.cpu_fallbacks()) +
                                             " decoded on the CPU (the device's decoder does not take them)"
                                       : "")
            << ")\n";
}

// The training loader alone, as a vision case drives it: read, decode, random-resized crop and
// flip into batches (on the host for the CPU decoder, in device memory for a device's decoder, such as
// the GPU's). Setting the decoders up (their handles, device buffers) is not timed.
int run_decode_rate(const DecodeRateOptions& o) {
  data::ImageFolder folder;
  try {
    folder = data::list_image_folder(o.dir);
  } catch (const data::DataError& e) {
    throw CommandError(e.what());
  }
  if (o.batch_size <= 0 || o.batches <= 0) throw CommandError("--batch and --batches must be positive");
  for (const auto& decoder : o.decoders) {
    if (decoder == "cpu") {
      require_jpeg();
    } else if (!decode_rate_decoder(decoder)) {
      const std::vector<std::string> names = data::device_jpeg_names();
      throw CommandError("--decoder takes cpu" + std::string(names.empty() ? "" : ", device") +
                         " or a device decoder this build has (" + join_or_none(names) + "), not '" + decoder +
                         "'; a device decoder comes with its vendor's plug-in (docs/VENDORS.md), NVIDIA's where "
                         "the build found its JPEG library");
    }
  }
  for (const auto& decoder : o.decoders) {
    data::ImageLoaderOptions lo;
    lo.image_size = o.image_size;
    lo.train = true;
    lo.batch_size = o.batch_size;
    lo.threads = o.threads;
    lo.max_image_pixels = o.max_image_pixels;
    if (decoder != "cpu") {
      lo.device_decoder = decode_rate_decoder(decoder);
      lo.decode_device = o.device;
      if (lo.threads <= 0) lo.threads = 2;
    }
    std::unique_ptr<data::ImageFolderLoader> loader;
    try {
      loader = std::make_unique<data::ImageFolderLoader>(folder, lo);
    } catch (const data::DataError& e) {
      throw CommandError(e.what());
    }
    print_decode_rate(*loader, o, decoder, time_loader(*loader, o, decoder, folder.images.size()));
  }
  return 0;
}

std::atomic<int> g_tokenize_stop{0};
void on_tokenize_stop(int sig) {
  g_tokenize_stop = sig;
}
struct Interrupted {};

int run_tokenize(const text::TokenizeOptions& o) {
  // Ctrl-C (or SIGTERM) ends the work at the next chunk, so the writer removes its temporaries.
  struct sigaction action {};
  action.sa_handler = on_tokenize_stop;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  std::unique_ptr<ProgressBar> bar;
  text::TokenizeResult r;
  try {
    r = text::tokenize_corpus(o, [&bar, &o](std::int64_t done, std::int64_t total) {
      if (g_tokenize_stop != 0) throw Interrupted{};
      // In MiB (tokens for a synthetic dataset), so the bar's rate reads as MiB/s.
      const auto scale = o.synthetic_tokens > 0 ? 1 : 1 << 20;
      if (!bar)
        bar = std::make_unique<ProgressBar>(o.synthetic_tokens > 0 ? "tokens" : "MiB tokenised",
                                            static_cast<std::size_t>(std::max<std::int64_t>(1, total / scale)),
                                            std::cerr, ::isatty(STDERR_FILENO) != 0);
      bar->update(static_cast<std::size_t>(done / scale));
    });
  } catch (const text::TokenizerError& e) {
    throw CommandError(e.what());
  } catch (const Interrupted&) {
    std::cerr << "\n";
    throw CommandError("interrupted: nothing was written under " + o.prefix, 130);
  }
  if (bar) bar->finish();
  std::cout << "Wrote " << o.prefix << ".bin, " << o.prefix << ".idx and " << o.prefix << ".json: " << r.documents
            << " documents, " << r.tokens << " tokens";
  if (o.synthetic_tokens > 0) {
    std::cout << " of random ids below " << r.vocab_size
              << " (synthetic: throughput only, no loss or accuracy to read)";
  } else {
    std::cout << " (" << o.tokenizer << ", vocabulary of " << r.vocab_size << ") from " << r.files << " files, "
              << std::fixed << std::setprecision(1) << static_cast<double>(r.bytes) / 1e6 << " MB in "
              << std::setprecision(2) << r.seconds << " s: " << std::setprecision(0)
              << static_cast<double>(r.tokens) / std::max(r.seconds, 1e-9) << " tokens/s";
  }
  std::cout << ".\n";
  return 0;
}

// `data fashion-mnist`: an ImageNet-layout JPEG folder from Fashion-MNIST.
void add_fashion_mnist(CLI::App* cmd, int& exit_code) {
  auto fashion = std::make_shared<data::FashionJpegOptions>();
  fashion->idx_dir = "/usr/share/datasets/fashion-mnist";
  auto* f = cmd->add_subcommand(
      "fashion-mnist",
      "Write an ImageNet-layout JPEG folder (train/<class>/*.JPEG, val/<class>/*.JPEG) from Fashion-MNIST");
  f->add_option("--idx-dir", fashion->idx_dir, "Fashion-MNIST's IDX files (Debian: dataset-fashion-mnist)")
      ->capture_default_str();
  f->add_option("-o,--out", fashion->out_dir, "The folder to write")->required();
  f->add_option("--size", fashion->size, "Width and height of the RGB images")->capture_default_str();
  f->add_option("--train-per-class", fashion->train_per_class, "Images a class in train/ (0: all 6,000)")
      ->capture_default_str();
  f->add_option("--val-per-class", fashion->val_per_class, "Images a class in val/ (0: all 1,000)")
      ->capture_default_str();
  f->add_option("--quality", fashion->quality, "JPEG quality")->capture_default_str();
  f->add_option("--threads", fashion->threads, "Encoding threads (0: every core)")->capture_default_str();
  f->callback([&exit_code, fashion] { exit_code = run_fashion(*fashion); });
}

// `data photos`: an ImageNet-layout folder of crops of real photographs.
void add_photos(CLI::App* cmd, int& exit_code) {
  auto photos = std::make_shared<data::PhotoCropOptions>();
  auto* p = cmd->add_subcommand("photos",
                                "Write an ImageNet-layout JPEG folder of crops of real photographs at ImageNet's "
                                "sizes and file sizes (for decode and loader throughput)");
  p->add_option("--from", photos->sources,
                "JPEG photographs or folders of them (Debian: plasma-workspace-wallpapers puts some in "
                "/usr/share/wallpapers)")
      ->required();
  p->add_option("-o,--out", photos->out_dir, "The folder to write")->required();
  p->add_option("--classes", photos->classes, "Class folders")->capture_default_str();
  p->add_option("--train-per-class", photos->train_per_class, "Images a class in train/")->capture_default_str();
  p->add_option("--val-per-class", photos->val_per_class, "Images a class in val/")->capture_default_str();
  p->add_option("--quality", photos->quality, "JPEG quality")->capture_default_str();
  p->add_option("--seed", photos->seed, "Which crops (the same folder for the same seed)")->capture_default_str();
  p->add_option("--threads", photos->threads, "Encoding threads (0: every core)")->capture_default_str();
  p->callback([&exit_code, photos] { exit_code = run_photos(*photos); });
}

// `data check`: an image folder checked before a long run.
void add_check(CLI::App* cmd, int& exit_code) {
  auto dir = std::make_shared<std::string>();
  auto threads = std::make_shared<int>(0);
  auto classes = std::make_shared<std::int64_t>(0);
  auto show = std::make_shared<std::size_t>(20);
  auto max_pixels = std::make_shared<std::int64_t>(data::kDefaultMaxImagePixels);
  auto* c = cmd->add_subcommand("check",
                                "Check an image folder (<dir>/<class>/<image>) before a long run: "
                                "classes, images a class, files that do not decode");
  c->add_option("dir", *dir, "The folder, e.g. /data/imagenet/train")->required();
  c->add_option("--threads", *threads, "Decoding threads (0: every core)")->capture_default_str();
  c->add_option("--expect-classes", *classes, "Fail unless there are this many class folders (ImageNet: 1000)");
  c->add_option("--show", *show, "Unreadable files to list")->capture_default_str();
  c->add_option("--max-image-pixels", *max_pixels,
                "Refuse (without decoding) an image whose header claims more pixels: a decompression bomb (0: no "
                "limit; the training cases' key is max_image_pixels)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  c->footer(
      "Exit codes: 0 every image decodes, 1 the folder cannot be read, 2 unreadable files or a wrong class count.");
  c->callback([&exit_code, dir, threads, classes, show, max_pixels] {
    exit_code = run_check(*dir, *threads, *classes, *show, *max_pixels);
  });
}

// `data decode-rate`: the training loader alone, timed.
void add_decode_rate(CLI::App* cmd, int& exit_code) {
  auto rate = std::make_shared<DecodeRateOptions>();
  auto* r = cmd->add_subcommand("decode-rate",
                                "Time the training loader alone on an image folder: read, decode, random-resized "
                                "crop and flip into batches, with each decoder asked for");
  r->add_option("dir", rate->dir, "The folder (<dir>/<class>/<image>), e.g. /data/imagenet/train")->required();
  r->add_option("--decoder", rate->decoders,
                "cpu (libjpeg-turbo on host threads) and/or device, the accelerator's decoder from its vendor's "
                "plug-in, also called by its name (in this build: " +
                    join_or_none(data::device_jpeg_names()) + ")")
      ->delimiter(',')
      ->capture_default_str();
  r->add_option("--threads", rate->threads, "Loader threads (0: every core for cpu, 2 for a device decoder)")
      ->capture_default_str();
  r->add_option("--batch", rate->batch_size, "Images a batch")->capture_default_str();
  r->add_option("--batches", rate->batches,
                "Batches timed, in whole rounds of a batch a thread after a first untimed round (at most the folder's)")
      ->capture_default_str();
  r->add_option("--device", rate->device, "The device (its index) a device decoder decodes on")->capture_default_str();
  r->add_option("--size", rate->image_size, "Crop size")->capture_default_str();
  r->add_option("--max-image-pixels", rate->max_image_pixels,
                "Skip (without decoding) an image whose header claims more pixels (0: no limit)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  r->add_flag("--json", rate->json, "One JSON line a decoder");
  r->callback([&exit_code, rate] { exit_code = run_decode_rate(*rate); });
}

// `data tokenize`: text into a token dataset for the language cases.
void add_tokenize(CLI::App* cmd, int& exit_code) {
  auto tok = std::make_shared<text::TokenizeOptions>();
  auto cased = std::make_shared<bool>(false);
  auto no_eod = std::make_shared<bool>(false);
  auto* t = cmd->add_subcommand("tokenize",
                                "Tokenise text into a token dataset for the language cases (PREFIX.bin + PREFIX.idx, "
                                "Megatron-LM's indexed format)");
  t->add_option("inputs", tok->inputs, "Text files, JSON-lines files (.jsonl/.json) or folders of them")
      ->expected(0, -1);
  t->add_option("-o,--out", tok->prefix, "The dataset's path without .bin/.idx, e.g. data/kernel-docs")->required();
  t->add_option("--tokenizer", tok->tokenizer,
                "gpt2 or llama3 (byte-level BPEs: GPT-2's, Llama 3's 128,256 ids), sentencepiece (a SentencePiece "
                ".model, e.g. CPM's) or wordpiece (BERT)");
  t->add_option("--vocab", tok->vocab,
                "gpt2: encoder.json (with --merges) or a Hugging Face tokenizer.json; llama3: tokenizer.json or "
                "Meta's tokenizer.model; wordpiece: vocab.txt");
  t->add_option("--merges", tok->merges, "gpt2 with encoder.json: GPT-2's vocab.bpe");
  t->add_option("--model", tok->vocab, "sentencepiece: the .model file (the same as --vocab)");
  t->add_flag("--cased", *cased, "wordpiece: keep case and accents (a cased BERT vocabulary)");
  t->add_flag("--no-end-of-document", *no_eod,
              "gpt2: no <|endoftext|> after each document; llama3: no <|begin_of_text|> and <|end_of_text|> around "
              "it; sentencepiece: no </s> after it");
  t->add_option("--json-key", tok->json_key, "The text's key in JSON lines")->capture_default_str();
  t->add_option("--extensions", tok->extensions, "File types read from folders")
      ->delimiter(',')
      ->allow_extra_args(false)
      ->capture_default_str();
  t->add_option("--threads", tok->threads, "Tokenising threads (0: every core)")->capture_default_str();
  t->add_option("--synthetic-tokens", tok->synthetic_tokens,
                "Instead of text: this many random token ids (labelled synthetic in PREFIX.json)")
      ->check(CLI::PositiveNumber);
  t->add_option("--vocab-size", tok->vocab_size, "Synthetic: ids below this")->capture_default_str();
  t->add_option("--seed", tok->seed, "Synthetic: which ids")->capture_default_str();
  t->footer(
      "A document is a file or a JSON line; gpt2 and llama3 write one sequence a document (gpt2 ending in "
      "<|endoftext|>, llama3 between <|begin_of_text|> and <|end_of_text|>), wordpiece one a paragraph. Text is text: "
      "a special token's name in a document is encoded as characters. Ids above 65,535 (llama3) are stored as int32. "
      "Files stream in chunks: larger than memory is fine. PREFIX.json records what made the dataset.");
  t->callback([&exit_code, tok, cased, no_eod] {
    tok->lower_case = !*cased;
    tok->end_of_document = !*no_eod;
    if (tok->synthetic_tokens <= 0 && tok->inputs.empty())
      throw CommandError("no inputs: name text files or folders (or --synthetic-tokens N)");
    exit_code = run_tokenize(*tok);
  });
}

}  // namespace

void add_data_command(CLI::App& app, const GlobalOptions&, int& exit_code) {
  auto* cmd = app.add_subcommand("data", "Make and check the image folders the vision cases read");
  cmd->require_subcommand(1);
  add_fashion_mnist(cmd, exit_code);
  add_photos(cmd, exit_code);
  add_check(cmd, exit_code);
  add_decode_rate(cmd, exit_code);
  add_tokenize(cmd, exit_code);
}

}  // namespace xpuperf::cli
