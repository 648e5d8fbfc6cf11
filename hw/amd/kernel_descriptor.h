// The AMD HSA kernel descriptor: 64 bytes in a code object's .rodata, named `<kernel>.kd`, that tell the
// command processor how to launch a kernel (LDS and scratch sizes, kernarg size, where the code starts,
// the COMPUTE_PGM_RSRC1/2/3 register values and which user SGPRs to preload).
// Layout and bit fields: LLVM's AMDGPUUsage ("Kernel Descriptor") and AMDHSAKernelDescriptor.h.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ugpu::hw::amd {

struct KernelDescriptor {
  uint32_t group_segment_fixed_size;    // LDS bytes
  uint32_t private_segment_fixed_size;  // scratch bytes per work-item
  uint32_t kernarg_size;
  uint8_t reserved0[4];
  int64_t kernel_code_entry_byte_offset;  // from the descriptor's own address to the first instruction
  uint8_t reserved1[20];
  uint32_t compute_pgm_rsrc3;
  uint32_t compute_pgm_rsrc1;
  uint32_t compute_pgm_rsrc2;
  uint16_t kernel_code_properties;
  uint16_t kernarg_preload;
  uint8_t reserved3[4];
};
static_assert(sizeof(KernelDescriptor) == 64);
static_assert(offsetof(KernelDescriptor, kernarg_size) == 8);
static_assert(offsetof(KernelDescriptor, kernel_code_entry_byte_offset) == 16);
static_assert(offsetof(KernelDescriptor, compute_pgm_rsrc3) == 44);
static_assert(offsetof(KernelDescriptor, compute_pgm_rsrc1) == 48);
static_assert(offsetof(KernelDescriptor, compute_pgm_rsrc2) == 52);
static_assert(offsetof(KernelDescriptor, kernel_code_properties) == 56);
static_assert(offsetof(KernelDescriptor, kernarg_preload) == 58);

// A bit field of a 32-bit register value.
struct Field {
  uint8_t shift, width;
  constexpr uint32_t get(uint32_t v) const { return (v >> shift) & ((uint64_t{1} << width) - 1); }
  constexpr uint32_t set(uint32_t v, uint32_t x) const {
    uint32_t m = static_cast<uint32_t>(((uint64_t{1} << width) - 1) << shift);
    return (v & ~m) | ((x << shift) & m);
  }
};

namespace rsrc1 {
inline constexpr Field kVgprGranules{0, 6}, kSgprGranules{6, 4}, kPriority{10, 2}, kFloatRound32{12, 2}, kFloatRound1664{14, 2},
    kFloatDenorm32{16, 2}, kFloatDenorm1664{18, 2}, kPriv{20, 1}, kDx10Clamp{21, 1}, kDebugMode{22, 1}, kIeeeMode{23, 1}, kBulky{24, 1},
    kCdbgUser{25, 1}, kFp16Ovfl{26, 1}, kWgpMode{29, 1}, kMemOrdered{30, 1}, kFwdProgress{31, 1};
}
namespace rsrc2 {
inline constexpr Field kPrivateSegment{0, 1}, kUserSgprCount{1, 5}, kTrapHandler{6, 1}, kWorkgroupIdX{7, 1}, kWorkgroupIdY{8, 1}, kWorkgroupIdZ{9, 1},
    kWorkgroupInfo{10, 1}, kWorkitemIdVgprs{11, 2}, kLdsGranules{15, 9}, kExceptions{24, 7};
}
namespace rsrc3 {  // gfx10-gfx11 meanings; gfx90a/gfx94x use bits 0..5 as ACCUM_OFFSET
inline constexpr Field kSharedVgprCount{0, 4}, kInstPrefSize{4, 6}, kTrapOnStart{10, 1}, kTrapOnEnd{11, 1}, kAccumOffset{0, 6}, kTgSplit{16, 1};
}
namespace code_props {
inline constexpr Field kPrivateSegmentBuffer{0, 1}, kDispatchPtr{1, 1}, kQueuePtr{2, 1}, kKernargSegmentPtr{3, 1}, kDispatchId{4, 1},
    kFlatScratchInit{5, 1}, kPrivateSegmentSize{6, 1}, kWavefrontSize32{10, 1}, kUsesDynamicStack{11, 1};
}

}  // namespace ugpu::hw::amd
