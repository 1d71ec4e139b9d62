#include "xpuperf/core/progress.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

namespace xpuperf {

ProgressBar::ProgressBar(std::string label, std::size_t total, std::ostream& out, bool terminal)
    : label_(std::move(label)),
      total_(total),
      out_(out),
      terminal_(terminal),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_ - std::chrono::seconds(1)) {}

void ProgressBar::update(std::size_t done) {
  const auto now = std::chrono::steady_clock::now();
  if (terminal_) {
    if (now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    draw(done, false);
    return;
  }
  const int tenth = total_ ? static_cast<int>(10 * std::min(done, total_) / total_) : 10;
  if (tenth == last_tenth_ || tenth == 10) return;  // the last line is finish()'s
  last_tenth_ = tenth;
  draw(done, false);
}

void ProgressBar::finish() {
  if (finished_) return;
  finished_ = true;
  draw(total_, true);
}

void ProgressBar::draw(std::size_t done, bool last) {
  const double seconds =
      std::max(1e-3, std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
  const std::size_t shown = std::min(done, total_);
  const int width = 30, filled = total_ ? static_cast<int>(width * shown / total_) : width;
  std::ostringstream line;
  line << label_ << " [" << std::string(static_cast<std::size_t>(filled), '#')
       << std::string(static_cast<std::size_t>(width - filled), '.') << "] " << std::setw(3)
       << (total_ ? 100 * shown / total_ : 100) << "% " << shown << "/" << total_ << " " << std::fixed
       << std::setprecision(0) << static_cast<double>(shown) / seconds << "/s";
  if (last) line << " in " << std::setprecision(1) << seconds << " s";
  if (terminal_)
    out_ << "\r" << line.str() << (last ? "\n" : "") << std::flush;
  else
    out_ << line.str() << "\n" << std::flush;
}

}  // namespace xpuperf
