#include <fcntl.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <thread>

#include "drivers/amd/internal.h"
#include "hw/amd/gfx11_regs.h"

namespace ugpu::amd {
namespace kfd = hw::amd::kfd;
namespace mem = hw::amd::kfd::mem;

namespace {
constexpr uint32_t kMinMinor = 11;  // KFD 1.11: Linux 6.1, what Debian 12 ships
const char* kTopology = "/sys/devices/virtual/kfd/kfd/topology/nodes";

std::string hex(uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}
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
}  // namespace

int Kfd::ioctl(unsigned long req, void* arg, const char* what, const std::string& hint) const {
  int r = os->ioctl(kfd.get(), req, arg);
  if (r < 0) sys::check_ioctl(r, std::string(what) + " on /dev/kfd (" + name + ")", hint);
  return r;
}

std::shared_ptr<Kfd::Memory> Kfd::alloc(uint64_t size, uint32_t flags, bool cpu) {
  size = (std::max<uint64_t>(size, 1) + 4095) / 4096 * 4096;
  auto m = std::make_shared<Memory>();
  m->size = size;
  bool userptr = flags & mem::kUserptr;
  // The GPU address is a range reserved in this process, so the CPU mapping can sit at the same address.
  void* va = os->mmap(nullptr, size, userptr ? PROT_READ | PROT_WRITE : PROT_NONE,
                      MAP_PRIVATE | MAP_ANONYMOUS | (userptr ? 0 : MAP_NORESERVE), -1, 0);
  m->va = reinterpret_cast<uint64_t>(va);
  kfd::AllocMemoryOfGpu a{};
  a.va_addr = m->va, a.size = size, a.gpu_id = gpu_id, a.flags = flags;
  if (userptr) a.mmap_offset = m->va;
  int r = os->ioctl(this->kfd.get(), kfd::kAllocMemoryOfGpu, &a);
  if (r < 0) {
    os->munmap(va, size);
    bool vram = flags & mem::kVram;
    sys::check_ioctl(r, "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU of " + std::to_string(size) + " bytes of " + (vram ? "VRAM" : "system memory") + " (" + name + ")",
                     r == -ENOMEM ? "out of GPU memory"
                     : vram && (flags & mem::kPublic) ? "host-visible VRAM needs a large BAR: enable Resizable BAR / Above 4G decoding in the firmware"
                                                        : "");
  }
  m->handle = a.handle;
  auto undo = [&] {
    kfd::FreeMemoryOfGpu f{a.handle};
    os->ioctl(this->kfd.get(), kfd::kFreeMemoryOfGpu, &f);
    os->munmap(va, size);
  };
  try {
    if (cpu && !userptr) os->mmap(va, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, render.get(), a.mmap_offset);
    kfd::MapMemoryToGpu map{a.handle, reinterpret_cast<uint64_t>(&gpu_id), 1, 0};
    ioctl(kfd::kMapMemoryToGpu, &map, "AMDKFD_IOC_MAP_MEMORY_TO_GPU");
  } catch (...) {
    undo();
    throw;
  }
  m->host = cpu ? va : nullptr;
  // Freed when the last user lets go: unmap from the GPU, drop the CPU mapping, free.
  return std::shared_ptr<Memory>(m.get(), [m, k = shared_from_this()](Memory*) {
    kfd::MapMemoryToGpu unmap{m->handle, reinterpret_cast<uint64_t>(&k->gpu_id), 1, 0};
    k->os->ioctl(k->kfd.get(), kfd::kUnmapMemoryFromGpu, &unmap);
    k->os->munmap(reinterpret_cast<void*>(m->va), m->size);
    kfd::FreeMemoryOfGpu f{m->handle};
    k->os->ioctl(k->kfd.get(), kfd::kFreeMemoryOfGpu, &f);
  });
}

uint64_t Ring::read() const {
  // The engine writes back its read pointer; hardware may keep only the offset in the ring, so the
  // count is rebuilt from the write pointer (the ring never fills completely).
  uint64_t r = *rptr / (sdma ? 4 : 1);
  return written - ((written - r) & (dwords - 1));
}
uint64_t Ring::done() const {
  uint32_t lo = static_cast<uint32_t>(retired->value());
  return written - static_cast<uint32_t>(static_cast<uint32_t>(written) - lo);
}

KfdDevice::KfdDevice(std::shared_ptr<sys::Os> os, const KfdOptions& o) : hcq::Device(o.name), kfd_(std::make_shared<Kfd>()) {
  kfd_->os = os;
  kfd_->name = o.name;
  try {
    kfd_->kfd = sys::Fd(*os, "/dev/kfd", O_RDWR);
  } catch (const sys::OsError& e) {
    if (e.err() == ENOENT)
      throw Error(o.name + ": /dev/kfd does not exist: no AMD GPU with the amdgpu kernel driver here (modprobe amdgpu; without a kernel "
                           "driver use amd:pci; without a GPU use emu:amd)");
    if (e.err() == EACCES || e.err() == EPERM)
      throw Error(o.name + ": permission denied opening /dev/kfd: add your user to the render group (sudo usermod -aG render $USER, then "
                           "log in again)");
    throw;
  }
  kfd::GetVersion v{};
  kfd_->ioctl(kfd::kGetVersion, &v, "AMDKFD_IOC_GET_VERSION");
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
  kfd_->gpu_id = static_cast<uint32_t>(std::stoul(os->read_file(node + "/gpu_id")));
  props_ = parse_properties(os->read_file(node + "/properties"));
  arch_ = arch_of(props_["gfx_target_version"]);
  try {
    codegen::find_target(arch_);
  } catch (const Error&) {
    throw Error(o.name + ": this GPU is " + arch_ + ", which ugpu's code generator does not target yet");
  }
  cu_count_ = static_cast<uint32_t>(props_["simd_count"] / std::max<uint64_t>(props_["simd_per_cu"], 1) / std::max<uint64_t>(props_["num_xcc"], 1));
  scratch_slots_ = static_cast<uint32_t>(std::max<uint64_t>(props_["max_slots_scratch_cu"], 1));
  cwsr_ = kfd::cwsr_sizes(static_cast<uint32_t>(props_["gfx_target_version"]), cu_count_);
  if ((props_.count("ctl_stack_size") && props_["ctl_stack_size"] != cwsr_.ctl_stack) || (props_.count("cwsr_size") && props_["cwsr_size"] != cwsr_.cwsr))
    throw Error(o.name + ": KFD wants a control stack of " + std::to_string(props_["ctl_stack_size"]) + " bytes and a CWSR area of " +
                std::to_string(props_["cwsr_size"]) + "; ugpu computes " + std::to_string(cwsr_.ctl_stack) + " and " + std::to_string(cwsr_.cwsr) +
                " for " + arch_ + " with " + std::to_string(cu_count_) + " CUs (a queue would be refused with EINVAL)");
  std::string render = "/dev/dri/renderD" + std::to_string(props_["drm_render_minor"]);
  kfd_->render = sys::Fd(*os, render, O_RDWR);
  std::string ip = "/sys/class/drm/renderD" + std::to_string(props_["drm_render_minor"]) + "/device/ip_discovery/die/0/";
  auto read_bases = [&](const std::string& block, uint32_t* out, size_t n) {
    std::string path = ip + block + "/0/base_addr";
    if (!os->exists(path)) return;  // older kernels: keep the defaults for this chip
    std::istringstream in(os->read_file(path));
    std::string w;
    for (size_t i = 0; i < n && in >> w; ++i) out[i] = static_cast<uint32_t>(std::stoul(w, nullptr, 16));
  };
  read_bases("GC", bases_.gc, 2);
  read_bases("NBIF", bases_.nbio, 3);

  kfd::AcquireVm vm{static_cast<uint32_t>(kfd_->render.get()), kfd_->gpu_id};
  kfd_->ioctl(kfd::kAcquireVm, &vm, "AMDKFD_IOC_ACQUIRE_VM");
  if (v.minor_version >= kfd::kMinMinorRuntimeEnable) {
    kfd::RuntimeEnable re{};
    int r = os->ioctl(kfd_->kfd.get(), kfd::kRuntimeEnable, &re);
    if (r < 0 && r != -EBUSY && r != -EEXIST) sys::check_ioctl(r, "AMDKFD_IOC_RUNTIME_ENABLE on /dev/kfd (" + o.name + ")");
  }

  // Events: the page of mailboxes, the event our signals raise, and the two that report faults.
  event_page_ = kfd_->alloc(kfd::kEventPageSize, mem::kGtt | mem::kCoherent | mem::kUncached | mem::kWritable | mem::kNoSubstitute, true);
  kfd::CreateEvent ev{};
  ev.event_page_offset = event_page_->handle, ev.event_type = kfd::kEventSignal, ev.auto_reset = 1;
  kfd_->ioctl(kfd::kCreateEvent, &ev, "AMDKFD_IOC_CREATE_EVENT");
  queue_event_ = ev.event_id;
  mailbox_ = event_page_->va + uint64_t{ev.event_slot_index} * 8;
  for (uint32_t type : {kfd::kEventMemory, kfd::kEventHwException}) {
    kfd::CreateEvent e{};
    e.event_type = type;
    kfd_->ioctl(kfd::kCreateEvent, &e, "AMDKFD_IOC_CREATE_EVENT");
    (type == kfd::kEventMemory ? memory_event_ : hw_event_) = e.event_id;
  }
  use_signal_memory([k = kfd_](size_t n) {
    auto m = k->alloc(n, mem::kGtt | mem::kCoherent | mem::kUncached | mem::kWritable | mem::kNoSubstitute, true);
    hcq::Buffer b;
    b.va = m->va, b.size = n, b.host = m->host, b.owner = m;
    return b;
  });
  compute_ = create_ring(false, o.compute_ring_bytes);
  sdma_ = create_ring(true, o.sdma_ring_bytes);

  info_.kind = o.kind;
  info_.arch = arch_ + " (" + std::to_string(cu_count_) + " CUs, device " + hex(props_["device_id"]) + ")";
  info_.interface = "kfd " + std::to_string(v.major_version) + "." + std::to_string(v.minor_version) + ", " + render;
  info_.memory = props_["local_mem_size"];
}

std::unique_ptr<Ring> KfdDevice::create_ring(bool sdma, size_t bytes) {
  const uint32_t uncached = mem::kGtt | mem::kCoherent | mem::kUncached | mem::kWritable | mem::kExecutable | mem::kNoSubstitute;
  const uint32_t vram = mem::kVram | mem::kWritable | mem::kExecutable | mem::kNoSubstitute;
  auto r = std::make_unique<Ring>();
  r->sdma = sdma;
  r->ring = kfd_->alloc(bytes, uncached, true);
  r->gart = kfd_->alloc(4096, uncached, true);
  r->words = static_cast<uint32_t*>(r->ring->host);
  r->dwords = bytes / 4;
  r->wptr = reinterpret_cast<uint64_t*>(static_cast<uint8_t*>(r->gart->host) + 56);
  r->rptr = reinterpret_cast<uint64_t*>(static_cast<uint8_t*>(r->gart->host) + 128);
  kfd::CreateQueue q{};
  q.ring_base_address = r->ring->va, q.ring_size = static_cast<uint32_t>(bytes), q.gpu_id = kfd_->gpu_id;
  q.queue_type = sdma ? kfd::kQueueSdma : kfd::kQueueCompute;
  q.queue_percentage = kfd::kMaxQueuePercentage, q.queue_priority = 7;
  q.write_pointer_address = r->gart->va + 56, q.read_pointer_address = r->gart->va + 128;
  if (!sdma) {
    r->eop = kfd_->alloc(cwsr_.eop, vram, false);
    r->cwsr = kfd_->alloc(kfd::align_up(uint64_t{cwsr_.cwsr} + cwsr_.debug_memory, 4096), vram, false);
    q.eop_buffer_address = r->eop->va, q.eop_buffer_size = cwsr_.eop;
    q.ctx_save_restore_address = r->cwsr->va, q.ctx_save_restore_size = cwsr_.cwsr, q.ctl_stack_size = cwsr_.ctl_stack;
  }
  kfd_->ioctl(kfd::kCreateQueue, &q, "AMDKFD_IOC_CREATE_QUEUE", sdma ? "creating the SDMA copy queue" : "creating the compute queue");
  r->queue_id = q.queue_id;
  if (!doorbells_.data())
    doorbells_ = sys::Mapping(*kfd_->os, kfd::kDoorbellPagesSize, PROT_READ | PROT_WRITE, MAP_SHARED, kfd_->kfd.get(),
                              q.doorbell_offset & ~(kfd::kDoorbellPagesSize - 1));
  r->doorbell = std::make_unique<sys::MappedDoorbell>(doorbells_.data() + (q.doorbell_offset & (kfd::kDoorbellPagesSize - 1)), 64,
                                                      name() + (sdma ? " SDMA doorbell" : " compute doorbell"));
  r->retired = new_signal(0);
  return r;
}

KfdDevice::~KfdDevice() {
  on_fail();  // destroys the queues: nothing runs on them past this point
}

hcq::Buffer KfdDevice::alloc_memory(size_t bytes) {
  auto m = kfd_->alloc(bytes, mem::kVram | mem::kPublic | mem::kWritable | mem::kExecutable | mem::kNoSubstitute, true);
  hcq::Buffer b;
  b.va = m->va, b.size = bytes, b.host = m->host, b.owner = m;
  return b;
}

hcq::Buffer KfdDevice::alloc_staging(size_t bytes) {
  auto m = kfd_->alloc(bytes, mem::kUserptr | mem::kWritable | mem::kExecutable | mem::kNoSubstitute, true);
  hcq::Buffer b;
  b.va = m->va, b.size = bytes, b.host = m->host, b.owner = m;
  return b;
}

std::shared_ptr<uint32_t[]> KfdDevice::command_memory(size_t dwords) {
  hcq::Buffer b = alloc(std::max<size_t>(dwords, 1) * 4);
  return std::shared_ptr<uint32_t[]>(b.owner, static_cast<uint32_t*>(b.host));
}


uint64_t KfdDevice::submit_commands(hcq::HWQueue& hq) {
  check_usable();
  auto& q = static_cast<AmdQueue&>(hq);
  Ring& r = ring(q.sdma);
  std::span<const uint32_t> cmds = q.commands();
  std::vector<uint32_t> tail;  // what follows the commands: the indirect packet of a bound queue, the retire record
  if (q.bound()) {
    q.indirect(tail, reinterpret_cast<uint64_t>(cmds.data()), cmds.size());
    cmds = {};
  }
  const size_t head = tail.size();
  q.retire(tail, 0, 0);  // sized now; written once the position is known
  const size_t n = cmds.size() + tail.size();
  if (n > r.dwords / 2)
    throw Error(name() + ": a queue of " + std::to_string(n) + " dwords does not fit the " + std::to_string(r.dwords) +
                "-dword ring; bind() it so a submit is one indirect packet");
  auto deadline = std::chrono::steady_clock::now() + default_timeout();
  uint64_t seen = r.read();
  for (bool waited = false;; waited = true) {
    {
      std::lock_guard lock(r.mu);
      uint64_t written = r.written, pos = written % r.dwords;
      size_t pad = r.sdma && pos + n > r.dwords ? r.dwords - pos : 0;  // SDMA packets never straddle the ring's end
      uint64_t end = written + pad + n;
      if (end - r.read() <= r.dwords - 1) {
        tail.resize(head);
        q.retire(tail, r.retired->address(), static_cast<uint32_t>(end));
        auto put = [&](std::span<const uint32_t> w) {
          for (size_t i = 0; i < w.size();) {
            uint64_t at = written % r.dwords, k = std::min<uint64_t>(w.size() - i, r.dwords - at);
            std::memcpy(r.words + at, w.data() + i, k * 4);
            written += k, i += k;
          }
        };
        if (pad) {
          std::vector<uint32_t> nop;
          append_nop(nop, true, pad);
          put(nop);
        }
        r.last_at = written, r.last_len = n;
        put(cmds);
        put(tail);
        r.written = written;
        if (q.kernels) r.kernels.add(end, q.kernels, r.done());
        uint64_t wptr = r.sdma ? written * 4 : written;
        __atomic_store_n(r.wptr, wptr, __ATOMIC_RELEASE);
        r.doorbell->ring(wptr);
        return (r.sdma ? uint64_t{1} << 56 : 0) | end;
      }
      if (!waited) ++r.waits;
    }
    // Back-pressure: the ring is full; wait (without the lock) for the engine to read further.
    check_exceptions();
    check_usable();
    if (r.read() != seen) seen = r.read(), deadline = std::chrono::steady_clock::now() + default_timeout();
    if (std::chrono::steady_clock::now() > deadline) {
      fail("ring full");
      throw hcq::Timeout(name() + ": waiting for space on the " + (r.sdma ? "SDMA" : "compute") + " ring: the GPU read nothing for " +
                         std::to_string(default_timeout().count()) + " ms; the device is marked failed");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

bool KfdDevice::consumed(uint64_t position) const {
  const Ring& r = position >> 56 ? *sdma_ : *compute_;
  return r.done() >= (position & ((uint64_t{1} << 56) - 1));
}

void KfdDevice::sleep_for_progress(std::chrono::microseconds max) {
  if (!queues_live_) return Device::sleep_for_progress(max);
  kfd::EventData ev[3]{};
  ev[0].event_id = queue_event_, ev[1].event_id = memory_event_, ev[2].event_id = hw_event_;
  // Sleep up to `max` (at most 10 ms at a time, so a caller's deadline is checked); 0 only looks.
  uint32_t ms = max.count() <= 0 ? 0 : static_cast<uint32_t>(std::clamp<int64_t>(max.count() / 1000, 1, 10));
  kfd::WaitEvents w{reinterpret_cast<uint64_t>(ev), 3, 0, ms, 0};
  kfd_->ioctl(kfd::kWaitEvents, &w, "AMDKFD_IOC_WAIT_EVENTS");
  if (ev[1].memory_exception.va || ev[1].memory_exception.gpu_id) {
    const auto& m = ev[1].memory_exception;
    std::string kind = m.not_present ? "an unmapped address" : m.read_only ? "a write to read-only memory" : m.no_execute ? "executing non-code memory" : "an access";
    fail("GPU page fault at " + hex(m.va) + " (" + kind + ") while running " + work_in_flight());
  } else if (ev[2].hw_exception.gpu_id) {
    fail("the GPU reported a hardware exception (a queue was reset: a malformed packet, an illegal instruction or a hang) while running " +
         work_in_flight() + "; the kernel log (dmesg; for emu:amd the emu:amd lines on stderr) says which");
  }
}

void KfdDevice::check_exceptions() { sleep_for_progress(std::chrono::microseconds(0)); }

std::string KfdDevice::work_in_flight() {
  std::lock_guard lock(compute_->mu);
  return compute_->kernels.describe(compute_->done());
}

void KfdDevice::on_fail() {
  if (!queues_live_.exchange(false)) return;
  for (Ring* r : {compute_.get(), sdma_.get()}) {
    if (!r) continue;
    kfd::DestroyQueue d{r->queue_id, 0};
    kfd_->os->ioctl(kfd_->kfd.get(), kfd::kDestroyQueue, &d);  // preempts and stops whatever runs on it
  }
}

KfdDevice::Scratch KfdDevice::scratch_for(const AmdProgram& p) {
  if (!p.scratch_per_lane) return {};
  std::lock_guard lock(scratch_mu_);
  uint32_t wave_bytes = static_cast<uint32_t>(kfd::align_up(uint64_t{p.scratch_per_lane} * 64, 256));
  uint32_t waves = scratch_slots_ * cu_count_;
  if (wave_bytes > scratch_wave_bytes_) {
    if (scratch_.owner) old_scratch_.push_back(scratch_);  // queues recorded earlier may still use it
    scratch_ = alloc(uint64_t{waves} * wave_bytes);
    scratch_wave_bytes_ = wave_bytes;
  }
  namespace t = hw::amd::gfx11::COMPUTE_TMPRING_SIZE_fields;
  return {scratch_.va, t::WAVESIZE.set(t::WAVES.set(0, waves), scratch_wave_bytes_ / 256)};
}

void KfdDevice::invalidate_code() {
  uint64_t v = next_timeline();
  auto q = make_pm4_queue(*this);
  q->wait(timeline(), v - 1).memory_barrier();
  q->invalidate_instruction_cache();
  q->signal(timeline(), v);
  q->submit();
  wait(timeline(), v, "loading a program");
}

std::shared_ptr<hcq::Program> KfdDevice::load(std::shared_ptr<const codegen::CompiledKernel> kernel) {
  if (!kernel || kernel->target->name != arch_)
    throw Error(name() + ": load needs a kernel compiled for " + arch_ + ", not " + (kernel ? std::string(kernel->target->name) : std::string("nothing")));
  return std::make_shared<AmdProgram>(*this, std::move(kernel));
}

std::unique_ptr<hcq::Device> open_kfd(std::shared_ptr<sys::Os> os, const KfdOptions& o) { return std::make_unique<KfdDevice>(std::move(os), o); }

RingSnapshot last_submission(hcq::Device& dev, bool sdma) {
  auto* k = dynamic_cast<KfdDevice*>(&dev);
  if (!k) throw Error(dev.name() + " is not an AMD KFD device");
  Ring& r = k->ring(sdma);
  std::lock_guard lock(r.mu);
  RingSnapshot s;
  s.sdma = sdma;
  for (uint64_t i = 0; i < r.last_len; ++i) s.words.push_back(r.words[(r.last_at + i) % r.dwords]);
  return s;
}

}  // namespace ugpu::amd
