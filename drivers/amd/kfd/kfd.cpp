// The KFD way in: opening /dev/kfd (version, topology, IP discovery, the VM, events), memory through
// ALLOC/MAP_MEMORY_TO_GPU at one address for CPU and GPU, queues through CREATE_QUEUE with the EOP
// and CWSR areas the kernel's formula asks for, and waits on KFD events (the signal event, memory and
// hardware exceptions).
#include "drivers/amd/kfd/kfd.h"

#include <fcntl.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <sstream>
#include <vector>

#include "codegen/target.h"
#include "common/hex.h"
#include "hw/amd/kfd.h"

namespace ugpu::amd {
namespace kfd = hw::amd::kfd;
namespace mem = hw::amd::kfd::mem;

namespace {
constexpr uint32_t kMinMinor = 11;  // KFD 1.11: Linux 6.1, what Debian 12 ships
const char* kTopology = "/sys/devices/virtual/kfd/kfd/topology/nodes";

std::map<std::string, uint64_t> parse_properties(const std::string& text) {
  std::map<std::string, uint64_t> out;
  std::istringstream in(text);
  std::string key;
  uint64_t v;
  while (in >> key >> v) out[key] = v;
  return out;
}
std::string arch_of(uint64_t gfxv) {  // 110000 -> gfx1100, 90010 -> gfx90a
  std::ostringstream s;
  s << "gfx" << gfxv / 10000 << std::hex << (gfxv / 100) % 100 << gfxv % 100;
  return s.str();
}

// The open /dev/kfd and render node. Shared with every allocation's deleter, so memory freed after
// the interface is gone still goes back through the same fds.
struct Fds {
  std::shared_ptr<sys::Os> os;
  sys::Fd kfd, render;
  uint32_t gpu_id = 0;
  std::string name;
  int ioctl(unsigned long req, void* arg, const char* what, const std::string& hint = {}) const {
    int r = os->ioctl(kfd.get(), req, arg);
    if (r < 0) sys::check_ioctl(r, std::string(what) + " on /dev/kfd (" + name + ")", hint);
    return r;
  }
};

// Freed when the last user lets go: unmapped from the GPU, the CPU mapping dropped, freed.
struct KfdMemory : AmdInterface::Memory {
  uint64_t handle = 0;
  std::shared_ptr<Fds> fds;
  ~KfdMemory() {
    kfd::MapMemoryToGpu unmap{handle, reinterpret_cast<uint64_t>(&fds->gpu_id), 1, 0};
    fds->os->ioctl(fds->kfd.get(), kfd::kUnmapMemoryFromGpu, &unmap);
    fds->os->munmap(reinterpret_cast<void*>(va), size);
    kfd::FreeMemoryOfGpu f{handle};
    fds->os->ioctl(fds->kfd.get(), kfd::kFreeMemoryOfGpu, &f);
  }
};

uint32_t flags_of(AmdInterface::MemoryKind kind) {
  using K = AmdInterface::MemoryKind;
  switch (kind) {
    case K::Vram: return mem::kVram | mem::kPublic | mem::kWritable | mem::kExecutable | mem::kNoSubstitute;
    case K::VramPrivate: return mem::kVram | mem::kWritable | mem::kExecutable | mem::kNoSubstitute;
    case K::Uncached:
    case K::Signals: return mem::kGtt | mem::kCoherent | mem::kUncached | mem::kWritable | mem::kExecutable | mem::kNoSubstitute;
    case K::Userptr: return mem::kUserptr | mem::kWritable | mem::kExecutable | mem::kNoSubstitute;
  }
  return 0;
}

class KfdInterface final : public AmdInterface {
 public:
  KfdInterface(std::shared_ptr<sys::Os> os, const AmdOptions& o);
  ~KfdInterface() override { stop_queues(); }

  const Facts& facts() const override { return facts_; }
  std::shared_ptr<Memory> alloc(uint64_t bytes, MemoryKind kind) override;
  Queue create_queue(const QueueSpec& q) override;
  void stop_queues() noexcept override;
  Interrupt interrupt() const override { return {mailbox_, queue_event_}; }
  std::optional<Fault> wait_for_progress(std::chrono::microseconds max) override;

 private:
  // KFD memory: a reserved range, ALLOC at that address, a render-node MAP_FIXED mmap so CPU VA ==
  // GPU VA, then MAP_MEMORY_TO_GPU. The handle is KFD's, for the event page.
  std::shared_ptr<Memory> alloc_flags(uint64_t bytes, uint32_t flags, bool cpu, uint64_t* handle = nullptr);

  std::shared_ptr<Fds> fds_ = std::make_shared<Fds>();
  Facts facts_;
  kfd::CwsrSizes cwsr_{};
  std::shared_ptr<Memory> event_page_;
  uint32_t queue_event_ = 0, memory_event_ = 0, hw_event_ = 0;
  uint64_t mailbox_ = 0;
  sys::Mapping doorbells_;
  std::vector<uint32_t> queue_ids_;
  std::vector<std::shared_ptr<Memory>> queue_areas_;  // EOP and CWSR areas, freed after the queues
  bool live_ = true;
};

KfdInterface::KfdInterface(std::shared_ptr<sys::Os> os, const AmdOptions& o) {
  Fds& f = *fds_;
  f.os = os;
  f.name = o.name;
  try {
    f.kfd = sys::Fd(*os, "/dev/kfd", O_RDWR);
  } catch (const sys::OsError& e) {
    if (e.err() == ENOENT)
      throw Error(o.name +
                  ": /dev/kfd does not exist: no AMD GPU with the amdgpu kernel driver here (modprobe amdgpu, or use amd:pci, "
                  "which needs no kernel driver; without a GPU use emu:amd)");
    if (e.err() == EACCES || e.err() == EPERM)
      throw Error(o.name +
                  ": permission denied opening /dev/kfd: add your user to the render group (sudo usermod -aG render $USER, then "
                  "log in again)");
    throw;
  }
  kfd::GetVersion v{};
  f.ioctl(kfd::kGetVersion, &v, "AMDKFD_IOC_GET_VERSION");
  if (v.major_version != 1 || v.minor_version < kMinMinor)
    throw Error(o.name + ": the kernel's KFD interface is " + std::to_string(v.major_version) + "." + std::to_string(v.minor_version) +
                "; ugpu supports 1." + std::to_string(kMinMinor) + " to 1.x (Linux 6.1 or newer)");

  // Topology: the index-th node that is a GPU.
  std::vector<std::string> nodes;
  for (const std::string& n : os->listdir(kTopology))
    if (std::stoul(os->read_file(std::string(kTopology) + "/" + n + "/gpu_id")) != 0) nodes.push_back(n);
  if (o.index < 0 || static_cast<size_t>(o.index) >= nodes.size())
    throw Error(o.name + ": KFD lists " + std::to_string(nodes.size()) + " GPUs; there is no GPU " + std::to_string(o.index));
  std::string node = std::string(kTopology) + "/" + nodes[static_cast<size_t>(o.index)];
  f.gpu_id = static_cast<uint32_t>(std::stoul(os->read_file(node + "/gpu_id")));
  std::map<std::string, uint64_t> props = parse_properties(os->read_file(node + "/properties"));
  facts_.gfx_target_version = static_cast<uint32_t>(props["gfx_target_version"]);
  facts_.arch = arch_of(facts_.gfx_target_version);
  try {
    codegen::find_target(facts_.arch);
  } catch (const Error&) { throw Error(o.name + ": this GPU is " + facts_.arch + ", which ugpu's code generator does not target yet"); }
  facts_.cu_count =
      static_cast<uint32_t>(props["simd_count"] / std::max<uint64_t>(props["simd_per_cu"], 1) / std::max<uint64_t>(props["num_xcc"], 1));
  facts_.scratch_slots = static_cast<uint32_t>(std::max<uint64_t>(props["max_slots_scratch_cu"], 1));
  facts_.vram_bytes = props["local_mem_size"];
  facts_.chip = "device " + hex(props["device_id"]);
  cwsr_ = kfd::cwsr_sizes(facts_.gfx_target_version, facts_.cu_count);
  if ((props.count("ctl_stack_size") && props["ctl_stack_size"] != cwsr_.ctl_stack) || (props.count("cwsr_size") && props["cwsr_size"] != cwsr_.cwsr))
    throw Error(o.name + ": KFD wants a control stack of " + std::to_string(props["ctl_stack_size"]) + " bytes and a CWSR area of " +
                std::to_string(props["cwsr_size"]) + "; ugpu computes " + std::to_string(cwsr_.ctl_stack) + " and " + std::to_string(cwsr_.cwsr) +
                " for " + facts_.arch + " with " + std::to_string(facts_.cu_count) + " CUs (a queue would be refused with EINVAL)");
  std::string render = "/dev/dri/renderD" + std::to_string(props["drm_render_minor"]);
  f.render = sys::Fd(*os, render, O_RDWR);
  std::string ip = "/sys/class/drm/renderD" + std::to_string(props["drm_render_minor"]) + "/device/ip_discovery/die/0/";
  auto read_bases = [&](const std::string& block, uint32_t* out, size_t n) {
    std::string path = ip + block + "/0/base_addr";
    if (!os->exists(path)) return;  // older kernels: keep the defaults for this chip
    std::istringstream in(os->read_file(path));
    std::string w;
    for (size_t i = 0; i < n && in >> w; ++i) out[i] = static_cast<uint32_t>(std::stoul(w, nullptr, 16));
  };
  read_bases("GC", facts_.bases[hw::amd::Ip::GC].data(), 2);
  read_bases("NBIF", facts_.bases[hw::amd::Ip::NBIO].data(), 3);
  facts_.interface = "kfd " + std::to_string(v.major_version) + "." + std::to_string(v.minor_version) + ", " + render;

  kfd::AcquireVm vm{static_cast<uint32_t>(f.render.get()), f.gpu_id};
  f.ioctl(kfd::kAcquireVm, &vm, "AMDKFD_IOC_ACQUIRE_VM");
  if (v.minor_version >= kfd::kMinMinorRuntimeEnable) {
    kfd::RuntimeEnable re{};
    int r = os->ioctl(f.kfd.get(), kfd::kRuntimeEnable, &re);
    if (r < 0 && r != -EBUSY && r != -EEXIST) sys::check_ioctl(r, "AMDKFD_IOC_RUNTIME_ENABLE on /dev/kfd (" + o.name + ")");
  }

  // Events: the page of mailboxes, the event our signals raise, and the two that report faults.
  uint64_t page_handle = 0;
  event_page_ = alloc_flags(kfd::kEventPageSize, flags_of(MemoryKind::Uncached) & ~mem::kExecutable, true, &page_handle);
  kfd::CreateEvent ev{};
  ev.event_page_offset = page_handle, ev.event_type = kfd::kEventSignal, ev.auto_reset = 1;
  f.ioctl(kfd::kCreateEvent, &ev, "AMDKFD_IOC_CREATE_EVENT");
  queue_event_ = ev.event_id;
  mailbox_ = event_page_->va + uint64_t{ev.event_slot_index} * 8;
  for (uint32_t type : {kfd::kEventMemory, kfd::kEventHwException}) {
    kfd::CreateEvent e{};
    e.event_type = type;
    f.ioctl(kfd::kCreateEvent, &e, "AMDKFD_IOC_CREATE_EVENT");
    (type == kfd::kEventMemory ? memory_event_ : hw_event_) = e.event_id;
  }
}

std::shared_ptr<AmdInterface::Memory> KfdInterface::alloc(uint64_t bytes, MemoryKind kind) {
  return alloc_flags(bytes, flags_of(kind), kind != MemoryKind::VramPrivate);
}

std::shared_ptr<AmdInterface::Memory> KfdInterface::alloc_flags(uint64_t bytes, uint32_t flags, bool cpu, uint64_t* handle) {
  Fds& f = *fds_;
  const uint64_t size = (std::max<uint64_t>(bytes, 1) + 4095) / 4096 * 4096;
  bool userptr = flags & mem::kUserptr;
  // The GPU address is a range reserved in this process, so the CPU mapping can sit at the same address.
  void* va =
      f.os->mmap(nullptr, size, userptr ? PROT_READ | PROT_WRITE : PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | (userptr ? 0 : MAP_NORESERVE), -1, 0);
  kfd::AllocMemoryOfGpu a{};
  a.va_addr = reinterpret_cast<uint64_t>(va), a.size = size, a.gpu_id = f.gpu_id, a.flags = flags;
  if (userptr) a.mmap_offset = a.va_addr;
  int r = f.os->ioctl(f.kfd.get(), kfd::kAllocMemoryOfGpu, &a);
  if (r < 0) {
    f.os->munmap(va, size);
    bool vram = flags & mem::kVram;
    sys::check_ioctl(
        r, "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU of " + std::to_string(size) + " bytes of " + (vram ? "VRAM" : "system memory") + " (" + f.name + ")",
        r == -ENOMEM                     ? "out of GPU memory"
        : vram && (flags & mem::kPublic) ? "host-visible VRAM needs a large BAR: enable Resizable BAR / Above 4G decoding in the firmware"
                                         : "");
  }
  auto undo = [&] {
    kfd::FreeMemoryOfGpu fr{a.handle};
    f.os->ioctl(f.kfd.get(), kfd::kFreeMemoryOfGpu, &fr);
    f.os->munmap(va, size);
  };
  try {
    if (cpu && !userptr) f.os->mmap(va, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, f.render.get(), a.mmap_offset);
    kfd::MapMemoryToGpu map{a.handle, reinterpret_cast<uint64_t>(&f.gpu_id), 1, 0};
    f.ioctl(kfd::kMapMemoryToGpu, &map, "AMDKFD_IOC_MAP_MEMORY_TO_GPU");
  } catch (...) {
    undo();
    throw;
  }
  if (handle) *handle = a.handle;
  auto m = std::make_shared<KfdMemory>();
  m->va = reinterpret_cast<uint64_t>(va), m->size = size, m->host = cpu ? va : nullptr;
  m->handle = a.handle, m->fds = fds_;
  return m;
}

AmdInterface::Queue KfdInterface::create_queue(const QueueSpec& s) {
  Fds& f = *fds_;
  kfd::CreateQueue q{};
  q.ring_base_address = s.ring->va, q.ring_size = static_cast<uint32_t>(s.ring->size), q.gpu_id = f.gpu_id;
  q.queue_type = s.sdma ? kfd::kQueueSdma : kfd::kQueueCompute;
  q.queue_percentage = kfd::kMaxQueuePercentage, q.queue_priority = 7;
  q.write_pointer_address = s.wptr_va, q.read_pointer_address = s.rptr_va;
  if (!s.sdma) {
    auto eop = alloc(cwsr_.eop, MemoryKind::VramPrivate);
    auto cwsr = alloc(kfd::align_up(uint64_t{cwsr_.cwsr} + cwsr_.debug_memory, 4096), MemoryKind::VramPrivate);
    q.eop_buffer_address = eop->va, q.eop_buffer_size = cwsr_.eop;
    q.ctx_save_restore_address = cwsr->va, q.ctx_save_restore_size = cwsr_.cwsr, q.ctl_stack_size = cwsr_.ctl_stack;
    queue_areas_.insert(queue_areas_.end(), {eop, cwsr});
  }
  f.ioctl(kfd::kCreateQueue, &q, "AMDKFD_IOC_CREATE_QUEUE", s.sdma ? "creating the SDMA copy queue" : "creating the compute queue");
  queue_ids_.push_back(q.queue_id);
  if (!doorbells_.data())
    doorbells_ = sys::Mapping(*f.os, kfd::kDoorbellPagesSize, PROT_READ | PROT_WRITE, MAP_SHARED, f.kfd.get(),
                              q.doorbell_offset & ~(kfd::kDoorbellPagesSize - 1));
  Queue out;
  out.id = q.queue_id;
  out.doorbell = std::make_unique<sys::MappedDoorbell>(doorbells_.data() + (q.doorbell_offset & (kfd::kDoorbellPagesSize - 1)), 64,
                                                       f.name + (s.sdma ? " SDMA doorbell" : " compute doorbell"));
  return out;
}

void KfdInterface::stop_queues() noexcept {
  if (!live_) return;
  live_ = false;
  for (uint32_t id : queue_ids_) {
    kfd::DestroyQueue d{id, 0};
    fds_->os->ioctl(fds_->kfd.get(), kfd::kDestroyQueue, &d);  // preempts and stops whatever runs on it
  }
}

std::optional<AmdInterface::Fault> KfdInterface::wait_for_progress(std::chrono::microseconds max) {
  kfd::EventData ev[3]{};
  ev[0].event_id = queue_event_, ev[1].event_id = memory_event_, ev[2].event_id = hw_event_;
  // Sleep up to `max` (at most 10 ms at a time, so a caller's deadline is checked); 0 only looks.
  uint32_t ms = max.count() <= 0 ? 0 : static_cast<uint32_t>(std::clamp<int64_t>(max.count() / 1000, 1, 10));
  kfd::WaitEvents w{reinterpret_cast<uint64_t>(ev), 3, 0, ms, 0};
  fds_->ioctl(kfd::kWaitEvents, &w, "AMDKFD_IOC_WAIT_EVENTS");
  if (ev[1].memory_exception.va || ev[1].memory_exception.gpu_id) {
    const auto& m = ev[1].memory_exception;
    std::string kind = m.not_present  ? "an unmapped address"
                       : m.read_only  ? "a write to read-only memory"
                       : m.no_execute ? "executing non-code memory"
                                      : "an access";
    return Fault{"GPU page fault at " + hex(m.va) + " (" + kind + ")",
                 "the kernel log (dmesg; for emu:amd the emu:amd lines on stderr) names the instruction, wave and PC"};
  }
  if (ev[2].hw_exception.gpu_id)
    return Fault{
        "the GPU reported a hardware exception (a queue was reset: a malformed packet, an illegal instruction, an LDS or scratch "
        "access out of range, or a hang)",
        "the kernel log (dmesg; for emu:amd the emu:amd lines on stderr) says which"};
  return std::nullopt;
}

}  // namespace

std::unique_ptr<AmdInterface> open_kfd_interface(std::shared_ptr<sys::Os> os, const AmdOptions& o) {
  return std::make_unique<KfdInterface>(std::move(os), o);
}

std::unique_ptr<hcq::Device> open_kfd(std::shared_ptr<sys::Os> os, const AmdOptions& o) { return open_amd(open_kfd_interface(std::move(os), o), o); }

}  // namespace ugpu::amd
