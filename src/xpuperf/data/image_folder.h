#pragma once
// An image classification folder as torchvision's ImageFolder reads it (the ImageNet validation
// set's standard layout): <dir>/<class>/<image>, classes in sorted order numbered from 0, images
// sorted within each class. Torch-free: it lists files; decoding is the case's job.

#include <cstdint>
#include <string>
#include <vector>

namespace xpuperf::data {

struct ImageFolder {
  std::string dir;
  std::vector<std::string> classes;  // sorted folder names (ImageNet: the WordNet ids)
  struct Image {
    std::string path;
    std::int64_t label;
  };
  std::vector<Image> images;  // by class, then by file name
};

// Lists `dir`. Images are files ending in .jpeg, .jpg, .png or .bmp (any case). Throws DataError
// naming the folder when it is missing, has no class folders, or a class folder has no images.
ImageFolder list_image_folder(const std::string& dir);

}  // namespace xpuperf::data
