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

}  // namespace xpuperf
