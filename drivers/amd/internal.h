// Shared by the files of the AMD driver: the device, its queues (PM4, SDMA) and programs.
#pragma once
#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "codegen/code_object.h"
#include "codegen/compiler.h"
#include "drivers/amd/amd_device.h"
#include "drivers/amd/interface.h"
#include "hcq/in_flight.h"
#include "hw/amd/compute_regs.h"
#include "hw/amd/packets.h"
#include "sys/mmio.h"

namespace ugpu::amd {

class AmdDevice;

// A kernel loaded into GPU memory, with the register values its dispatch needs.
class AmdProgram : public hcq::Program {
 public:
  AmdProgram(AmdDevice& dev, std::shared_ptr<const codegen::CompiledKernel> k);
  std::shared_ptr<const codegen::CompiledKernel> kernel;
  codegen::AmdKernelInfo info;
  hcq::Buffer code;
  uint64_t entry = 0;  // address of the first instruction (256-byte aligned)
  uint32_t rsrc1 = 0, rsrc2 = 0, rsrc3 = 0;
  uint32_t scratch_per_lane = 0;                  // private segment bytes per work-item
  bool dispatch_ptr = false;                      // kernargs are followed by an HSA dispatch packet it reads
  uint32_t user_args_bytes = 0;                   // the kernel's own arguments, before that packet
  std::optional<codegen::LaunchDims> fixed_dims;  // when the launch geometry depends on no variable
};

// Ring bookkeeping for one hardware queue.
struct Ring {
  bool sdma = false;
  uint32_t queue_id = 0;
  std::shared_ptr<AmdInterface::Memory> ring, gart;
  uint32_t* words = nullptr;
  uint64_t dwords = 0;                // ring size
  uint64_t* wptr = nullptr;           // in the gart page: what the engine reads (dwords for PM4, bytes for SDMA)
  volatile uint64_t* rptr = nullptr;  // written back by the engine
  std::unique_ptr<sys::Doorbell> doorbell;
  std::atomic<uint64_t> written{0};  // dwords ever written (read without the lock by consumed())
  uint64_t base = 0;                 // `written` when the hardware queue started: its pointers count from here
  hcq::SignalRef retired;            // low 32 bits of the position of the last finished submission
  std::mutex mu;
  hcq::KernelsInFlight kernels;                                                    // what its submissions run, for fault messages
  uint64_t last_at = 0, last_len = 0;                                              // the last submission on the ring (dwords), for last_submission()
  uint64_t waits = 0;                                                              // submits that waited for ring space
  uint64_t read() const;                                                           // dwords the engine has consumed, ever
  uint64_t done() const;                                                           // position of the last finished submission
  uint64_t offset(uint64_t position) const { return (position - base) % dwords; }  // where in the ring
};

// A queue of this driver: PM4 for the compute ring or SDMA for the copy ring (queues.cpp).
class AmdQueue : public hcq::HWQueue {
 public:
  AmdQueue(hcq::Device& dev, bool sdma) : HWQueue(dev), sdma(sdma) {}
  const bool sdma;
  std::shared_ptr<std::vector<std::string>> kernels;  // names of the kernels it runs, for fault messages
  virtual void invalidate_instruction_cache() = 0;
  // The packet that runs `dwords` of commands at `va` (bound queues), and the one that records a
  // finished submission (`position` low 32 bits to `address`), appended to `out`.
  virtual void indirect(std::vector<uint32_t>& out, uint64_t va, size_t dwords) const = 0;
  virtual void retire(std::vector<uint32_t>& out, uint64_t address, uint32_t position) const = 0;
  // The USB bridge's copies (bridge_copy.cpp), SDMA only: wait until the 32-bit word at `va` equals
  // `value`; write a 32-bit value to `va`.
  virtual void poll_equal_masked(uint64_t va, uint32_t value, uint32_t mask) = 0;
  void poll_equal(uint64_t va, uint32_t value) { poll_equal_masked(va, value, 0xffffffff); }
  virtual void write32(uint64_t va, uint32_t value) = 0;
  void copy_untimed(uint64_t dst, uint64_t src, uint64_t bytes) { emit_copy(dst, src, bytes); }  // driver traffic, not profiled
};
std::unique_ptr<AmdQueue> make_pm4_queue(AmdDevice& dev);
std::unique_ptr<AmdQueue> make_sdma_queue(AmdDevice& dev);
void append_nop(std::vector<uint32_t>& out, bool sdma, size_t dwords);  // padding of exactly `dwords`

// The device: everything but the way in (drivers/amd/interface.h), which it owns.
class AmdDevice : public hcq::Device {
 public:
  AmdDevice(std::unique_ptr<AmdInterface> way_in, const AmdOptions& o);
  ~AmdDevice() override;

  std::unique_ptr<hcq::HWQueue> compute_queue() override { return make_pm4_queue(*this); }
  std::unique_ptr<hcq::HWQueue> copy_queue() override { return make_sdma_queue(*this); }
  bool copy_ring_separate() const override { return true; }
  hcq::DeviceInfo info() const override { return info_; }
  std::string target() const override { return way_in_->facts().arch; }
  std::shared_ptr<hcq::Program> load(std::shared_ptr<const codegen::CompiledKernel> kernel) override;
  uint64_t clock_hz() const override { return 100'000'000; }
  uint64_t submit_commands(hcq::HWQueue& q) override;
  bool consumed(uint64_t position) const override;
  std::string work_in_flight() override;
  uint64_t ring_waits() const override;
  std::shared_ptr<uint32_t[]> command_memory(size_t dwords) override;
  void host_wrote(const void* host, size_t bytes) override;
  // Fresh memory (no queued work uses it): the host's bytes, or zeros, at once and outside the timeline.
  void upload(const hcq::Buffer& dst, std::span<const uint8_t> bytes);
  const AmdInterface::Facts& facts() const { return way_in_->facts(); }

  // Used by queues and programs.
  const hw::amd::IpBases& bases() const { return way_in_->facts().bases; }
  const hw::amd::ComputeRegisters& regs() const { return *regs_; }
  uint32_t reg_address(const hw::amd::Register& r) const { return hw::amd::address_of(r, bases()); }
  AmdInterface::Interrupt interrupt() const { return interrupt_; }
  struct Scratch {
    uint64_t base = 0;
    uint32_t tmpring = 0;  // COMPUTE_TMPRING_SIZE
  };
  Scratch scratch_for(const AmdProgram& p);  // grows the scratch area when p needs more
  void invalidate_code();                    // the instruction cache, after code was written
  Ring& ring(bool sdma) { return sdma ? *sdma_ : *compute_; }
  bool recover_queues() override;

 protected:
  hcq::Buffer alloc_memory(size_t bytes) override;
  hcq::Buffer alloc_staging(size_t bytes) override;  // the process's own pages, mapped for the GPU
  hcq::Buffer alloc_argument_memory(size_t bytes) override;
  void clear(const hcq::Buffer& b) override;
  // Through the USB bridge's SRAM windows where the way in has them (bridge_copy.cpp), else staging buffers.
  void copy_in_at(uint64_t va, std::span<const uint8_t> src) override;
  void copy_out_at(std::span<uint8_t> dst, uint64_t va) override;
  void sleep_for_progress(std::chrono::microseconds max) override;
  void on_fail() override;

 private:
  std::unique_ptr<Ring> create_ring(bool sdma, size_t bytes);
  void start_queue(Ring& r);  // the hardware queue on r's ring, its pointers from r.written
  hcq::Buffer buffer(uint64_t bytes, AmdInterface::MemoryKind kind);
  hcq::Buffer host_written(uint64_t bytes);  // memory the host writes and the GPU reads: commands, arguments
  // `ordered`: after the work before it on the timeline, which it signals (a user's copy, profiled);
  // else on a signal of its own (the driver's: fresh memory that no queued work uses).
  void bridge_copy_in(AmdInterface::BridgeMemory& b, uint64_t dst, std::span<const uint8_t> src, bool ordered);
  void bridge_copy_out(AmdInterface::BridgeMemory& b, std::span<uint8_t> dst, uint64_t src);
  void bridge_sync(AmdInterface::BridgeMemory& b);  // bridge_mu_ held
  size_t bridge_batch();                            // chunks or pieces per SDMA submission
  [[noreturn]] void bridge_failed(const Error& e);  // marks the device failed, throws
  void check_exceptions();                          // turns a reported fault into fail()
  [[noreturn]] void lost(const Error& e);           // the way in is gone (the USB bridge): fail, throw DeviceError

  std::unique_ptr<AmdInterface> way_in_;
  const hw::amd::ComputeRegisters* regs_ = nullptr;
  AmdInterface::Interrupt interrupt_;
  hcq::DeviceInfo info_;
  std::unique_ptr<Ring> compute_, sdma_;
  std::mutex scratch_mu_;
  hcq::Buffer scratch_;
  std::vector<hcq::Buffer> old_scratch_;
  uint32_t scratch_wave_bytes_ = 0;
  std::atomic<bool> queues_live_{true};
  // The bridge copies: one at a time; chunks counted across copies (the drain fence counts them); what
  // the host knows the bridge SRAM holds (it wrote or read all of it), to pick sentinels stale data cannot match.
  std::mutex bridge_mu_;
  uint32_t bridge_chunks_ = 0;
  uint8_t bridge_go_ = 0;       // the copy-out token last set
  hcq::SignalRef bridge_done_;  // the unordered copies' progress
  uint64_t bridge_done_value_ = 0;
  std::vector<uint8_t> sram_;
};

}  // namespace ugpu::amd
