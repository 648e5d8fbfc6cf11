// Qualcomm Adreno GPUs through the kgsl kernel driver, with no OpenCL or Vulkan driver (docs/qcom.md): one
// QcomDevice — a kgsl context, memory at one address for CPU and GPU, a command ring whose
// submissions are indirect buffers with back-pressure, signals written by CACHE_FLUSH_TS events,
// waits that poll memory on the CP, timestamps from the always-on counter, copies with CP_MEMCPY —
// over Kgsl (drivers/qcom/kgsl.h). `emu:qcom` is the same driver against the emulated Adreno
// (emu/qcom/kgsl_model.h).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hcq/device.h"
#include "sys/os.h"

namespace ugpu::qcom {

struct QcomOptions {
  std::string name = "qcom";    // the device string, for messages
  std::string kind = "gpu";     // DeviceInfo::kind ("emulated gpu" for emu:qcom)
  uint32_t priority = 8;        // kgsl context priority, 0 (highest) to 15
  size_t ring_bytes = 1 << 20;  // the command ring unbound queues are copied into
};

// Opens /dev/kgsl-3d0 through `os`. Throws Error when there is none, when it cannot be opened, or for
// a chip ugpu does not compile for (named, with the chips it does).
std::unique_ptr<hcq::Device> open_qcom(std::shared_ptr<sys::Os> os, const QcomOptions& o);

// The Adreno chips ugpu knows, by chip id (core.major.minor.patch, one byte each).
struct AdrenoChip {
  uint32_t id_prefix;       // core and major bytes (0x0603 for 6.3.x.x)
  const char* name;         // "a630"
  const char* target;       // the codegen target; nullptr: known but not supported
  bool sp_cs_cntl = false;  // a6xx gen 4 (LPAC): SP_CS_CNTL_0/1 repeat HLSQ_CS_CNTL_0/1
};
const AdrenoChip* find_chip(uint32_t chip_id);  // nullptr: unknown

// Facts for tests and `ugpu devices`.
struct QcomFacts {
  uint32_t chip_id = 0, gpu_id = 0, context = 0;
  std::string chip;
  uint64_t submissions = 0, ring_waits = 0;
};
QcomFacts facts(hcq::Device& dev);
// The commands of the last submission (without the driver's retire record), read back from where they
// ran (the ring or bound memory): for tests and `ugpu decode --kernel --device emu:qcom`. Call it
// before newer work overwrites them.
std::vector<uint32_t> last_submission(hcq::Device& dev);

}  // namespace ugpu::qcom
