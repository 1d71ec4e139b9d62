#include "xpuperf/text/text_chunks.h"

#include <algorithm>

#include "xpuperf/text/unicode.h"

namespace xpuperf::text {
namespace {

// Whether the character of `bytes` (one whole UTF-8 sequence, or malformed bytes) is whitespace as the
// pre-tokenising expressions read it. Malformed bytes are not: the tokenisers read them as U+FFFD.
bool is_space_character(std::string_view bytes) {
  if (bytes.size() == 1) {
    const auto b = static_cast<unsigned char>(bytes[0]);
    return b < 0x80 && is_js_whitespace(b);
  }
  if (!is_valid_utf8(bytes)) return false;
  std::size_t length = 0;
  return is_js_whitespace(code_point_at(bytes, 0, length));
}

std::size_t sequence_length(unsigned char lead) {
  return lead < 0x80 ? 1 : (lead & 0xE0) == 0xC0 ? 2 : (lead & 0xF0) == 0xE0 ? 3 : (lead & 0xF8) == 0xF0 ? 4 : 1;
}
// The character that starts at i / ends just before `end`: its UTF-8 sequence, or the one byte there
// where the bytes make no sequence.
std::string_view character_at(std::string_view text, std::size_t i) {
  const std::size_t n = sequence_length(static_cast<unsigned char>(text[i]));
  return text.substr(i, i + n <= text.size() ? n : 1);
}
std::string_view character_before(std::string_view text, std::size_t end) {
  for (std::size_t k = 1; k <= 4 && k <= end; ++k) {
    const auto b = static_cast<unsigned char>(text[end - k]);
    if ((b & 0xC0) != 0x80) return sequence_length(b) == k ? text.substr(end - k, k) : text.substr(end - 1, 1);
  }
  return text.substr(end - 1, 1);
}

}  // namespace

std::size_t cut_point(std::string_view text, std::size_t from, CutAt rule) {
  for (std::size_t i = std::max<std::size_t>(from, 1); i + 1 < text.size(); ++i) {
    if (text[i] != '\n') continue;
    if (rule == CutAt::any_line_break || (rule == CutAt::blank_line && text[i + 1] == '\n') ||
        (rule == CutAt::line_break_between_non_spaces && !is_space_character(character_before(text, i)) &&
         !is_space_character(character_at(text, i + 1))))
      return i + 1;
  }
  return std::string_view::npos;
}

void TextChunker::feed(std::string_view bytes, const Chunk& chunk) {
  buffer_.append(bytes);
  // Every chunk the buffer holds now (a feed can complete several), the rest kept. (Cutting one chunk a
  // feed let the rest grow into a last chunk of half the file, which one thread tokenised while the
  // others waited.)
  std::size_t from = 0;
  for (std::size_t cut; (cut = cut_point(buffer_, from + least_, rule_)) != std::string_view::npos; from = cut)
    chunk(std::string_view(buffer_).substr(from, cut - from));
  buffer_.erase(0, from);
}

void TextChunker::finish(const Chunk& chunk) {
  if (!buffer_.empty()) chunk(buffer_);
  buffer_.clear();
}

}  // namespace xpuperf::text
