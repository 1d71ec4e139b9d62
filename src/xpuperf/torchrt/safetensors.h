#pragma once
// The safetensors format (Hugging Face's): an 8-byte little-endian header length, a JSON header
// naming each tensor's dtype, shape and byte range, then the tensors' bytes, back to back. It is
// what PEFT's save_pretrained writes and what its from_pretrained reads first; unlike a pickle it
// holds no code, so PyTorch's torch.load(weights_only=True) questions do not arise.

#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

namespace xpuperf::torchrt {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

// The file's bytes for `tensors` (float32, float16, bfloat16, int64, int32, int8, uint8 or bool; any
// device: copied to the host), in their order, with {"format": "pt"} as its metadata.
std::string safetensors_bytes(const NamedTensors& tensors);

// The tensors of a safetensors file, on the CPU, in the order of their bytes. Throws
// std::runtime_error naming the file and what is wrong (too short, a header that is not JSON, an
// unknown dtype, byte ranges that do not tile the data).
NamedTensors read_safetensors(const std::string& path);

}  // namespace xpuperf::torchrt
