#include "xpuperf/report/chart.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

namespace xpuperf::report {

namespace {

constexpr int kWidth = 720, kHeight = 250, kTop = 14, kBottom = 28, kRight = 24;
constexpr double kCharWidth = 6.6;  // 11 px sans-serif digits, generously
constexpr std::size_t kMaxPoints = 1000;
const char* kColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                          "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"};

struct Range {
  double lo = 1e300, hi = -1e300;
  void add(double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return lo > hi; }
};

std::string px(double v) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << v;
  return out.str();
}

}  // namespace

const char* series_colour(std::size_t i) {
  return kColours[i % (sizeof kColours / sizeof *kColours)];
}

std::string html_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string short_number(double v) {
  std::ostringstream out;
  const double a = std::fabs(v);
  out << std::setprecision(3);
  if (a >= 1e9)
    out << v / 1e9 << "G";
  else if (a >= 1e6)
    out << v / 1e6 << "M";
  else if (a >= 1e4)
    out << v / 1e3 << "k";
  else if (a >= 1e3)
    out << std::fixed << std::setprecision(0) << v;  // 3750, not 3.75e+03
  else
    out << (a < 1e-12 ? 0.0 : v);
  return out.str();
}

std::vector<double> nice_ticks(double lo, double hi, int count) {
  if (!(hi > lo)) return {lo};
  const double raw = (hi - lo) / std::max(1, count);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag * 1.0000001) {
      step = m * mag;
      break;
    }
  // k × step, computed as an integer over a power of ten where the step is a fraction, so that
  // 3 × 0.2 is 0.6 and not 0.6000000000000001.
  const double per = mag < 1 ? std::round(1 / mag) : 1;
  const double units = std::round(step * per);
  std::vector<double> ticks;
  for (double k = std::floor(lo / step);; ++k) {
    const double t = k * units / per;
    ticks.push_back(t == 0 ? 0.0 : t);
    if (t >= hi - step * 1e-9 || ticks.size() > 100) break;
  }
  return ticks;
}

const char* chart_css() {
  return "figure.chart{margin:1.2em 0}figure.chart figcaption{font-weight:bold;margin-bottom:.2em}"
         "figure.chart svg{display:block;max-width:100%;height:auto}"
         ".axis{font-size:12px;color:#444}details{margin:.5em "
         "0}summary{cursor:pointer;font-weight:bold}.legend{font-size:13px;margin:.2em 0 0 0}"
         ".legend span{display:inline-block;margin-right:1.2em;white-space:nowrap}"
         ".legend i{display:inline-block;width:18px;height:3px;vertical-align:middle;margin-right:.4em}"
         "table.bars{border:none}table.bars td{border:none;padding:2px 6px;text-align:left;vertical-align:middle}"
         "table.bars td.bar{width:420px}table.bars div{height:14px}";
}

namespace {

// Where a line chart's values land in its SVG: the plot area and the axes' ends.
struct PlotFrame {
  double left = 0, w = 0, h = 0;
  double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  std::vector<double> x_ticks, y_ticks;
  double X(double x) const { return left + (x - x0) / (x1 - x0) * w; }
  double Y(double y) const { return kTop + h - (y - y0) / (y1 - y0) * h; }
};

// The frame for the chart's finite points (xr, yr), its target line and markers.
PlotFrame plot_frame(const LineChart& chart, Range xr, Range yr) {
  if (chart.y_line) yr.add(*chart.y_line);
  if (chart.y_from_zero) yr.add(0);
  for (const auto& m : chart.markers) xr.add(m.x);
  if (xr.hi <= xr.lo) xr.hi = xr.lo + 1;
  if (yr.hi <= yr.lo) {
    const double pad = std::fabs(yr.lo) > 0 ? std::fabs(yr.lo) * 0.05 : 1;
    yr.lo -= pad;
    yr.hi += pad;
  }
  PlotFrame f;
  f.x_ticks = nice_ticks(xr.lo, xr.hi, 6);
  f.y_ticks = nice_ticks(yr.lo, yr.hi, 5);
  f.x0 = std::min(xr.lo, f.x_ticks.front()), f.x1 = std::max(xr.hi, f.x_ticks.back());
  f.y0 = std::min(yr.lo, f.y_ticks.front()), f.y1 = std::max(yr.hi, f.y_ticks.back());
  std::size_t label_chars = 1;
  for (double t : f.y_ticks) label_chars = std::max(label_chars, short_number(t).size());
  f.left = 12 + kCharWidth * static_cast<double>(label_chars);
  f.w = kWidth - f.left - kRight;
  f.h = kHeight - kTop - kBottom;
  return f;
}

// The grid lines and tick labels of both axes, and the plot's border.
void draw_axes(std::ostringstream& html, const PlotFrame& f) {
  for (double t : f.y_ticks)
    html << "<line x1=\"" << px(f.left) << "\" x2=\"" << px(f.left + f.w) << "\" y1=\"" << px(f.Y(t)) << "\" y2=\""
         << px(f.Y(t)) << "\" stroke=\"#e4e4e4\"/><text x=\"" << px(f.left - 6) << "\" y=\"" << px(f.Y(t) + 4)
         << "\" text-anchor=\"end\" font-size=\"11\" fill=\"#444\">" << short_number(t) << "</text>";
  for (std::size_t i = 0; i < f.x_ticks.size(); ++i) {
    const double t = f.x_ticks[i];
    const char* anchor = i == 0 ? "start" : i + 1 == f.x_ticks.size() ? "end" : "middle";
    html << "<line x1=\"" << px(f.X(t)) << "\" x2=\"" << px(f.X(t)) << "\" y1=\"" << px(kTop + f.h) << "\" y2=\""
         << px(kTop + f.h + 4) << "\" stroke=\"#999\"/><text x=\"" << px(f.X(t)) << "\" y=\"" << px(kTop + f.h + 17)
         << "\" text-anchor=\"" << anchor << "\" font-size=\"11\" fill=\"#444\">" << short_number(t) << "</text>";
  }
  html << "<rect x=\"" << px(f.left) << "\" y=\"" << kTop << "\" width=\"" << px(f.w) << "\" height=\"" << px(f.h)
       << "\" fill=\"none\" stroke=\"#999\"/>";
}

// The target's dashed line and its label, on the side the markers leave free; then the markers.
void draw_target_and_markers(std::ostringstream& html, const LineChart& chart, const PlotFrame& f) {
  if (chart.y_line) {
    const double y = f.Y(*chart.y_line);
    html << "<line x1=\"" << px(f.left) << "\" x2=\"" << px(f.left + f.w) << "\" y1=\"" << px(y) << "\" y2=\"" << px(y)
         << "\" stroke=\"#333\" stroke-dasharray=\"6 4\"/>";
    bool markers_right = false;
    for (const auto& m : chart.markers) markers_right = markers_right || f.X(m.x) > f.left + f.w / 2;
    if (!chart.y_line_label.empty())
      html << "<text x=\"" << px(markers_right ? f.left + 4 : f.left + f.w - 4) << "\" y=\"" << px(y - 4)
           << "\" text-anchor=\"" << (markers_right ? "start" : "end") << "\" font-size=\"11\" fill=\"#333\">"
           << html_escape(chart.y_line_label) << "</text>";
  }
  for (std::size_t m = 0; m < chart.markers.size(); ++m) {
    const double x = f.X(chart.markers[m].x);
    const bool right_half = x > f.left + f.w / 2;
    html << "<line x1=\"" << px(x) << "\" x2=\"" << px(x) << "\" y1=\"" << kTop << "\" y2=\"" << px(kTop + f.h)
         << "\" stroke=\""
         << series_colour(chart.markers[m].colour >= 0 ? static_cast<std::size_t>(chart.markers[m].colour) : m)
         << "\" stroke-dasharray=\"2 3\"/><text x=\"" << px(right_half ? x - 4 : x + 4) << "\" y=\""
         << px(kTop + 12 + 13 * static_cast<double>(m)) << "\" text-anchor=\"" << (right_half ? "end" : "start")
         << "\" font-size=\"11\" fill=\"#333\">" << html_escape(chart.markers[m].label) << "</text>";
  }
}

// Each series as a polyline (at most kMaxPoints of its points), with dots where asked.
void draw_series(std::ostringstream& html, const LineChart& chart, const PlotFrame& f) {
  for (std::size_t i = 0; i < chart.series.size(); ++i) {
    const auto& s = chart.series[i];
    const std::size_t step = std::max<std::size_t>(1, s.points.size() / kMaxPoints);
    html << "<polyline fill=\"none\" stroke=\"" << series_colour(i) << "\" stroke-width=\"1.8\" points=\"";
    for (std::size_t k = 0; k < s.points.size(); k += step)
      if (std::isfinite(s.points[k].second))
        html << px(f.X(s.points[k].first)) << "," << px(f.Y(s.points[k].second)) << " ";
    html << "\"/>";
    if (s.dots || s.points.size() == 1)
      for (std::size_t k = 0; k < s.points.size(); ++k) {
        const auto [x, y] = s.points[k];
        if (!std::isfinite(y)) continue;
        html << "<circle cx=\"" << px(f.X(x)) << "\" cy=\"" << px(f.Y(y)) << "\" r=\"3\" fill=\"" << series_colour(i)
             << "\"/>";
        if (k < s.labels.size())
          html << "<text x=\"" << px(f.X(x) + 5) << "\" y=\"" << px(f.Y(y) - 5) << "\" font-size=\"10\" fill=\""
               << series_colour(i) << "\">" << html_escape(s.labels[k]) << "</text>";
      }
  }
}

}  // namespace

std::string line_chart_html(const LineChart& chart) {
  std::ostringstream html;
  html << "<figure class=\"chart\"><figcaption>" << html_escape(chart.title) << "</figcaption>";
  Range xr, yr;
  for (const auto& s : chart.series)
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      xr.add(x);
      yr.add(y);
    }
  if (xr.empty()) {
    html << "<p class=\"axis\">no samples</p></figure>";
    return html.str();
  }
  const PlotFrame f = plot_frame(chart, xr, yr);
  html << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << kHeight
       << "\" viewBox=\"0 0 " << kWidth << " " << kHeight << "\" role=\"img\" font-family=\"sans-serif\"><title>"
       << html_escape(chart.title) << "</title>";
  draw_axes(html, f);
  draw_target_and_markers(html, chart, f);
  draw_series(html, chart, f);
  html << "</svg><div class=\"axis\">x: " << html_escape(chart.x_label) << " · y: " << html_escape(chart.y_label)
       << "</div>";
  if (chart.series.size() > 1 || (chart.series.size() == 1 && !chart.series[0].label.empty())) {
    html << "<div class=\"legend\">";
    for (std::size_t i = 0; i < chart.series.size(); ++i)
      html << "<span><i style=\"background:" << series_colour(i) << "\"></i>" << html_escape(chart.series[i].label)
           << "</span>";
    html << "</div>";
  }
  html << "</figure>";
  return html.str();
}

std::string bar_chart_html(const std::string& title, const std::vector<Bar>& bars) {
  double top = 0;
  for (const auto& b : bars)
    if (std::isfinite(b.value)) top = std::max(top, b.value);
  std::ostringstream html;
  html << "<figure class=\"chart\"><figcaption>" << html_escape(title) << "</figcaption><table class=\"bars\">";
  for (const auto& b : bars) {
    const double share = top > 0 && std::isfinite(b.value) ? std::max(0.0, b.value / top) : 0;
    html << "<tr><td>" << html_escape(b.label) << "</td><td class=\"bar\"><div style=\"width:" << px(100 * share)
         << "%;background:" << (b.reference ? "#b0b0b0" : series_colour(0)) << "\"></div></td><td>"
         << html_escape(b.text) << "</td></tr>";
  }
  html << "</table></figure>";
  return html.str();
}

}  // namespace xpuperf::report
