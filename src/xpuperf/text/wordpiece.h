#pragma once
// BERT's WordPiece tokeniser from a vocab.txt (one token a line, the line number its id): the
// basic tokeniser (control characters dropped, whitespace cleaned, CJK ideographs spaced out,
// lower-casing with accents stripped, punctuation split off), then greedy longest-match-first
// word pieces ("##" marks a continuation; a word with no split, or longer than 100 characters,
// is [UNK]) — as Google's BERT and Hugging Face's BertTokenizer do. Torch-free.

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace xpuperf::text {

class WordPiece {
 public:
  // Throws TokenizerError naming the file and what is wrong with it (no [UNK], [CLS], [SEP],
  // [MASK] or [PAD]; a GPT-2 vocab.bpe or encoder.json given by mistake).
  static WordPiece load(const std::string& vocab_txt, bool lower_case = true);

  std::vector<std::int32_t> encode(std::string_view text) const;
  std::vector<std::string> tokenize(std::string_view text) const;  // the pieces, as strings
  std::vector<std::string> basic_tokens(std::string_view text) const;

  std::int32_t vocab_size() const { return static_cast<std::int32_t>(tokens_.size()); }
  const std::string& token(std::int32_t id) const { return tokens_.at(static_cast<std::size_t>(id)); }
  std::int32_t unk() const { return unk_; }
  std::int32_t cls() const { return cls_; }
  std::int32_t sep() const { return sep_; }
  std::int32_t mask() const { return mask_; }
  std::int32_t pad() const { return pad_; }

 private:
  void pieces(const std::string& word, std::vector<std::int32_t>& out) const;

  std::vector<std::string> tokens_;
  std::unordered_map<std::string, std::int32_t> ids_;
  bool lower_case_ = true;
  std::int32_t unk_ = 0, cls_ = 0, sep_ = 0, mask_ = 0, pad_ = 0;
};

}  // namespace xpuperf::text
