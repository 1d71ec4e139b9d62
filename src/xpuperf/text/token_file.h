#pragma once
// Tokenised corpora on disk in Megatron-LM's indexed format (what Rapidformer and Megatron read):
// PREFIX.bin holds the token ids back to back (uint16 where the vocabulary fits, else int32);
// PREFIX.idx holds a header ("MMIDIDX\0\0", version 1, the id type, the counts) and three arrays:
// each sequence's length (int32) and byte offset in .bin (int64), and the index of each
// document's first sequence (int64, with the total at the end). A sequence is a document (GPT)
// or a paragraph of one (BERT). Read through mmap, never loaded whole. Torch-free.

#include <cstdint>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace xpuperf::text {

// Writes PREFIX.bin, PREFIX.idx and PREFIX.json (the metadata); nothing under those names until
// finish() (the files are written as PREFIX.*.partial and renamed once all three are whole), so a
// run that stops early leaves no half dataset. The constructor refuses a prefix without a file
// name ("out/"), or one whose .bin, .idx or .json is a folder, and makes the prefix's folder.
class TokenFileWriter {
 public:
  TokenFileWriter(std::string prefix, std::int64_t vocab_size);
  ~TokenFileWriter();  // without finish(): the partial files are removed
  TokenFileWriter(const TokenFileWriter&) = delete;
  TokenFileWriter& operator=(const TokenFileWriter&) = delete;

  void add_document(const std::vector<std::vector<std::int32_t>>& sequences);
  // A document of one sequence written as its parts come, so that a file larger than memory never
  // has all its tokens in memory: append_to_sequence adds to the open sequence (opening one), and
  // end_document closes it and the document. A sequence holds at most 2³¹ − 1 tokens (the .idx's
  // sizes are int32): one longer is an error naming the limit.
  void append_to_sequence(const std::vector<std::int32_t>& tokens);
  void end_document();
  // `metadata`: PREFIX.json's text.
  void finish(const std::string& metadata);
  std::int64_t tokens() const { return tokens_; }
  std::int64_t documents() const { return static_cast<std::int64_t>(doc_index_.size()) - 1; }

 private:
  void close_sequence();

  std::string prefix_;
  int item_bytes_;
  std::ofstream bin_;
  std::vector<std::int32_t> sizes_;
  std::vector<std::int64_t> pointers_, doc_index_{0};
  std::int64_t tokens_ = 0, offset_ = 0;
  std::int64_t open_ = -1;  // the open sequence's tokens so far; -1: none open
  bool finished_ = false;
};

// A token dataset, memory-mapped. Opening checks that the two files belong together and are
// whole; each error names the file and what is wrong.
class TokenFile {
 public:
  explicit TokenFile(const std::string& prefix);
  ~TokenFile();
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;

  std::int64_t sequences() const { return static_cast<std::int64_t>(sizes_count_); }
  std::int64_t documents() const { return static_cast<std::int64_t>(docs_count_) - 1; }
  std::int64_t tokens() const { return tokens_; }
  int item_bytes() const { return item_bytes_; }
  // The smallest and largest id in the file (scans it; {0, -1} when it holds none).
  std::pair<std::int32_t, std::int32_t> id_range() const;

  std::int32_t sequence_length(std::int64_t s) const { return sizes_[s]; }
  std::vector<std::int32_t> sequence(std::int64_t s) const;
  // The first sequence of document d; document_first(documents()) is sequences().
  std::int64_t document_first(std::int64_t d) const { return doc_index_[d]; }
  // `count` tokens from token `start` of the corpus read as one stream (documents in order).
  void read(std::int64_t start, std::int64_t count, std::int32_t* out) const;
  // The stream offset of sequence s's first token.
  std::int64_t sequence_start(std::int64_t s) const { return pointers_[s] / item_bytes_; }
  // The stream offset of document d's first token; document_start(documents()) is tokens().
  std::int64_t document_start(std::int64_t d) const {
    return d < documents() ? sequence_start(document_first(d)) : tokens_;
  }

 private:
  std::string prefix_;
  int item_bytes_ = 2;
  const std::uint8_t* bin_ = nullptr;
  std::size_t bin_size_ = 0;
  const std::uint8_t* idx_ = nullptr;
  std::size_t idx_size_ = 0;
  const std::int32_t* sizes_ = nullptr;
  const std::int64_t* pointers_ = nullptr;
  const std::int64_t* doc_index_ = nullptr;
  std::uint64_t sizes_count_ = 0, docs_count_ = 0;
  std::int64_t tokens_ = 0;
};

}  // namespace xpuperf::text
