// The RDNA3 shader executor: runs the gfx11 machine code LLVM produces, one dispatch at a time, on host
// threads. A device model (the emulated KFD/PM4 GPU) calls `Executor::run` with what the command
// processor knows at dispatch time — the code address, the kernel descriptor, the grid, the user SGPRs —
// and a `Memory` that translates and checks every access the kernel makes. Semantics follow AMD's RDNA3
// ISA reference; see emu/README.md for what is modelled and what is not.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "emu/memory.h"
#include "hw/amd/kernel_descriptor.h"

namespace ugpu::emu::amd {

// The address space is shared with the NVIDIA emulator (emu/memory.h).
using emu::Access;
using emu::Memory;
using emu::name;
using emu::RangeMemory;

// Where the fault happened: workgroup id, wave within the workgroup, program counter.
struct WaveId {
  std::array<uint32_t, 3> workgroup{};
  uint32_t wave = 0;
};

struct Fault {
  enum class Kind { Memory, Unimplemented, Illegal, Interrupted };
  Kind kind = Kind::Memory;
  WaveId wave;
  uint64_t pc = 0;
  std::string instruction;  // the instruction as decoded (mnemonic and operands), or its raw dwords
  uint64_t address = 0;     // memory faults: the first faulting address
  Access access = Access::Read;
  std::string space;    // memory faults: "global", "scratch", "LDS", "instruction fetch"
  std::string message;  // one sentence a person can act on, naming all of the above
};

struct Dispatch {
  uint64_t entry = 0;  // device address of the first instruction
  hw::amd::KernelDescriptor descriptor{};
  std::array<uint32_t, 3> workgroups{1, 1, 1};      // workgroup counts per dimension
  std::array<uint32_t, 3> workgroup_size{1, 1, 1};  // work-items per workgroup
  // COMPUTE_USER_DATA: the first rsrc2.USER_SGPR_COUNT values are preloaded into s0.. (kernarg
  // pointer, dispatch pointer, ... in the order the descriptor's kernel_code_properties request).
  std::array<uint32_t, 32> user_sgprs{};
  uint32_t lds_bytes = 0;               // LDS allocated per workgroup; 0 = the descriptor's group segment
  uint32_t scratch_bytes_per_lane = 0;  // 0 = the descriptor's private segment
  Memory* memory = nullptr;
};

// The user SGPR values a descriptor's kernel_code_properties ask for, in the order the hardware loads
// them (private segment buffer, dispatch pointer, queue pointer, kernarg pointer, dispatch id, flat
// scratch init, private segment size): what a command processor puts in COMPUTE_USER_DATA.
struct DispatchPointers {
  uint64_t kernarg = 0, dispatch_packet = 0, queue = 0, dispatch_id = 0;
  std::array<uint32_t, 4> private_segment_buffer{};
};
std::array<uint32_t, 32> user_sgprs_for(const hw::amd::KernelDescriptor& kd, const DispatchPointers& p);

struct RunOptions {
  unsigned threads = 0;                          // 0 = hardware concurrency
  const std::atomic<bool>* interrupt = nullptr;  // when it becomes true, waves stop with Fault::Interrupted
};

struct RunResult {
  std::optional<Fault> fault;  // the first fault; the dispatch stopped there
  uint64_t wave_instructions = 0;
  uint64_t workgroups_run = 0;
};

struct DecodeCache;

// Keeps the decoded form of every instruction it has run, keyed by code address, across dispatches.
// Call `invalidate_code` when code memory is rewritten.
class Executor {
 public:
  Executor();
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  RunResult run(const Dispatch& d, const RunOptions& o = {});
  void invalidate_code();

 private:
  std::unique_ptr<DecodeCache> cache_;
};

}  // namespace ugpu::emu::amd
