#include "xpuperf/core/vendor_spec.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "xpuperf/core/config.h"

namespace xpuperf {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_vendor_spec(text, "acme", "vendors/acme/vendor.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(VendorSpec, ReadsEveryKey) {
  const auto spec = parse_vendor_spec(
      "device_type: privateuse1\ndevice_name: npu\nvisible_devices_env: ASCEND_RT_VISIBLE_DEVICES\n"
      "container_device_options: [--device, /dev/davinci0]\ncollective_backend: hccl\nmonitor: command\n"
      "plugin: xpuperf_vendor_acme\n",
      "acme", "vendors/acme/vendor.yaml");
  EXPECT_EQ(spec.device_type, "privateuse1");
  EXPECT_EQ(spec.device_name, "npu");
  EXPECT_EQ(spec.visible_devices_env, "ASCEND_RT_VISIBLE_DEVICES");
  EXPECT_EQ(spec.container_device_options, (std::vector<std::string>{"--device", "/dev/davinci0"}));
  EXPECT_EQ(spec.collective_backend, "hccl");
  EXPECT_EQ(spec.monitor, "command");
  EXPECT_EQ(spec.plugin, "xpuperf_vendor_acme");
  EXPECT_TRUE(spec.declared);
}

TEST(VendorSpec, CudaAndCpuDefaultTheirBackendAndName) {
  const auto cuda = parse_vendor_spec("device_type: cuda\n", "nv", "f");
  EXPECT_EQ(cuda.device_name, "cuda");
  EXPECT_EQ(cuda.collective_backend, "nccl");
  EXPECT_FALSE(cuda.has_plugin());
  const auto cpu = parse_vendor_spec("device_type: cpu\n", "c", "f");
  EXPECT_EQ(cpu.collective_backend, "gloo");
  EXPECT_EQ(cpu.monitor, "host");
}

TEST(VendorSpec, RefusesWhatCannotWork) {
  EXPECT_NE(error_of("device_type: npu\n").find("vendors/acme/vendor.yaml:1: unknown device_type 'npu'"),
            std::string::npos);
  EXPECT_NE(error_of("device_name: npu\n").find("'device_type' is missing"), std::string::npos);
  EXPECT_NE(error_of("device_type: privateuse1\nplugin: x\n").find("'device_name' is missing"), std::string::npos);
  EXPECT_NE(error_of("device_type: privateuse1\ndevice_name: npu\n").find("needs 'plugin'"), std::string::npos);
  EXPECT_NE(error_of("device_type: privateuse1\ndevice_name: cuda\nplugin: x\n").find("other than cpu, cuda"),
            std::string::npos);
  EXPECT_NE(error_of("device_type: privateuse1\ndevice_name: Npu0!\nplugin: x\n").find("lower-case name"),
            std::string::npos);
  EXPECT_NE(error_of("device_type: cuda\ndevice_name: gpu\n").find("is called 'cuda'"), std::string::npos);
  EXPECT_NE(error_of("device_type: cpu\ncollective_backend: hccl\n").find("not one LibTorch brings"),
            std::string::npos);
  EXPECT_NE(error_of("device_type: cpu\nmonitor: smi\n").find("unknown monitor 'smi'"), std::string::npos);
  EXPECT_NE(
      error_of("device_type: cpu\ndevcie_name: x\n").find("vendors/acme/vendor.yaml:2: unknown key 'devcie_name'"),
      std::string::npos);
  EXPECT_NE(error_of("device_type: cpu\nmonitor: library\n").find("needs 'monitor_library'"), std::string::npos);
  EXPECT_NE(error_of("device_type: cpu\nmonitor_library: x\n").find("read only with monitor: library"),
            std::string::npos);
  EXPECT_NE(error_of("device_type: [cpu]\n").find("must be a single value"), std::string::npos);
  EXPECT_NE(error_of("device_type: cpu\nplugin: ../x y\n").find("must be builtin, a library name"), std::string::npos);
}

TEST(VendorSpec, AFolderWithConfigsOnlyIsUndeclared) {
  test::TempDir dir;
  dir.write("vendors/acme/training/x/config/config_X1x1x1.yaml", "vendor: acme\n");
  const auto spec = load_vendor_spec(Repo(dir.path()), "acme");
  EXPECT_FALSE(spec.declared);
  try {
    load_vendor_spec(Repo(dir.path()), "nosuch");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown vendor 'nosuch'"), std::string::npos) << e.what();
  }
}

TEST(VendorSpec, TheShippedVendorsAreValid) {
  const Repo repo(XPUPERF_SOURCE_DIR);
  for (const auto& vendor : repo.vendors()) {
    SCOPED_TRACE(vendor);
    const auto spec = load_vendor_spec(repo, vendor);
    EXPECT_TRUE(spec.declared) << "vendors/" << vendor << "/vendor.yaml is missing";
  }
}

}  // namespace
}  // namespace xpuperf
