// The PTX executor's entry points (emu/nv/ptx/ptx.h). The parts: ptx_parse.cpp (text to pre-decoded
// instructions), ptx_alu.cpp (arithmetic, logic, comparisons, conversions), ptx_mem.cpp (memory and
// warp-level instructions), ptx_exec.cpp (warps, blocks, host threads, faults; run_ptx).
#include "emu/nv/ptx/ptx.h"

#include "emu/nv/ptx/ptx_ir.h"

namespace ugpu::emu::nv {

std::shared_ptr<const PtxModule> parse_ptx(std::string_view text) { return detail::parse_module(text); }

const std::vector<PtxEntry>& entries(const PtxModule& m) { return m.entries; }

const PtxData& data(const PtxModule& m) { return m.data; }

void write_ptx_data(const PtxModule& m, uint64_t address, uint8_t* image) {
  for (const detail::DataInit& d : m.data_init) {
    uint64_t v = d.value;
    if (d.var >= 0) {
      v += address + m.data.variables[static_cast<size_t>(d.var)].offset;
      if (d.byte >= 0) v = v >> (8 * d.byte) & 0xff;
    }
    for (unsigned i = 0; i < d.size; ++i) image[d.offset + i] = static_cast<uint8_t>(v >> (8 * i));  // little-endian
  }
}

}  // namespace ugpu::emu::nv
