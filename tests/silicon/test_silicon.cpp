// Real-GPU checks beyond the HCQ conformance suite (compiled into the same binary): the codegen
// kernel suite through each device's driver against the CPU device, and what the device reports.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "common/split.h"
#include "drivers/nv/nv_device.h"
#include "tests/hcq/device_suite.h"

using namespace ugpu;

namespace {
std::vector<std::string> silicon_devices() {
  std::vector<std::string> out = split_list(std::getenv("UGPU_TEST_DEVICES") ? std::getenv("UGPU_TEST_DEVICES") : "");
  std::erase(out, "cpu");
  return out;
}
}  // namespace

TEST_CASE("silicon: the codegen kernel suite through the driver matches the CPU device") {
  for (const std::string& name : silicon_devices()) {
    CAPTURE(name);
    auto dev = drivers::open_device(name);
    if (name == "nv" || name.rfind("nv:", 0) == 0) {
      nv::NvFacts f = nv::facts(*dev);
      MESSAGE("driver " << f.driver_version << " (branch " << f.abi_branch << "), compute class 0x" << std::hex << f.compute_class
                        << ", copy class 0x" << f.copy_class << ", QMD V0" << std::dec << f.qmd_major << ", " << dev->target());
    }
    test::kernel_suite_matches_cpu(*dev);
  }
}
