// The GPU page-table format of AMD's VM (VMID 0 on the AM path), one table per generation: the driver
// (drivers/amd/am/memory.cpp) writes entries with it, the emulated card's GMC (emu/amd/am/) walks
// them with it, and `ugpu decode` prints them. Facts from Linux's amdgpu_vm.h and soc21_enum.h
// (linux-source-6.12): four levels of 512 eight-byte entries (PDB2, PDB1, PDB0, PTB) covering 48 bits,
// 4 KiB per PTB entry; a directory entry may be a leaf (PDE_PTE) for 1 GiB or 2 MiB pages.
#pragma once
#include <cstdint>
#include <string>

namespace ugpu::hw::amd {

struct PteFormat {
  const char* name;
  uint64_t valid, system, snooped, executable, readable, writeable;
  int frag_shift;               // FRAGMENT: log2(contiguous bytes) - 12, 5 bits
  uint64_t address_mask;        // physical address bits (4 KiB aligned)
  int mtype_shift, mtype_bits;  // memory type
  uint64_t pde_is_pte;          // a directory entry that is itself a leaf
  uint32_t mtype_uc, mtype_nc;  // uncached (signals, mailboxes), non-coherent cached (VRAM)
};

// gfx10 and gfx11 (AMDGPU_PTE_* and AMDGPU_PTE_MTYPE_NV10, MTYPE_* of soc21_enum.h).
inline constexpr PteFormat kPteGfx11{"gfx11", 1ull << 0, 1ull << 1,  1ull << 2, 1ull << 4, 1ull << 5, 1ull << 6, 7, 0x0000FFFFFFFFF000ull,
                                     48,      3,         1ull << 54, 3,         0};

inline constexpr int kPageTableLevels = 4;
inline constexpr int kLevelShift[kPageTableLevels] = {39, 30, 21, 12};  // PDB2, PDB1, PDB0, PTB
inline constexpr uint64_t kEntriesPerTable = 512;
inline constexpr uint64_t kVaBits = 48;

struct Pte {
  bool valid = false, system = false, snooped = false, executable = false, readable = false, writeable = false, leaf_pde = false;
  uint32_t fragment = 0, mtype = 0;
  uint64_t address = 0;
};
constexpr Pte decode_pte(const PteFormat& f, uint64_t e) {
  Pte p;
  p.valid = e & f.valid, p.system = e & f.system, p.snooped = e & f.snooped, p.executable = e & f.executable;
  p.readable = e & f.readable, p.writeable = e & f.writeable, p.leaf_pde = e & f.pde_is_pte;
  p.fragment = uint32_t(e >> f.frag_shift) & 0x1F, p.mtype = uint32_t(e >> f.mtype_shift) & ((1u << f.mtype_bits) - 1);
  p.address = e & f.address_mask;
  return p;
}
constexpr uint64_t encode_pte(const PteFormat& f, const Pte& p) {
  uint64_t e = (p.address & f.address_mask) | (uint64_t(p.fragment & 0x1F) << f.frag_shift) | (uint64_t(p.mtype) << f.mtype_shift);
  if (p.valid) e |= f.valid;
  if (p.system) e |= f.system;
  if (p.snooped) e |= f.snooped;
  if (p.executable) e |= f.executable;
  if (p.readable) e |= f.readable;
  if (p.writeable) e |= f.writeable;
  if (p.leaf_pde) e |= f.pde_is_pte;
  return e;
}
std::string describe_pte(const PteFormat& f, uint64_t e);  // "V R W X sys snoop frag=9 mtype=UC addr=0x..."

}  // namespace ugpu::hw::amd
