// The vendor runtime in one process: one vendor a process, and the simulated device's memory kept
// apart from the host's.

#include "xpuperf/torchrt/vendor_runtime.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "xpuperf/core/config.h"
#include "xpuperf/core/vendor_spec.h"
#include "xpuperf/torchrt/device.h"

namespace xpuperf::torchrt {
namespace {

const ActiveVendor& activate_sim() {
  return activate_vendor(load_vendor_spec(Repo(XPUPERF_SOURCE_DIR), "sim"), SIM_PLUGIN_DIR);
}

TEST(VendorRuntime, ASecondVendorInOneProcessIsRefused) {
  activate_vendor(parse_vendor_spec("device_type: cpu\n", "cpu", "vendors/cpu/vendor.yaml"));
  EXPECT_EQ(&activate_vendor(parse_vendor_spec("device_type: cpu\n", "cpu", "vendors/cpu/vendor.yaml")),
            active_vendor());
  try {
    activate_vendor(parse_vendor_spec("device_type: cuda\n", "nvidia", "vendors/nvidia/vendor.yaml"));
    FAIL() << "a second vendor was accepted";
  } catch (const VendorError& e) {
    EXPECT_NE(std::string(e.what()).find("already runs for vendor 'cpu'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("needs a process of its own"), std::string::npos) << e.what();
  }
}

TEST(VendorRuntime, TheSimDeviceComputesAsTheCpuAndNamesItself) {
  const ActiveVendor& vendor = activate_sim();
  EXPECT_EQ(vendor.plugin_name, "xpuperf-sim");
  const torch::Device device = choose_device("auto", 1);
  EXPECT_EQ(device_text(device.str()), "sim:1");
  EXPECT_EQ(choose_device("sim", 0), choose_device("auto", 0));
  const auto host = torch::randn({64, 32});
  const auto on_sim = host.to(device);
  EXPECT_EQ(on_sim.device(), device);
  EXPECT_TRUE(torch::equal(torch::matmul(on_sim, on_sim.t()).cpu(), torch::matmul(host, host.t())));
  EXPECT_FLOAT_EQ(on_sim.sum().item<float>(), host.sum().item<float>());
  synchronize(device);
  try {
    choose_device("auto", 99);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("LOCAL_RANK 99 has no sim device"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("XPUPERF_SIM_VISIBLE_DEVICES"), std::string::npos) << e.what();
  }
}

TEST(VendorRuntime, TheSimDeviceStopsHostCodeThatReadsItsMemory) {
  activate_sim();
  const auto on_sim = torch::ones({1024}).to(choose_device("auto", 0));
  EXPECT_DEATH(
      {
        volatile float x = on_sim.data_ptr<float>()[0];
        (void)x;
      },
      "host code read or wrote the simulated device's memory directly");
}

}  // namespace
}  // namespace xpuperf::torchrt
