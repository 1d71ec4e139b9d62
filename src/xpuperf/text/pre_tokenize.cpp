#include "xpuperf/text/pre_tokenize.h"

#include <array>
#include <cctype>
#include <cstdint>

#include "xpuperf/text/unicode.h"

namespace xpuperf::text {
namespace {

enum class Kind : std::uint8_t { letter, number, space, other };

// ASCII's kinds by table: the kernel's documentation is nearly all ASCII, and the classes' own
// functions (unicode.h) are calls into another file for each character.
constexpr std::array<Kind, 128> kAsciiKinds = [] {
  std::array<Kind, 128> k{};
  for (std::size_t c = 0; c < 128; ++c)
    k[c] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ? Kind::letter
           : c >= '0' && c <= '9'                           ? Kind::number
           : (c >= 0x09 && c <= 0x0D) || c == ' '           ? Kind::space
                                                            : Kind::other;
  return k;
}();

Kind kind_of(char32_t c) {
  if (c < 0x80) return kAsciiKinds[c];
  if (is_letter(c)) return Kind::letter;
  if (is_number(c)) return Kind::number;
  if (is_js_whitespace(c)) return Kind::space;
  return Kind::other;
}

bool letter(char32_t c) {
  return kind_of(c) == Kind::letter;
}

bool number(char32_t c) {
  return c < 0x80 ? kAsciiKinds[c] == Kind::number : is_number(c);
}

bool whitespace(char32_t c) {
  return c < 0x80 ? kAsciiKinds[c] == Kind::space : is_js_whitespace(c);
}

bool is_line_break(char32_t c) {
  return c == '\r' || c == '\n';
}

// A cursor over the code points of valid UTF-8.
struct Text {
  std::string_view s;
  std::size_t size() const { return s.size(); }
  char32_t at(std::size_t i) const {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) return b;
    std::size_t len = 0;
    return code_point_at(s, i, len);
  }
  std::size_t next(std::size_t i) const {
    const auto b = static_cast<unsigned char>(s[i]);
    return i + (b < 0x80 ? 1 : (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : 4);
  }
  // The end of the run of code points from `from` that `keep` accepts.
  template <typename Keep>
  std::size_t run(std::size_t from, Keep keep) const {
    std::size_t j = from;
    while (j < s.size() && keep(at(j))) j = next(j);
    return j;
  }
  // The start of the last code point before `end` (end > from).
  std::size_t last_before(std::size_t from, std::size_t end) const {
    std::size_t last = from;
    for (std::size_t k = from; k < end; k = next(k)) last = k;
    return last;
  }
};

// '<contraction> at i, the contractions tried in the expression's order; 0 when none.
std::size_t contraction(std::string_view s, std::size_t i, bool ignore_case) {
  if (s[i] != '\'') return 0;
  static const char* forms[] = {"s", "t", "re", "ve", "m", "ll", "d"};
  for (const char* form : forms) {
    const std::string_view f(form);
    if (i + 1 + f.size() > s.size()) continue;
    bool same = true;
    for (std::size_t k = 0; k < f.size() && same; ++k) {
      const char c = s[i + 1 + k];
      same = (ignore_case ? static_cast<char>(std::tolower(static_cast<unsigned char>(c))) : c) == f[k];
    }
    if (same) return 1 + f.size();
  }
  return 0;
}

// Whitespace from i to `end` (the end of the run): '\s+(?!\S)' leaves the last code point to lead
// the next piece unless the run ends the text or is one code point long; then '\s+' takes it all.
std::size_t whitespace_piece_end(const Text& t, std::size_t i, std::size_t end) {
  if (end == t.size()) return end;
  const std::size_t last = t.last_before(i, end);
  return last > i ? last : end;
}

void gpt2_pieces(std::string_view s, std::vector<std::string_view>& out) {
  const Text t{s};
  for (std::size_t i = 0; i < s.size();) {
    if (const std::size_t n = contraction(s, i, false)) {
      out.push_back(s.substr(i, n));
      i += n;
      continue;
    }
    // ' ?\p{L}+', ' ?\p{N}+' or ' ?[^\s\p{L}\p{N}]+'
    const std::size_t after_space = s[i] == ' ' ? i + 1 : i;
    if (after_space < s.size()) {
      const Kind k = kind_of(t.at(after_space));
      if (k != Kind::space) {
        const std::size_t end = t.run(after_space, [k](char32_t c) { return kind_of(c) == k; });
        out.push_back(s.substr(i, end - i));
        i = end;
        continue;
      }
    }
    const std::size_t end = whitespace_piece_end(t, i, t.run(i, whitespace));
    out.push_back(s.substr(i, end - i));
    i = end;
  }
}

// The end of Llama 3's piece that starts at i (any text): each alternative tried in order.
std::size_t llama3_piece_end(const Text& t, std::size_t i) {
  const std::string_view s = t.s;
  // (?i:'s|'t|'re|'ve|'m|'ll|'d): ASCII case only, as the JavaScript reference spells it
  // ([sS]|[tT]|...); Python's Unicode case folding would also take "'ſ" (U+017F).
  if (const std::size_t n = contraction(s, i, true)) return i + n;
  const char32_t c = t.at(i);
  const Kind k = kind_of(c);
  const std::size_t after = t.next(i);
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (k == Kind::letter) return t.run(i, letter);
  if (k != Kind::number && !is_line_break(c) && after < s.size() && letter(t.at(after))) return t.run(after, letter);
  // \p{N}{1,3}
  if (k == Kind::number) {
    std::size_t end = i;
    for (int n = 0; n < 3 && end < s.size() && number(t.at(end)); ++n) end = t.next(end);
    return end;
  }
  // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
  const std::size_t symbols = c == ' ' ? after : i;
  if (symbols < s.size() && kind_of(t.at(symbols)) == Kind::other) {
    const std::size_t end = t.run(symbols, [](char32_t x) { return kind_of(x) == Kind::other; });
    return t.run(end, is_line_break);
  }
  // The rest starts with whitespace. '\s*[\r\n]+': through the run's last line break.
  const std::size_t end = t.run(i, whitespace);
  std::size_t last_break = std::string_view::npos;
  for (std::size_t k2 = i; k2 < end; k2 = t.next(k2))
    if (is_line_break(t.at(k2))) last_break = k2;
  if (last_break != std::string_view::npos) return last_break + 1;
  // '\s+(?!\S)' or '\s+'
  return whitespace_piece_end(t, i, end);
}

// A byte's class for the ASCII fast path: a letter, digit, whitespace other than a line break, line
// break, apostrophe, other ASCII (punctuation, controls), or a byte of a multi-byte character.
enum Byte : std::uint8_t { kLetter, kDigit, kSpace, kBreak, kQuote, kOther, kHigh };

constexpr std::array<Byte, 256> kByteClass = [] {
  std::array<Byte, 256> b{};
  for (std::size_t c = 0; c < 256; ++c)
    b[c] = c >= 0x80                        ? kHigh
           : c == '\r' || c == '\n'         ? kBreak
           : c == '\''                      ? kQuote
           : kAsciiKinds[c] == Kind::letter ? kLetter
           : kAsciiKinds[c] == Kind::number ? kDigit
           : kAsciiKinds[c] == Kind::space  ? kSpace
                                            : kOther;
  return b;
}();

// The end of Llama 3's piece at i where the bytes that decide it are ASCII, else 0 (then
// llama3_piece_end decides): the same alternatives, in the same order, on a table of byte classes,
// with no decoding. Nearly all of the kernel's documentation goes this way.
std::size_t llama3_ascii_piece_end(std::string_view s, std::size_t i) {
  const std::size_t n = s.size();
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto cls = [&](std::size_t j) { return j < n ? kByteClass[p[j]] : kBreak; };  // past the end: stops every run
  // A run of `want` from j; 0 where a multi-byte character ends it (it could belong to the run).
  const auto run = [&](std::size_t j, auto want) -> std::size_t {
    while (j < n && want(kByteClass[p[j]])) ++j;
    return j < n && kByteClass[p[j]] == kHigh ? 0 : j;
  };
  const Byte c = kByteClass[p[i]];
  if (c == kHigh) return 0;
  if (c == kQuote)
    if (const std::size_t k = contraction(s, i, true)) return i + k;
  if (c == kLetter) return run(i + 1, [](Byte b) { return b == kLetter; });
  if (c != kDigit && c != kBreak) {  // [^\r\n\p{L}\p{N}]?\p{L}+
    const Byte next = cls(i + 1);
    if (next == kHigh && i + 1 < n) return 0;
    if (next == kLetter) return run(i + 2, [](Byte b) { return b == kLetter; });
  }
  if (c == kDigit) {  // \p{N}{1,3}
    std::size_t end = i + 1;
    for (int k = 1; k < 3 && end < n; ++k, ++end) {
      const Byte b = kByteClass[p[end]];
      if (b == kHigh) return 0;
      if (b != kDigit) break;
    }
    return end;
  }
  // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
  const std::size_t symbols = p[i] == ' ' ? i + 1 : i;
  const Byte first = cls(symbols);
  if (first == kHigh && symbols < n) return 0;
  if (first == kOther || first == kQuote) {
    const std::size_t end = run(symbols + 1, [](Byte b) { return b == kOther || b == kQuote; });
    if (end == 0) return 0;
    std::size_t j = end;
    while (j < n && kByteClass[p[j]] == kBreak) ++j;
    return j;
  }
  // Whitespace: through the run's last line break, else all of it but the last character where one
  // follows (\s+(?!\S)).
  const std::size_t end = run(i, [](Byte b) { return b == kSpace || b == kBreak; });
  if (end == 0) return 0;
  for (std::size_t k = end; k > i; --k)
    if (kByteClass[p[k - 1]] == kBreak) return k;
  return end == n || end - i == 1 ? end : end - 1;
}

void llama3_pieces(std::string_view s, std::vector<std::string_view>& out) {
  const Text t{s};
  for (std::size_t i = 0; i < s.size();) {
    std::size_t end = llama3_ascii_piece_end(s, i);
    if (end == 0) end = llama3_piece_end(t, i);
    out.push_back(s.substr(i, end - i));
    i = end;
  }
}

}  // namespace

std::vector<std::string_view> llama3_pieces_decoded(std::string_view text) {
  const Text t{text};
  std::vector<std::string_view> out;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t end = llama3_piece_end(t, i);
    out.push_back(text.substr(i, end - i));
    i = end;
  }
  return out;
}

void pre_tokenize(PreTokenizer kind, std::string_view text, std::vector<std::string_view>& pieces) {
  if (kind == PreTokenizer::gpt2)
    gpt2_pieces(text, pieces);
  else
    llama3_pieces(text, pieces);
}

std::vector<std::string_view> pre_tokenize(PreTokenizer kind, std::string_view text) {
  std::vector<std::string_view> pieces;
  pre_tokenize(kind, text, pieces);
  return pieces;
}

const char* pre_tokenizer_pattern(PreTokenizer kind) {
  if (kind == PreTokenizer::gpt2)
    return R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
  return R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
}

const char* pre_tokenizer_name(PreTokenizer kind) {
  return kind == PreTokenizer::gpt2 ? "gpt2" : "llama3";
}

}  // namespace xpuperf::text
