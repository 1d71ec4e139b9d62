#include "xpuperf/data/image_folder.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "xpuperf/core/files.h"
#include "xpuperf/data/data_error.h"

namespace xpuperf::data {

namespace fs = std::filesystem;

namespace {

bool is_image(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpeg" || ext == ".jpg" || ext == ".png" || ext == ".bmp";
}

}  // namespace

ImageFolder list_image_folder(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw DataError("image folder '" + dir + "' does not exist or is not a folder (expected <dir>/<class>/<image>)");
  ImageFolder folder;
  folder.dir = dir;
  auto list = [](const std::string& path) {
    try {
      return list_folder(path, false);
    } catch (const FileError& e) {
      throw DataError(e.what());
    }
  };
  for (const auto& entry : list(dir))
    if (entry.is_folder) folder.classes.push_back(fs::path(entry.path).filename().string());
  std::sort(folder.classes.begin(), folder.classes.end());
  if (folder.classes.empty())
    throw DataError("image folder '" + dir +
                    "' has no class folders (expected <dir>/<class>/<image>, as "
                    "ImageNet's validation set sorted into one folder per class)");
  for (std::size_t label = 0; label < folder.classes.size(); ++label) {
    std::vector<std::string> files;
    for (const auto& entry : list((fs::path(dir) / folder.classes[label]).string()))
      if (entry.is_file && is_image(entry.path)) files.push_back(entry.path);
    if (files.empty())
      throw DataError("class folder '" + (fs::path(dir) / folder.classes[label]).string() +
                      "' has no images (.jpeg, .jpg, .png, .bmp)");
    std::sort(files.begin(), files.end());
    for (auto& f : files) folder.images.push_back({std::move(f), static_cast<std::int64_t>(label)});
  }
  return folder;
}

}  // namespace xpuperf::data
