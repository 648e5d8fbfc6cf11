// The silicon suite (tests/silicon): the HCQ conformance suite, the kernel suite and the tensor suite
// (tests/tensor) on real GPUs. It
// runs on the devices $UGPU_SILICON_DEVICES names (default: nv, amd:kfd, amd:pci, amd:usb) that open here, and exits 77
// (skipped, with the reason) when none does — the machine has no such GPU.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/split.h"
#include "drivers/devices.h"

int main(int argc, char** argv) {
  const char* want = std::getenv("UGPU_SILICON_DEVICES");
  std::string usable;
  for (const std::string& name : ugpu::split_list(want && *want ? want : "nv,amd:kfd,amd:pci,amd:usb")) {
    try {
      auto dev = ugpu::drivers::open_device(name);
      std::printf("silicon: %s: %s, %s\n", name.c_str(), dev->info().arch.c_str(), dev->info().interface.c_str());
      usable += (usable.empty() ? "" : ",") + name;
    } catch (const std::exception& e) { std::printf("skipped: no %s here: %s\n", name.c_str(), e.what()); }
  }
  if (usable.empty()) return 77;
  // The CPU joins as the last device: the cross-device graph test pairs the first with the last.
  setenv("UGPU_TEST_DEVICES", (usable + ",cpu").c_str(), 1);
  doctest::Context ctx(argc, argv);
  return ctx.run();
}
