// Running one kernel on a device from host memory: buffers sized from the kernel's own index
// bounds, deterministic inputs, copies in and out through the device, device time from timestamps.
// Used by `ugpu run` and `ugpu demo`.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "codegen/builtin_kernels.h"
#include "codegen/compiler.h"
#include "hcq/device.h"
#include "ir/uop.h"

namespace ugpu::tools {

using HostBuffer = codegen::HostData;  // a buffer by slot: dtype, bytes, whether the kernel writes it

// The buffers a kernel uses, each as large as its largest index can reach (for the variables'
// declared bounds) unless `sizes` gives its element count, filled with deterministic values:
// floats in [-1, 1], integers in [0, 100), bools 0 or 1. Throws Error naming the index for one that
// can be negative (ungated), or that cannot size its buffer without --size; and for a `sizes` slot
// the kernel does not have, or a buffer of no value type (void*).
std::vector<HostBuffer> make_buffers(const ir::UOp& kernel, uint64_t seed, const std::map<int64_t, int64_t>& sizes = {});

// Compiles, loads and runs `kernel` once with `vars` (by name; missing ones take their lower
// bound; a name the kernel has no variable for is an Error); copies the buffers in before and out
// after. Returns the kernel's device time in ms.
// `opts`: how the optimizer shapes the kernel first (compile options' heuristic and opts).
double run_kernel(hcq::Device& dev, const ir::UOp& kernel, const std::string& name, std::vector<HostBuffer>& bufs,
                  const std::map<std::string, int64_t>& vars = {}, const codegen::CompileOptions& opts = {});

uint64_t fnv1a(const std::vector<uint8_t>& bytes);

}  // namespace ugpu::tools
