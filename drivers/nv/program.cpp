// Programs: a cubin laid out at its GPU address (relocations applied), its launch facts from .nv.info
// (parameter offset in constant bank 0, registers, shared and local sizes) turned into the QMD fields
// every launch shares. On the emulated GPU the image is the PTX text itself (emu/nv runs PTX), with
// the same constant-bank layout.
#include <cstring>
#include <sstream>

#include "codegen/elf.h"
#include "drivers/nv/internal.h"

namespace ugpu::nv {

namespace {

constexpr uint32_t kReservedShared = 0x400;  // shared memory the driver reserves in front of a CTA's own (sm_80+)
constexpr uint32_t kAbiLocal = 0x240;        // local memory every SASS kernel may use beyond its stack

// Bytes of .local variables a PTX entry declares (`.local .align 8 .b8 __local_depot0[32];`).
uint32_t ptx_local_bytes(const std::string& ptx) {
  uint32_t total = 0;
  std::istringstream in(ptx);
  for (std::string line; std::getline(in, line);) {
    size_t at = line.find(".local");
    if (at == std::string::npos || line.find("ld.local") != std::string::npos || line.find("st.local") != std::string::npos) continue;
    size_t open = line.find('[', at), close = line.find(']', at);
    if (open != std::string::npos && close > open) total += static_cast<uint32_t>(std::strtoul(line.c_str() + open + 1, nullptr, 10));
  }
  return total;
}

}  // namespace

NvProgram::NvProgram(NvDevice& dev, std::shared_ptr<const codegen::CompiledKernel> k) : kernel(std::move(k)) {
  name = kernel->kernel.name;
  const std::string what = "kernel " + name;
  const ArchFacts& arch = dev.arch();
  param_base = arch.param_base;
  uint32_t static_shared = static_cast<uint32_t>(kernel->kernel.shared_bytes);
  uint64_t entry_offset = 0, cbank0_min = 0;
  std::vector<uint8_t> image;
  std::vector<std::pair<int, std::pair<uint64_t, uint64_t>>> banks;  // bank -> (image offset, size)
  if (dev.emulator_runs_ptx()) {
    if (kernel->ptx.empty()) throw Error(what + ": no PTX to load");
    image.assign(kernel->ptx.begin(), kernel->ptx.end());
    image.push_back(0);
    registers = 32;
    local_bytes = ptx_local_bytes(kernel->ptx);
  } else {
    if (kernel->binary.empty() || !kernel->cubin)
      throw Error(what + ": no cubin: " + (kernel->note.empty() ? std::string("ptxas did not run") : kernel->note) +
                  " (a real NVIDIA GPU runs SASS, which needs CUDA's ptxas: install it or set UGPU_PTXAS)");
    const codegen::CubinInfo& c = *kernel->cubin;
    size_t size = codegen::link_elf(kernel->binary, codegen::ElfMachine::CUDA, 0, what).bytes.size();
    code = dev.alloc(size + 4096);  // slack: the instruction prefetcher reads past the end
    codegen::ElfImage img = codegen::link_elf(kernel->binary, codegen::ElfMachine::CUDA, code.va, what);
    image = img.bytes;
    entry_offset = c.text_offset;
    if (c.param_offset != arch.param_base)
      throw Error(what + ": the cubin puts its parameters at c[0x0][" + std::to_string(c.param_offset) + "], not at " + arch.arch + "'s " +
                  std::to_string(arch.param_base));
    registers = c.registers;
    static_shared = c.shared_bytes;
    local_bytes = (c.stack_bytes + kAbiLocal + 31) / 32 * 32;
    cbank0_min = c.cbank0_size;
    for (const codegen::ElfSection& s : img.sections) {
      // .nv.constantN.<kernel>: bank N (bank 0 is the parameters, rebuilt per launch).
      if (!s.allocated || s.name.rfind(".nv.constant", 0) != 0 || s.name.size() < 13) continue;
      int bank = s.name[12] - '0';
      if (bank >= 1 && bank <= 7) banks.push_back({bank, {s.offset, s.size}});
    }
  }
  if (!code.owner) code = dev.alloc(image.size() + 4096);
  std::memcpy(code.host, image.data(), image.size());
  dev.invalidate_code();

  // Arguments: buffers are 8-byte pointers, variables their own size, each naturally aligned, after
  // the driver's words of constant bank 0.
  uint32_t at = 0;
  for (const codegen::Param& param : kernel->kernel.params) {
    const bool buffer = param.kind == codegen::Param::Kind::Buffer;
    uint32_t n = buffer ? 8 : static_cast<uint32_t>(param.dtype.itemsize());
    at = (at + n - 1) / n * n;
    arg_layout.push_back({param_base + at, n});
    at += n;
    (buffer ? buffers : vars) += 1;
  }
  cbank0_bytes = static_cast<uint32_t>(std::max<uint64_t>(param_base + at, cbank0_min) + 15) / 16 * 16;
  kernarg_bytes = cbank0_bytes + 255 + dev.qmd_layout().bytes;  // the QMD follows, 256-byte aligned
  if (vars == 0) fixed_dims = codegen::launch_dims(kernel->kernel, {});

  uint32_t shared = (kReservedShared + static_shared + 127) / 128 * 128;
  uint32_t config_kib = 0;
  for (uint32_t kib : {32u, 64u, 100u, 132u, 164u, 196u, 228u})
    if (kib <= arch.max_shared_kib && kib * 1024 >= shared) {
      config_kib = kib;
      break;
    }
  if (!config_kib)
    throw Error(what + ": " + std::to_string(shared) + " bytes of shared memory; " + arch.arch + " has " + std::to_string(arch.max_shared_kib) +
                " KiB");
  launch.program_address = code.va + entry_offset;
  launch.program_prefetch_bytes = static_cast<uint32_t>(std::min<uint64_t>(image.size() - entry_offset, 0x1ffu << 8));
  launch.registers = registers;
  launch.barriers = 1;
  launch.shared_bytes = shared;
  launch.sm_shared_config = config_kib / 4 + 1;
  launch.sm_shared_config_max = arch.max_shared_kib / 4 + 1;
  launch.local_high_bytes = local_bytes;
  launch.sass_version = dev.sass_version();
  for (const auto& [bank, where] : banks) launch.cbanks[bank] = {true, code.va + where.first, static_cast<uint32_t>(where.second)};
  qmd_template.assign(dev.qmd_layout().bytes / 4, 0);
  hw::nv::encode_qmd(dev.qmd_layout(), launch, qmd_template);
}

}  // namespace ugpu::nv
