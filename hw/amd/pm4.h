// PM4 type-3 packets for gfx10/gfx11 compute queues, as field tables (see packets.h). Opcodes and
// field positions: Linux drivers/gpu/drm/amd/amdgpu/nvd.h and the packet sequences in gfx_v11_0.c.
// Header: type 3 in bits 31:30, (total dwords - 2) in 29:16, opcode in 15:8.
#pragma once
#include "hw/amd/packets.h"

namespace ugpu::hw::amd::pm4 {

inline constexpr uint32_t kSetShRegStart = 0x2c00, kSetUconfigRegStart = 0xc000;  // SET_*_REG offsets count from here
inline constexpr uint32_t kUconfigRegEnd = 0x10000, kShRegEnd = 0x3000;

// VGT event types used by RELEASE_MEM / EVENT_WRITE, and the event_index each needs.
inline constexpr uint32_t kEventCsPartialFlush = 7, kEventCacheFlushAndInvTs = 20, kEventBottomOfPipeTs = 40;
inline constexpr uint32_t kEventIndexPartialFlush = 4, kEventIndexEndOfPipe = 5;
// WAIT_REG_MEM / POLL_REGMEM compare functions.
enum Compare : uint32_t { kAlways = 0, kLess, kLessEqual, kEqual, kNotEqual, kGreaterEqual, kGreater };
// RELEASE_MEM data_sel and int_sel.
inline constexpr uint32_t kDataNone = 0, kData32 = 1, kData64 = 2, kDataGpuClock = 3, kDataSysClock = 4;
inline constexpr uint32_t kIntNone = 0, kIntOnly = 1, kIntAfterWrite = 2;
// ACQUIRE_MEM / RELEASE_MEM cache-control bits (GCR_CNTL).
namespace acquire_gcr {
inline constexpr uint32_t kGliInvAll = 1 << 0, kGlmWb = 1 << 4, kGlmInv = 1 << 5, kGlkWb = 1 << 6, kGlkInv = 1 << 7, kGlvInv = 1 << 8,
                          kGl1Inv = 1 << 9, kGl2Inv = 1 << 14, kGl2Wb = 1 << 15, kSeq = 1 << 16;
}
namespace release_gcr {  // RELEASE_MEM's `gcr` field (bits 22:12 of dword 1), as values of that field
inline constexpr uint32_t kGlmWb = 1 << 0, kGlmInv = 1 << 1, kGlvInv = 1 << 2, kGl1Inv = 1 << 3, kGl2Inv = 1 << 8, kGl2Wb = 1 << 9, kSeq = 1 << 10;
}

struct Nop {
  enum F : uint8_t {};
  static constexpr PacketFormat format{"NOP", Engine::Pm4, 0x10, 0, 1, true, {}};
};

struct SetShReg {
  enum F : uint8_t { reg_offset };
  static constexpr PacketField fields[] = {{"reg_offset", 1, 0, 16, 0}};
  static constexpr PacketFormat format{"SET_SH_REG", Engine::Pm4, 0x76, 0, 2, true, fields};
};

struct SetUconfigReg {
  enum F : uint8_t { reg_offset };
  static constexpr PacketField fields[] = {{"reg_offset", 1, 0, 16, 0}};
  static constexpr PacketFormat format{"SET_UCONFIG_REG", Engine::Pm4, 0x79, 0, 2, true, fields};
};

struct AcquireMem {
  enum F : uint8_t { coher_cntl, engine_sel, coher_size, coher_size_hi, coher_base, poll_interval, gcr_cntl };
  static constexpr PacketField fields[] = {{"coher_cntl", 1, 0, 31, 0},   {"engine_sel", 1, 31, 1, 0}, {"coher_size", 2, 0, 32, 0},
                                           {"coher_size_hi", 3, 0, 8, 0}, {"coher_base", 4, 0, 64, 0}, {"poll_interval", 6, 0, 16, 0},
                                           {"gcr_cntl", 7, 0, 19, 0}};
  static constexpr PacketFormat format{"ACQUIRE_MEM", Engine::Pm4, 0x58, 0, 8, false, fields};
};

struct ReleaseMem {
  enum F : uint8_t { event_type, event_index, gcr, cache_policy, execute, dst_sel, int_sel, data_sel, address, data, int_ctxid };
  static constexpr PacketField fields[] = {{"event_type", 1, 0, 6, 0},    {"event_index", 1, 8, 4, 0}, {"gcr", 1, 12, 11, 0},
                                           {"cache_policy", 1, 25, 2, 0}, {"execute", 1, 28, 1, 0},    {"dst_sel", 2, 16, 2, 0},
                                           {"int_sel", 2, 24, 3, 0},      {"data_sel", 2, 29, 3, 0},   {"address", 3, 0, 64, 2},
                                           {"data", 5, 0, 64, 0},         {"int_ctxid", 7, 0, 32, 0}};
  static constexpr PacketFormat format{"RELEASE_MEM", Engine::Pm4, 0x49, 0, 8, false, fields};
};

// mem_space 1: poll the dword at `address`; mem_space 0: `address` low half is the register to poll
// and, with operation 1 (write, wait, write), the high half the register written first.
struct WaitRegMem {
  enum F : uint8_t { function, mem_space, operation, engine, address, reference, mask, poll_interval };
  static constexpr PacketField fields[] = {{"function", 1, 0, 3, 0}, {"mem_space", 1, 4, 2, 0},     {"operation", 1, 6, 2, 0},
                                           {"engine", 1, 8, 2, 0},   {"address", 2, 0, 64, 0},      {"reference", 4, 0, 32, 0},
                                           {"mask", 5, 0, 32, 0},    {"poll_interval", 6, 0, 16, 0}};
  static constexpr PacketFormat format{"WAIT_REG_MEM", Engine::Pm4, 0x3C, 0, 7, false, fields};
};

struct DispatchDirect {
  enum F : uint8_t { dim_x, dim_y, dim_z, initiator };
  static constexpr PacketField fields[] = {{"dim_x", 1, 0, 32, 0}, {"dim_y", 2, 0, 32, 0}, {"dim_z", 3, 0, 32, 0}, {"initiator", 4, 0, 32, 0}};
  static constexpr PacketFormat format{"DISPATCH_DIRECT", Engine::Pm4, 0x15, 0, 5, false, fields};
};

struct IndirectBuffer {
  enum F : uint8_t { address, size, chain, valid, vmid, cache_policy };
  static constexpr PacketField fields[] = {{"address", 1, 0, 64, 2}, {"size", 3, 0, 20, 0}, {"chain", 3, 20, 1, 0},
                                           {"valid", 3, 23, 1, 0},   {"vmid", 3, 24, 4, 0}, {"cache_policy", 3, 28, 2, 0}};
  static constexpr PacketFormat format{"INDIRECT_BUFFER", Engine::Pm4, 0x3F, 0, 4, false, fields};
};

struct EventWrite {
  enum F : uint8_t { event_type, event_index };
  static constexpr PacketField fields[] = {{"event_type", 1, 0, 6, 0}, {"event_index", 1, 8, 4, 0}};
  static constexpr PacketFormat format{"EVENT_WRITE", Engine::Pm4, 0x46, 0, 2, false, fields};
};

// src_sel: 0 register, 1/2 memory, 5 immediate (src low dword, or both with count_sel), 9 GPU clock;
// dst_sel: 0 register, 1/2/5 memory. count_sel 1 copies 64 bits.
struct CopyData {
  enum F : uint8_t { src_sel, dst_sel, count_sel, wr_confirm, engine_sel, src, dst };
  static constexpr PacketField fields[] = {{"src_sel", 1, 0, 4, 0},     {"dst_sel", 1, 8, 4, 0},     {"count_sel", 1, 16, 1, 0},
                                           {"wr_confirm", 1, 20, 1, 0}, {"engine_sel", 1, 30, 2, 0}, {"src", 2, 0, 64, 0},
                                           {"dst", 4, 0, 64, 0}};
  static constexpr PacketFormat format{"COPY_DATA", Engine::Pm4, 0x40, 0, 6, false, fields};
};

// CP DMA: a copy done by the command processor itself (compute queues have no copy engine).
// src_sel/dst_sel 0 (with sas/das 0): memory; byte_count up to 2^26 - 1 per packet.
struct DmaData {
  enum F : uint8_t { engine, dst_sel, src_sel, cp_sync, src, dst, byte_count, sas, das, saic, daic, raw_wait, dis_wc };
  static constexpr PacketField fields[] = {{"engine", 1, 0, 1, 0}, {"dst_sel", 1, 20, 2, 0}, {"src_sel", 1, 29, 2, 0},    {"cp_sync", 1, 31, 1, 0},
                                           {"src", 2, 0, 64, 0},   {"dst", 4, 0, 64, 0},     {"byte_count", 6, 0, 26, 0}, {"sas", 6, 26, 1, 0},
                                           {"das", 6, 27, 1, 0},   {"saic", 6, 28, 1, 0},    {"daic", 6, 29, 1, 0},       {"raw_wait", 6, 30, 1, 0},
                                           {"dis_wc", 6, 31, 1, 0}};
  static constexpr PacketFormat format{"DMA_DATA", Engine::Pm4, 0x50, 0, 7, false, fields};
};
inline constexpr uint64_t kDmaDataMaxBytes = (uint64_t{1} << 26) - 1;

inline constexpr const PacketFormat* kFormats[] = {&DmaData::format,        &Nop::format,        &SetShReg::format,   &SetUconfigReg::format,
                                                   &AcquireMem::format,     &ReleaseMem::format, &WaitRegMem::format, &DispatchDirect::format,
                                                   &IndirectBuffer::format, &EventWrite::format, &CopyData::format};

}  // namespace ugpu::hw::amd::pm4
