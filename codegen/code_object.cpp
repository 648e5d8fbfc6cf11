#include "codegen/code_object.h"

#include <cstring>
#include <sstream>

namespace ugpu::codegen {
namespace hwa = hw::amd;

AmdKernelInfo read_amd_kernel(const ElfImage& img, const std::string& name) {
  AmdKernelInfo k;
  k.name = name;
  auto it = img.symbols.find(name + ".kd");
  if (it == img.symbols.end()) throw ElfError("code object has no kernel descriptor '" + name + ".kd'");
  k.kd_offset = it->second;
  if (k.kd_offset > img.bytes.size() || img.bytes.size() - k.kd_offset < sizeof(hwa::KernelDescriptor))
    throw ElfError("kernel descriptor '" + name + ".kd' lies outside the image");
  std::memcpy(&k.kd, img.bytes.data() + k.kd_offset, sizeof k.kd);
  uint64_t entry = k.kd_offset + static_cast<uint64_t>(k.kd.kernel_code_entry_byte_offset);  // wraps for hostile offsets
  if (entry >= img.bytes.size() || entry % 256 != 0)
    throw ElfError("kernel descriptor '" + name + ".kd' points its entry outside the image or off a 256-byte boundary (offset " +
                   std::to_string(k.kd.kernel_code_entry_byte_offset) + ")");
  k.entry_offset = entry;
  if (auto f = img.symbols.find(name); f != img.symbols.end() && f->second != k.entry_offset)
    throw ElfError("kernel descriptor '" + name + ".kd' does not point at the kernel's code");
  uint16_t props = k.kd.kernel_code_properties;
  k.wave32 = hwa::code_props::kWavefrontSize32.get(props);
  // Every target codegen builds counts VGPRs in granules of 8 (wave32 on gfx10+, unified on gfx9).
  k.vgprs = static_cast<int>(hwa::rsrc1::kVgprGranules.get(k.kd.compute_pgm_rsrc1) + 1) * 8;
  k.user_sgpr_count = static_cast<int>(hwa::rsrc2::kUserSgprCount.get(k.kd.compute_pgm_rsrc2));
  const std::pair<hwa::Field, const char*> sgprs[] = {{hwa::code_props::kPrivateSegmentBuffer, "private_segment_buffer"},
                                                      {hwa::code_props::kDispatchPtr, "dispatch_ptr"},
                                                      {hwa::code_props::kQueuePtr, "queue_ptr"},
                                                      {hwa::code_props::kKernargSegmentPtr, "kernarg_segment_ptr"},
                                                      {hwa::code_props::kDispatchId, "dispatch_id"},
                                                      {hwa::code_props::kFlatScratchInit, "flat_scratch_init"},
                                                      {hwa::code_props::kPrivateSegmentSize, "private_segment_size"}};
  for (const auto& [f, n] : sgprs)
    if (f.get(props)) k.user_sgprs.push_back(n);
  return k;
}

std::string describe(const AmdKernelInfo& k) {
  std::ostringstream o;
  o << "kernel descriptor " << k.name << ".kd at image offset " << k.kd_offset << "\n"
    << "  entry offset " << k.entry_offset << ", " << (k.wave32 ? "wave32" : "wave64") << ", " << k.vgprs << " VGPRs\n"
    << "  LDS " << k.lds_bytes() << " B, scratch " << k.scratch_bytes() << " B/work-item, kernarg " << k.kernarg_bytes() << " B\n"
    << "  rsrc1 0x" << std::hex << k.kd.compute_pgm_rsrc1 << ", rsrc2 0x" << k.kd.compute_pgm_rsrc2 << ", rsrc3 0x" << k.kd.compute_pgm_rsrc3
    << std::dec << "\n  user SGPRs (" << k.user_sgpr_count << "):";
  for (const std::string& s : k.user_sgprs) o << " " << s;
  o << "\n";
  return o.str();
}

namespace {

struct NvRecord {
  uint8_t format, attr;
  uint16_t value;
  std::span<const uint8_t> payload;
};

std::vector<NvRecord> nv_records(const std::vector<uint8_t>& b, const std::string& section) {
  std::vector<NvRecord> out;
  size_t off = 0;
  while (off < b.size()) {
    if (b.size() - off < 4) throw ElfError("cubin: " + section + " ends inside a record header");
    NvRecord r{b[off], b[off + 1], static_cast<uint16_t>(b[off + 2] | b[off + 3] << 8), {}};
    off += 4;
    if (r.format < 1 || r.format > 4)
      throw ElfError("cubin: " + section + " has a record of unknown format " + std::to_string(r.format) + " at offset " + std::to_string(off - 4));
    if (r.format == static_cast<uint8_t>(hw::nv::NvInfoFormat::Sval)) {
      if (b.size() - off < r.value) throw ElfError("cubin: " + section + " has a record longer than the section");
      r.payload = std::span<const uint8_t>(b.data() + off, r.value);
      off += r.value;
    }
    out.push_back(r);
  }
  return out;
}

uint32_t u32(std::span<const uint8_t> p, size_t at) {
  return static_cast<uint32_t>(p[at] | p[at + 1] << 8 | p[at + 2] << 16 | static_cast<uint32_t>(p[at + 3]) << 24);
}

}  // namespace

CubinInfo read_cubin(std::span<const uint8_t> cubin, const std::string& name) {
  CubinInfo c;
  c.name = name;
  ElfImage img = link_elf(cubin, ElfMachine::CUDA, 0, "cubin");
  const ElfSection* text = img.section(".text." + name);
  if (!text) throw ElfError("cubin has no code for kernel '" + name + "' (no section .text." + name + ")");
  c.text_offset = text->offset;
  c.text_size = text->size;
  if (const ElfSection* sh = img.section(".nv.shared." + name)) c.shared_bytes = static_cast<uint32_t>(sh->size);
  if (const ElfSection* cb = img.section(".nv.constant0." + name)) c.cbank0_size = static_cast<uint32_t>(cb->size);
  bool have_params = false, have_regs = false;
  for (const std::string& sec : {std::string(".nv.info"), ".nv.info." + name}) {
    std::vector<uint8_t> bytes = elf_section_bytes(cubin, sec, "cubin");  // the records point into it
    for (const NvRecord& r : nv_records(bytes, sec)) {
      using A = hw::nv::NvInfoAttr;
      auto need = [&](size_t n) {
        if (r.payload.size() < n) throw ElfError("cubin: " + sec + ": attribute " + std::to_string(r.attr) + " is too short");
      };
      switch (static_cast<A>(r.attr)) {
        case A::ParamCbank:
          need(8);
          c.param_offset = r.payload[4] | r.payload[5] << 8;
          c.param_size = r.payload[6] | r.payload[7] << 8;
          have_params = true;
          break;
        case A::RegCount:
          need(8);
          c.registers = u32(r.payload, 4);
          have_regs = true;
          break;
        case A::MinStackSize:
          need(8);
          c.stack_bytes = std::max(c.stack_bytes, u32(r.payload, 4));
          break;
        default: break;
      }
    }
  }
  if (!have_params) throw ElfError("cubin: kernel '" + name + "' has no parameter bank record (EIATTR_PARAM_CBANK)");
  if (!have_regs) throw ElfError("cubin: kernel '" + name + "' has no register count (EIATTR_REGCOUNT)");
  if (c.cbank0_size && static_cast<uint64_t>(c.param_offset) + c.param_size > c.cbank0_size)
    throw ElfError("cubin: the parameters of '" + name + "' lie outside its constant bank");
  return c;
}

std::string describe(const CubinInfo& c) {
  std::ostringstream o;
  o << "cubin kernel " << c.name << ": code " << c.text_size << " B at image offset " << c.text_offset << "\n"
    << "  " << c.registers << " registers/thread, shared " << c.shared_bytes << " B, local (stack) " << c.stack_bytes << " B/thread\n"
    << "  parameters: " << c.param_size << " B at constant bank 0 offset 0x" << std::hex << c.param_offset << std::dec << " (bank size "
    << c.cbank0_size << " B)\n";
  return o.str();
}

}  // namespace ugpu::codegen
