// The AM way in (drivers/amd/interface.h): memory from AM's own allocators and page tables, the compute
// and SDMA queues by register, doorbells in BAR2, and faults found by draining the IH ring.
#include <sys/mman.h>

#include <bit>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "common/error.h"
#include "common/hex.h"
#include "drivers/amd/am/am.h"
#include "hw/amd/am11_regs.h"

namespace ugpu::amd {
using am::AmGpu;

namespace {
// A doorbell in BAR2. Host writes to VRAM go through the HDP, which is flushed first.
class AmDoorbell final : public sys::Doorbell {
 public:
  AmDoorbell(std::shared_ptr<AmGpu> g, uint64_t offset) : g_(std::move(g)), offset_(offset) {}
  void ring(uint64_t value) override {
    sys::device_write_fence();
    g_->flush_hdp();
    g_->doorbells().write64(offset_, value);
  }

 private:
  std::shared_ptr<AmGpu> g_;
  uint64_t offset_;
};

struct AmMemoryBlock;
// Memory whose host view is a copy (AmdInterface::Memory, where the host cannot map VRAM): the copy
// sits at the GPU's address, mapped over the private address reservation, so CPU VA == GPU VA holds.
// `shadow` is what the host last exchanged with VRAM, so a refresh takes only what the GPU changed.
struct Mirrors {
  std::mutex mu;
  struct Entry {
    uint64_t vram = 0, size = 0;
    bool signals = false;
    std::vector<uint8_t> shadow;  // Signals memory only
    uint64_t flushes = 0;         // a refresh that read VRAM before a flush finished must not merge what it read
  };
  std::map<uint64_t, Entry> by_va;
};

// Memory: VRAM chunks or DMA-able host memory, mapped in VMID 0's page tables at `va`.
struct AmMemoryBlock : AmdInterface::Memory {
  std::shared_ptr<AmGpu> g;
  std::vector<am::AmMemory::Chunk> chunks;
  sys::DmaBuffer dma;                // host memory (empty for VRAM)
  bool private_va = false;           // va came from alloc_va (the host does not map the memory)
  std::shared_ptr<Mirrors> mirrors;  // set when `host` is a copy
  ~AmMemoryBlock() {
    if (!g) return;
    try {
      g->memory().unmap(va, size);
    } catch (const Error&) {  // the device is gone; the memory goes anyway
    }
    if (mirrors) {
      {
        std::lock_guard lock(mirrors->mu);
        mirrors->by_va.erase(va);
      }
      try {  // back to the reservation: inaccessible, never a hole another mapping could take
        g->os().mmap(host, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
      } catch (const Error&) {}
    }
    if (private_va) g->memory().free_va(va);
    g->memory().free_vram(chunks);
  }
};

class AmInterface final : public AmdInterface {
 public:
  AmInterface(std::shared_ptr<AmGpu> g, const AmdOptions& o, std::unique_ptr<BridgeMemory> bridge) : g_(std::move(g)), bridge_(std::move(bridge)) {
    const auto& c = g_->chip();
    const auto& d = g_->discovery();
    facts_.arch = c.arch, facts_.gfx_target_version = c.gfx_target_version, facts_.cu_count = d.cu_count();
    facts_.scratch_slots = d.scratch_slots ? d.scratch_slots : 32;
    facts_.bases = d.bases, facts_.vram_bytes = g_->memory().vram().bytes;
    std::string family(c.name);
    facts_.chip = family.substr(0, family.find(' ')) + ", device " + hex(g_->pci().device_id());
    facts_.interface = "pci (" + g_->pci().kind() + ") " + g_->address() + ", no kernel driver, " + (g_->warm() ? "warm" : "cold") + " start in " +
                       std::to_string(int(g_->boot_ms() + 0.5)) + " ms";
    facts_.host_copies = !g_->host_maps_vram();
    if (facts_.host_copies) mirrors_ = std::make_shared<Mirrors>();
    mailbox_ = alloc(4096, MemoryKind::Uncached);
    (void)o;
  }
  ~AmInterface() override {
    stop_queues();
    mailbox_.reset();
    g_->fini();
  }

  const Facts& facts() const override { return facts_; }

  std::shared_ptr<Memory> alloc(uint64_t bytes, MemoryKind kind) override {
    if (mirrors_ && kind != MemoryKind::Vram && kind != MemoryKind::VramPrivate) return alloc_mirrored(bytes, kind);
    auto m = std::make_shared<AmMemoryBlock>();
    m->g = g_;
    m->size = (std::max<uint64_t>(bytes, 1) + 4095) / 4096 * 4096;
    am::AmMemory& mem = g_->memory();
    bool host_memory = kind == MemoryKind::Uncached || kind == MemoryKind::Signals || kind == MemoryKind::Userptr;
    if (host_memory) {
      m->dma = g_->pci().dma_alloc(m->size);
      for (size_t i = 0; i < m->dma.bus.size(); ++i) {
        uint64_t n = m->dma.bus.size() == 1 ? m->dma.size : m->dma.page_size;
        if (!m->chunks.empty() && m->chunks.back().addr + m->chunks.back().size == m->dma.bus[i]) m->chunks.back().size += n;
        else m->chunks.push_back({m->dma.bus[i], n, true});
      }
      // Map exactly the size asked for (rounded to 4 KiB): hugepages may have rounded the memory up,
      // and a ring's size is what its queue is told.
      uint64_t left = m->size;
      for (auto& c : m->chunks) {
        c.size = std::min(c.size, left);
        left -= c.size;
      }
      std::erase_if(m->chunks, [](const auto& c) { return c.size == 0; });
      m->host = m->dma.host;
    } else {
      m->chunks = mem.alloc_vram(m->size, kind == MemoryKind::Vram, kind == MemoryKind::Vram);
      if (kind == MemoryKind::Vram) m->host = mem.host(m->chunks[0].addr);
    }
    try {
      // CPU VA == GPU VA: the host's address where the host sees the memory.
      m->va = m->host ? reinterpret_cast<uint64_t>(m->host) : mem.alloc_va(m->size, std::min<uint64_t>(2 << 20, std::bit_floor(m->size)));
      m->private_va = !m->host;
      mem.map(m->va, m->chunks, {.writable = true, .executable = true, .uncached = kind == MemoryKind::Uncached || kind == MemoryKind::Signals});
    } catch (...) {
      if (m->private_va && m->va) mem.free_va(m->va);
      if (!host_memory) mem.free_vram(m->chunks);
      m->chunks.clear(), m->va = 0, m->private_va = false;
      m->g.reset();
      throw;
    }
    if (host_memory) m->chunks.clear();  // nothing of VRAM to free
    if (m->host) std::memset(m->host, 0, m->size);
    return m;
  }

  void flush(const void* host, size_t bytes) override {
    if (!mirrors_ || !bytes) return;
    const uint64_t at = reinterpret_cast<uint64_t>(host);
    uint64_t base, vram, first, end;
    {
      std::lock_guard lock(mirrors_->mu);
      auto it = mirrors_->by_va.upper_bound(at);
      if (it == mirrors_->by_va.begin()) throw Error(g_->name() + ": flush of host memory that is not GPU memory (" + hex(at) + ")");
      --it;
      const Mirrors::Entry& e = it->second;
      const uint64_t off = at - it->first;
      if (off + bytes > e.size)
        throw Error(g_->name() + ": flush of " + std::to_string(bytes) + " bytes at " + hex(at) + " passes the end of its memory");
      // Whole dwords: the bridge moves nothing smaller.
      base = it->first, vram = e.vram, first = off & ~uint64_t{3}, end = std::min(e.size, (off + bytes + 3) & ~uint64_t{3});
    }
    // The bridge is not used under the lock: a thread holding the bridge (a copy) may refresh meanwhile.
    std::vector<uint8_t> bytes_now(reinterpret_cast<const uint8_t*>(base) + first, reinterpret_cast<const uint8_t*>(base) + end);
    g_->memory().vram_write(vram + first, bytes_now);
    std::lock_guard lock(mirrors_->mu);
    if (auto it = mirrors_->by_va.find(base); it != mirrors_->by_va.end() && it->second.signals) {
      std::memcpy(it->second.shadow.data() + first, bytes_now.data(), bytes_now.size());
      ++it->second.flushes;
    }
  }

  Queue create_queue(const QueueSpec& s) override {
    live_ = true;
    uint64_t doorbell;
    if (s.sdma) doorbell = g_->sdma().start_queue({s.ring->va, s.ring->size, s.rptr_va, s.wptr_va});
    else doorbell = g_->gfx().start_queue({s.ring->va, s.ring->size, s.rptr_va, s.wptr_va});
    Queue q;
    q.id = s.sdma ? 1 : 0;
    q.doorbell = std::make_unique<AmDoorbell>(g_, doorbell);
    return q;
  }

  void stop_queues() noexcept override {
    if (!live_) return;
    live_ = false;
    g_->gfx().stop_queue();
    g_->sdma().stop_queue();
  }

  void failed() noexcept override {
    // A fault the GMC latched means the next run must reset the chip; a hang alone is cleared by
    // dequeueing (stop_queues), and the firmware stays usable for a warm start.
    try {
      if (g_->regs().read(hw::amd::am11::GCVM_L2_PROTECTION_FAULT_STATUS)) g_->set_error();
    } catch (const Error&) { g_->set_error(); }
  }

  bool can_recover() const override { return true; }
  void recover() override {
    g_->ih().drain();  // what the failure left there is known
    (void)g_->gmc().take_fault();
    g_->gfx().reset_mec();
    g_->sdma().stop_queue();
    g_->clear_error();
  }

  Interrupt interrupt() const override { return {mailbox_->va, 0}; }

  BridgeMemory* bridge_memory() override { return bridge_.get(); }

  std::optional<Fault> wait_for_progress(std::chrono::microseconds max) override {
    refresh();
    auto entries = g_->ih().drain();
    for (const auto& e : entries) {
      if (auto f = describe(e)) {
        g_->set_error();
        return f;
      }
    }
    if (max.count() > 0) std::this_thread::sleep_for(std::min(max, std::chrono::microseconds(100)));
    return std::nullopt;
  }

 private:
  std::optional<Fault> describe(const am::Ih::Entry& e) {
    const std::string hint = "run `ugpu bringup --trace` for the register log; for emu:amd:pci the emu:amd:pci lines on stderr name the instruction";
    if (e.client == 0x0A && e.src == 0) {  // UTCL2: a GC hub page fault
      uint64_t va = (uint64_t(e.data[1] & 0xF) << 44) | uint64_t(e.data[0]) << 12;
      std::string what = "GPU page fault at " + hex(va);
      if (auto f = g_->gmc().take_fault())
        what = "GPU page fault at " + hex(f->address) + " (a " + (f->write ? "write" : "read") + " of unmapped memory by " + f->client +
               "; VM_L2_PROTECTION_FAULT_STATUS " + hex(f->status) + ")";
      return Fault{what, hint};
    }
    if (e.src == 239 && ((e.data[1] >> 6) & 3) == 2) {  // SQ error
      static const char* types[] = {"EDC_FUE", "ILLEGAL_INST", "MEMVIOL", "EDC_FED"};
      return Fault{std::string("a shader raised an error (SQ ") + types[(e.data[0] >> 21) & 3] + ")", hint};
    }
    if (e.client == 0x14 && (e.src == 180 || e.src == 183 || e.src == 184 || e.src == 185))
      return Fault{"the command processor refused a packet (CP interrupt " + std::to_string(e.src) + ": a bad opcode or privileged access)", hint};
    return std::nullopt;  // end-of-pipe and SDMA trap interrupts: progress, nothing to report
  }

  // Where the host cannot map VRAM: Uncached and Signals memory in VRAM with a host copy at the same
  // address (Vram memory takes the path above, with no host address).
  std::shared_ptr<Memory> alloc_mirrored(uint64_t bytes, MemoryKind kind) {
    if (kind == MemoryKind::Userptr)
      throw Error(g_->name() + ": the GPU reaches no host memory through " + g_->pci().kind() +
                  " (the bridge's SRAM is the only system memory it sees); copy_in and copy_out move data instead");
    auto m = std::make_shared<AmMemoryBlock>();
    m->g = g_;
    m->size = (std::max<uint64_t>(bytes, 1) + 4095) / 4096 * 4096;
    am::AmMemory& mem = g_->memory();
    m->chunks = mem.alloc_vram(m->size, true, true);
    try {
      m->va = mem.alloc_va(m->size, 4096);
      m->private_va = true;
      g_->os().mmap(reinterpret_cast<void*>(m->va), m->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
      m->host = reinterpret_cast<void*>(m->va);
      mem.vram_zero(m->chunks[0].addr, m->size);  // as the host copy starts
      mem.map(m->va, m->chunks, {.writable = true, .executable = true, .uncached = true});
    } catch (...) {
      if (m->host) g_->os().mmap(m->host, m->size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
      if (m->va) mem.free_va(m->va);
      mem.free_vram(m->chunks);
      m->g.reset();
      throw;
    }
    Mirrors::Entry e{m->chunks[0].addr, m->size, kind == MemoryKind::Signals, {}};
    if (e.signals) e.shadow.assign(m->size, 0);
    {
      std::lock_guard lock(mirrors_->mu);
      mirrors_->by_va[m->va] = std::move(e);
    }
    m->mirrors = mirrors_;
    return m;
  }

  // What the GPU wrote to Signals memory since the last look, into the host copies (8 bytes at a time:
  // signal values and queue pointers are 64-bit words the host reads atomically).
  void refresh() {
    if (!mirrors_) return;
    struct Look {
      uint64_t va, vram, size, flushes;
    };
    std::vector<Look> looks;
    {
      std::lock_guard lock(mirrors_->mu);
      for (const auto& [va, e] : mirrors_->by_va)
        if (e.signals) looks.push_back({va, e.vram, e.size, e.flushes});
    }
    for (const Look& l : looks) {
      std::vector<uint8_t> now(l.size);
      g_->memory().vram_read(l.vram, now);  // not under the lock (see flush)
      std::lock_guard lock(mirrors_->mu);
      auto it = mirrors_->by_va.find(l.va);
      // Freed meanwhile, or the host wrote some of it since: the next look takes it.
      if (it == mirrors_->by_va.end() || it->second.vram != l.vram || it->second.flushes != l.flushes) continue;
      std::vector<uint8_t>& shadow = it->second.shadow;
      for (uint64_t i = 0; i < l.size; i += 8) {
        if (std::memcmp(now.data() + i, shadow.data() + i, 8) == 0) continue;
        uint64_t v;
        std::memcpy(&v, now.data() + i, 8);
        __atomic_store_n(reinterpret_cast<uint64_t*>(l.va + i), v, __ATOMIC_RELEASE);
        std::memcpy(shadow.data() + i, &v, 8);
      }
    }
  }

  std::shared_ptr<AmGpu> g_;
  std::unique_ptr<BridgeMemory> bridge_;
  Facts facts_;
  std::shared_ptr<Mirrors> mirrors_;
  std::shared_ptr<Memory> mailbox_;
  bool live_ = true;
};
}  // namespace

std::unique_ptr<AmdInterface> open_am_interface(std::shared_ptr<sys::Os> os, const AmdOptions& o, const am::AmOptions& opts) {
  auto g = AmGpu::open(std::move(os), opts);
  return std::make_unique<AmInterface>(std::move(g), o, nullptr);
}

std::unique_ptr<AmdInterface> am_interface(std::shared_ptr<am::AmGpu> g, const AmdOptions& o, std::unique_ptr<AmdInterface::BridgeMemory> bridge) {
  return std::make_unique<AmInterface>(std::move(g), o, std::move(bridge));
}

std::unique_ptr<hcq::Device> open_am(std::shared_ptr<sys::Os> os, const AmdOptions& o, const am::AmOptions& opts) {
  return open_amd(open_am_interface(std::move(os), o, opts), o);
}

}  // namespace ugpu::amd
