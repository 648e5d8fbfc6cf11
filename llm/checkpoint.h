// Checkpoints: named tensors (a model's parameters, an optimizer's state) written to and read from
// safetensors files (llm/safetensors.h has the format), as PyTorch's safetensors.torch.save_file and
// load_file do, so the files open in either.
//
//   nn::Params all = nn::parameters({{"l1", &l1}, {"l2", &l2}});
//   for (auto& s : opt.state()) all.push_back({"optimizer." + s.first, s.second});
//   llm::save_safetensors("ckpt.safetensors", all);
//   ...
//   llm::load_safetensors("ckpt.safetensors", all);   // into the same tensors: training resumes
//
// Loading writes into the existing tensors (their buffers, so an optimizer or a Jit holding them
// sees the values) after checking every name, dtype and shape first: a missing, extra (strict) or
// mismatched tensor, or a malformed file, is an Error naming it, and nothing is written then.
// Saving writes a temporary file beside the target and renames it over it: an interrupted save
// leaves the previous checkpoint whole.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "tensor/nn.h"

namespace ugpu::llm {

using Metadata = std::vector<std::pair<std::string, std::string>>;

void save_safetensors(const std::string& path, const tensor::nn::Params& tensors, const Metadata& metadata = {});
// strict: the file must hold exactly these names (else only these are read; others are ignored).
void load_safetensors(const std::string& path, const tensor::nn::Params& into, bool strict = true);

// The safetensors name of a dtype ("F32", "BF16", "I64", "BOOL", ...), and back (Error for others).
std::string safetensors_dtype(tensor::DType dt);
tensor::DType dtype_of_safetensors(const std::string& name);

}  // namespace ugpu::llm
