// The emulated Adreno's shader processor: it runs the a6xx ir3 machine code a CP_EXEC_CS dispatch
// names (SP_CS_OBJ_START, SP_CS_INSTRLEN) over every workgroup, fiber by fiber, with the register
// file, constants, shared memory and global memory the hardware gives a compute shader, and checks
// what hardware does not: every access (registers past FULLREGFOOTPRINT, constants past CONSTLEN,
// shared memory past its size, unmapped global memory) and every scheduling rule the compiler must
// keep — a result read before its (ss)/(sy) wait or within an ALU result's delay slots is a hazard.
// Faults and hazards are CpFault messages naming the instruction as text, its index, the workgroup
// and the fiber.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "emu/qcom/cp.h"

namespace ugpu::emu::qcom {

struct Ir3Options {
  // true: a hazard is a CpFault; false: hazards are counted (Ir3Stats) and execution goes on with the
  // value the program meant (the emulator has no pipeline: only the check differs from hardware).
  bool strict_hazards = true;
  unsigned threads = 0;  // host threads running workgroups; 0 = the host's cores, at most 2
};

struct Ir3Stats {
  uint64_t dispatches = 0, workgroups = 0;
  uint64_t wave_instructions = 0;  // one per instruction executed by a wave (64 or 128 fibers)
  uint64_t hazards = 0;            // wave instructions with a hazard (not strict)
  std::string first_hazard;
};

class Ir3Executor : public ShaderProcessor {
 public:
  explicit Ir3Executor(Ir3Options o = {}) : o_(o) {}
  uint64_t run(const ComputeDispatch& d, GpuMemory& memory, const std::atomic<bool>& cancelled) override;
  Ir3Stats stats() const {
    std::lock_guard lock(mu_);
    return stats_;
  }

 private:
  Ir3Options o_;
  mutable std::mutex mu_;
  Ir3Stats stats_;
};

}  // namespace ugpu::emu::qcom
