// The emulated GPU's queue engines: a PM4 command processor (compute queues) and an SDMA engine (copy
// queues), each on its own thread. An engine watches its doorbell (the write pointer the driver stores
// there), reads packets from the ring through the GPU's memory, decodes them with the hw/amd tables
// and executes them: register writes, dispatches through the RDNA3 executor, waits that poll memory,
// signals, timestamps (a 100 MHz clock), copies and interrupts. Anything it cannot decode or does not
// model stops the queue with a device fault that names the packet.
#pragma once
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "emu/amd/rdna3/executor.h"
#include "emu/gpu_memory.h"
#include "hw/amd/packets.h"

namespace ugpu::emu::amd {

enum class QueueKind { Compute, Sdma };

// What every engine of one GPU shares.
struct GpuContext {
  GpuMemory& memory;
  Executor executor;
  std::mutex executor_mu;  // one dispatch at a time
  unsigned executor_threads = 0;
  hw::amd::IpBases bases;
  // Interrupt sources: an end-of-pipe / trap interrupt with its context id, a GPU page fault, and a
  // device fault (bad packet, illegal instruction) with its decoded message.
  std::function<void(uint32_t ctxid, QueueKind from)> on_interrupt;
  std::function<void(uint64_t va, Access access, const std::string& message)> on_page_fault;
  std::function<void(const std::string& message)> on_device_fault;
  std::atomic<uint64_t> dispatches{0}, wave_instructions{0}, packets{0};
  explicit GpuContext(GpuMemory& m) : memory(m) {}
  static uint64_t clock();  // the GPU clock counter: 100 MHz
};

struct QueueSetup {
  QueueKind kind;
  uint32_t id;
  uint64_t ring_va;
  uint64_t ring_bytes;
  uint64_t rptr_va, wptr_va;
  std::atomic<uint64_t>* doorbell;  // in the doorbell page; the driver stores the write pointer there
};

class QueueEngine {
 public:
  QueueEngine(GpuContext& gpu, QueueSetup s);
  ~QueueEngine();  // stops the engine (a running dispatch is interrupted) and joins its thread
  QueueEngine(const QueueEngine&) = delete;
  QueueEngine& operator=(const QueueEngine&) = delete;
  void kick();  // look at the doorbell now
  const QueueSetup& setup() const { return s_; }
  bool halted() const { return halted_; }

 private:
  void loop();
  bool step(uint64_t wptr);  // executes one packet; false when the queue halts
  bool pm4(const hw::amd::DecodedPacket& p, int depth);
  bool sdma(const hw::amd::DecodedPacket& p, int depth);
  bool run_ib(uint64_t va, uint64_t dwords, int depth);
  bool dispatch(const hw::amd::DecodedPacket& p);
  bool copy(uint64_t src, uint64_t dst, uint64_t bytes, const char* what);
  bool wait_until(const std::function<bool()>& ready);  // false if the queue is stopped meanwhile
  bool device_fault(const std::string& what);
  bool page_fault(uint64_t va, Access a, const std::string& what);
  uint8_t* at(uint64_t va, uint64_t size, Access a, const char* what);  // nullptr after reporting the fault
  uint32_t reg(uint32_t address) const;

  GpuContext& gpu_;
  QueueSetup s_;
  uint64_t rptr_ = 0;                 // PM4: dwords; SDMA: bytes — consumed, ever
  std::array<uint32_t, 0x400> sh_{};  // SET_SH_REG space (0x2c00..0x3000)
  uint32_t hdp_flush_ = 0;            // the last HDP flush request (the handshake's DONE register reads it back)
  // The packet being executed, for fault messages (text is made only when a fault happens).
  struct Where {
    bool known = false;
    uint64_t ring_dword = 0;
    const hw::amd::PacketFormat* packet = nullptr;
    uint64_t ib = 0, ib_dword = 0;  // inside an indirect buffer at `ib` (0: in the ring)
    const hw::amd::PacketFormat* ib_packet = nullptr;
  } where_;
  std::atomic<bool> stop_{false}, interrupt_{false}, halted_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool kicked_ = false;
  std::thread thread_;
};

}  // namespace ugpu::emu::amd
