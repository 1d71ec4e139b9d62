#pragma once
// Training samples from a token dataset (token_file.h), read on demand through the mmap:
// fixed-length sequences for GPT, [CLS] span [SEP] for BERT with masked-LM masking. The
// documents are split once into training and held-out validation sets (the last `valid_share`
// of the documents, by position: the same split for the same file). Torch-free.

#include <cstdint>
#include <random>
#include <vector>

#include "xpuperf/text/token_file.h"

namespace xpuperf::text {

// The documents [first, last) of a split.
struct DocumentRange {
  std::int64_t first = 0, last = 0;
};
// valid: the last ceil(valid_share × documents) documents (at least one when valid_share > 0
// and there are two documents or more); train: the others.
DocumentRange split_documents(const TokenFile& file, double valid_share, bool valid);

// GPT: the split's documents read as one stream of tokens (each ends in <|endoftext|>), cut into
// samples of `length` + 1 tokens (inputs and the next-token targets), one after the other.
class GptSamples {
 public:
  GptSamples(const TokenFile& file, DocumentRange documents, std::int64_t length);
  std::int64_t size() const { return count_; }
  void read(std::int64_t sample, std::int32_t* out) const;  // length + 1 tokens
  // The document of each of those tokens, numbered from 0 at the sample's first.
  void documents(std::int64_t sample, std::int32_t* out) const;

 private:
  const TokenFile& file_;
  std::int64_t start_ = 0, length_ = 0, count_ = 0;
};

// A BERT input: [CLS] tokens [SEP] then padding to `length`, token types 0, keep 1 at real
// tokens, labels −100 except at masked positions (which hold the original id).
struct BertSample {
  std::vector<std::int32_t> ids, labels;
  std::vector<std::uint8_t> keep;
};

// BERT: spans of consecutive sequences (paragraphs) of one document, filled up to `length` − 2
// tokens (a longer paragraph is cut); masked-LM masking of 15 % of the real tokens: 80 % of them
// [MASK], 10 % a random id, 10 % kept; the masking is drawn from `seed` and the sample number.
class BertSamples {
 public:
  struct Special {
    std::int32_t cls, sep, mask, pad, vocab_size;
  };
  BertSamples(const TokenFile& file, DocumentRange documents, std::int64_t length, Special special);
  std::int64_t size() const { return static_cast<std::int64_t>(spans_.size()); }
  BertSample get(std::int64_t sample, std::uint64_t seed, double mask_share = 0.15) const;
  // The sample's real tokens, [CLS] and [SEP] included (the rest of `length` is padding).
  std::int64_t real_length(std::int64_t sample) const;
  // How many of a sample's tokens get masked for a real length (at least one when it has any
  // token between [CLS] and [SEP]).
  static std::int64_t masked_count(std::int64_t real_length, double mask_share = 0.15);

 private:
  struct Span {
    std::int64_t first_sequence, sequences, tokens;
  };
  const TokenFile& file_;
  std::int64_t length_;
  Special special_;
  std::vector<Span> spans_;
};

// Sequence packing: samples of the given lengths placed into rows of `capacity` tokens, best fit
// in decreasing length (each into the row it leaves least room in; a new row when none has room),
// so that few rows hold them all. The same rows for the same lengths; each row's samples in the
// order they were placed. A length above capacity is an error.
std::vector<std::vector<std::int64_t>> pack_best_fit(const std::vector<std::int64_t>& lengths, std::int64_t capacity);

}  // namespace xpuperf::text
