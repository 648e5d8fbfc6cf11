// NVIDIA GPUs through the NVIDIA kernel module's RM and UVM ioctls (DESIGN.md §5: `nv`), with no
// libcuda and no CUDA runtime: the RM object tree (client, device, subdevice, virtual memory, a VA
// space owned by UVM, a channel group with a compute and a copy channel), memory mapped at one address
// for CPU and GPU, GPFIFO + pushbuffer submission with flow control, QMD launches and copy-engine
// copies built from the hw/nv tables. Every system call goes through the Os seam, so the same code
// drives a real GPU (PosixOs) and the emulated Hopper (`emu:nv`, emu/nv/rm/rm_model.h).
//
// Driver branches: the version is read first with structures every branch shares, then the
// per-branch ABI (570, 580, 610) is chosen; another branch is refused naming the version.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "hcq/device.h"
#include "sys/os.h"

namespace ugpu::nv {

struct NvOptions {
  std::string name = "nv";        // the device string, for messages
  int index = 0;                  // which GPU (0 = the first valid card)
  std::string kind = "gpu";       // DeviceInfo::kind ("emulated gpu" for emu:nv)
  // What the program image is: SASS in a cubin (ptxas), or PTX text (the emulated GPU runs PTX).
  bool ptx_images = false;
  uint32_t gpfifo_entries = 0x400;     // per channel
  size_t pushbuffer_bytes = 1 << 20;   // per channel, the ring unbound queues are copied into
};

// Opens the GPU; throws Error saying what is missing (no /dev/nvidiactl, permissions, an unsupported
// driver branch, a RM status named).
std::unique_ptr<hcq::Device> open_nv(std::shared_ptr<sys::Os> os, const NvOptions& o = {});

// Introspection for tests and `ugpu decode --nv`: the pushbuffer of the last submission on a channel,
// read back from where it ran (the ring or bound memory), so call it before newer work overwrites it.
struct PushSnapshot {
  std::vector<uint32_t> words;
  bool copy = false;
  uint32_t qmd_major = 0;               // the QMD version the device builds
  std::vector<std::vector<uint32_t>> qmds;  // the QMDs the submission launches (compute), in order
};
PushSnapshot last_submission(hcq::Device& dev, bool copy);

// Facts for tests and `ugpu devices`: the driver version, the ABI branch, the classes chosen.
struct NvFacts {
  std::string driver_version, abi_branch, gpu_name;
  uint32_t compute_class = 0, copy_class = 0, gpfifo_class = 0, usermode_class = 0;
  uint32_t sm_version = 0;  // 0x900 for sm_90
  uint32_t qmd_major = 0;
  uint64_t ring_waits = 0;  // submits that waited for GPFIFO or pushbuffer space (back-pressure)
};
NvFacts facts(hcq::Device& dev);

}  // namespace ugpu::nv
