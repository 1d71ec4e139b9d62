#include "xpuperf/torchrt/safetensors.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace xpuperf::torchrt {
namespace {

const std::vector<std::pair<torch::ScalarType, std::string>>& dtype_names() {
  static const std::vector<std::pair<torch::ScalarType, std::string>> names = {
      {torch::kFloat, "F32"}, {torch::kHalf, "F16"}, {torch::kBFloat16, "BF16"}, {torch::kLong, "I64"},
      {torch::kInt, "I32"},   {torch::kChar, "I8"},  {torch::kByte, "U8"},       {torch::kBool, "BOOL"}};
  return names;
}

std::string dtype_name(torch::ScalarType type) {
  for (const auto& [t, name] : dtype_names())
    if (t == type) return name;
  throw std::invalid_argument(std::string("safetensors: no name for tensors of type ") + c10::toString(type));
}

void append_le64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

std::string safetensors_bytes(const NamedTensors& tensors) {
  nlohmann::json header = nlohmann::json::object();
  header["__metadata__"] = {{"format", "pt"}};
  std::vector<torch::Tensor> host;
  std::uint64_t at = 0;
  for (const auto& [name, t] : tensors) {
    auto h = t.detach().to(torch::kCPU).contiguous();
    const std::uint64_t bytes = static_cast<std::uint64_t>(h.numel()) * h.element_size();
    header[name] = {
        {"dtype", dtype_name(h.scalar_type())}, {"shape", h.sizes().vec()}, {"data_offsets", {at, at + bytes}}};
    at += bytes;
    host.push_back(std::move(h));
  }
  auto text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data 8-byte aligned, as Hugging Face's writer pads
  std::string out;
  out.reserve(8 + text.size() + at);
  append_le64(out, text.size());
  out += text;
  for (const auto& h : host) out.append(static_cast<const char*>(h.data_ptr()), h.numel() * h.element_size());
  return out;
}

namespace {

// A tensor the header lists: its type, shape and bytes [begin, end) after the header.
struct SafetensorsEntry {
  std::string name;
  torch::ScalarType type;
  std::vector<std::int64_t> shape;
  std::uint64_t begin, end;
};

std::runtime_error not_safetensors(const std::string& path, const std::string& what) {
  return std::runtime_error(path + ": not a safetensors file: " + what);
}

// The header's tensors in the order of their bytes.
std::vector<SafetensorsEntry> header_entries(const nlohmann::json& header, const std::string& path) {
  std::vector<SafetensorsEntry> entries;
  for (const auto& [name, v] : header.items()) {
    if (name == "__metadata__") continue;
    try {
      SafetensorsEntry e{name, torch::kFloat, v.at("shape").get<std::vector<std::int64_t>>(),
                         v.at("data_offsets").at(0), v.at("data_offsets").at(1)};
      const auto dtype = v.at("dtype").get<std::string>();
      const auto known =
          std::find_if(dtype_names().begin(), dtype_names().end(), [&](const auto& n) { return n.second == dtype; });
      if (known == dtype_names().end())
        throw not_safetensors(path, name + " has dtype " + dtype + ", which xpuperf does not read");
      e.type = known->first;
      entries.push_back(std::move(e));
    } catch (const nlohmann::json::exception& err) {
      throw not_safetensors(path, name + ": " + err.what());
    }
  }
  std::sort(entries.begin(), entries.end(),
            [](const SafetensorsEntry& a, const SafetensorsEntry& b) { return a.begin < b.begin; });
  return entries;
}

// Each tensor's bytes follow the previous one's, match its shape, and end within the data, and the
// last ends with it.
void check_layout(const std::vector<SafetensorsEntry>& entries, std::uint64_t data_begin, std::uint64_t file_size,
                  const std::string& path) {
  const std::uint64_t data_size = file_size - data_begin;
  std::uint64_t at = 0;
  for (const auto& e : entries) {
    // Checked products: a shape of [2^32, 2^32] wrapped the count to 0 and passed.
    std::uint64_t elements = 1;
    bool too_large = false;
    for (const auto d : e.shape) {
      if (d < 0)
        throw not_safetensors(path,
                              e.name + "'s shape " + c10::str(c10::IntArrayRef(e.shape)) + " has a negative dimension");
      const auto n = static_cast<std::uint64_t>(d);
      if (n != 0 && elements > UINT64_MAX / n) too_large = true;
      elements *= n;
    }
    const std::uint64_t element_size = c10::elementSize(e.type);
    if (too_large || elements > UINT64_MAX / element_size)
      throw not_safetensors(
          path, e.name + "'s shape " + c10::str(c10::IntArrayRef(e.shape)) + " holds more bytes than any file can");
    const std::uint64_t size = elements * element_size;
    if (e.end > data_size)
      throw not_safetensors(path, "the file ends at byte " + std::to_string(file_size) + ", but " + e.name +
                                      "'s bytes run to byte " + std::to_string(data_begin + e.end) +
                                      " (a file cut short?)");
    if (e.begin != at || e.end < e.begin || e.end - e.begin != size)
      throw not_safetensors(path, e.name + "'s bytes [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                                      ") do not follow the previous tensor's or do not match its shape " +
                                      c10::str(c10::IntArrayRef(e.shape)));
    at = e.end;
  }
  if (at != data_size) throw not_safetensors(path, "bytes after the last tensor");
}

}  // namespace

NamedTensors read_safetensors(const std::string& path) {
  // The header first, then each tensor's bytes straight into its tensor: a shard of many
  // gigabytes is never held twice.
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw std::runtime_error(path + ": cannot be opened");
  const auto file_size = static_cast<std::uint64_t>(in.tellg());
  in.seekg(0);
  if (file_size < 8) throw not_safetensors(path, "shorter than its 8-byte header length");
  unsigned char length_bytes[8];
  in.read(reinterpret_cast<char*>(length_bytes), 8);
  std::uint64_t length = 0;
  for (int i = 0; i < 8; ++i) length |= static_cast<std::uint64_t>(length_bytes[i]) << (8 * i);
  if (length > file_size - 8) throw not_safetensors(path, "its header length runs past the end of the file");
  std::string text(length, '\0');
  in.read(text.data(), static_cast<std::streamsize>(length));
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw not_safetensors(path, std::string("the header is not JSON (") + e.what() + ")");
  }
  const std::uint64_t data_begin = 8 + length;
  const std::vector<SafetensorsEntry> entries = header_entries(header, path);
  check_layout(entries, data_begin, file_size, path);
  NamedTensors out;
  for (const auto& e : entries) {
    auto t = torch::empty(e.shape, torch::TensorOptions().dtype(e.type));
    in.seekg(static_cast<std::streamoff>(data_begin + e.begin));
    in.read(static_cast<char*>(t.data_ptr()), static_cast<std::streamsize>(e.end - e.begin));
    if (!in) throw std::runtime_error(path + ": " + e.name + "'s bytes cannot be read");
    out.emplace_back(e.name, std::move(t));
  }
  return out;
}

}  // namespace xpuperf::torchrt
