#pragma once
// A small ONNX writer for the project's own C++ models: a case names its layers as ONNX nodes
// (Conv, Relu, MaxPool, Flatten, Gemm, ...) with its weights as initializers; save() runs ONNX's
// checker and writes the file. Built when Debian's libonnx-dev is found (XPUPERF_HAVE_ONNX).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace xpuperf::infer::onnx_export {

struct Attribute {
  std::string name;
  std::vector<std::int64_t> ints;  // a list attribute (kernel_shape, pads, strides)
  std::int64_t value = 0;          // an int attribute, when `ints` is empty and `list` is false
  bool list = true;

  static Attribute ints_of(std::string name, std::vector<std::int64_t> v) {
    return {std::move(name), std::move(v), 0, true};
  }
  static Attribute int_of(std::string name, std::int64_t v) { return {std::move(name), {}, v, false}; }
};

class Graph {
 public:
  explicit Graph(const std::string& name, int opset = 13);
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // A float32 graph input or output whose first dimension is the batch ("N").
  void input(const std::string& name, const std::vector<std::int64_t>& dims_after_batch);
  void output(const std::string& name, const std::vector<std::int64_t>& dims_after_batch);
  // A float32 weight.
  void initializer(const std::string& name, const std::vector<std::int64_t>& dims, const std::vector<float>& values);
  void node(const std::string& op, const std::vector<std::string>& inputs, const std::string& output,
            const std::vector<Attribute>& attributes = {});
  // Checks the model with ONNX's checker and writes it; throws std::runtime_error with the
  // checker's message or the file error.
  void save(const std::string& path) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xpuperf::infer::onnx_export
