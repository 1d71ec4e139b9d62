#include "xpuperf/core/files.h"

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

namespace xpuperf {

std::string read_file_or_empty(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void remove_tree(const std::string& path) {
  ::nftw(
      path.c_str(), [](const char* p, const struct stat*, int, struct FTW*) { return std::remove(p); }, 16,
      FTW_DEPTH | FTW_PHYS);
}

std::string temporary_beside(const std::string& path) {
  std::string name = path + ".tmp.XXXXXX";
  const int fd = ::mkstemp(name.data());
  if (fd < 0) throw std::runtime_error(path + ": cannot be written (" + std::strerror(errno) + ")");
  ::fchmod(fd, 0644);  // mkstemp makes it 0600; an output is read by others as any file the tool writes
  ::close(fd);
  return name;
}

void commit_file(const std::string& temporary, const std::string& path) {
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    std::remove(temporary.c_str());
    throw std::runtime_error(path + ": cannot be written (" + ec.message() + ")");
  }
}

void write_text_file(const std::string& path, const std::string& text) {
  const std::string tmp = temporary_beside(path);
  std::ofstream out(tmp, std::ios::trunc);
  const int open_errno = errno;
  out << text;
  out.close();
  if (!out) {
    std::remove(tmp.c_str());
    throw std::runtime_error(path + ": cannot be written (" +
                             std::string(std::strerror(open_errno ? open_errno : EIO)) + ")");
  }
  commit_file(tmp, path);
}

void write_json_file(const std::string& path, const nlohmann::json& value) {
  write_text_file(path, value.dump(2) + "\n");
}

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string first_line_of(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string last_line_of(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last;
}

std::optional<nlohmann::json> read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  nlohmann::json value = nlohmann::json::parse(in, nullptr, false);
  if (value.is_discarded()) return std::nullopt;
  return value;
}

std::string local_time_stamp() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  std::ostringstream out;
  out << std::put_time(&tm, "%Y%m%d%H%M%S");
  return out.str();
}

std::string create_unique_folder(const std::string& parent, const std::string& name) {
  std::error_code ec;
  std::filesystem::create_directories(parent, ec);
  if (ec) throw FileError("cannot create " + parent + ": " + ec.message());
  for (int n = 1;; ++n) {
    const std::string path =
        (std::filesystem::path(parent) / (n == 1 ? name : name + "_" + std::to_string(n))).string();
    // mkdir, not create_directories: it fails where the folder exists, so two processes that race
    // for one name cannot both take it.
    if (::mkdir(path.c_str(), 0777) == 0) return path;
    if (errno != EEXIST) throw FileError("cannot create " + path + ": " + std::strerror(errno));
  }
}

namespace {

FolderEntry examine(const std::filesystem::directory_entry& entry) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(entry.path(), ec);
  if (ec && ec != std::errc::no_such_file_or_directory)  // ENOENT: a dangling link, neither file nor folder
    throw FileError(entry.path().string() + ": cannot be examined (" + ec.message() +
                    (ec == std::errc::too_many_symbolic_link_levels ? ": a symbolic link loop" : "") + ")");
  return {entry.path().string(), fs::is_regular_file(st), fs::is_directory(st)};
}

}  // namespace

std::vector<FolderEntry> list_folder(const std::string& dir, bool recursive) {
  namespace fs = std::filesystem;
  std::vector<FolderEntry> out;
  std::error_code ec;
  auto fail = [&](const std::string& where) { throw FileError(where + ": cannot be listed (" + ec.message() + ")"); };
  if (recursive) {
    fs::recursive_directory_iterator it(dir, ec), end;
    if (ec) fail(dir);
    while (it != end) {
      out.push_back(examine(*it));
      it.increment(ec);  // enters the entry when it is a folder: a failure is usually that folder's
      if (ec) fail(out.back().is_folder ? out.back().path : dir);
    }
  } else {
    fs::directory_iterator it(dir, ec), end;
    if (ec) fail(dir);
    while (it != end) {
      out.push_back(examine(*it));
      it.increment(ec);
      if (ec) fail(dir);
    }
  }
  return out;
}

}  // namespace xpuperf
