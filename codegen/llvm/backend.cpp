// The LLVM backend: the IR renderer, LLVM in process for x86 and AMDGPU objects and NVIDIA PTX, and
// CUDA's ptxas (when installed) for cubins.
#include "codegen/backend.h"

#include "codegen/compiler.h"
#include "codegen/llvm/llvm.h"
#include "codegen/llvm/ptxas.h"
#include "codegen/llvm/render.h"

namespace ugpu::codegen {
namespace {

std::optional<std::string> ptxas_for(const Target& t, const CompileOptions& o) {
  return t.arch == Arch::NVPTX && o.cubin ? find_ptxas() : std::nullopt;
}

class LlvmBackend final : public Backend {
 public:
  const char* name() const override { return "llvm"; }
  std::string render(const LoweredKernel& k, const Target& t) const override { return render_llvm_ir(k, t); }
  std::string toolchain_key(const Target& t, const CompileOptions& o) const override {
    std::optional<std::string> ptxas = ptxas_for(t, o);
    return target_cpu(t) + '\0' + target_features(t) + '\0' + llvm_version() + '\0' + std::to_string(o.opt_level) + '\0' +
           (ptxas ? ptxas_version(*ptxas) : std::string("no-ptxas"));
  }
  Output compile(const std::string& source, const Target& t, const CompileOptions& o) const override {
    Output out;
    LlvmOutput llvm = compile_llvm_ir(source, t, {o.opt_level, false});
    if (t.arch != Arch::NVPTX) {
      out.binary = std::move(llvm.object);
      return out;
    }
    out.ptx = std::move(llvm.assembly);
    if (std::optional<std::string> ptxas = ptxas_for(t, o)) out.binary = run_ptxas(*ptxas, out.ptx, std::string(t.name));
    else if (o.cubin) out.note = "ptxas not found (set UGPU_PTXAS, put it on PATH, or install the CUDA toolkit in /usr/local/cuda): stopped at PTX";
    return out;
  }
  std::string disassemble(const Target& t, const std::vector<uint8_t>& binary, const std::string& ptx) const override {
    return t.arch == Arch::NVPTX ? ptx : disassemble_object(t, binary);
  }
};

}  // namespace

const Backend& backend_for(const Target& t) {
  static const LlvmBackend llvm;
  return t.arch == Arch::IR3 ? ir3_backend() : llvm;
}

}  // namespace ugpu::codegen
