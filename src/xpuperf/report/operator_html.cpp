#include "xpuperf/report/operator_html.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "xpuperf/core/strings.h"
#include "xpuperf/report/chart.h"
#include "xpuperf/report/measured_roof.h"

namespace xpuperf::report {
namespace {

constexpr double kRoofWidth = 640, kRoofHeight = 400, kRoofLeft = 64, kRoofRight = 16, kRoofTop = 12, kRoofBottom = 40;

// Log-log axes spanning whole decades.
struct LogFrame {
  double x0 = 0, x1 = 1, y0 = 0, y1 = 1;  // log10 of the ends
  double X(double x) const {
    return kRoofLeft + (std::log10(x) - x0) / (x1 - x0) * (kRoofWidth - kRoofLeft - kRoofRight);
  }
  double Y(double y) const {
    return kRoofTop + (1 - (std::log10(y) - y0) / (y1 - y0)) * (kRoofHeight - kRoofTop - kRoofBottom);
  }
};

std::string roof_px(double v) {
  return fixed_digits(v, 1);
}

std::string decade_label(int k) {
  return short_number(std::pow(10.0, k));
}

void draw_log_axes(std::ostringstream& svg, const LogFrame& f) {
  for (int k = static_cast<int>(f.x0); k <= static_cast<int>(f.x1); ++k) {
    const double x = f.X(std::pow(10.0, k));
    svg << "<line x1=\"" << roof_px(x) << "\" y1=\"" << kRoofTop << "\" x2=\"" << roof_px(x) << "\" y2=\""
        << kRoofHeight - kRoofBottom << "\" stroke=\"#eee\"/><text x=\"" << roof_px(x) << "\" y=\""
        << kRoofHeight - kRoofBottom + 16 << "\" font-size=\"11\" text-anchor=\"middle\">" << decade_label(k)
        << "</text>";
  }
  for (int k = static_cast<int>(f.y0); k <= static_cast<int>(f.y1); ++k) {
    const double y = f.Y(std::pow(10.0, k));
    svg << "<line x1=\"" << kRoofLeft << "\" y1=\"" << roof_px(y) << "\" x2=\"" << kRoofWidth - kRoofRight << "\" y2=\""
        << roof_px(y) << "\" stroke=\"#eee\"/><text x=\"" << kRoofLeft - 6 << "\" y=\"" << roof_px(y + 4)
        << "\" font-size=\"11\" text-anchor=\"end\">" << decade_label(k) << "</text>";
  }
  svg << "<rect x=\"" << kRoofLeft << "\" y=\"" << kRoofTop << "\" width=\"" << kRoofWidth - kRoofLeft - kRoofRight
      << "\" height=\"" << kRoofHeight - kRoofTop - kRoofBottom << "\" fill=\"none\" stroke=\"#999\"/>";
}

// min(peak, intensity × bandwidth) across the axis, as a polyline through the ridge point.
void draw_roof(std::ostringstream& svg, const LogFrame& f, double peak_tflops, double bandwidth_gbps,
               const char* colour, bool dashed, const std::string& title) {
  const double lo = std::pow(10.0, f.x0), hi = std::pow(10.0, f.x1);
  const double ridge = peak_tflops * 1e3 / bandwidth_gbps;  // FLOP/byte where the two meet
  std::vector<std::pair<double, double>> points = {{lo, std::min(peak_tflops, lo * bandwidth_gbps / 1e3)}};
  if (ridge > lo && ridge < hi) points.push_back({ridge, peak_tflops});
  points.push_back({hi, std::min(peak_tflops, hi * bandwidth_gbps / 1e3)});
  svg << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"1.5\""
      << (dashed ? " stroke-dasharray=\"5,4\"" : "") << " points=\"";
  for (const auto& [x, y] : points)
    svg << roof_px(f.X(x)) << "," << roof_px(f.Y(std::clamp(y, std::pow(10.0, f.y0), std::pow(10.0, f.y1)))) << " ";
  svg << "\"><title>" << html_escape(title) << "</title></polyline>";
}

}  // namespace

std::string roofline_svg(const std::vector<OperatorRowStats>& rows, const Roof& datasheet, const Roof& measured) {
  double xmin = INFINITY, xmax = 0, ymin = INFINITY, ymax = 0;
  std::set<std::string> dtypes;
  for (const auto& r : rows) {
    if (r.intensity <= 0 || r.tflops <= 0) continue;
    xmin = std::min(xmin, r.intensity), xmax = std::max(xmax, r.intensity);
    ymin = std::min(ymin, r.tflops), ymax = std::max(ymax, r.tflops);
    dtypes.insert(r.dtype);
  }
  if (dtypes.empty()) return "";
  for (const Roof* roof : {&datasheet, &measured})
    for (const auto& d : dtypes)
      if (const auto p = roof->peak_tflops.find(d); p != roof->peak_tflops.end() && roof->bandwidth_gbps > 0) {
        ymax = std::max(ymax, p->second);
        xmax = std::max(xmax, p->second * 1e3 / roof->bandwidth_gbps);
      }
  LogFrame f{std::floor(std::log10(xmin)), std::ceil(std::log10(xmax)), std::floor(std::log10(ymin)),
             std::ceil(std::log10(ymax))};
  if (f.x1 <= f.x0) f.x1 = f.x0 + 1;
  if (f.y1 <= f.y0) f.y1 = f.y0 + 1;
  std::ostringstream svg;
  svg << "<figure class=\"chart\"><figcaption>Roofline: each operator row against the roofs of its dtype"
      << "</figcaption><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kRoofWidth << "\" height=\""
      << kRoofHeight << "\" viewBox=\"0 0 " << kRoofWidth << " " << kRoofHeight
      << "\" role=\"img\" font-family=\"sans-serif\"><title>Roofline</title>";
  draw_log_axes(svg, f);
  std::map<std::string, std::size_t> colour;
  for (const auto& d : dtypes) colour.emplace(d, colour.size());
  for (const auto& d : dtypes)
    for (const Roof* roof : {&datasheet, &measured})
      if (const auto p = roof->peak_tflops.find(d); p != roof->peak_tflops.end() && roof->bandwidth_gbps > 0)
        draw_roof(svg, f, p->second, roof->bandwidth_gbps, series_colour(colour[d]), roof == &datasheet,
                  d + " " + roof->source + ": " + short_number(p->second) + " TFLOP/s, " +
                      short_number(roof->bandwidth_gbps) + " GB/s");
  for (const auto& r : rows) {
    if (r.intensity <= 0 || r.tflops <= 0) continue;
    svg << "<circle cx=\"" << roof_px(f.X(r.intensity)) << "\" cy=\"" << roof_px(f.Y(r.tflops)) << "\" r=\"4\" fill=\""
        << (r.checked && !r.accurate ? "#fff" : series_colour(colour[r.dtype])) << "\" stroke=\""
        << series_colour(colour[r.dtype]) << "\"><title>"
        << html_escape(r.key + ": " + short_number(r.tflops) + " TFLOP/s at " + fixed_digits(r.intensity, 2) +
                       " FLOP/byte; " + fraction_text(r.measured_fraction) + " of the measured roof, " +
                       fraction_text(r.datasheet_fraction) + " of the datasheet's")
        << "</title></circle>";
  }
  svg << "</svg><div class=\"axis\">x: FLOP per byte · y: TFLOP/s (both logarithmic). Roofs: dashed the "
         "datasheet's, solid the measured one (the run's base cases); an open dot is a row that failed its "
         "accuracy check.</div><div class=\"legend\">";
  for (const auto& d : dtypes)
    svg << "<span><i style=\"background:" << series_colour(colour[d]) << "\"></i>" << html_escape(d) << "</span>";
  svg << "</div></figure>";
  return svg.str();
}

void operator_section(std::ostringstream& page, const Summary& summary) {
  std::vector<std::string> hardware;  // one roofline a chip, every case's rows on it
  std::map<std::string, std::vector<OperatorRowStats>> rows_on;
  std::map<std::string, Roof> datasheet_of;
  for (const auto& c : summary.cases) {
    if (!c.is(CaseFamilyKind::Operation)) continue;
    if (std::find(hardware.begin(), hardware.end(), c.hardware) == hardware.end()) hardware.push_back(c.hardware);
    for (const auto& r : c.rounds)
      if (const auto* roof = r.record("datasheet_roof")) datasheet_of[c.hardware] = Roof::from_json(*roof);
    const auto rows = operator_rows(c, measured_roof(summary, c.hardware));
    rows_on[c.hardware].insert(rows_on[c.hardware].end(), rows.begin(), rows.end());
    page << "<h3>" << html_escape(c.key)
         << ": rows</h3>\n<table><tr><th class=\"text\">operator</th><th "
            "class=\"text\">shape</th><th class=\"text\">dtype</th><th class=\"text\">implementation</th><th>ms (mean "
            "± std)</th><th>TFLOP/s</th><th>GB/s</th><th>FLOP/byte</th><th>of datasheet</th><th>of measured "
            "roof</th><th>vs aten</th><th>J/call</th><th class=\"text\">accurate</th></tr>\n";
    for (const auto& r : rows)
      page << "<tr><td class=\"text\">" << html_escape(r.op) << "</td><td class=\"text\">" << html_escape(r.shape)
           << "</td><td class=\"text\">" << html_escape(r.dtype) << "</td><td class=\"text\">"
           << html_escape(r.implementation) << "</td><td>" << fixed_digits(r.time.mean, 4)
           << (r.time.n > 1 ? " ± " + fixed_digits(r.time.std, 4) : "") << "</td><td>" << short_number(r.tflops)
           << "</td><td>" << short_number(r.gb_per_s) << "</td><td>" << fixed_digits(r.intensity, 2) << "</td><td>"
           << fraction_text(r.datasheet_fraction) << "</td><td>" << fraction_text(r.measured_fraction) << "</td><td>"
           << html_escape(speedup_text(r)) << "</td><td>"
           << (r.energy_per_call_j ? short_number(*r.energy_per_call_j) : "–") << "</td><td class=\"text"
           << (r.checked && !r.accurate ? " bad" : "") << "\">"
           << (!r.checked   ? "not checked"
               : r.accurate ? "yes"
                            : "NO")
           << "</td></tr>\n";
    page << "</table>\n";
  }
  for (const auto& h : hardware) {
    const Roof measured = measured_roof(summary, h);
    page << "<h3>Roofline of " << html_escape(h) << "</h3>\n";
    page << "<p class=\"note\">"
         << (measured.empty()
                 ? "No measured roof: the run has no computation-* or main_memory-bandwidth base case on " +
                       html_escape(h) + "."
                 : "Measured roof: " + html_escape(measured.source) + ".")
         << "</p>\n"
         << roofline_svg(rows_on[h], datasheet_of[h], measured) << "\n";
  }
}

}  // namespace xpuperf::report
