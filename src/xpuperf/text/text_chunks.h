#pragma once
// Text cut into chunks that tokenise on their own to the tokens the whole text has, so that a
// file of any size streams through the tokenisers and its chunks go to every core. Torch-free.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace xpuperf::text {

// Where a tokeniser lets a chunk end.
//   line_break_between_non_spaces: the byte-level BPEs (GPT-2, Llama 3). After a line break between
//     two characters that are not whitespace, the break is a piece of its own or ends one in both
//     expressions ("x\nY" is "x", "\n", "Y" in GPT-2's; Llama 3's keeps punctuation's breaks, "x.\nY"
//     being "x", ".\n", "Y"), and no piece reaches across it. With whitespace beside the break the
//     expressions join runs, and a chunk's end changes them: GPT-2's "\n\nY" is "\n", "\n", "Y", where
//     a chunk ending after the second break would give "\n\n". Any script qualifies (the kernel
//     documentation's translations have lines of Chinese or Japanese alone).
//   blank_line: WordPiece (a paragraph's end).
//   any_line_break: SentencePiece (each line is encoded on its own, as spm_encode does).
enum class CutAt { line_break_between_non_spaces, blank_line, any_line_break };

// The first place at or after `from` (past a line break) where a chunk of `text` may end; npos if none.
std::size_t cut_point(std::string_view text, std::size_t from, CutAt rule);

// Text fed in pieces of any size, handed out as chunks of at least `least_bytes` (where the rule lets
// one end), in order; the rest at finish().
class TextChunker {
 public:
  using Chunk = std::function<void(std::string_view chunk)>;
  TextChunker(CutAt rule, std::size_t least_bytes) : rule_(rule), least_(least_bytes) {}
  void feed(std::string_view bytes, const Chunk& chunk);
  void finish(const Chunk& chunk);

 private:
  CutAt rule_;
  std::size_t least_;
  std::string buffer_;  // fed and not yet handed out
};

}  // namespace xpuperf::text
