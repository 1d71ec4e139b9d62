// The names NVIDIA's device, collectives and JPEG decoder have in configs (core/vendor_choices.h):
// torch-free and CUDA-free, so that every binary, with or without CUDA, checks a config written
// for NVIDIA's machines.

#include "xpuperf/core/vendor_choices.h"

namespace xpuperf::nvidia {
namespace {

const bool names_registered = register_vendor_choice("device", "cuda") &&
                              register_vendor_choice("dist_backend", "nccl") &&
                              // NVIDIA's decoder by its own name, as configs for it say (or: device).
                              register_vendor_choice("jpeg_decoder", "nvjpeg");

}  // namespace
}  // namespace xpuperf::nvidia
