#pragma once
// Helpers shared by the tests: fixture paths, temporary folders, golden files.

#include <string>

namespace xpuperf::test {

// tests/<relative>
std::string test_path(const std::string& relative);

// A fresh folder removed when the object goes away.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  // Writes `text` to path()/relative, creating folders; returns the full path.
  std::string write(const std::string& relative, const std::string& text) const;

 private:
  std::string path_;
};

std::string read_file(const std::string& path);

// Compares `actual` with tests/golden/<name>; with XPUPERF_UPDATE_GOLDEN=1 in the environment it
// rewrites the file instead. Returns an empty string when equal, else a description of the change.
std::string compare_golden(const std::string& name, const std::string& actual);

}  // namespace xpuperf::test
