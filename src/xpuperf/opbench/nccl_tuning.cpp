#include "xpuperf/opbench/nccl_tuning.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

namespace xpuperf::opbench {

std::map<std::string, int> nccl_choices(const std::string& text, const std::string& func) {
  const std::regex line(func + R"(: \d+ Bytes -> Algo (\w+) proto (\w+))");
  std::map<std::string, int> choices;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), line); it != std::sregex_iterator(); ++it)
    ++choices[(*it)[1].str() + "/" + (*it)[2].str()];
  return choices;
}

std::string nccl_choice_text(const std::map<std::string, int>& choices) {
  if (choices.size() == 1) return choices.begin()->first;
  std::vector<std::pair<std::string, int>> sorted(choices.begin(), choices.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string text;
  for (const auto& [choice, count] : sorted) text += (text.empty() ? "" : ", ") + choice + " ×" + std::to_string(count);
  return text;
}

NcclTuningLog::NcclTuningLog(std::string path) : path_(std::move(path)) {
  if (const char* user = std::getenv("NCCL_DEBUG"); user && *user) {
    why_not_ = "NCCL_DEBUG is set (" + std::string(user) + "): NCCL writes where the user asked";
    return;
  }
  std::ofstream(path_, std::ios::trunc).flush();  // NCCL appends; the file is this run's alone
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", "TUNING", 1);
  setenv("NCCL_DEBUG_FILE", path_.c_str(), 1);
}

std::string NcclTuningLog::read_new() {
  if (!why_not_.empty()) return "";
  std::ifstream in(path_, std::ios::binary);
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::size_t>(std::max<std::streamoff>(0, in.tellg()));
  if (size <= offset_) return "";
  in.seekg(static_cast<std::streamoff>(offset_));
  std::string text(size - offset_, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  // A line NCCL is still writing is left for the next read.
  const auto end = text.rfind('\n');
  if (end == std::string::npos) return "";
  text.resize(end + 1);
  offset_ += text.size();
  std::istringstream lines(text);
  for (std::string l; std::getline(lines, l);)
    if (l.find("NCCL WARN") != std::string::npos) unread_warnings_ += l + "\n";
  return text;
}

std::string NcclTuningLog::take(const std::string& func) {
  return nccl_choice_text(nccl_choices(read_new(), func));
}

std::vector<std::string> NcclTuningLog::take_warnings() {
  read_new();
  std::vector<std::string> out;
  std::istringstream lines(unread_warnings_);
  for (std::string l; std::getline(lines, l);) out.push_back(l);
  unread_warnings_.clear();
  return out;
}

}  // namespace xpuperf::opbench
