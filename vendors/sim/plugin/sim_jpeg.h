#pragma once
// The sim vendor's JPEG decoder for the image loader, registered by its init.

namespace xpuperf::sim {

// Registers the device decoder "sim" for sim devices; false in a build without the image loader.
bool register_jpeg_decoder();

}  // namespace xpuperf::sim
