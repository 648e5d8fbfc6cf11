#include "emu/qcom/kgsl_model.h"

#include <sys/ioctl.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "common/hex.h"
#include "hw/qcom/kgsl.h"

namespace ugpu::emu::qcom {
namespace kgsl = hw::qcom::kgsl;

namespace {
constexpr uint64_t kPage = 4096;
// Where kgsl places memory allocated without USE_CPU_MAP (and user memory mapped without it): above
// any address the process's own mappings take on a 64-bit kernel.
constexpr uint64_t kPrivateVaBase = uint64_t{0x7f} << 40;
// The flags kgsl takes on a context, and on an allocation: anything else is EINVAL.
constexpr uint32_t kContextFlags = kgsl::kContextNoGmemAlloc | kgsl::kContextPreamble | kgsl::kContextNoFaultTolerance | kgsl::kContextPwrConstraint |
                                   kgsl::kContextPriorityMask | 0x7u << kgsl::kContextPreemptStyleShift;
constexpr uint64_t kMemFlags = uint64_t{0xff} << kgsl::kMemAlignShift | uint64_t{3} << kgsl::kCacheModeShift | kgsl::kMemUseCpuMap;

// kgsl compares timestamps modulo 2^32.
bool ts_reached(uint32_t retired, uint32_t ts) { return int32_t(retired - ts) >= 0; }

struct Allocation {
  uint32_t id = 0;
  uint64_t size = 0, flags = 0;
  uint64_t gpuaddr = 0;  // 0 until mapped (USE_CPU_MAP: at the CPU mapping's address)
  std::shared_ptr<Pages> pages;
  bool user = false;  // MAP_USER_MEM of the process's pages
};

struct Submission {
  uint32_t timestamp;
  std::vector<std::pair<uint64_t, uint64_t>> ibs;  // address, dwords
};

class Card;

struct Context {
  uint32_t id = 0, flags = 0;
  CommandProcessor cp;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Submission> queue;
  uint32_t issued = 0, retired = 0;
  bool invalid = false;  // reset after a fault: refuses work (EDEADLK)
  uint32_t reset_status = kgsl::kCtxStatNoError;
  std::atomic<bool> cancelled{false};
  std::thread worker;
  Context(GpuMemory& m, ShaderProcessor* sp, bool sp_cs_cntl) : cp(m, sp, sp_cs_cntl) {}
};

class Card : public AdrenoGpu, public std::enable_shared_from_this<Card> {
 public:
  explicit Card(const AdrenoConfig& cfg) : cfg_(cfg), memory_(cfg.memory_bytes) {}
  ~Card() override {
    std::map<uint32_t, std::shared_ptr<Context>> contexts;
    {
      std::lock_guard lock(mu_);
      contexts.swap(contexts_);
    }
    for (auto& [id, c] : contexts) stop(*c);
  }

  AdrenoStats stats() const override {
    std::lock_guard lock(mu_);
    AdrenoStats s = stats_;
    s.contexts = contexts_.size(), s.allocations = allocations_.size(), s.memory_used = memory_.vram_used();
    return s;
  }
  std::vector<std::string> log() const override {
    std::lock_guard lock(mu_);
    return log_;
  }
  const AdrenoConfig& config() const override { return cfg_; }

  int ioctl(unsigned long request, void* arg);
  void* map_pages(void* addr, uint64_t offset, size_t len, int prot, int flags);

 private:
  template <class T, class F>
  int with_args(void* arg, F f) {
    if (!arg) return -EFAULT;
    T a;
    std::memcpy(&a, arg, sizeof a);
    int r = f(a);
    std::memcpy(arg, &a, sizeof a);
    return r;
  }
  int get_property(kgsl::DeviceGetProperty& a);
  int set_property(kgsl::DeviceGetProperty& a);
  int create_context(kgsl::DrawctxtCreate& a);
  int destroy_context(uint32_t id);
  int alloc(kgsl::GpuobjAlloc& a);
  int free_object(kgsl::GpuobjFree& a);
  int map_user(kgsl::MapUserMem& a);
  int free_user(uint64_t gpuaddr);
  int submit(kgsl::GpuCommand& a);
  int wait(const kgsl::WaitTimestampCtxtid& a);
  std::shared_ptr<Context> context(uint32_t id) {
    std::lock_guard lock(mu_);
    auto it = contexts_.find(id);
    return it == contexts_.end() ? nullptr : it->second;
  }
  void run(Context& c);
  void stop(Context& c) {
    {
      std::lock_guard lock(c.mu);
      c.cancelled = true;
    }
    c.cv.notify_all();
    if (c.worker.joinable()) c.worker.join();
  }
  bool overlaps(uint64_t va, uint64_t size) const;  // mu_ held
  void add_log(const std::string& m) {
    std::fprintf(stderr, "emu:qcom: %s\n", m.c_str());
    std::lock_guard lock(mu_);
    log_.push_back(m);
  }

  AdrenoConfig cfg_;
  GpuMemory memory_;
  mutable std::mutex mu_;
  std::map<uint32_t, std::shared_ptr<Context>> contexts_;
  std::map<uint32_t, std::shared_ptr<Allocation>> allocations_;  // by id
  uint32_t next_context_ = 1, next_id_ = 1;
  uint64_t next_private_va_ = kPrivateVaBase;
  AdrenoStats stats_;
  std::vector<std::string> log_;
};

int Card::ioctl(unsigned long request, void* arg) {
  switch (request) {
    case kgsl::kDeviceGetProperty: return with_args<kgsl::DeviceGetProperty>(arg, [&](auto& a) { return get_property(a); });
    case kgsl::kSetProperty: return with_args<kgsl::DeviceGetProperty>(arg, [&](auto& a) { return set_property(a); });
    case kgsl::kDrawctxtCreate: return with_args<kgsl::DrawctxtCreate>(arg, [&](auto& a) { return create_context(a); });
    case kgsl::kDrawctxtDestroy: return with_args<kgsl::DrawctxtDestroy>(arg, [&](auto& a) { return destroy_context(a.drawctxt_id); });
    case kgsl::kGpuobjAlloc: return with_args<kgsl::GpuobjAlloc>(arg, [&](auto& a) { return alloc(a); });
    case kgsl::kGpuobjFree: return with_args<kgsl::GpuobjFree>(arg, [&](auto& a) { return free_object(a); });
    case kgsl::kMapUserMem: return with_args<kgsl::MapUserMem>(arg, [&](auto& a) { return map_user(a); });
    case kgsl::kSharedmemFree: return with_args<kgsl::SharedmemFree>(arg, [&](auto& a) { return free_user(a.gpuaddr); });
    case kgsl::kGpuCommand: return with_args<kgsl::GpuCommand>(arg, [&](auto& a) { return submit(a); });
    case kgsl::kWaitTimestampCtxtid: return with_args<kgsl::WaitTimestampCtxtid>(arg, [&](auto& a) { return wait(a); });
    default: return -ENOTTY;  // kgsl: a request it does not know, or a known one with another size
  }
}

int Card::get_property(kgsl::DeviceGetProperty& a) {
  if (!a.value) return -EFAULT;
  if (a.type == kgsl::kPropDeviceInfo) {
    if (a.sizebytes != sizeof(kgsl::DevInfo)) return -EINVAL;
    kgsl::DevInfo d{};
    d.device_id = 1, d.chip_id = cfg_.chip_id, d.mmu_enabled = 1, d.gpu_id = cfg_.gpu_id;
    d.gmem_sizebytes = 1 << 20;  // the a630's 1 MiB of GMEM (tile memory; compute does not use it)
    std::memcpy(reinterpret_cast<void*>(a.value), &d, sizeof d);
    return 0;
  }
  if (a.type == kgsl::kPropGpuResetStat) {
    if (a.sizebytes != sizeof(uint32_t)) return -EINVAL;
    uint32_t id;
    std::memcpy(&id, reinterpret_cast<void*>(a.value), 4);
    auto c = context(id);
    if (!c) return -EINVAL;
    std::lock_guard lock(c->mu);
    uint32_t s = std::exchange(c->reset_status, kgsl::kCtxStatNoError);
    std::memcpy(reinterpret_cast<void*>(a.value), &s, 4);
    return 0;
  }
  return -EINVAL;
}

int Card::set_property(kgsl::DeviceGetProperty& a) {
  if (a.type != kgsl::kPropPwrConstraint) return -EINVAL;
  if (!a.value) return -EFAULT;
  if (a.sizebytes != sizeof(kgsl::DeviceConstraint)) return -EINVAL;
  kgsl::DeviceConstraint c;
  std::memcpy(&c, reinterpret_cast<void*>(a.value), sizeof c);
  if (!context(c.context_id)) return -EINVAL;
  if (c.type != kgsl::kConstraintPwrlevel) return -EINVAL;
  if (c.size != sizeof(uint32_t) || !c.data) return -EINVAL;
  uint32_t level;
  std::memcpy(&level, reinterpret_cast<void*>(c.data), 4);
  return level <= kgsl::kConstraintPwrMax ? 0 : -EINVAL;
}

int Card::create_context(kgsl::DrawctxtCreate& a) {
  if (a.flags & ~kContextFlags) return -EINVAL;
  auto c = std::make_shared<Context>(memory_, cfg_.shader.get(), cfg_.chip_id >> 16 == 0x0606);  // a660: gen 4
  c->flags = a.flags;
  {
    std::lock_guard lock(mu_);
    if (contexts_.size() >= 256) return -ENOSPC;
    c->id = next_context_++;
    contexts_[c->id] = c;
  }
  c->worker = std::thread([this, c] { run(*c); });
  a.drawctxt_id = c->id;
  return 0;
}

int Card::destroy_context(uint32_t id) {
  std::shared_ptr<Context> c;
  {
    std::lock_guard lock(mu_);
    auto it = contexts_.find(id);
    if (it == contexts_.end()) return -EINVAL;
    c = it->second;
    contexts_.erase(it);
  }
  stop(*c);  // work still queued or waiting on memory is dropped
  return 0;
}

bool Card::overlaps(uint64_t va, uint64_t size) const {
  for (auto& [id, a] : allocations_)
    if (a->gpuaddr && va < a->gpuaddr + a->size && a->gpuaddr < va + size) return true;
  return false;
}

int Card::alloc(kgsl::GpuobjAlloc& a) {
  if (a.size == 0 || (a.flags & ~kMemFlags)) return -EINVAL;
  uint64_t size = (a.size + kPage - 1) / kPage * kPage;
  if (!memory_.reserve_vram(size)) return -ENOMEM;
  auto m = std::make_shared<Allocation>();
  m->size = size, m->flags = a.flags;
  m->pages = Pages::create(size, "kgsl");
  if (!m->pages) {
    memory_.release_vram(size);
    return -ENOMEM;
  }
  std::lock_guard lock(mu_);
  if (!(a.flags & kgsl::kMemUseCpuMap)) {  // kgsl picks the GPU address now; the CPU mapping goes elsewhere
    m->gpuaddr = next_private_va_, next_private_va_ += size + kPage;
    memory_.map({m->gpuaddr, size, 0, m->pages, true, true});
  }
  m->id = next_id_++;
  allocations_[m->id] = m;
  a.id = m->id, a.mmapsize = size, a.va_len = size;
  return 0;
}

void* Card::map_pages(void* addr, uint64_t offset, size_t len, int prot, int flags) {
  std::lock_guard lock(mu_);
  auto it = allocations_.find(uint32_t(offset / kPage));
  if (offset % kPage || it == allocations_.end() || it->second->user || len == 0 || len > it->second->size) return nullptr;
  Allocation& a = *it->second;
  void* p = ::mmap(addr, len, prot, MAP_SHARED | (flags & MAP_FIXED), a.pages->memfd, 0);
  if (p == MAP_FAILED) return nullptr;
  if ((a.flags & kgsl::kMemUseCpuMap) && a.gpuaddr == 0) {  // the GPU address is the CPU mapping's
    uint64_t va = reinterpret_cast<uint64_t>(p);
    if (len != a.size || overlaps(va, a.size) || !memory_.map({va, a.size, 0, a.pages, true, true})) {
      ::munmap(p, len);
      return nullptr;
    }
    a.gpuaddr = va;
  }
  return p;
}

int Card::free_object(kgsl::GpuobjFree& a) {
  if (a.flags) return -EINVAL;  // freeing on an event is not modelled; ugpu frees once the GPU is done
  std::shared_ptr<Allocation> m;
  {
    std::lock_guard lock(mu_);
    auto it = allocations_.find(a.id);
    if (it == allocations_.end() || it->second->user) return -EINVAL;
    m = it->second;
    allocations_.erase(it);
  }
  if (m->gpuaddr) memory_.unmap(m->gpuaddr);
  memory_.release_vram(m->size);
  return 0;
}

int Card::map_user(kgsl::MapUserMem& a) {
  if (a.memtype != kgsl::kUserMemTypeAddr || a.offset || !a.hostptr || !a.len || a.hostptr % kPage || a.len % kPage) return -EINVAL;
  if (a.flags & ~kMemFlags) return -EINVAL;
  std::lock_guard lock(mu_);
  auto m = std::make_shared<Allocation>();
  m->size = a.len, m->flags = a.flags, m->user = true;
  m->pages = Pages::borrow(reinterpret_cast<void*>(a.hostptr), a.len);
  if (a.flags & kgsl::kMemUseCpuMap) {
    if (overlaps(a.hostptr, a.len)) return -EFAULT;  // already GPU memory
    m->gpuaddr = a.hostptr;
  } else {
    m->gpuaddr = next_private_va_, next_private_va_ += a.len + kPage;
  }
  if (!memory_.map({m->gpuaddr, a.len, 0, m->pages, true, true})) return -EFAULT;
  m->id = next_id_++;
  allocations_[m->id] = m;
  a.gpuaddr = m->gpuaddr;
  return 0;
}

int Card::free_user(uint64_t gpuaddr) {
  std::lock_guard lock(mu_);
  for (auto it = allocations_.begin(); it != allocations_.end(); ++it)
    if (it->second->gpuaddr == gpuaddr) {
      memory_.unmap(gpuaddr);
      if (!it->second->user) memory_.release_vram(it->second->size);
      allocations_.erase(it);
      return 0;
    }
  return -EINVAL;
}

int Card::submit(kgsl::GpuCommand& a) {
  auto c = context(a.context_id);
  if (!c) return -EINVAL;
  if (a.cmdsize != sizeof(kgsl::CommandObject) || a.numcmds == 0 || !a.cmdlist || a.numobjs || a.numsyncs) return -EINVAL;
  Submission s;
  for (uint32_t i = 0; i < a.numcmds; ++i) {
    kgsl::CommandObject o;
    std::memcpy(&o, reinterpret_cast<const uint8_t*>(a.cmdlist) + size_t{i} * sizeof o, sizeof o);
    if (!(o.flags & kgsl::kCmdlistIb) || o.size == 0 || o.size % 4 || o.offset) return -EINVAL;
    if (!memory_.translate(o.gpuaddr, o.size, Access::Read)) return -EINVAL;  // not in a mapped allocation
    s.ibs.emplace_back(o.gpuaddr, o.size / 4);
  }
  {
    std::lock_guard lock(c->mu);
    if (c->invalid) return -EDEADLK;
    s.timestamp = a.timestamp = ++c->issued;
    c->queue.push_back(std::move(s));
  }
  c->cv.notify_all();
  std::lock_guard lock(mu_);
  ++stats_.submissions;
  return 0;
}

int Card::wait(const kgsl::WaitTimestampCtxtid& a) {
  auto c = context(a.context_id);
  if (!c) return -EINVAL;
  std::unique_lock lock(c->mu);
  if (!ts_reached(c->issued, a.timestamp)) return -EINVAL;  // never issued
  auto done = [&] { return ts_reached(c->retired, a.timestamp) || c->invalid || c->cancelled; };
  if (a.timeout == 0xffffffffu) c->cv.wait(lock, done);
  else if (!c->cv.wait_for(lock, std::chrono::milliseconds(a.timeout), done)) return -ETIMEDOUT;
  return ts_reached(c->retired, a.timestamp) ? 0 : -EDEADLK;
}

void Card::run(Context& c) {
  for (;;) {
    Submission s;
    {
      std::unique_lock lock(c.mu);
      c.cv.wait(lock, [&] { return c.cancelled || !c.queue.empty(); });
      if (c.cancelled) return;
      s = std::move(c.queue.front());
      c.queue.pop_front();
    }
    uint64_t packets = c.cp.packets(), dispatches = c.cp.dispatches(), instructions = c.cp.instructions();
    std::string fault;
    try {
      for (auto [address, dwords] : s.ibs)
        if (!c.cp.run(address, dwords, c.cancelled)) return;
    } catch (const CpFault& e) { fault = e.what(); }
    {
      std::lock_guard lock(mu_);
      stats_.packets += c.cp.packets() - packets, stats_.dispatches += c.cp.dispatches() - dispatches;
      stats_.shader_instructions += c.cp.instructions() - instructions;
      if (!fault.empty()) ++stats_.faults;
    }
    if (!fault.empty())
      add_log("kgsl: context " + std::to_string(c.id) + " timestamp " + std::to_string(s.timestamp) + ": " + fault +
              "; the GPU was reset and the context marked guilty");
    {
      std::lock_guard lock(c.mu);
      if (fault.empty()) c.retired = s.timestamp;
      else c.invalid = true, c.reset_status = kgsl::kCtxStatGuilty, c.queue.clear();
    }
    c.cv.notify_all();
  }
}

struct KgslFile : VirtualFile {
  std::shared_ptr<Card> card;
  int ioctl(unsigned long r, void* a) override { return card->ioctl(r, a); }
  void* map_pages(void* addr, uint64_t o, size_t n, int prot, int flags) override { return card->map_pages(addr, o, n, prot, flags); }
};

}  // namespace

std::shared_ptr<AdrenoGpu> install_kgsl_gpu(VirtualOs& os, const AdrenoConfig& cfg) {
  auto card = std::make_shared<Card>(cfg);
  os.add_device("/dev/kgsl-3d0", [card](int) {
    auto f = std::make_shared<KgslFile>();
    f->card = card;
    return f;
  });
  os.add_file("/sys/class/kgsl/kgsl-3d0/gpu_model", "Adreno" + std::to_string(cfg.gpu_id) + "v1\n");
  return card;
}

}  // namespace ugpu::emu::qcom
