// Built-in example kernels, in ugpu's text form: what `ugpu compile --kernel NAME` compiles, and
// what bench-codegen and the kernel tests start from.
#pragma once
#include <string>
#include <vector>

#include "ir/uop.h"

namespace ugpu::codegen {

struct ExampleKernel {
  std::string name, description, text;
  bool gpu_only = false;  // uses workgroup memory and barriers
};

const std::vector<ExampleKernel>& example_kernels();
const ExampleKernel& example_kernel(const std::string& name);  // throws Error listing the names

// Replaces every `{key}` in `text` by its value: kernel text templates with sizes filled in.
std::string fill(std::string text, const std::vector<std::pair<std::string, std::string>>& values);

}  // namespace ugpu::codegen
