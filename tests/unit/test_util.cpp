#include "test_util.h"

#include <ftw.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "xpuperf/core/files.h"

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
  remove_tree(path_);  // not std::filesystem::remove_all: core/files.h says why
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

// A crashing test prints where it crashed (the GPU machine has no debugger).
#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

namespace {
void print_backtrace(int sig) {
  void* frames[64];
  const int n = backtrace(frames, 64);
  const char header[] = "\n*** test crashed; backtrace:\n";
  (void)!write(2, header, sizeof header - 1);
  backtrace_symbols_fd(frames, n, 2);
  signal(sig, SIG_DFL);
  raise(sig);
}
const bool backtrace_installed = [] {
  signal(SIGSEGV, print_backtrace);
  signal(SIGABRT, print_backtrace);
  return true;
}();
}  // namespace
