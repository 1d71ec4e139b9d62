#include "xpuperf/report/summary_writers.h"

#include "xpuperf/core/files.h"
#include "xpuperf/report/html.h"
#include "xpuperf/report/serving_report.h"
#include "xpuperf/report/summary.h"
#include "xpuperf/report/summary_csv.h"

namespace xpuperf::report {
namespace {

class JsonWriter : public SummaryWriter {
 public:
  const char* file_name() const override { return "summary.json"; }
  std::string write(const Summary& s) const override { return s.to_json().dump(2) + "\n"; }
};

class MarkdownWriter : public SummaryWriter {
 public:
  const char* file_name() const override { return "summary.md"; }
  std::string write(const Summary& s) const override { return summary_markdown(s); }
};

class CsvWriter : public SummaryWriter {
 public:
  const char* file_name() const override { return "summary.csv"; }
  std::string write(const Summary& s) const override { return summary_csv(s); }
};

class OperatorsCsvWriter : public SummaryWriter {
 public:
  const char* file_name() const override { return "operators.csv"; }
  std::string write(const Summary& s) const override { return operators_csv(s); }
  bool applies(const Summary& s) const override {
    for (const auto& c : s.cases)
      if (c.is(CaseFamilyKind::Operation)) return true;
    return false;
  }
};

class ServingSweepCsvWriter : public SummaryWriter {
 public:
  const char* file_name() const override { return "serving_sweep.csv"; }
  std::string write(const Summary& s) const override { return serving_sweep_csv(s); }
  bool applies(const Summary& s) const override { return has_serving_sweep(s); }
};

class HtmlWriter : public SummaryWriter {
 public:
  explicit HtmlWriter(std::string run_dir) : run_dir_(std::move(run_dir)) {}
  const char* file_name() const override { return "report.html"; }
  std::string write(const Summary& s) const override { return report_html(s, run_dir_); }

 private:
  std::string run_dir_;
};

// Writes every file but `skip` and returns the Markdown.
std::string write_files(const std::string& run_dir, const Summary& summary, const std::string& skip = "") {
  std::string markdown;
  for (const auto& writer : summary_writers(run_dir)) {
    if (writer->file_name() == skip || !writer->applies(summary)) continue;
    const std::string text = writer->write(summary);
    write_text_file(run_dir + "/" + writer->file_name(), text);
    if (std::string(writer->file_name()) == "summary.md") markdown = text;
  }
  return markdown;
}

}  // namespace

std::vector<std::unique_ptr<SummaryWriter>> summary_writers(const std::string& run_dir) {
  std::vector<std::unique_ptr<SummaryWriter>> writers;
  writers.push_back(std::make_unique<JsonWriter>());
  writers.push_back(std::make_unique<MarkdownWriter>());
  writers.push_back(std::make_unique<CsvWriter>());
  writers.push_back(std::make_unique<OperatorsCsvWriter>());
  writers.push_back(std::make_unique<ServingSweepCsvWriter>());
  writers.push_back(std::make_unique<HtmlWriter>(run_dir));
  return writers;
}

std::string write_summary(const std::string& run_dir, Summary* summary_out) {
  const Summary summary = build_summary(run_dir);
  if (summary_out) *summary_out = summary;
  return write_files(run_dir, summary);
}

std::string rewrite_from_stored_summary(const std::string& run_dir) {
  return write_files(run_dir, read_summary_file(run_dir), "summary.json");
}

}  // namespace xpuperf::report
