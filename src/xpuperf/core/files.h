#pragma once
// Small file and clock helpers shared by the node agent, the controller and the monitors.

#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace xpuperf {

// The whole file, or "" when it cannot be read (for /proc and /sys files that may be absent).
std::string read_file_or_empty(const std::string& path);
// The first line of a file, and the last line that is not empty ("" when none): what a tool
// printed last is usually why it failed.
std::string first_line_of(const std::string& path);
std::string last_line_of(const std::string& path);
// Writes a file through a temporary file and a rename, so a reader never sees half of it and a
// symbolic link at `path` is replaced, never written through (in a shared results folder a link
// could point at any file the benchmark's user may write); throws std::runtime_error naming the
// file and the system's reason when it cannot.
void write_text_file(const std::string& path, const std::string& text);
void write_json_file(const std::string& path, const nlohmann::json& value);
// For writers that need a file name (a LibTorch archive, a protobuf stream): a new, empty file
// beside `path` that did not exist before (mkstemp: never an existing file or link), then
// commit_file renames it over `path` (and removes it when it cannot). Both throw
// std::runtime_error naming `path`.
std::string temporary_beside(const std::string& path);
void commit_file(const std::string& temporary, const std::string& path);
// A JSON file's value; nothing when it cannot be read or is not JSON.
std::optional<nlohmann::json> read_json_file(const std::string& path);
// Removes a file or a folder with everything in it; no error when it is not there. Use it, not
// std::filesystem::remove_all: PyTorch 2.x's libtorch.so exports its own copy of remove_all,
// which a program linking LibTorch binds to and which jumps to address 0.
void remove_tree(const std::string& path);
// A folder that cannot be listed, or an entry in it that cannot be examined; the message names it.
class FileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct FolderEntry {
  std::string path;
  bool is_file = false, is_folder = false;  // what it is, symbolic links followed
};

// The entries of a folder (and of every folder below it when `recursive`; links to folders are
// not descended into, so a cycle of links ends), in the order the system lists them. Throws
// FileError naming the path when a folder cannot be read (no rights, not a folder) or an entry is a
// symbolic link loop or cannot be examined; a dangling link is neither file nor folder.
std::vector<FolderEntry> list_folder(const std::string& dir, bool recursive);

// Seconds since the Unix epoch (wall clock), for timestamps compared across processes.
double unix_seconds();
// Seconds on the monotonic clock, for durations within one process.
double steady_seconds();
// The local time as YYYYmmddHHMMSS: what run and sweep folders are named by.
std::string local_time_stamp();
// Makes a new folder `name` in `parent` (made too where missing) and gives its path; where one of
// that name is there already (two runs started in the same second), `name`_2, `name`_3, ...: a run
// never writes into another's folder. FileError when it cannot.
std::string create_unique_folder(const std::string& parent, const std::string& name);

}  // namespace xpuperf
