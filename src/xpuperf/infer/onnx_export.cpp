#include "xpuperf/infer/onnx_export.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <fstream>
#include <stdexcept>

#include "xpuperf/core/files.h"

namespace xpuperf::infer::onnx_export {

struct Graph::Impl {
  onnx::ModelProto model;
};

namespace {

void set_type(onnx::ValueInfoProto* v, const std::string& name, const std::vector<std::int64_t>& dims) {
  v->set_name(name);
  auto* tensor = v->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto_DataType_FLOAT);
  auto* shape = tensor->mutable_shape();
  shape->add_dim()->set_dim_param("N");
  for (const auto d : dims) shape->add_dim()->set_dim_value(d);
}

}  // namespace

Graph::Graph(const std::string& name, int opset) : impl_(std::make_unique<Impl>()) {
  auto& m = impl_->model;
  m.set_ir_version(onnx::IR_VERSION);
  m.set_producer_name("xpuperf");
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  m.mutable_graph()->set_name(name);
}

Graph::~Graph() = default;

void Graph::input(const std::string& name, const std::vector<std::int64_t>& dims_after_batch) {
  set_type(impl_->model.mutable_graph()->add_input(), name, dims_after_batch);
}

void Graph::output(const std::string& name, const std::vector<std::int64_t>& dims_after_batch) {
  set_type(impl_->model.mutable_graph()->add_output(), name, dims_after_batch);
}

void Graph::initializer(const std::string& name, const std::vector<std::int64_t>& dims,
                        const std::vector<float>& values) {
  auto* t = impl_->model.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto_DataType_FLOAT);
  for (const auto d : dims) t->add_dims(d);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float)));
}

void Graph::node(const std::string& op, const std::vector<std::string>& inputs, const std::string& output,
                 const std::vector<Attribute>& attributes) {
  auto* n = impl_->model.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_name(output + "_" + op);
  for (const auto& in : inputs) n->add_input(in);
  n->add_output(output);
  for (const auto& a : attributes) {
    auto* attr = n->add_attribute();
    attr->set_name(a.name);
    if (a.list) {
      attr->set_type(onnx::AttributeProto_AttributeType_INTS);
      for (const auto v : a.ints) attr->add_ints(v);
    } else {
      attr->set_type(onnx::AttributeProto_AttributeType_INT);
      attr->set_i(a.value);
    }
  }
}

void Graph::save(const std::string& path) const {
  try {
    onnx::checker::check_model(impl_->model);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("the exported ONNX model fails ONNX's checker: ") + e.what());
  }
  // Beside and renamed: a symbolic link at `path` is replaced, not written through.
  const std::string temporary = temporary_beside(path);
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out || !impl_->model.SerializeToOstream(&out) || !out.flush()) {
      std::remove(temporary.c_str());
      throw std::runtime_error("cannot write " + path);
    }
  }
  commit_file(temporary, path);
}

}  // namespace xpuperf::infer::onnx_export
