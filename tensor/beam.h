// BEAM search on the device (docs/optimizer.md): with UGPU_BEAM=N (or set_beam_width(N)), a realize
// times each kernel's candidate actions (codegen/opt/search.cpp) on its device with its own inputs,
// keeps the N best per round, rejects candidates whose results differ from the kernel as written,
// and stores the winner in the compile cache ($UGPU_CACHE_DIR) keyed by kernel, target and device
// with its driver version: the next realize of that kernel, in any process, searches nothing.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "codegen/opt/opt.h"
#include "hcq/device.h"

namespace ugpu::tensor {

// 0: off (the heuristics choose). From UGPU_BEAM until set; a value that is not a width is an Error.
int beam_width();
void set_beam_width(int width);  // a negative width: read UGPU_BEAM again

struct BeamStats {
  size_t searches = 0, cache_hits = 0;  // kernels searched; kernels whose result came from the disk cache
};
BeamStats beam_stats();
void forget_beam_results();  // this process's results (the disk cache keeps its own), for tests

// One argument of a kernel launch as the search sees it: a buffer (read, written or both) or a
// variable's value.
struct KernelArg {
  std::string param;  // the compiled kernel's parameter name (candidates must take the same ones)
  const hcq::Buffer* buffer = nullptr;
  bool written = false;
  ir::DType dtype;  // a buffer's element type
  uint64_t value = 0;
};
// The result for `ast` on `dev`, when this process or the disk cache has one.
std::optional<std::vector<codegen::opt::Opt>> cached_beam_opts(hcq::Device& dev, const ir::UOp& ast);
// Searches, with the kernel's arguments in launch order (their buffers' contents are the inputs;
// written buffers are not modified), prints progress on stderr, and stores the result.
std::vector<codegen::opt::Opt> search_beam_opts(hcq::Device& dev, const ir::UOp& ast, const std::string& name, const std::vector<KernelArg>& args);

}  // namespace ugpu::tensor
