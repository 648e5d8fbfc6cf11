// NVIDIA GPUs with no libcuda and no CUDA runtime (docs/nv.md): one NvDevice — GPFIFO + pushbuffer
// submission with flow control, QMD launches and copy-engine copies built from the hw/nv tables,
// programs, shader local memory — over a way in to the GPU (drivers/nv/interface.h). The way in
// today is the NVIDIA kernel module's RM and UVM ioctls (`nv`, rm/rm_gpu.h); `emu:nv` is the same
// RM path against the emulated Hopper (emu/nv/rm/rm_model.h).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "hcq/device.h"

namespace ugpu::nv {

class NvInterface;

struct NvOptions {
  std::string name = "nv";   // the device string, for messages
  int index = 0;             // which GPU (0 = the first valid card)
  std::string kind = "gpu";  // DeviceInfo::kind ("emulated gpu" for emu:nv)
  // emu:nv only: the emulated GPU executes PTX (SASS is undocumented), so programs are loaded as
  // PTX text instead of a cubin from ptxas. Never set for a real GPU: it would run the text as code.
  bool emulator_runs_ptx = false;
  uint32_t gpfifo_entries = 0x400;    // per channel
  size_t pushbuffer_bytes = 1 << 20;  // per channel, the ring unbound queues are copied into
};

// The device over an opened way in; throws Error for an architecture ugpu does not launch kernels on.
std::unique_ptr<hcq::Device> open_nv(std::unique_ptr<NvInterface> way_in, const NvOptions& o);

// Introspection for tests and `ugpu decode --nv`: the pushbuffer of the last submission on a channel,
// read back from where it ran (the ring or bound memory), so call it before newer work overwrites it.
struct PushSnapshot {
  std::vector<uint32_t> words;
  bool copy = false;
  uint32_t qmd_major = 0;                   // the QMD version the device builds
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
