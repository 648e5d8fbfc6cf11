#include "emu/amd/kfd/kfd_model.h"

#include <fcntl.h>
#include <sys/mman.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>

#include "common/hex.h"
#include "emu/amd/engines.h"
#include "emu/amd/kfd/kfd_memory.h"
#include "hw/amd/kfd.h"

namespace ugpu::emu::amd {
namespace kfd = hw::amd::kfd;

namespace {
constexpr uint64_t kUnsignaled = ~uint64_t{0};  // an event mailbox slot nobody has written
constexpr int kMmapTypeShift = 62, kMmapGpuShift = 46;
constexpr uint64_t kMmapDoorbell = 3, kBufferOffsetShift = 40;  // render-node offsets: allocation id << 40
constexpr uint32_t kNonSignalEventBase = 0x80000000u;

bool mapped_exactly(const std::shared_ptr<Allocation>& a, uint64_t va, uint64_t size) {
  return a && a->mapped && a->va == va / 4096 * 4096 && (size == 0 || a->size == size);
}

class Card : public KfdGpu, public std::enable_shared_from_this<Card> {
 public:
  Card(VirtualOs& os, const GpuConfig& cfg) : os_(os), cfg_(cfg), gpu_memory_(cfg.vram_bytes), memory_(gpu_memory_), ctx_(gpu_memory_) {
    ctx_.executor_threads = cfg.executor_threads;
    ctx_.on_interrupt = [this](uint32_t id, QueueKind) { interrupt(id); };
    ctx_.on_page_fault = [this](uint64_t va, Access a, const std::string& m) { page_fault(va, a, m); };
    ctx_.on_device_fault = [this](const std::string& m) { device_fault(m); };
    void* d = ::mmap(nullptr, kfd::kDoorbellPagesSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (d == MAP_FAILED) throw Error("emu:amd: cannot allocate the doorbell pages");
    doorbells_ = static_cast<uint8_t*>(d);
    sizes_ = kfd::cwsr_sizes(cfg.gfx_target_version, cfg.cu_count());
  }
  ~Card() override {
    queues_.clear();  // engines stop before the memory goes
    ::munmap(doorbells_, kfd::kDoorbellPagesSize);
  }

  GpuStats stats() const override {
    std::lock_guard lock(mu_);
    GpuStats s;
    s.dispatches = ctx_.dispatches, s.wave_instructions = ctx_.wave_instructions, s.packets = ctx_.packets;
    s.interrupts = interrupts_, s.queues = queues_.size(), s.allocations = allocations_, s.vram_used = gpu_memory_.vram_used();
    return s;
  }
  std::vector<std::string> log() const override {
    std::lock_guard lock(mu_);
    return log_;
  }
  const GpuConfig& config() const override { return cfg_; }

  std::string render_path() const { return "/dev/dri/renderD" + std::to_string(cfg_.render_minor); }
  int ioctl(unsigned long request, void* arg);
  void* mmap_kfd(uint64_t offset, size_t len);
  void* map_buffer(void* addr, uint64_t offset, size_t len, int prot, int flags);

 private:
  struct Event {
    uint32_t type = 0;
    bool auto_reset = false, signaled = false;
    kfd::MemoryExceptionData memory{};
    kfd::HwExceptionData hw{};
  };
  struct Queue {
    std::unique_ptr<QueueEngine> engine;
    std::vector<std::shared_ptr<Allocation>> buffers;  // held against FREE_MEMORY_OF_GPU (EBUSY)
    uint32_t doorbell_slot;
  };
  template <class T, class F>
  int with_args(unsigned long request, void* arg, F f);
  int create_queue(kfd::CreateQueue& a);
  int create_event(kfd::CreateEvent& a);
  int wait_events(kfd::WaitEvents& a);
  int alloc(kfd::AllocMemoryOfGpu& a);
  int map(kfd::MapMemoryToGpu& a, bool mapped);
  void interrupt(uint32_t ctxid);
  void page_fault(uint64_t va, Access a, const std::string& message);
  void device_fault(const std::string& message);
  void add_log(const std::string& m) {
    std::lock_guard lock(mu_);
    log_.push_back(m);
  }

  VirtualOs& os_;
  GpuConfig cfg_;
  kfd::CwsrSizes sizes_;
  GpuMemory gpu_memory_;  // pages and GPU mappings
  KfdMemory memory_;      // KFD allocations over them
  GpuContext ctx_;
  uint8_t* doorbells_;
  mutable std::mutex mu_;
  std::condition_variable events_cv_;
  std::atomic<bool> vm_acquired_{false};  // read by every ioctl, without the lock
  bool runtime_enabled_ = false;
  std::string drm_path_;
  std::map<uint32_t, Queue> queues_;
  uint32_t next_queue_ = 0;
  std::map<uint32_t, Event> events_;
  uint32_t next_signal_event_ = 1, next_other_event_ = kNonSignalEventBase;
  std::shared_ptr<Allocation> event_page_;
  uint64_t interrupts_ = 0, allocations_ = 0;
  std::vector<std::string> log_;
};

template <class T, class F>
int Card::with_args(unsigned long request, void* arg, F f) {
  // As amdkfd: copy in what the caller's size covers (the rest is zero), call, copy out.
  T a{};
  size_t n = std::min<size_t>(_IOC_SIZE(request), sizeof(T));
  if (!arg && n) return -EFAULT;
  if (_IOC_DIR(request) & _IOC_WRITE) std::memcpy(&a, arg, n);
  int r = f(a);
  if (_IOC_DIR(request) & _IOC_READ) std::memcpy(arg, &a, n);
  return r;
}

int Card::ioctl(unsigned long request, void* arg) {
  uint32_t nr = _IOC_NR(request);
  uint32_t end = cfg_.kfd_minor >= kfd::kMinMinorRuntimeEnable ? kfd::kCommandEnd : 0x24;
  if (_IOC_TYPE(request) != kfd::kIocType || nr < 1 || nr >= end) return -EINVAL;
  const int no_vm = vm_acquired_ ? 0 : -EINVAL;  // memory and queues need ACQUIRE_VM first
  switch (nr) {
    case _IOC_NR(kfd::kGetVersion):
      return with_args<kfd::GetVersion>(request, arg, [&](kfd::GetVersion& a) {
        a.major_version = cfg_.kfd_major, a.minor_version = cfg_.kfd_minor;
        return 0;
      });
    case _IOC_NR(kfd::kAcquireVm):
      return with_args<kfd::AcquireVm>(request, arg, [&](kfd::AcquireVm& a) {
        if (a.gpu_id != cfg_.gpu_id) return -EINVAL;
        std::string path = os_.fd_path(static_cast<int>(a.drm_fd));
        if (path != render_path()) return -EINVAL;  // not a render node of this GPU
        std::lock_guard lock(mu_);
        if (vm_acquired_) return drm_path_ == path ? 0 : -EBUSY;
        vm_acquired_ = true, drm_path_ = path;
        return 0;
      });
    case _IOC_NR(kfd::kRuntimeEnable):
      return with_args<kfd::RuntimeEnable>(request, arg, [&](kfd::RuntimeEnable&) {
        std::lock_guard lock(mu_);
        if (runtime_enabled_) return -EBUSY;
        if (!queues_.empty()) return -EEXIST;
        runtime_enabled_ = true;
        return 0;
      });
    case _IOC_NR(kfd::kAllocMemoryOfGpu):
      return with_args<kfd::AllocMemoryOfGpu>(request, arg, [&](kfd::AllocMemoryOfGpu& a) { return no_vm ? no_vm : alloc(a); });
    case _IOC_NR(kfd::kFreeMemoryOfGpu):
      return with_args<kfd::FreeMemoryOfGpu>(request, arg, [&](kfd::FreeMemoryOfGpu& a) {
        if (event_page_ && event_page_->handle == a.handle) return -EBUSY;
        return memory_.free(a.handle);
      });
    case _IOC_NR(kfd::kMapMemoryToGpu): return with_args<kfd::MapMemoryToGpu>(request, arg, [&](kfd::MapMemoryToGpu& a) { return map(a, true); });
    case _IOC_NR(kfd::kUnmapMemoryFromGpu):
      return with_args<kfd::MapMemoryToGpu>(request, arg, [&](kfd::MapMemoryToGpu& a) { return map(a, false); });
    case _IOC_NR(kfd::kCreateQueue):
      return with_args<kfd::CreateQueue>(request, arg, [&](kfd::CreateQueue& a) { return no_vm ? no_vm : create_queue(a); });
    case _IOC_NR(kfd::kDestroyQueue):
      return with_args<kfd::DestroyQueue>(request, arg, [&](kfd::DestroyQueue& a) {
        Queue q;
        {
          std::lock_guard lock(mu_);
          auto it = queues_.find(a.queue_id);
          if (it == queues_.end()) return -EINVAL;
          q = std::move(it->second);
          queues_.erase(it);
        }
        q.engine.reset();  // stops it; a dispatch in flight is interrupted (the queue is preempted)
        for (auto& b : q.buffers) --b->queue_refs;
        return 0;
      });
    case _IOC_NR(kfd::kCreateEvent): return with_args<kfd::CreateEvent>(request, arg, [&](kfd::CreateEvent& a) { return create_event(a); });
    case _IOC_NR(kfd::kDestroyEvent):
      return with_args<kfd::DestroyEvent>(request, arg, [&](kfd::DestroyEvent& a) {
        std::lock_guard lock(mu_);
        return events_.erase(a.event_id) ? 0 : -EINVAL;
      });
    case _IOC_NR(kfd::kWaitEvents): return with_args<kfd::WaitEvents>(request, arg, [&](kfd::WaitEvents& a) { return wait_events(a); });
    default: return -EOPNOTSUPP;  // a real ioctl the model does not implement (see emu/README.md)
  }
}

int Card::alloc(kfd::AllocMemoryOfGpu& a) {
  if (a.gpu_id != cfg_.gpu_id) return -EINVAL;
  int err;
  auto m = memory_.allocate(a.va_addr, a.size, a.flags, a.mmap_offset, cfg_.gpu_id, err);
  if (!m) return err;
  a.handle = m->handle;
  a.mmap_offset = (m->flags & kfd::mem::kUserptr) ? a.mmap_offset : (m->handle & 0xffffffffu) << kBufferOffsetShift;
  std::lock_guard lock(mu_);
  ++allocations_;
  return 0;
}

int Card::map(kfd::MapMemoryToGpu& a, bool mapped) {
  if (!a.device_ids_array_ptr || a.n_devices == 0 || a.n_success > a.n_devices) return -EINVAL;
  const auto* ids = reinterpret_cast<const uint32_t*>(a.device_ids_array_ptr);
  for (uint32_t i = a.n_success; i < a.n_devices; ++i)
    if (ids[i] != cfg_.gpu_id) return -EINVAL;
  if (int r = memory_.set_mapped(a.handle, mapped)) return r;
  a.n_success = a.n_devices;
  return 0;
}

int Card::create_queue(kfd::CreateQueue& a) {
  // set_queue_properties_from_user, then kfd_queue_acquire_buffers (Linux 6.12).
  if ((a.queue_percentage & 0xff) > kfd::kMaxQueuePercentage || a.queue_priority > kfd::kMaxQueuePriority) return -EINVAL;
  if (a.ring_size && (a.ring_size & (a.ring_size - 1))) return -EINVAL;
  if (!a.read_pointer_address || !a.write_pointer_address) return -EFAULT;
  if (a.gpu_id != cfg_.gpu_id) return -EINVAL;
  QueueKind kind;
  if (a.queue_type == kfd::kQueueCompute) kind = QueueKind::Compute;
  else if (a.queue_type == kfd::kQueueSdma) kind = QueueKind::Sdma;
  else if (a.queue_type == kfd::kQueueComputeAql) return -EOPNOTSUPP;  // AQL queues are not modelled
  else return -EINVAL;
  uint64_t ring_size = std::max<uint64_t>(a.ring_size, kfd::kMinQueueRingSize);
  Queue q;
  auto hold = [&](uint64_t va, uint64_t size) {
    auto m = memory_.containing(va);
    if (!mapped_exactly(m, va, size)) return false;
    q.buffers.push_back(m);
    return true;
  };
  if (!hold(a.write_pointer_address, 4096) || !hold(a.read_pointer_address, 4096) || !hold(a.ring_base_address, ring_size)) return -EINVAL;
  if (kind == QueueKind::Compute) {
    if (a.eop_buffer_address && (a.eop_buffer_size < sizes_.eop || !hold(a.eop_buffer_address, kfd::align_up(a.eop_buffer_size, 4096))))
      return -EINVAL;
    if (a.ctl_stack_size != sizes_.ctl_stack || a.ctx_save_restore_size < sizes_.cwsr) return -EINVAL;
    if (!hold(a.ctx_save_restore_address, kfd::align_up(uint64_t{a.ctx_save_restore_size} + sizes_.debug_memory, 4096))) return -EINVAL;
  }
  std::lock_guard lock(mu_);
  uint32_t slot = 0;
  for (bool used = true; used && slot < kfd::kDoorbellPagesSize / 8; slot += used) {
    used = false;
    for (auto& [id, other] : queues_) used |= other.doorbell_slot == slot;
  }
  if (slot >= kfd::kDoorbellPagesSize / 8) return -ENOMEM;
  auto* bell = reinterpret_cast<std::atomic<uint64_t>*>(doorbells_ + slot * 8);
  bell->store(0);
  for (auto& b : q.buffers) ++b->queue_refs;
  a.queue_id = next_queue_++;
  q.doorbell_slot = slot;
  q.engine = std::make_unique<QueueEngine>(
      ctx_, QueueSetup{kind, a.queue_id, a.ring_base_address, ring_size, a.read_pointer_address, a.write_pointer_address, bell});
  a.doorbell_offset = kMmapDoorbell << kMmapTypeShift | uint64_t{cfg_.gpu_id} << kMmapGpuShift | uint64_t{slot} * 8;
  queues_.emplace(a.queue_id, std::move(q));
  return 0;
}

int Card::create_event(kfd::CreateEvent& a) {
  std::lock_guard lock(mu_);
  if (a.event_page_offset) {
    if (event_page_) return -EINVAL;  // the event page is set once per process
    auto page = memory_.find(a.event_page_offset);
    if (!page || page->size < kfd::kEventPageSize) return -EINVAL;
    event_page_ = page;
    for (uint64_t i = 0; i < kfd::kSignalEventLimit; ++i) std::memcpy(event_page_->pages->host + i * 8, &kUnsignaled, 8);
  }
  Event e;
  e.type = a.event_type;
  e.auto_reset = a.auto_reset;
  if (a.event_type == kfd::kEventSignal) {
    if (!event_page_) return -EINVAL;  // the model needs the runtime's event page (see emu/README.md)
    if (next_signal_event_ >= kfd::kSignalEventLimit) return -ENOSPC;
    a.event_id = a.event_slot_index = next_signal_event_++;
    a.event_trigger_data = a.event_id;
  } else if (a.event_type == kfd::kEventMemory || a.event_type == kfd::kEventHwException) {
    a.event_id = next_other_event_++;
    a.event_slot_index = 0;
  } else {
    return -EINVAL;
  }
  events_[a.event_id] = e;
  return 0;
}

int Card::wait_events(kfd::WaitEvents& a) {
  if (!a.events_ptr || a.num_events == 0) return -EINVAL;
  auto* data = reinterpret_cast<kfd::EventData*>(a.events_ptr);
  {
    std::lock_guard lock(mu_);
    for (uint32_t i = 0; i < a.num_events; ++i)
      if (!events_.count(data[i].event_id)) return -EINVAL;
    for (auto& [id, q] : queues_) q.engine->kick();  // a sleeper wants progress: look at the doorbells now
  }
  std::unique_lock lock(mu_);
  auto ready = [&] {
    uint32_t n = 0;
    for (uint32_t i = 0; i < a.num_events; ++i) n += events_[data[i].event_id].signaled;
    return a.wait_for_all ? n == a.num_events : n > 0;
  };
  bool done =
      a.timeout == 0xffffffffu ? (events_cv_.wait(lock, ready), true) : events_cv_.wait_for(lock, std::chrono::milliseconds(a.timeout), ready);
  a.wait_result = done ? kfd::kWaitComplete : kfd::kWaitTimeout;
  for (uint32_t i = 0; i < a.num_events && done; ++i) {
    Event& e = events_[data[i].event_id];
    if (!e.signaled) continue;
    if (e.type == kfd::kEventMemory) data[i].memory_exception = e.memory;
    if (e.type == kfd::kEventHwException) data[i].hw_exception = e.hw;
    if (e.auto_reset) e.signaled = false;
  }
  return 0;
}

void Card::interrupt(uint32_t ctxid) {
  std::lock_guard lock(mu_);
  ++interrupts_;
  auto fire = [&](uint32_t id) {
    auto it = events_.find(id);
    if (it == events_.end() || it->second.type != kfd::kEventSignal || !event_page_) return;
    uint64_t slot;
    std::memcpy(&slot, event_page_->pages->host + id * 8, 8);
    if (slot == kUnsignaled) return;
    std::memcpy(event_page_->pages->host + id * 8, &kUnsignaled, 8);
    it->second.signaled = true;
  };
  if (events_.count(ctxid)) fire(ctxid);
  else
    for (auto& [id, e] : events_) fire(id);  // an unknown context id: look at every mailbox, as amdkfd does
  events_cv_.notify_all();
}

void Card::page_fault(uint64_t va, Access access, const std::string& message) {
  std::fprintf(stderr, "emu:amd: %s\n", message.c_str());  // as amdgpu logs a page fault to dmesg
  add_log(message);
  std::lock_guard lock(mu_);
  auto m = memory_.containing(va);
  for (auto& [id, e] : events_) {
    if (e.type != kfd::kEventMemory) continue;
    e.signaled = true;
    e.memory = {};
    e.memory.not_present = !(m && m->mapped);
    e.memory.read_only = m && m->mapped && (access == Access::Write || access == Access::Atomic);
    e.memory.no_execute = m && m->mapped && access == Access::Execute;
    e.memory.va = va;
    e.memory.gpu_id = cfg_.gpu_id;
  }
  events_cv_.notify_all();
}

void Card::device_fault(const std::string& message) {
  std::fprintf(stderr, "emu:amd: %s\n", message.c_str());
  add_log(message);
  std::lock_guard lock(mu_);
  for (auto& [id, e] : events_) {
    if (e.type != kfd::kEventHwException) continue;
    e.signaled = true;
    e.hw = {1 /*per-engine reset*/, 0 /*GPU hang*/, 0, cfg_.gpu_id};
  }
  events_cv_.notify_all();
}

void* Card::mmap_kfd(uint64_t offset, size_t len) {
  if (offset >> kMmapTypeShift == kMmapDoorbell && ((offset >> kMmapGpuShift) & 0xffff) == cfg_.gpu_id && len == kfd::kDoorbellPagesSize &&
      (offset & ((uint64_t{1} << kMmapGpuShift) - 1)) == 0)
    return doorbells_;
  return nullptr;
}

void* Card::map_buffer(void* addr, uint64_t offset, size_t len, int prot, int flags) {
  uint64_t id = offset >> kBufferOffsetShift, sub = offset & ((uint64_t{1} << kBufferOffsetShift) - 1);
  auto a = memory_.find(uint64_t{cfg_.gpu_id} << 32 | id);
  if (!a || a->pages->memfd < 0 || sub > a->size || len > a->size - sub) return nullptr;
  if ((a->flags & kfd::mem::kVram) && !(a->flags & kfd::mem::kPublic)) return nullptr;  // not CPU visible
  void* p = ::mmap(addr, len, prot, MAP_SHARED | (flags & MAP_FIXED), a->pages->memfd, static_cast<off_t>(sub));
  return p == MAP_FAILED ? nullptr : p;
}

struct KfdFile : VirtualFile {
  std::shared_ptr<Card> card;
  int ioctl(unsigned long r, void* a) override { return card->ioctl(r, a); }
  void* mmap(uint64_t o, size_t n, int) override { return card->mmap_kfd(o, n); }
};
struct RenderFile : VirtualFile {
  std::shared_ptr<Card> card;
  void* map_pages(void* addr, uint64_t o, size_t n, int prot, int flags) override { return card->map_buffer(addr, o, n, prot, flags); }
};

std::string properties(const GpuConfig& c, const kfd::CwsrSizes& s) {
  std::string p;
  auto add = [&](const char* k, uint64_t v) { p += std::string(k) + " " + std::to_string(v) + "\n"; };
  add("cpu_cores_count", 0), add("simd_count", c.simd_count), add("mem_banks_count", 1), add("caches_count", 0);
  add("io_links_count", 1), add("p2p_links_count", 0), add("cpu_core_id_base", 0), add("simd_id_base", 2147487744u);
  add("max_waves_per_simd", 16), add("lds_size_in_kb", 64), add("gds_size_in_kb", 0), add("num_gws", 64);
  add("wave_front_size", 32), add("array_count", c.array_count), add("simd_arrays_per_engine", c.simd_arrays_per_engine);
  add("cu_per_simd_array", c.cu_per_simd_array), add("simd_per_cu", c.simd_per_cu), add("max_slots_scratch_cu", 32);
  add("gfx_target_version", c.gfx_target_version), add("vendor_id", 0x1002), add("device_id", c.device_id);
  add("location_id", 0x300), add("domain", 0), add("drm_render_minor", static_cast<uint64_t>(c.render_minor)), add("hive_id", 0);
  add("num_sdma_engines", 2), add("num_sdma_xgmi_engines", 0), add("num_sdma_queues_per_engine", 6), add("num_cp_queues", 8);
  add("cwsr_size", s.cwsr), add("ctl_stack_size", s.ctl_stack), add("max_engine_clk_fcompute", 2500), add("local_mem_size", c.vram_bytes);
  add("fw_version", 2140), add("capability", 671588992), add("sdma_fw_version", 21), add("num_xcc", 1), add("max_engine_clk_ccompute", 2400);
  return p;
}

}  // namespace

std::shared_ptr<KfdGpu> install_kfd_gpu(VirtualOs& os, const GpuConfig& cfg) {
  auto card = std::make_shared<Card>(os, cfg);
  os.add_device("/dev/kfd", [card](int) {
    auto f = std::make_shared<KfdFile>();
    f->card = card;
    return f;
  });
  os.add_device(card->render_path(), [card](int) {
    auto f = std::make_shared<RenderFile>();
    f->card = card;
    return f;
  });
  const std::string topo = "/sys/devices/virtual/kfd/kfd/topology";
  os.add_file(topo + "/generation_id", "1\n");
  os.add_file(topo + "/system_properties", "platform_oem 0\nplatform_id 0\nplatform_rev 0\n");
  os.add_file(topo + "/nodes/0/gpu_id", "0\n");
  os.add_file(topo + "/nodes/0/name", "\n");
  os.add_file(topo + "/nodes/0/properties", "cpu_cores_count 2\nsimd_count 0\nmem_banks_count 1\ngfx_target_version 0\ndrm_render_minor 0\n");
  os.add_file(topo + "/nodes/1/gpu_id", std::to_string(cfg.gpu_id) + "\n");
  os.add_file(topo + "/nodes/1/name", cfg.name + "\n");
  os.add_file(topo + "/nodes/1/properties", properties(cfg, kfd::cwsr_sizes(cfg.gfx_target_version, cfg.cu_count())));
  os.add_file(topo + "/nodes/1/mem_banks/0/properties",
              "heap_type 1\nsize_in_bytes " + std::to_string(cfg.vram_bytes) + "\nflags 0\nwidth 384\nmem_clk_max 1250\n");
  const std::string dev = "/sys/class/drm/renderD" + std::to_string(cfg.render_minor) + "/device";
  os.add_file(dev + "/vendor", "0x1002\n");
  os.add_file(dev + "/device", hex(cfg.device_id) + "\n");
  hw::amd::IpBases b;
  struct Ip {
    const char* name;
    int hwid, major, minor, rev;
    std::vector<uint32_t> bases;
  };
  const Ip ips[] = {{"GC", 11, 11, 0, 0, {b[hw::amd::Ip::GC][0], b[hw::amd::Ip::GC][1], 0x1C000, 0x2402C00}},
                    {"SDMA0", 42, 6, 0, 0, {0x1260, 0xA000, 0x1C000, 0x2402C00}},
                    {"NBIF", 108, 4, 3, 0, {b[hw::amd::Ip::NBIO][0], b[hw::amd::Ip::NBIO][1], b[hw::amd::Ip::NBIO][2], 0x10400, 0x241B000}}};
  for (const Ip& ip : ips) {
    std::string d = dev + "/ip_discovery/die/0/" + std::to_string(ip.hwid);
    os.add_symlink(dev + "/ip_discovery/die/0/" + ip.name, std::to_string(ip.hwid));
    os.add_file(d + "/0/major", std::to_string(ip.major) + "\n");
    os.add_file(d + "/0/minor", std::to_string(ip.minor) + "\n");
    os.add_file(d + "/0/revision", std::to_string(ip.rev) + "\n");
    std::string bases;
    for (uint32_t v : ip.bases) {
      char line[16];
      std::snprintf(line, sizeof line, "0x%08X\n", v);
      bases += line;
    }
    os.add_file(d + "/0/base_addr", bases);
  }
  return card;
}

}  // namespace ugpu::emu::amd
