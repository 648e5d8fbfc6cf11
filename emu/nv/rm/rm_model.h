// An emulated NVIDIA GPU behind the Os seam (`emu:nv`): a Hopper (GH100, sm_90) as nvidia.ko presents
// it — /dev/nvidiactl (RM escapes: alloc, control, free, CPU and GPU mappings, card info),
// /dev/nvidia0 (register-fd, OS-descriptor memory, the mmaps of RM memory) and /dev/nvidia-uvm (the VA
// space UVM owns: external ranges and mappings of RM memory). Escapes are size-checked and refused
// with the errno the kernel gives; allocation and control parameters are read with the driver
// branch's layouts and answered with RM status codes, as RM does. Behind them: the GPU's memory
// (every access checked), the usermode doorbell page, one thread per GPFIFO channel (emu/nv/fifo.h)
// running pushbuffers, QMDs through the PTX executor, copy-engine copies and semaphores, and errors
// reported through the channel's error notifier and the debugger object's fault report.
//
// One card per VirtualOs (one emulated process). See emu/README.md for what is modelled.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "emu/os/virtual_os.h"

namespace ugpu::emu::nv {

struct NvGpuConfig {
  std::string name = "NVIDIA H100 (emulated)";
  std::string driver_version = "580.105.08";  // what GET_BUILD_VERSION_V2 answers; it picks the struct layouts
  uint64_t vram_bytes = uint64_t{16} << 30;
  uint32_t pci_device_id = 0x2330;  // GH100 SXM5
  uint32_t gpu_id = 0x100;          // RM's gpuId (card info)
  uint32_t sm_version = 0x900;      // sm_90
  uint32_t gpcs = 2, tpcs_per_gpc = 2, sms_per_tpc = 2, max_warps_per_sm = 64;
  unsigned ptx_threads = 0;  // host threads a launch may use; 0 = all
};

struct NvGpuStats {
  uint64_t launches = 0, ptx_instructions = 0, methods = 0, gp_entries = 0, copies = 0, copy_bytes = 0;
  uint64_t objects = 0, channels = 0, vram_used = 0, gpu_mappings = 0;
};

class NvGpu {
 public:
  virtual ~NvGpu() = default;
  virtual NvGpuStats stats() const = 0;
  // What the kernel would have logged (dmesg "NVRM: Xid ..."): channel errors with the method or
  // instruction decoded, MMU faults with the address. Also written to stderr as they happen.
  virtual std::vector<std::string> log() const = 0;
  virtual const NvGpuConfig& config() const = 0;
};

// Installs the card's files into `os`; the card lives while the returned pointer or an open file of
// it does. A driver version older than every branch of hw/nv is answered with the oldest layouts.
std::shared_ptr<NvGpu> install_nv_gpu(VirtualOs& os, const NvGpuConfig& cfg = {});

}  // namespace ugpu::emu::nv
