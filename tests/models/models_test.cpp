// The model zoo against its reference, torchvision: parameter counts, FLOPs, and the outputs of
// the same weights on the same batch (when Debian's python3-torchvision is installed).

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "test_util.h"
#include "xpuperf/core/process.h"
#include "xpuperf/models/mobilenet_v2.h"
#include "xpuperf/models/resnet50.h"
#include "xpuperf/models/vit.h"
#include "xpuperf/train/weights.h"

namespace xpuperf::models {
namespace {

std::int64_t parameters(const torch::nn::Module& m) {
  std::int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

TEST(Models, ParameterCountsAreTorchvisions) {
  EXPECT_EQ(parameters(*ResNet50()), 25'557'032);
  EXPECT_EQ(parameters(*VisionTransformer(ViTConfig::b16())), 86'567'656);
  EXPECT_EQ(parameters(*MobileNetV2()), 3'504'872);
}

TEST(Models, ForwardFlopsFromTheLayerShapes) {
  EXPECT_EQ(ResNet50Impl::forward_macs(), 4'089'184'256.0);
  // torchvision lists 17.56 G multiply-adds for vit_b_16 and 0.30 G for mobilenet_v2.
  EXPECT_EQ(VisionTransformer()->forward_flops(), 2 * 17'563'828'224.0);
  EXPECT_NEAR(MobileNetV2()->forward_flops(224) / 2, 0.30e9, 0.01e9);
}

TEST(Models, ASmallViTRunsForwardAndBackward) {
  ViTConfig c;
  c.image_size = 32;
  c.patch_size = 8;
  c.layers = 2;
  c.hidden = 64;
  c.heads = 4;
  c.mlp = 128;
  c.classes = 10;
  VisionTransformer vit(c);
  const auto y = vit->forward(torch::randn({3, 3, 32, 32}));
  EXPECT_EQ(y.sizes(), (std::vector<std::int64_t>{3, 10}));
  y.sum().backward();
  EXPECT_TRUE(vit->encoder->pos_embedding.grad().defined());
}

// Runs tests/models/torchvision_reference.py; false when torchvision is not installed.
bool torchvision_reference(const std::string& model, const std::string& dir) {
  if (std::system("/usr/bin/python3 -c 'import torchvision' 2>/dev/null") != 0) return false;
  const std::string command = "/usr/bin/python3 " + std::string(XPUPERF_TEST_DIR) +
                              "/models/torchvision_reference.py " + model + " " + dir + " > " + dir + "/ref.log 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0) << test::read_file(dir + "/ref.log");
  return true;
}

torch::Tensor io_tensor(const std::string& path, const std::string& key) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const auto& item : torch::pickle_load(bytes).toGenericDict())
    if (item.key().toStringRef() == key) return item.value().toTensor();
  ADD_FAILURE() << path << " has no " << key;
  return {};
}

void expect_same_outputs(torch::nn::Module& model, const std::function<torch::Tensor(torch::Tensor)>& forward,
                         const std::string& name) {
  test::TempDir dir;
  if (!torchvision_reference(name, dir.path())) GTEST_SKIP() << "python3-torchvision is not installed";
  EXPECT_EQ(train::load_weights(model, dir.path() + "/" + name + ".weights.pt"), "PyTorch state_dict");
  model.eval();
  torch::NoGradGuard no_grad;
  const auto x = io_tensor(dir.path() + "/" + name + ".io.pt", "input");
  const auto expected = io_tensor(dir.path() + "/" + name + ".io.pt", "output");
  const auto y = forward(x);
  ASSERT_EQ(y.sizes(), expected.sizes());
  const double scale = expected.abs().max().item<double>();
  const double diff = (y - expected).abs().max().item<double>();
  ::testing::Test::RecordProperty("relative_diff_" + name, std::to_string(diff / scale));
  EXPECT_LT(diff / scale, 1e-4) << name << ": largest difference " << diff << " of outputs up to " << scale;
  EXPECT_TRUE(torch::equal(y.argmax(1), expected.argmax(1))) << name;
}

TEST(Models, ResNet50GivesTorchvisionsOutputs) {
  ResNet50 m;
  expect_same_outputs(
      *m, [&](torch::Tensor x) { return m->forward(x); }, "resnet50");
}

TEST(Models, ViTB16GivesTorchvisionsOutputs) {
  VisionTransformer m;
  expect_same_outputs(
      *m, [&](torch::Tensor x) { return m->forward(x); }, "vit_b_16");
}

TEST(Models, MobileNetV2GivesTorchvisionsOutputs) {
  MobileNetV2 m;
  expect_same_outputs(
      *m, [&](torch::Tensor x) { return m->forward(x); }, "mobilenet_v2");
}

}  // namespace
}  // namespace xpuperf::models
