// The emulated Adreno's command processor (CP): it executes the indirect buffers a kgsl submission
// names, one packet at a time, decoded with the hw/qcom tables — type-4 register writes into its
// register file, and the type-7 packets of the compute path: waits that poll memory, event writes
// (signals), register-to-memory copies (the always-on counter, 19.2 MHz), memory writes and copies,
// constant loads, and CP_EXEC_CS, which hands the compute state to the shader processor. Anything it
// cannot decode or does not model stops the submission with a fault naming the packet and its address.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "common/error.h"
#include "emu/gpu_memory.h"

namespace ugpu::emu::qcom {

// A fault of the GPU while running a submission: the context that submitted it is reset.
class CpFault : public Error {
 public:
  using Error::Error;
};

// What CP_EXEC_CS hands the shader processor: the register file as the CP has it (the HLSQ_CS_* and
// SP_CS_* registers describe the dispatch), the compute shader's constant file, and the group counts.
struct ComputeDispatch {
  std::function<uint32_t(uint32_t offset)> reg;
  std::span<const uint32_t> consts;  // vec4 units, 4 dwords each
  std::array<uint32_t, 3> groups{};
};

// The shader processor: runs a dispatch to completion against `memory`, returning the instructions
// executed (per wave); throws CpFault for a fault of the shader (a page fault, an illegal instruction).
class ShaderProcessor {
 public:
  virtual ~ShaderProcessor() = default;
  virtual uint64_t run(const ComputeDispatch& d, GpuMemory& memory, const std::atomic<bool>& cancelled) = 0;
};

class CommandProcessor {
 public:
  static constexpr uint32_t kRegisters = 0x40000;  // the register space a type-4 header addresses
  static constexpr uint32_t kConstVec4 = 1024;     // the compute shader's constant file
  static constexpr int kMaxIbDepth = 2;            // IB1 (the submission's) and IB2 (CP_INDIRECT_BUFFER)

  // `sp_cs_cntl`: an a6xx gen 4 part (a660), whose dispatch reads SP_CS_CNTL_0/1, which must repeat
  // HLSQ_CS_CNTL_0/1 (a mismatch is a fault here: the hardware's behaviour then is not known).
  CommandProcessor(GpuMemory& memory, ShaderProcessor* sp, bool sp_cs_cntl = false)
      : memory_(memory), sp_(sp), sp_cs_cntl_(sp_cs_cntl), regs_(kRegisters), consts_(kConstVec4 * 4) {}
  // Runs one IB of `dwords` at `address`. Throws CpFault; returns early (false) when `cancelled` is
  // set while it waits (the context was destroyed).
  bool run(uint64_t address, uint64_t dwords, const std::atomic<bool>& cancelled) { return run_ib(address, dwords, 1, cancelled); }
  uint32_t reg(uint32_t offset) const { return offset < kRegisters ? regs_[offset] : 0; }
  uint64_t packets() const { return packets_; }
  uint64_t dispatches() const { return dispatches_; }
  uint64_t instructions() const { return instructions_; }
  static uint64_t always_on_counter();  // 19.2 MHz, from the host's steady clock

 private:
  bool run_ib(uint64_t address, uint64_t dwords, int depth, const std::atomic<bool>& cancelled);
  // One type-7 packet; `p` is its payload. False when cancelled.
  bool packet(uint8_t opcode, std::span<const uint32_t> p, int depth, const std::atomic<bool>& cancelled);
  void load_state(std::span<const uint32_t> p);
  void exec_cs(std::span<const uint32_t> p, const std::atomic<bool>& cancelled);
  uint8_t* at(uint64_t address, uint64_t bytes, Access access, const char* what);  // throws CpFault
  [[noreturn]] void fault(const std::string& what) const;

  GpuMemory& memory_;
  ShaderProcessor* sp_;
  bool sp_cs_cntl_;
  std::vector<uint32_t> regs_;
  std::vector<uint32_t> consts_;
  uint64_t packets_ = 0, dispatches_ = 0, instructions_ = 0;
  // The packet being executed, for fault messages.
  uint64_t where_ = 0;
  const char* packet_name_ = "";
};

}  // namespace ugpu::emu::qcom
