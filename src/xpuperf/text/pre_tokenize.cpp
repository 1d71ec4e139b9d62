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

std::vector<std::string_view> gpt2_pieces(std::string_view s) {
  const Text t{s};
  std::vector<std::string_view> out;
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
  return out;
}

std::vector<std::string_view> llama3_pieces(std::string_view s) {
  const Text t{s};
  std::vector<std::string_view> out;
  auto take = [&](std::size_t& i, std::size_t end) {
    out.push_back(s.substr(i, end - i));
    i = end;
  };
  for (std::size_t i = 0; i < s.size();) {
    // (?i:'s|'t|'re|'ve|'m|'ll|'d): ASCII case only, as the JavaScript reference spells it
    // ([sS]|[tT]|...); Python's Unicode case folding would also take "'ſ" (U+017F).
    if (const std::size_t n = contraction(s, i, true)) {
      take(i, i + n);
      continue;
    }
    const char32_t c = t.at(i);
    const Kind k = kind_of(c);
    const std::size_t after = t.next(i);
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (k == Kind::letter) {
      take(i, t.run(i, letter));
      continue;
    }
    if (k != Kind::number && !is_line_break(c) && after < s.size() && letter(t.at(after))) {
      take(i, t.run(after, letter));
      continue;
    }
    // \p{N}{1,3}
    if (k == Kind::number) {
      std::size_t end = i;
      for (int n = 0; n < 3 && end < s.size() && number(t.at(end)); ++n) end = t.next(end);
      take(i, end);
      continue;
    }
    // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
    const std::size_t symbols = c == ' ' ? after : i;
    if (symbols < s.size() && kind_of(t.at(symbols)) == Kind::other) {
      const std::size_t end = t.run(symbols, [](char32_t x) { return kind_of(x) == Kind::other; });
      take(i, t.run(end, is_line_break));
      continue;
    }
    // The rest starts with whitespace. '\s*[\r\n]+': through the run's last line break.
    const std::size_t end = t.run(i, whitespace);
    std::size_t last_break = std::string_view::npos;
    for (std::size_t k2 = i; k2 < end; k2 = t.next(k2))
      if (is_line_break(t.at(k2))) last_break = k2;
    if (last_break != std::string_view::npos) {
      take(i, last_break + 1);
      continue;
    }
    // '\s+(?!\S)' or '\s+'
    take(i, whitespace_piece_end(t, i, end));
  }
  return out;
}

}  // namespace

std::vector<std::string_view> pre_tokenize(PreTokenizer kind, std::string_view text) {
  return kind == PreTokenizer::gpt2 ? gpt2_pieces(text) : llama3_pieces(text);
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
