#include "drivers/qcom/kgsl.h"

#include <fcntl.h>
#include <sys/mman.h>

#include <cerrno>
#include <vector>

namespace ugpu::qcom {
namespace kgsl = hw::qcom::kgsl;

Kgsl::Kgsl(std::shared_ptr<sys::Os> os, std::string name) : os_(std::move(os)), name_(std::move(name)) {
  if (!os_->exists(kPath))
    throw Error(name_ + ": no " + std::string(kPath) +
                ": this machine has no Adreno GPU with Qualcomm's kgsl driver (a Snapdragon board running an Android or downstream "
                "kernel; freedreno's msm driver is not supported)");
  try {
    fd_ = sys::Fd(*os_, kPath, O_RDWR);
  } catch (const sys::OsError& e) {
    if (e.err() == EACCES || e.err() == EPERM)
      throw Error(name_ + ": permission denied opening " + std::string(kPath) +
                  ": give your user read-write access to it (on Android: run as root or shell)");
    throw;
  }
  kgsl::DeviceGetProperty p{kgsl::kPropDeviceInfo, 0, reinterpret_cast<uint64_t>(&info_), sizeof info_};
  sys::check_ioctl(os_->ioctl(fd_.get(), kgsl::kDeviceGetProperty, &p), "IOCTL_KGSL_DEVICE_GETPROPERTY(DEVICE_INFO) on " + std::string(kPath));
}

Kgsl::~Kgsl() = default;

uint32_t Kgsl::create_context(uint32_t priority) {
  kgsl::DrawctxtCreate c{};
  c.flags = kgsl::kContextPreamble | kgsl::kContextNoGmemAlloc | kgsl::kContextNoFaultTolerance | kgsl::kContextPwrConstraint |
            (priority << kgsl::kContextPriorityShift & kgsl::kContextPriorityMask) |
            kgsl::kContextPreemptFinegrain << kgsl::kContextPreemptStyleShift;
  sys::check_ioctl(os_->ioctl(fd_.get(), kgsl::kDrawctxtCreate, &c), "IOCTL_KGSL_DRAWCTXT_CREATE on " + std::string(kPath) + " (" + name_ + ")");
  // The highest power level while the context lives: kernels are timed, and a GPU that clocks down
  // between submissions makes every launch slower.
  uint32_t level = kgsl::kConstraintPwrMax;
  kgsl::DeviceConstraint k{kgsl::kConstraintPwrlevel, c.drawctxt_id, reinterpret_cast<uint64_t>(&level), sizeof level};
  kgsl::DeviceGetProperty p{kgsl::kPropPwrConstraint, 0, reinterpret_cast<uint64_t>(&k), sizeof k};
  int r = os_->ioctl(fd_.get(), kgsl::kSetProperty, &p);
  if (r < 0) {
    destroy_context(c.drawctxt_id);
    sys::check_ioctl(r, "IOCTL_KGSL_SETPROPERTY(PWR_CONSTRAINT) on " + std::string(kPath) + " (" + name_ + ")");
  }
  return c.drawctxt_id;
}

void Kgsl::destroy_context(uint32_t id) noexcept {
  kgsl::DrawctxtDestroy d{id};
  os_->ioctl(fd_.get(), kgsl::kDrawctxtDestroy, &d);  // nothing to do about a failure here
}

std::shared_ptr<Kgsl::Memory> Kgsl::alloc(uint64_t bytes, bool uncached) {
  kgsl::GpuobjAlloc a{};
  a.size = (bytes + 4095) / 4096 * 4096;
  a.flags = uint64_t{12} << kgsl::kMemAlignShift | kgsl::kMemUseCpuMap | (uncached ? kgsl::kCacheModeUncached << kgsl::kCacheModeShift : 0);
  int r = os_->ioctl(fd_.get(), kgsl::kGpuobjAlloc, &a);
  if (r < 0)
    sys::check_ioctl(r, "IOCTL_KGSL_GPUOBJ_ALLOC of " + std::to_string(a.size) + " bytes on " + std::string(kPath) + " (" + name_ + ")",
                     r == -ENOMEM ? "the GPU's share of system memory is used up: free buffers (Device::trim()) or use smaller ones" : "");
  auto free_object = [self = shared_from_this(), id = a.id] {
    kgsl::GpuobjFree f{};
    f.id = id;
    self->os_->ioctl(self->fd_.get(), kgsl::kGpuobjFree, &f);
  };
  void* host;
  try {
    host = os_->mmap(nullptr, a.mmapsize, PROT_READ | PROT_WRITE, MAP_SHARED, fd_.get(), uint64_t{a.id} * 4096);
  } catch (...) {
    free_object();
    throw;
  }
  auto m = std::shared_ptr<Memory>(new Memory{reinterpret_cast<uint64_t>(host), a.mmapsize, host, a.id}, [os = os_, free_object](Memory* m) {
    os->munmap(m->host, m->size);
    free_object();
    delete m;
  });
  return m;
}

uint32_t Kgsl::submit(uint32_t context, std::initializer_list<Ib> ibs) {
  std::vector<kgsl::CommandObject> cmds;
  for (const Ib& ib : ibs) cmds.push_back({0, ib.address, ib.bytes, kgsl::kCmdlistIb, 0});
  kgsl::GpuCommand c{};
  c.cmdlist = reinterpret_cast<uint64_t>(cmds.data());
  c.cmdsize = sizeof(kgsl::CommandObject), c.numcmds = static_cast<uint32_t>(cmds.size());
  c.context_id = context;
  int r = os_->ioctl(fd_.get(), kgsl::kGpuCommand, &c);
  if (r == -EDEADLK) throw ContextReset(name_ + ": kgsl refused the submission: the context was reset after a GPU fault");
  sys::check_ioctl(r, "IOCTL_KGSL_GPU_COMMAND on " + std::string(kPath) + " (" + name_ + ")");
  return c.timestamp;
}

Kgsl::Wait Kgsl::wait(uint32_t context, uint32_t timestamp, uint32_t timeout_ms) {
  kgsl::WaitTimestampCtxtid w{context, timestamp, timeout_ms};
  int r = os_->ioctl(fd_.get(), kgsl::kWaitTimestampCtxtid, &w);
  if (r == -ETIMEDOUT || r == -EINTR || r == -EAGAIN) return Wait::TimedOut;
  if (r == -EDEADLK || r == -EPROTO || r == -EIO) return Wait::Reset;
  sys::check_ioctl(r, "IOCTL_KGSL_DEVICE_WAITTIMESTAMP_CTXTID on " + std::string(kPath) + " (" + name_ + ")");
  return Wait::Done;
}

uint32_t Kgsl::reset_status(uint32_t context) {
  uint32_t v = context;
  kgsl::DeviceGetProperty p{kgsl::kPropGpuResetStat, 0, reinterpret_cast<uint64_t>(&v), sizeof v};
  sys::check_ioctl(os_->ioctl(fd_.get(), kgsl::kDeviceGetProperty, &p), "IOCTL_KGSL_DEVICE_GETPROPERTY(GPU_RESET_STAT) on " + std::string(kPath));
  return v;
}

}  // namespace ugpu::qcom
