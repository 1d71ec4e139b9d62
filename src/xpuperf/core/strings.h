#pragma once
// Small text helpers the libraries share.

#include <iomanip>
#include <sstream>
#include <string>

namespace xpuperf {

// `s` without leading and trailing spaces, tabs and line ends.
inline std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

// `v` in fixed notation with `digits` digits after the point.
inline std::string fixed_digits(double v, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << v;
  return out.str();
}

// `s` with control characters as \xNN (line ends and tabs kept where `keep_line_ends`): a
// message that quotes a user's value must not move the cursor, clear the screen or retitle the
// terminal.
inline std::string escape_controls(const std::string& s, bool keep_line_ends) {
  std::string out;
  for (const char c : s) {
    const auto byte = static_cast<unsigned char>(c);
    const bool line_end = c == '\n' || c == '\t';
    if ((byte < 0x20 && !(keep_line_ends && line_end)) || byte == 0x7F) {
      static const char* hex = "0123456789abcdef";
      out += std::string("\\x") + hex[byte >> 4] + hex[byte & 15];
    } else {
      out += c;
    }
  }
  return out;
}

// A whole message for the terminal: its own line ends kept.
inline std::string terminal_safe(const std::string& s) {
  return escape_controls(s, true);
}

// A value inside a message: every control character escaped, and a value longer than `max` bytes
// cut to its two ends with its length between, so that it neither drives the terminal nor floods
// it. Cuts fall between UTF-8 characters.
inline std::string printable(const std::string& s, std::size_t max = 120) {
  if (s.size() <= max) return escape_controls(s, false);
  const auto continuation = [&](std::size_t i) { return (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80; };
  std::size_t head = max / 2, tail = s.size() - max / 4;
  while (head > 0 && continuation(head)) --head;
  while (tail < s.size() && continuation(tail)) ++tail;
  return escape_controls(s.substr(0, head), false) + "..." + escape_controls(s.substr(tail), false) + " (" +
         std::to_string(s.size()) + " characters)";
}

}  // namespace xpuperf
