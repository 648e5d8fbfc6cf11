// The AM way in (drivers/amd/interface.h): memory from AM's own allocators and page tables, the compute
// and SDMA queues by register, doorbells in BAR2, and faults found by draining the IH ring.
#include <bit>
#include <cstring>
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

// Memory: VRAM chunks or DMA-able host memory, mapped in VMID 0's page tables at `va`.
struct AmMemoryBlock : AmdInterface::Memory {
  std::shared_ptr<AmGpu> g;
  std::vector<am::AmMemory::Chunk> chunks;
  sys::DmaBuffer dma;       // host memory (empty for VRAM)
  bool private_va = false;  // va came from alloc_va (the host does not map the memory)
  ~AmMemoryBlock() {
    if (!g) return;
    try {
      g->memory().unmap(va, size);
    } catch (const Error&) {  // the device is gone; the memory goes anyway
    }
    if (private_va) g->memory().free_va(va);
    g->memory().free_vram(chunks);
  }
};

class AmInterface final : public AmdInterface {
 public:
  AmInterface(std::shared_ptr<AmGpu> g, const AmdOptions& o) : g_(std::move(g)) {
    const auto& c = g_->chip();
    const auto& d = g_->discovery();
    facts_.arch = c.arch, facts_.gfx_target_version = c.gfx_target_version, facts_.cu_count = d.cu_count();
    facts_.scratch_slots = d.scratch_slots ? d.scratch_slots : 32;
    facts_.bases = d.bases, facts_.vram_bytes = g_->memory().vram().bytes;
    std::string family(c.name);
    facts_.chip = family.substr(0, family.find(' ')) + ", device " + hex(g_->pci().device_id());
    facts_.interface = "pci (" + g_->pci().kind() + ") " + g_->address() + ", no kernel driver, " + (g_->warm() ? "warm" : "cold") + " start in " +
                       std::to_string(int(g_->boot_ms() + 0.5)) + " ms";
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
    auto m = std::make_shared<AmMemoryBlock>();
    m->g = g_;
    m->size = (std::max<uint64_t>(bytes, 1) + 4095) / 4096 * 4096;
    am::AmMemory& mem = g_->memory();
    bool host_memory = kind == MemoryKind::Uncached || kind == MemoryKind::Userptr;
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
      mem.map(m->va, m->chunks, {.writable = true, .executable = true, .uncached = kind == MemoryKind::Uncached});
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

  std::optional<Fault> wait_for_progress(std::chrono::microseconds max) override {
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

  std::shared_ptr<AmGpu> g_;
  Facts facts_;
  std::shared_ptr<Memory> mailbox_;
  bool live_ = true;
};
}  // namespace

std::unique_ptr<AmdInterface> open_am_interface(std::shared_ptr<sys::Os> os, const AmdOptions& o, const am::AmOptions& opts) {
  auto g = AmGpu::open(std::move(os), opts);
  return std::make_unique<AmInterface>(std::move(g), o);
}

std::unique_ptr<hcq::Device> open_am(std::shared_ptr<sys::Os> os, const AmdOptions& o, const am::AmOptions& opts) {
  return open_amd(open_am_interface(std::move(os), o, opts), o);
}

}  // namespace ugpu::amd
