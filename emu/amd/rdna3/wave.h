// The state of one wave32 and the operand access every op handler uses. Internal to emu/amd.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "emu/amd/rdna3/executor.h"
#include "emu/amd/rdna3/inst.h"

namespace ugpu::emu::amd {

inline constexpr int kLanes = 32;
inline constexpr uint16_t kVcc = 106, kNull = 124, kM0 = 125, kExec = 126;

// Thrown by a handler; the executor turns it into a Fault with the wave's identity and PC.
struct WaveFault {
  Fault::Kind kind;
  std::string message;
  uint64_t address = 0;
  Access access = Access::Read;
  std::string space;
};

struct Workgroup;

struct Wave {
  uint32_t s[128] = {};  // SGPRs by operand code: 0..105, VCC 106/107, TTMP 108..123, null, M0, EXEC
  bool scc = false;
  uint64_t pc = 0;
  uint32_t (*v)[kLanes] = nullptr;  // VGPR file, v[register][lane]
  uint32_t vgpr_count = 0;          // VGPRs the descriptor allocates; M0-relative indexing past them is out of range
  enum class State : uint8_t { Running, Barrier, Ended } state = State::Running;
  bool flush_f32 = false, flush_f16_f64 = false;  // denormal modes from the descriptor (or s_setreg)
  uint32_t mode = 0;                              // the MODE hardware register: FP_ROUND [3:0], FP_DENORM [7:4], DX10_CLAMP, IEEE
  Workgroup* wg = nullptr;
  uint32_t id = 0;             // wave index within the workgroup
  uint8_t* scratch = nullptr;  // this wave's private memory: lane l at scratch + l * scratch_per_lane
  uint32_t scratch_per_lane = 0;
  Memory* memory = nullptr;
  Memory::Span tlb{};  // the last translated range
  uint64_t instructions = 0;

  uint32_t exec() const { return s[kExec]; }
  uint32_t vcc() const { return s[kVcc]; }
  void write_sgpr(uint16_t code, uint32_t value) {
    if (code == kNull) return;
    s[code & 127] = value;
    if (code == kExec) s[kExec + 1] = 0;  // wave32: EXEC_HI stays zero
  }
  uint64_t sgpr64(uint16_t code) const { return s[code & 127] | uint64_t{s[(code + 1) & 127]} << 32; }
  void write_sgpr64(uint16_t code, uint64_t value) {
    write_sgpr(code, static_cast<uint32_t>(value));
    if (code != kNull) write_sgpr(static_cast<uint16_t>(code + 1), static_cast<uint32_t>(value >> 32));
  }

  // A host pointer for `size` bytes at device `address`, translated through the wave's cached span.
  uint8_t* translate(uint64_t address, uint64_t size, Access access, const char* space = "global") {
    if (address >= tlb.device && address - tlb.device <= tlb.size && size <= tlb.size - (address - tlb.device) &&
        (access == Access::Read || tlb.writable))
      return tlb.host + (address - tlb.device);
    auto span = memory ? memory->translate(address, size, access) : std::nullopt;
    if (!span || address < span->device || address - span->device > span->size || size > span->size - (address - span->device))
      throw WaveFault{Fault::Kind::Memory, "", address, access, space};
    tlb = *span;
    return tlb.host + (address - tlb.device);
  }
};

struct Workgroup {
  std::array<uint32_t, 3> id{};
  uint8_t* lds = nullptr;
  uint32_t lds_bytes = 0;
};

// --- operand access ----------------------------------------------------------------------------

// The bits of a uniform (non-VGPR) source.
inline uint64_t scalar_src(const Wave& w, const Inst& in, int k) {
  const Ty t = in.op->src[k];
  switch (in.src_kind[k]) {
    case Src::Const: return in.src_const[k];
    case Src::Sgpr: {
      uint16_t r = in.src_reg[k];
      if (bits(t) == 64) return w.sgpr64(r);
      uint32_t v = w.s[r & 127];
      if (bits(t) == 16) return in.src_hi[k] ? v >> 16 : v & 0xffff;
      return v;
    }
    case Src::Scc: return w.scc;
    case Src::VccZ: return w.vcc() == 0;
    case Src::ExecZ: return w.exec() == 0;
    default: return 0;
  }
}

inline float f32(uint64_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b)); }
inline double f64(uint64_t b) { return std::bit_cast<double>(b); }
inline uint64_t bits_of(float f) { return std::bit_cast<uint32_t>(f); }
inline uint64_t bits_of(double d) { return std::bit_cast<uint64_t>(d); }
inline float f16(uint64_t b) { return static_cast<float>(std::bit_cast<_Float16>(static_cast<uint16_t>(b))); }
inline uint64_t bits_f16(float f) { return std::bit_cast<uint16_t>(static_cast<_Float16>(f)); }
inline uint64_t bits_f16(double d) { return std::bit_cast<uint16_t>(static_cast<_Float16>(d)); }

}  // namespace ugpu::emu::amd
