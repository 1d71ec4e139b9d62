// report.html and the comparison page opened in a real browser (Debian's headless Chromium): a
// screenshot is taken and must show the charts — pixels of the charts' colour — not a blank page.
// The screenshots stay in build/tests/screenshots/ for a person to look at.

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cli_util.h"
#include "xpuperf/report/compare.h"
#include "xpuperf/report/html.h"
#include "xpuperf/report/summary.h"

namespace xpuperf {
namespace {
namespace fs = std::filesystem;

struct Image {
  int width = 0, height = 0;
  std::vector<std::uint8_t> rgb;  // 3 bytes a pixel
};

std::uint32_t be32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

// Decodes an 8-bit RGB or RGBA, non-interlaced PNG (what Chromium writes).
std::optional<Image> read_png(const std::string& path) {
  const std::string data = test::read_file(path);
  if (data.size() < 33 || data.compare(1, 3, "PNG") != 0) return std::nullopt;
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  Image img;
  int channels = 0;
  std::string idat;
  for (std::size_t at = 8; at + 12 <= data.size();) {
    const std::uint32_t len = be32(p + at);
    const std::string type = data.substr(at + 4, 4);
    if (type == "IHDR") {
      img.width = static_cast<int>(be32(p + at + 8));
      img.height = static_cast<int>(be32(p + at + 12));
      if (p[at + 16] != 8 || p[at + 20] != 0) return std::nullopt;
      channels = p[at + 17] == 6 ? 4 : p[at + 17] == 2 ? 3 : 0;
      if (!channels) return std::nullopt;
    } else if (type == "IDAT") {
      idat += data.substr(at + 8, len);
    }
    at += 12 + len;
  }
  const std::size_t stride = static_cast<std::size_t>(img.width) * channels;
  std::vector<std::uint8_t> raw((stride + 1) * static_cast<std::size_t>(img.height));
  uLongf raw_size = raw.size();
  if (uncompress(raw.data(), &raw_size, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) != Z_OK)
    return std::nullopt;
  std::vector<std::uint8_t> prev(stride, 0), row(stride);
  for (int y = 0; y < img.height; ++y) {
    const std::uint8_t* line = raw.data() + static_cast<std::size_t>(y) * (stride + 1);
    const int filter = line[0];
    for (std::size_t x = 0; x < stride; ++x) {
      const int a = x >= static_cast<std::size_t>(channels) ? row[x - channels] : 0;
      const int b = prev[x];
      const int c = x >= static_cast<std::size_t>(channels) ? prev[x - channels] : 0;
      int v = line[1 + x];
      if (filter == 1) v += a;
      if (filter == 2) v += b;
      if (filter == 3) v += (a + b) / 2;
      if (filter == 4) {
        const int pa = std::abs(b - c), pb = std::abs(a - c), pc = std::abs(a + b - 2 * c);
        v += (pa <= pb && pa <= pc) ? a : (pb <= pc ? b : c);
      }
      row[x] = static_cast<std::uint8_t>(v);
    }
    for (int x = 0; x < img.width; ++x)
      for (int k = 0; k < 3; ++k) img.rgb.push_back(row[static_cast<std::size_t>(x * channels + k)]);
    prev = row;
  }
  return img;
}

struct Pixels {
  std::size_t chart = 0, dark = 0;
};

// Opens `html` in headless Chromium, keeps the screenshot in screenshots/NAME.png (in the test's
// working folder, build/tests, for a person to look at) and counts what it shows.
Pixels screenshot(const std::string& html, const std::string& name, int height) {
  test::TempDir dir;
  const std::string page = dir.write(name + ".html", html);
  fs::create_directories("screenshots");
  const std::string png = fs::absolute("screenshots/" + name + ".png").string();
  ProcessSpec spec;
  spec.argv = {"/usr/bin/chromium",
               "--headless",
               "--no-sandbox",
               "--disable-gpu",
               "--disable-quic",
               "--no-first-run",
               "--disable-background-networking",
               "--disable-component-update",
               "--disable-sync",
               "--hide-scrollbars",
               "--user-data-dir=" + dir.path() + "/profile",
               "--window-size=1100," + std::to_string(height),
               "--screenshot=" + png,
               "file://" + page};
  spec.log_path = dir.path() + "/chromium.log";
  EXPECT_TRUE(run_process(spec, std::chrono::seconds(60)).ok()) << test::read_file(spec.log_path);
  const auto img = read_png(png);
  EXPECT_TRUE(img) << "not a PNG Chromium would write: " << png;
  if (!img) return {};
  EXPECT_EQ(img->width, 1100);
  Pixels p;
  // The series colours (report/chart.cpp): lines, dots, legend swatches and bars.
  const int palette[][3] = {{0x1f, 0x77, 0xb4}, {0xff, 0x7f, 0x0e}, {0x2c, 0xa0, 0x2c},
                            {0xd6, 0x27, 0x28}, {0x94, 0x67, 0xbd}, {0x8c, 0x56, 0x4b}};
  for (std::size_t i = 0; i + 2 < img->rgb.size(); i += 3) {
    const int r = img->rgb[i], g = img->rgb[i + 1], b = img->rgb[i + 2];
    for (const auto& c : palette)
      if (std::abs(r - c[0]) < 12 && std::abs(g - c[1]) < 12 && std::abs(b - c[2]) < 12) {
        ++p.chart;
        break;
      }
    if (r < 80 && g < 80 && b < 80) ++p.dark;  // text
  }
  return p;
}

TEST(ReportInABrowser, ShowsTheChartsNotABlankPage) {
  if (!fs::exists("/usr/bin/chromium")) GTEST_SKIP() << "chromium is not installed (apt-get install chromium)";
  const std::string run = test::test_path("fixtures/run_tree/run20260101000000");
  const Pixels p = screenshot(report::report_html(report::build_summary(run), run), "fixture_report", 2400);
  RecordProperty("chart_pixels", static_cast<int>(p.chart));
  EXPECT_GT(p.chart, 1500u) << "the curves, monitor lines and energy bars should be drawn";
  EXPECT_GT(p.dark, 2000u) << "the tables and titles should be drawn";
}

// A real quickstart-like run (base cases, LeNet-5 trained 3 rounds, lenet5 inference) made by
// `xpuperf run` on this kind of machine: the time-to-train curves, the datasheet bars, latency.
TEST(ReportInABrowser, ARealThreeRoundLeNet5RunShowsItsCurves) {
  if (!fs::exists("/usr/bin/chromium")) GTEST_SKIP() << "chromium is not installed (apt-get install chromium)";
  const std::string run = test::test_path("fixtures/run_tree_lenet5/run20261122220000");
  const auto summary = report::build_summary(run);
  const std::string html = report::report_html(summary, run);
  for (const char* part : {"accuracy against wall time (time to train)", "target reached at", "Throughput over the run",
                           "Latency of one query at a time", "Utilisation per device", "Memory used per device"})
    EXPECT_NE(html.find(part), std::string::npos) << part;
  const Pixels p = screenshot(html, "lenet5_3_rounds_report", 6000);
  RecordProperty("chart_pixels", static_cast<int>(p.chart));
  EXPECT_GT(p.chart, 8000u) << "the curves should be drawn";
  EXPECT_GT(p.dark, 20000u) << "the tables and titles should be drawn";
  const Pixels c =
      screenshot(report::compare_html(summary, summary, run, run, report::compare_summaries(summary, summary), 5),
                 "lenet5_compare", 3000);
  RecordProperty("compare_chart_pixels", static_cast<int>(c.chart));
  EXPECT_GT(c.chart, 3000u) << "both runs' curves should be drawn";
}

}  // namespace
}  // namespace xpuperf
