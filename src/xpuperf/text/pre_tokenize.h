#pragma once
// The regular expressions that cut text into pieces before a byte-level BPE merges each piece,
// written out by hand: each alternative tried in order at each position, with the regular
// expression engine's greedy matching and backtracking, so that the pieces are those of the
// reference encoders (JavaScript's \s, ICU's \p{L} and \p{N}). Torch-free.

#include <string_view>
#include <vector>

namespace xpuperf::text {

enum class PreTokenizer {
  gpt2,    // GPT-2's: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  llama3,  // Llama 3's (tiktoken's cl100k form): case-insensitive contractions, a letter run with one
           // leading non-letter, numbers in threes, punctuation with its line breaks, line breaks
};

// The pieces of valid UTF-8 text (ByteBpe::encode repairs malformed text first), in order; they
// concatenate back to the text.
std::vector<std::string_view> pre_tokenize(PreTokenizer kind, std::string_view text);
// The same, appended to `pieces` (a list kept between calls, so that no call allocates).
void pre_tokenize(PreTokenizer kind, std::string_view text, std::vector<std::string_view>& pieces);

// Llama 3's pieces without the table of ASCII byte classes that pre_tokenize reads first: every
// character decoded and classed (tests hold the two to the same pieces).
std::vector<std::string_view> llama3_pieces_decoded(std::string_view text);

// The expression as Hugging Face's tokenizer.json spells it (its Split pre-tokenizer's pattern).
const char* pre_tokenizer_pattern(PreTokenizer kind);
const char* pre_tokenizer_name(PreTokenizer kind);  // "gpt2", "llama3"

}  // namespace xpuperf::text
