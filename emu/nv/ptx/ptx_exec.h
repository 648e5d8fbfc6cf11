// The PTX executor's run-time state (internal to emu/nv/ptx*.cpp): a launch, the block a host thread
// is running, and its warps.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "emu/nv/ptx/ptx_ir.h"

namespace ugpu::emu::nv::detail {

struct Block;

struct Warp {
  uint64_t* r = nullptr;  // slot s, lane l: r[s * 32 + l]
  uint32_t* p = nullptr;  // predicate masks
  Block* block = nullptr;
  uint32_t index = 0;     // within the block
  uint64_t executed = 0;  // warp instructions issued (also its %clock)
  // Lanes run together while they are at the same instruction. `group` is the set running now, at
  // `pc`; the other runnable lanes wait at lane_pc, the least of which is min_other. The lowest
  // pc always runs first, which brings lanes back together at the join points of if/else and loops.
  uint32_t pc = 0, group = 0, runnable = 0, exited = 0, min_other = kNone;
  std::array<uint32_t, 16> bar_wait{};  // lanes waiting at each barrier
  std::array<uint32_t, 32> lane_pc{};
};

inline uint64_t* slot(Warp& w, uint32_t s) { return w.r + static_cast<size_t>(s) * 32; }

template <class F>
inline void for_lanes(uint32_t m, F&& f) {
  if (m == 0xffffffffu) {
    for (int l = 0; l < 32; ++l) f(l);
  } else {
    while (m) {
      int l = __builtin_ctz(m);
      m &= m - 1;
      f(l);
    }
  }
}

struct Run {
  const PtxLaunch* launch = nullptr;
  const Code* code = nullptr;
  const PtxEntry* entry = nullptr;
  uint32_t nthreads = 0, nwarps = 0;
  uint64_t blocks = 0;
  std::atomic<uint64_t> next_block{0}, instructions{0}, blocks_run{0};
  std::atomic<bool> stop{false};
  const std::atomic<bool>* interrupt = nullptr;
  std::mutex mu;
  std::optional<PtxFault> fault;
};

// A mapping of global memory that a host thread has translated before (mappings do not change
// during a launch).
struct SpanCache {
  uint64_t lo = 0, hi = 0;  // [lo, hi)
  uint8_t* host = nullptr;
  bool writable = false;
};

struct Block {
  Run* run = nullptr;
  const Code* code = nullptr;
  std::array<uint32_t, 3> id{};
  uint32_t nthreads = 0;
  std::vector<uint64_t> regs;
  std::vector<uint32_t> preds;
  std::vector<Warp> warps;
  std::vector<uint8_t> shared;  // launch.shared_bytes
  std::vector<uint8_t> local;   // per thread: local_bytes each, thread after thread
  uint32_t local_bytes = 0;
  std::array<uint32_t, 16> arrived{}, expected{};  // barrier arrivals; expected 0 = every live thread
  uint32_t exited_threads = 0;
  std::array<SpanCache, 8> spans{};
  unsigned span_count = 0, span_next = 0;
};

// Thrown inside a block's run and caught around it: the fault ends the launch.
struct FaultThrow {
  PtxFault fault;
};
struct StopThrow {};  // another block faulted, or the launch was interrupted

// Builds the fault (message included) for an instruction of warp w, lane `lane` (-1: no lane).
PtxFault make_fault(Warp& w, const Inst& in, int lane, PtxFault::Kind kind);
[[noreturn]] void memory_fault(Warp& w, const Inst& in, int lane, uint64_t address, unsigned bytes, Access access, Space space,
                               const std::string& why);
[[noreturn]] void illegal(Warp& w, const Inst& in, int lane, const std::string& what);

}  // namespace ugpu::emu::nv::detail
