#include "test_util.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace xpuperf::test {
namespace fs = std::filesystem;

std::string test_path(const std::string& relative) {
  return std::string(XPUPERF_TEST_DIR) + "/" + relative;
}

TempDir::TempDir() {
  std::string pattern = (fs::temp_directory_path() / "xpuperf-test-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string TempDir::write(const std::string& relative, const std::string& text) const {
  const fs::path file = fs::path(path_) / relative;
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text;
  return file.string();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string compare_golden(const std::string& name, const std::string& actual) {
  const std::string path = test_path("golden/" + name);
  const char* update = std::getenv("XPUPERF_UPDATE_GOLDEN");
  if (update && std::string(update) == "1") {
    std::ofstream(path) << actual;
    return "";
  }
  if (!fs::exists(path)) return "golden file " + path + " is missing (run with XPUPERF_UPDATE_GOLDEN=1 to create it)";
  const std::string expected = read_file(path);
  if (expected == actual) return "";
  // Point at the first differing line, which is what a reader needs.
  std::istringstream e(expected), a(actual);
  std::string le, la;
  for (int line = 1;; ++line) {
    const bool more_e = static_cast<bool>(std::getline(e, le));
    const bool more_a = static_cast<bool>(std::getline(a, la));
    if (!more_e && !more_a) break;
    if (le != la || more_e != more_a)
      return path + ":" + std::to_string(line) + " differs\n  expected: " + (more_e ? le : "<end>") +
             "\n  actual:   " + (more_a ? la : "<end>") + "\n(XPUPERF_UPDATE_GOLDEN=1 rewrites golden files)";
  }
  return path + " differs (line endings?)";
}

}  // namespace xpuperf::test
