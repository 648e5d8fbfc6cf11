// Running one kernel on a device from host memory: buffers sized from the kernel's own index
// bounds, deterministic inputs, copies in and out through the device, device time from timestamps.
// Used by `ugpu run` and `ugpu demo`.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hcq/device.h"
#include "ir/uop.h"

namespace ugpu::tools {

struct HostBuffer {
  int64_t slot = 0;
  size_t count() const { return bytes.size() / static_cast<size_t>(dtype.itemsize()); }
  ir::DType dtype;  // element type
  std::vector<uint8_t> bytes;
  bool written = false;  // the kernel stores to it
};

// The buffers a kernel uses, each as large as its largest index can reach (for the variables'
// declared bounds) unless `sizes` gives its element count, filled with deterministic values:
// floats in [-1, 1], integers in [0, 100).
std::vector<HostBuffer> make_buffers(const ir::UOp& kernel, uint64_t seed, const std::map<int64_t, int64_t>& sizes = {});

// Compiles, loads and runs `kernel` once with `vars` (by name; missing ones take their lower
// bound); copies the buffers in before and out after. Returns the kernel's device time in ms.
double run_kernel(hcq::Device& dev, const ir::UOp& kernel, const std::string& name, std::vector<HostBuffer>& bufs,
                  const std::map<std::string, int64_t>& vars = {});

double element(const HostBuffer& b, size_t i);  // element i as a double
uint64_t fnv1a(const std::vector<uint8_t>& bytes);

}  // namespace ugpu::tools
