#include "xpuperf/text/tokenize_corpus.h"

#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <thread>

#include "xpuperf/core/files.h"
#include "xpuperf/core/log.h"
#include "xpuperf/core/parallel.h"
#include "xpuperf/text/byte_bpe.h"
#include "xpuperf/text/sentencepiece.h"
#include "xpuperf/text/text_chunks.h"
#include "xpuperf/text/token_file.h"
#include "xpuperf/text/tokenizer_error.h"
#include "xpuperf/text/wordpiece.h"

namespace xpuperf::text {
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kChunkBytes = 1 << 20;  // a unit of work
// Read, tokenised in parallel, written, in turn: at least this much, and 4 chunks a thread. The chunks'
// buffers serve every round, so that a round after the first touches no new memory.
constexpr std::size_t kLeastRoundBytes = 16 << 20;

struct Chunk {
  std::int64_t document = 0;
  std::string text;
  std::vector<std::int32_t> tokens;  // the worker's result: one sequence (byte-level BPE, SentencePiece)
  std::vector<std::vector<std::int32_t>> sequences;  // or several (WordPiece's paragraphs)
};

// The extension that says what a file holds: "rst" for notes.rst and for notes.rst.gz.
std::string content_extension(const fs::path& path) {
  const fs::path p = path.extension() == ".gz" ? path.stem() : path;
  const auto ext = p.extension().string();
  return ext.empty() ? ext : ext.substr(1);
}

std::vector<std::string> list_inputs(const TokenizeOptions& o) {
  std::vector<std::string> files;
  const std::set<std::string> extensions(o.extensions.begin(), o.extensions.end());
  for (const auto& input : o.inputs) {
    std::error_code ec;
    if (fs::is_directory(input, ec)) {
      std::vector<std::string> found;
      try {
        for (const auto& entry : list_folder(input, true))
          if (entry.is_file && extensions.count(content_extension(entry.path))) found.push_back(entry.path);
      } catch (const FileError& e) {
        throw TokenizerError(e.what());
      }
      std::sort(found.begin(), found.end());  // the same dataset from the same folder
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(input, ec)) {
      files.push_back(input);
    } else if (fs::exists(input, ec)) {
      // /dev/stdin, a pipe, a device: read twice (a count for the progress, then the text), which a
      // stream cannot be.
      throw TokenizerError(input +
                           ": not a regular file or folder (a pipe or device cannot be read twice); save the "
                           "text to a file and name that");
    } else {
      throw TokenizerError(input + ": no such file or folder");
    }
  }
  if (files.empty())
    throw TokenizerError("no input files (folders are searched for ." + o.extensions.front() + " and the like)");
  return files;
}

bool is_json_lines(const std::string& path) {
  const auto ext = content_extension(path);
  return ext == "jsonl" || ext == "json";
}

// A text file, or a gzip-compressed one (Debian's documentation packages compress theirs).
class TextSource {
 public:
  explicit TextSource(const std::string& path) : path_(path) {
    file_ = gzopen(path.c_str(), "rb");  // zlib reads an uncompressed file as it is
    if (!file_) throw TokenizerError(path + ": cannot be read");
    gzbuffer(file_, 1 << 17);
  }
  ~TextSource() { gzclose(file_); }
  TextSource(const TextSource&) = delete;
  TextSource& operator=(const TextSource&) = delete;

  std::size_t read(char* out, std::size_t size) {
    const int got = gzread(file_, out, static_cast<unsigned>(size));
    if (got < 0) throw TokenizerError(path_ + ": cannot be read (corrupt gzip data?)");
    if (static_cast<std::size_t>(got) < size) check_whole();
    return static_cast<std::size_t>(got);
  }
  bool getline(std::string& line) {
    line.clear();
    char buffer[1 << 16];
    while (gzgets(file_, buffer, sizeof buffer)) {
      line += buffer;
      if (!line.empty() && line.back() == '\n') {
        line.pop_back();
        return true;
      }
    }
    check_whole();
    return !line.empty();
  }
  std::int64_t position() const { return static_cast<std::int64_t>(gzoffset(file_)); }  // bytes of the file

 private:
  // At the end of the data: zlib stops quietly at a gzip stream cut short (Z_BUF_ERROR), which
  // would make a dataset of part of the file.
  void check_whole() {
    int code = Z_OK;
    const char* message = gzerror(file_, &code);
    if (code == Z_BUF_ERROR)
      throw TokenizerError(path_ + ": the gzip data is cut short (" + message + "); fetch or compress the file again");
    if (code != Z_OK && code != Z_STREAM_END)
      throw TokenizerError(path_ + ": cannot be read (" + std::string(message) + ")");
  }

  std::string path_;
  gzFile file_ = nullptr;
};

std::vector<std::string> paragraphs_of(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find("\n\n", start);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(start, end - start));
    start = end + 2;
  }
  return out;
}

// The tokeniser a corpus is encoded with: gpt2 and llama3 are byte-level BPEs and sentencepiece a
// user's SentencePiece model (one sequence a document); wordpiece is BERT's (one a paragraph).
struct CorpusTokenizer {
  bool byte_level = false, spm = false;
  std::unique_ptr<ByteBpe> bpe;
  std::unique_ptr<WordPiece> wordpiece;
  std::unique_ptr<SentencePiece> sentencepiece;

  bool one_sequence() const { return byte_level || spm; }
  std::int64_t vocab_size() const {
    return byte_level ? bpe->vocab_size() : spm ? sentencepiece->vocab_size() : wordpiece->vocab_size();
  }
  // A document's markers, -1 where none: GPT-2's text <|endoftext|>, Llama 3's <|begin_of_text|>
  // text <|end_of_text|>, SentencePiece's text </s> (where the model has one).
  std::int32_t begin_id() const { return bpe ? bpe->begin_of_text() : -1; }
  std::int32_t end_id() const { return bpe ? bpe->end_of_text() : spm ? sentencepiece->end_of_text() : -1; }
};

// The options' mistakes, said before any file is read: the tokeniser's name, the vocabulary files.
void check_tokenizer_options(const TokenizeOptions& o, bool byte_level, bool spm) {
  if (!byte_level && !spm && o.tokenizer != "wordpiece")
    throw TokenizerError("--tokenizer must be gpt2, llama3, sentencepiece or wordpiece (got '" + o.tokenizer + "')");
  if (o.vocab.empty())
    throw TokenizerError(std::string("--vocab is needed: ") +
                         (o.tokenizer == "gpt2" ? "GPT-2's encoder.json (with --merges vocab.bpe) or tokenizer.json"
                          : o.tokenizer == "llama3"
                              ? "Llama 3's tokenizer.json (Hugging Face) or tokenizer.model (Meta)"
                          : spm ? "the SentencePiece .model (--model)"
                                : "BERT's vocab.txt"));
  if (o.tokenizer == "llama3" && !o.merges.empty())
    throw TokenizerError("--merges is GPT-2's vocab.bpe: Llama 3's tokenizer.json or tokenizer.model holds its merges");
  // A folder where a file is meant is said to be one, not read as an empty or wrong vocabulary.
  for (const auto& [option, path] :
       {std::pair<const char*, std::string>{spm ? "--model" : "--vocab", o.vocab}, {"--merges", o.merges}}) {
    std::error_code ec;
    if (path.empty()) continue;
    if (fs::is_directory(path, ec))
      throw TokenizerError(std::string(option) + " " + path + " is a folder: give the vocabulary file in it");
    if (!fs::exists(path, ec)) throw TokenizerError(std::string(option) + " " + path + ": no such file");
  }
}

CorpusTokenizer load_corpus_tokenizer(const TokenizeOptions& o) {
  CorpusTokenizer t;
  t.byte_level = o.tokenizer == "gpt2" || o.tokenizer == "llama3";
  t.spm = o.tokenizer == "sentencepiece";
  check_tokenizer_options(o, t.byte_level, t.spm);
  if (o.tokenizer == "gpt2" && !o.merges.empty())
    t.bpe = std::make_unique<ByteBpe>(ByteBpe::load_gpt2(o.vocab, o.merges));
  else if (o.tokenizer == "gpt2")
    try {
      t.bpe = std::make_unique<ByteBpe>(ByteBpe::load_hugging_face(o.vocab));
    } catch (const TokenizerError& e) {
      throw TokenizerError(
          "--merges is needed with --tokenizer gpt2 (GPT-2's vocab.bpe beside encoder.json), unless --vocab is a "
          "Hugging Face tokenizer.json: " +
          std::string(e.what()));
    }
  else if (t.byte_level)
    t.bpe = std::make_unique<ByteBpe>(ByteBpe::load_single_file(o.vocab));
  else if (t.spm)
    t.sentencepiece = std::make_unique<SentencePiece>(SentencePiece::load(o.vocab));
  else
    t.wordpiece = std::make_unique<WordPiece>(WordPiece::load(o.vocab, o.lower_case));
  if (t.bpe && o.tokenizer != pre_tokenizer_name(t.bpe->pre_tokenizer()))
    throw TokenizerError(o.vocab + ": " + (o.tokenizer == "gpt2" && o.merges.empty() ? "with no --merges, " : "") +
                         "its tokeniser is " + pre_tokenizer_name(t.bpe->pre_tokenizer()) + "'s, not " + o.tokenizer +
                         "'s (--tokenizer " + pre_tokenizer_name(t.bpe->pre_tokenizer()) + ")");
  if (t.bpe && t.bpe->end_of_text() < 0)
    throw TokenizerError(o.vocab + ": no <|endoftext|> or <|end_of_text|> token to end a document with");
  return t;
}

// Random ids in documents of 256 to 4,096 tokens, the same for the same seed.
void write_synthetic(const TokenizeOptions& o, TokenFileWriter& writer,
                     const std::function<void(std::int64_t, std::int64_t)>& progress) {
  std::mt19937_64 rng(o.seed);
  std::uniform_int_distribution<std::int32_t> id(0, static_cast<std::int32_t>(o.vocab_size - 1));
  std::uniform_int_distribution<std::int64_t> length(256, 4096);
  for (std::int64_t done = 0; done < o.synthetic_tokens;) {
    std::vector<std::int32_t> doc(static_cast<std::size_t>(std::min(length(rng), o.synthetic_tokens - done)));
    for (auto& t : doc) t = id(rng);
    done += static_cast<std::int64_t>(doc.size());
    writer.add_document({doc});
    if (progress) progress(done, o.synthetic_tokens);
  }
}

// Encodes chunks of text on worker threads, a round of chunks at a time, and writes each document's
// tokens in the order the chunks came.
class CorpusEncoder {
 public:
  CorpusEncoder(const TokenizeOptions& o, const CorpusTokenizer& t, TokenFileWriter& writer)
      : o_(o),
        t_(t),
        writer_(writer),
        threads_(o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))),
        most_round_bytes_(std::max(kLeastRoundBytes, 4 * kChunkBytes * static_cast<std::size_t>(threads_))) {
    if (t.byte_level)
      for (int i = 0; i < threads_; ++i) bpes_.push_back(std::make_unique<ByteBpe>(*t.bpe));
  }

  void add(std::int64_t doc, std::string_view text) {
    if (chunks_ == round_.size()) round_.emplace_back();
    Chunk& c = round_[chunks_++];
    c.document = doc;
    c.text.assign(text);
    round_bytes_ += text.size();
    if (round_bytes_ >= most_round_bytes_) run_round();
  }

  void finish() {
    run_round();
    flush_document();
  }

  std::int64_t unknown() const { return unknown_; }  // [UNK] ids written

 private:
  void start_document(std::int64_t doc) {
    current_document_ = doc;
    if (t_.one_sequence() && o_.end_of_document && t_.begin_id() >= 0) writer_.append_to_sequence({t_.begin_id()});
  }

  void flush_document() {
    if (current_document_ < 0) return;
    if (t_.one_sequence()) {
      if (o_.end_of_document && t_.end_id() >= 0) writer_.append_to_sequence({t_.end_id()});
      writer_.end_document();
      return;
    }
    writer_.add_document(document_);
    document_.clear();
  }

  void encode(Chunk& c, int worker) {
    c.tokens.clear();
    c.sequences.clear();
    if (t_.byte_level) {
      bpes_[static_cast<std::size_t>(worker)]->encode(c.text, c.tokens);
    } else if (t_.spm) {
      c.tokens = t_.sentencepiece->encode(c.text);
    } else {
      for (const auto& p : paragraphs_of(c.text)) {
        auto ids = t_.wordpiece->encode(p);
        if (!ids.empty()) c.sequences.push_back(std::move(ids));
      }
    }
  }

  void run_round() {
    parallel_items(chunks_, threads_, [&](std::size_t i, int worker) { encode(round_[i], worker); });
    for (std::size_t i = 0; i < chunks_; ++i) {
      Chunk& c = round_[i];
      if (t_.wordpiece)
        for (const auto& seq : c.sequences) unknown_ += std::count(seq.begin(), seq.end(), t_.wordpiece->unk());
      if (c.document != current_document_) {
        flush_document();
        start_document(c.document);
      }
      if (t_.one_sequence())
        writer_.append_to_sequence(c.tokens);
      else
        for (auto& seq : c.sequences) document_.push_back(std::move(seq));
    }
    chunks_ = 0;
    round_bytes_ = 0;
  }

  const TokenizeOptions& o_;
  const CorpusTokenizer& t_;
  TokenFileWriter& writer_;
  int threads_;
  std::size_t most_round_bytes_;
  std::vector<std::unique_ptr<ByteBpe>> bpes_;  // one a worker
  std::vector<Chunk> round_;                    // its first chunks_ hold this round's text
  std::size_t chunks_ = 0, round_bytes_ = 0;
  std::int64_t unknown_ = 0;
  // WordPiece's sequences (paragraphs) of the document being written; a document of one sequence
  // (the other tokenisers) goes to the writer chunk by chunk instead, never whole in memory.
  std::vector<std::vector<std::int32_t>> document_;
  std::int64_t current_document_ = -1;
};

// A JSON-lines file: a document a line, its text under --json-key. `done`: bytes read, with the
// files before it (`before`).
void feed_json_lines(const std::string& path, TextSource& in, const TokenizeOptions& o, CorpusEncoder& encoder,
                     std::int64_t& next_document, std::int64_t before, std::int64_t& done,
                     const std::function<void(std::int64_t)>& report) {
  std::string line;
  std::int64_t line_number = 0;
  while (in.getline(line)) {
    ++line_number;
    done = before + in.position();
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      throw TokenizerError(path + ": line " + std::to_string(line_number) +
                           " is not JSON (JSON lines: one object a line)");
    }
    if (!j.is_object() || !j.contains(o.json_key) || !j[o.json_key].is_string())
      throw TokenizerError(path + ": line " + std::to_string(line_number) + " has no string \"" + o.json_key +
                           "\" (--json-key names the text's key)");
    encoder.add(next_document++, j[o.json_key].get<std::string>());
    report(done);
  }
}

// Any other file: one document, read a block at a time and cut where the tokeniser may cut.
void feed_text_file(TextSource& in, const CorpusTokenizer& t, CorpusEncoder& encoder, std::int64_t doc,
                    std::int64_t before, std::int64_t& done, const std::function<void(std::int64_t)>& report) {
  TextChunker chunker(t.spm          ? CutAt::any_line_break
                      : t.byte_level ? CutAt::line_break_between_non_spaces
                                     : CutAt::blank_line,
                      kChunkBytes / 2);
  const auto add_chunk = [&](std::string_view chunk) { encoder.add(doc, chunk); };
  std::string block(kChunkBytes, '\0');
  for (;;) {
    const std::size_t got = in.read(block.data(), block.size());
    done = before + in.position();
    const bool end = got < block.size();
    chunker.feed(std::string_view(block).substr(0, got), add_chunk);
    if (end) chunker.finish(add_chunk);
    report(done);
    if (end) break;
  }
}

// What the dataset's PREFIX.json says of a corpus tokenised from files.
nlohmann::json corpus_meta(const TokenizeOptions& o, const CorpusTokenizer& t, const TokenizeResult& r) {
  nlohmann::json meta = {{"synthetic", false},
                         {"tokenizer", o.tokenizer},
                         {"vocab", fs::absolute(o.vocab).string()},
                         {"vocab_size", r.vocab_size},
                         {"inputs", o.inputs},
                         {"files", r.files},
                         {"bytes", r.bytes}};
  if (t.byte_level && !o.merges.empty()) meta["merges"] = fs::absolute(o.merges).string();
  if (t.one_sequence()) {
    meta.update({{"end_of_document", o.end_of_document}, {"end_of_text", t.end_id()}});
    if (t.begin_id() >= 0) meta["begin_of_text"] = t.begin_id();
  }
  if (t.wordpiece) {
    meta["lower_case"] = o.lower_case;
    meta["unknown_tokens"] = r.unknown_tokens;
    // What BERT's samples are built with, so a reader needs no vocabulary file.
    meta["special_ids"] = {{"cls", t.wordpiece->cls()},
                           {"sep", t.wordpiece->sep()},
                           {"mask", t.wordpiece->mask()},
                           {"pad", t.wordpiece->pad()},
                           {"unk", t.wordpiece->unk()}};
  }
  return meta;
}

// The counts into the result and the metadata, then the metadata and both token files renamed into
// place together.
void publish(TokenFileWriter& writer, TokenizeResult& r, nlohmann::json& meta) {
  r.documents = writer.documents();
  r.tokens = writer.tokens();
  meta.update({{"documents", r.documents}, {"tokens", r.tokens}});
  writer.finish(meta.dump(2) + "\n");
}

// Tokenises the input files into the dataset, its metadata with them.
void tokenize_files(const TokenizeOptions& o, TokenizeResult& r, nlohmann::json& meta,
                    const std::function<void(std::int64_t, std::int64_t)>& progress) {
  const CorpusTokenizer t = load_corpus_tokenizer(o);
  r.vocab_size = t.vocab_size();
  const auto files = list_inputs(o);
  std::int64_t total = 0;
  for (const auto& f : files) total += static_cast<std::int64_t>(fs::file_size(f));
  const std::function<void(std::int64_t)> report = [&](std::int64_t done) {
    if (progress) progress(done, total);
  };
  TokenFileWriter writer(o.prefix, r.vocab_size);
  CorpusEncoder encoder(o, t, writer);
  std::int64_t done = 0, next_document = 0;
  for (const auto& path : files) {
    TextSource in(path);
    ++r.files;
    const std::int64_t before = done;
    if (is_json_lines(path))
      feed_json_lines(path, in, o, encoder, next_document, before, done, report);
    else
      feed_text_file(in, t, encoder, next_document++, before, done, report);
  }
  encoder.finish();
  r.bytes = total;
  r.unknown_tokens = encoder.unknown();
  const std::int64_t tokens = writer.tokens();
  if (tokens > 0 && r.unknown_tokens * 20 > tokens)
    log::warning(std::to_string(r.unknown_tokens) + " of the " + std::to_string(tokens) + " tokens (" +
                 std::to_string(r.unknown_tokens * 100 / tokens) + " %) are [UNK]: " + o.vocab +
                 " lacks pieces this text needs (a vocabulary cut short, or one for another language or case)");
  meta.update(corpus_meta(o, t, r));
  publish(writer, r, meta);
}

}  // namespace

TokenizeResult tokenize_corpus(const TokenizeOptions& o,
                               const std::function<void(std::int64_t, std::int64_t)>& progress) {
  const auto started = std::chrono::steady_clock::now();
  TokenizeResult r;
  nlohmann::json meta = {
      {"format", "Megatron-LM indexed dataset (MMIDIDX version 1), written by xpuperf data tokenize"}};
  if (o.prefix.empty()) throw TokenizerError("no output prefix (-o PREFIX)");
  if (o.synthetic_tokens > 0) {
    if (o.vocab_size < 2 || o.vocab_size > std::numeric_limits<std::int32_t>::max())
      throw TokenizerError("--vocab-size " + std::to_string(o.vocab_size) +
                           ": a synthetic dataset needs 2 to 2147483647 ids (the token files hold 32-bit ids)");
    TokenFileWriter writer(o.prefix, o.vocab_size);
    write_synthetic(o, writer, progress);
    r.vocab_size = o.vocab_size;
    meta.update(
        {{"synthetic", true}, {"tokenizer", "none (random ids)"}, {"vocab_size", o.vocab_size}, {"seed", o.seed}});
    publish(writer, r, meta);
  } else {
    tokenize_files(o, r, meta, progress);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return r;
}

}  // namespace xpuperf::text
