// Records of a cubin's `.nv.info` and `.nv.info.<kernel>` sections: a stream of
// {u8 format, u8 attribute, u16 value-or-size}; format kSval is followed by `size` payload bytes, the
// others carry their value inline. Attribute numbers are the EIATTR_* values cuobjdump prints.
#pragma once
#include <cstdint>

namespace ugpu::hw::nv {

enum class NvInfoFormat : uint8_t { Nval = 1, Bval = 2, Hval = 3, Sval = 4 };

enum class NvInfoAttr : uint8_t {
  ParamCbank = 0x0a,      // {u32 symbol, u16 offset of the parameters in constant bank 0, u16 size}
  CbankParamSize = 0x19,  // u16 inline: bytes of parameters
  KparamInfo = 0x17,      // one per parameter: {u32 index, u16 ordinal, u16 offset, u32 flags; size in bits 18..31}
  MaxStackSize = 0x23,    // {u32 symbol, u32 bytes}
  MinStackSize = 0x12,    // {u32 symbol, u32 bytes}
  FrameSize = 0x11,       // {u32 symbol, u32 bytes}
  RegCount = 0x2f,        // {u32 symbol, u32 registers per thread}
  MaxThreads = 0x05,      // {u32 x, u32 y, u32 z}
  ExitInstrOffsets = 0x1c,
  SwWar = 0x36,
  CudaApiVersion = 0x37,
};

}  // namespace ugpu::hw::nv
