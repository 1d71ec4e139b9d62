#pragma once
// A progress line for long work (the data tool): on a terminal one line redrawn at most ten
// times a second, "label [#####.....] 45% 27000/60000 1234/s"; elsewhere (a log, CI) a line at
// each tenth, so logs stay short.

#include <chrono>
#include <cstddef>
#include <ostream>
#include <string>

namespace xpuperf {

class ProgressBar {
 public:
  ProgressBar(std::string label, std::size_t total, std::ostream& out, bool terminal);
  void update(std::size_t done);
  void finish();  // the last line, with the whole rate

 private:
  void draw(std::size_t done, bool last);
  std::string label_;
  std::size_t total_;
  std::ostream& out_;
  bool terminal_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  int last_tenth_ = -1;
  bool finished_ = false;
};

}  // namespace xpuperf
