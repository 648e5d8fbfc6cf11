// The semantic tables, one per instruction family; find_op (inst.h) looks a mnemonic up in all of them.
#pragma once
#include <span>
#include <string>
#include <string_view>

#include "emu/amd/rdna3/inst.h"

namespace ugpu::emu::amd {

std::span<const OpDef> scalar_ops();  // SOP1, SOP2, SOPC, SOPK, SOPP, SMEM
std::span<const OpDef> vector_ops();  // VOP1, VOP2, VOPC, VOP3, VOP3SD, VOP3P (VOPD halves reuse them)
std::span<const OpDef> memory_ops();  // DS, FLAT, GLOBAL, SCRATCH

// The instructions of hw/amd's tables that have no semantics here, each with why: a mnemonic, or a pattern with one
// '*' standing for any run of characters. Everything the compiler can select for a wave32 compute kernel has an OpDef;
// a test keeps this table exact (every entry names only mnemonics without one).
struct NotModelled {
  std::string_view pattern;
  std::string_view reason;
};
std::span<const NotModelled> not_modelled();
bool matches(std::string_view pattern, std::string_view mnemonic);
// The reason `mnemonic` is not modelled, or "" when the table does not name it.
std::string_view not_modelled_reason(std::string_view mnemonic);

// Storage for mnemonics built at run time (compare families, address-space prefixes).
std::string_view keep_name(std::string s);

struct Wave;
// VOPD: both halves' sources are read before either writes.
void run_vopd(Wave& w, const Inst& x);
// The wave's MODE register (round and denormal modes, DX10 clamp, IEEE) from COMPUTE_PGM_RSRC1.
void init_mode(Wave& w, uint32_t rsrc1);

}  // namespace ugpu::emu::amd
