#pragma once
// The Unicode the tokenisers need, through ICU (Debian: libicu-dev): UTF-8 to code points and
// back, general categories, and canonical decomposition (NFD, for stripping accents).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace xpuperf::text {

// Code points of UTF-8 text; a malformed byte becomes U+FFFD, as a browser's decoder does.
std::vector<char32_t> utf8_to_code_points(std::string_view utf8);
void append_utf8(std::string& out, char32_t c);
std::string to_utf8(const std::vector<char32_t>& code_points);
// The code point of valid UTF-8 at s[i] and its length in bytes (check the text first).
char32_t code_point_at(std::string_view s, std::size_t i, std::size_t& length);
// Well-formed UTF-8: no stray or missing continuation byte, no overlong form, no surrogate.
bool is_valid_utf8(std::string_view s);

bool is_letter(char32_t c);           // \p{L}
bool is_number(char32_t c);           // \p{N}
bool is_js_whitespace(char32_t c);    // \s of a JavaScript (and Python) regular expression
bool is_control(char32_t c);          // C*: control, format, private use, unassigned
bool is_punctuation(char32_t c);      // \p{P}
bool is_nonspacing_mark(char32_t c);  // Mn
bool is_cjk_ideograph(char32_t c);    // the CJK Unified Ideographs blocks BERT spaces out
char32_t to_lower(char32_t c);

// Canonical decomposition (NFD).
std::vector<char32_t> nfd(const std::vector<char32_t>& code_points);

}  // namespace xpuperf::text
