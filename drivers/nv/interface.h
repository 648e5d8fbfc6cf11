// How the NVIDIA driver reaches a GPU: one implementation per way in, under one NvDevice (docs/nv.md).
// rm/ implements it with the NVIDIA kernel module's RM escapes and UVM ioctls; a path with no kernel
// driver (GSP firmware over a sys::PciDevice) would be another. NvDevice owns everything above this
// line — GPFIFO and pushbuffer submission with flow control, QMD launches, the copy engine, programs,
// local memory — and asks the interface only for what differs per way in: what the GPU is, memory at
// one address for CPU and GPU, channels with their doorbell, and the faults a channel reports.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "hw/nv/methods.h"
#include "sys/mmio.h"

namespace ugpu::nv {

class NvInterface {
 public:
  virtual ~NvInterface() = default;

  // What the GPU is, read while opening it.
  struct Facts {
    std::string arch;                                                             // "sm_90"
    uint32_t sm_version = 0;                                                      // 0x900
    uint32_t gpcs = 1, tpcs_per_gpc = 1, sms_per_tpc = 1, max_warps_per_sm = 64;  // local memory is sized from these
    uint32_t compute_class = 0, copy_class = 0, gpfifo_class = 0, usermode_class = 0;
    std::string driver_version, abi_branch;  // "580.159.04", "580"
    uint32_t device_id = 0;                  // PCI device id
    uint64_t memory_bytes = 0;
    std::string interface;  // "nvidia rm 580.159.04 (branch 580), /dev/nvidia0": how it was reached
  };
  virtual const Facts& facts() const = 0;

  enum class MemoryKind : uint8_t {
    Vidmem,    // device memory, mapped for the CPU through BAR1
    VidmemWc,  // the same, write-combined for the CPU: rings the CPU only writes
    Sysmem,    // system memory the driver allocates for the GPU
    Host,      // the process's own pages, mapped for the GPU
  };
  // Mapped for the GPU at `va` (below 2^40: QMDs, pushbuffers and semaphores need that) and for the
  // CPU at `host` (the same address where the process allows). Freed when the last shared_ptr goes.
  struct Memory {
    uint64_t va = 0, size = 0;
    void* host = nullptr;
  };
  virtual std::shared_ptr<Memory> alloc(uint64_t bytes, MemoryKind kind) = 0;

  // A GPFIFO channel bound to an engine class (facts().compute_class or copy_class).
  struct ChannelSpec {
    bool copy = false;
    uint32_t engine_class = 0;
    uint32_t gpfifo_entries = 0;
  };
  struct Channel {
    uint32_t token = 0;          // what the doorbell takes to look at this channel
    uint64_t* gpfifo = nullptr;  // the GPFIFO ring, for the CPU
    uint64_t gpfifo_va = 0;
    hw::nv::Userd* userd = nullptr;
    std::shared_ptr<void> owner;  // keeps the ring and its bookkeeping alive
  };
  virtual Channel create_channel(const ChannelSpec& c) = 0;
  virtual void start_channels() = 0;          // after every channel is made: the GPU starts fetching
  virtual void stop_channels() noexcept = 0;  // stops them and whatever runs on them; called once
  virtual sys::Doorbell& doorbell() = 0;

  // A channel that stopped on an error, with the MMU fault behind it when there is one.
  struct Fault {
    std::string what;  // "GPU MMU fault at 0x10000 (write of an unmapped address)" or the channel's error
    std::string hint;  // what follows the kernel names in the device's message
  };
  virtual std::optional<Fault> check_faults() = 0;
};

}  // namespace ugpu::nv
