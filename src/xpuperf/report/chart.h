#pragma once
// The charts of report.html: inline SVG line charts with nice axis ticks, a horizontal target
// line and vertical markers, and bars drawn with HTML. Titles, axis names and legends are HTML
// around the SVG, so the browser wraps them and no label is ever clipped; the SVG's own text is
// tick numbers and short marker labels, inside margins sized from them.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "xpuperf/core/strings.h"

namespace xpuperf::report {

struct Series {
  std::string label;
  std::vector<std::pair<double, double>> points;  // (x, y), in x order
  bool dots = false;                              // a dot at each point (few points, e.g. evaluations)
  std::vector<std::string> labels = {};           // where given: a few characters beside each dot
};

struct Marker {
  double x = 0;
  std::string label;  // a few words, drawn beside the line
  int colour = -1;    // the series whose colour it takes; -1: the marker's own index
};

struct LineChart {
  std::string title;
  std::string x_label, y_label;  // "step", "loss"; units included
  std::vector<Series> series;
  std::optional<double> y_line;  // e.g. the target accuracy, drawn dashed across
  std::string y_line_label;
  std::vector<Marker> markers;  // vertical lines, e.g. the moment the target was reached
  bool y_from_zero = false;     // include 0 on the y axis (throughput, power)
};

// A <figure> with the title, the SVG and the legend. "no samples" when nothing can be drawn.
std::string line_chart_html(const LineChart& chart);

struct Bar {
  std::string label;
  double value = 0;
  std::string text;        // what is written beside the bar ("0.283 TFLOP/s (28.3 %)")
  bool reference = false;  // drawn in grey: a datasheet figure, a baseline
};

// Horizontal bars scaled to the largest value, as an HTML table (labels wrap, never clip).
std::string bar_chart_html(const std::string& title, const std::vector<Bar>& bars);

// "Nice" tick positions (1, 2, 5 × 10^k) covering [lo, hi], about `count` of them.
std::vector<double> nice_ticks(double lo, double hi, int count = 5);
// A number as a tick or a table shows it: 3 significant digits, k/M/G above 10,000.
std::string short_number(double v);

std::string html_escape(const std::string& text);

// The colour of the i-th series, the same in the SVG and the legend.
const char* series_colour(std::size_t i);

// The CSS the charts need, once in the page's <style>.
const char* chart_css();

}  // namespace xpuperf::report
