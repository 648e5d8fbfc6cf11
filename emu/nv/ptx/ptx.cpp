// The PTX executor's entry points (emu/nv/ptx/ptx.h). The parts: ptx_parse.cpp (text to pre-decoded
// instructions), ptx_alu.cpp (arithmetic, logic, comparisons, conversions), ptx_mem.cpp (memory and
// warp-level instructions), ptx_exec.cpp (warps, blocks, host threads, faults; run_ptx).
#include "emu/nv/ptx/ptx.h"

#include "emu/nv/ptx/ptx_ir.h"

namespace ugpu::emu::nv {

std::shared_ptr<const PtxModule> parse_ptx(std::string_view text) { return detail::parse_module(text); }

const std::vector<PtxEntry>& entries(const PtxModule& m) { return m.entries; }

}  // namespace ugpu::emu::nv
