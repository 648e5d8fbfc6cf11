// The emulated AM card's insides, shared by its files: card.cpp (PCI plumbing, the register file, GMC,
// IH, MEC and SDMA queues), psp.cpp (the PSP and the SMU) and card_vfio.cpp (the vfio nodes; only in a
// build with the Linux drivers).
#pragma once
#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "emu/amd/am/am_card.h"
#include "emu/amd/engines.h"
#include "emu/gpu_memory.h"
#include "hw/amd/psp.h"
#include "hw/amd/registers.h"
#include "sys/mmio.h"

namespace ugpu::emu::amd {

// The firmware the PSP expects, by LOAD_IP_FW type and bootloader command, read from the firmware files
// by the card itself (a second reading, independent of the driver's parser).
struct ExpectedFirmware {
  std::map<uint32_t, std::vector<uint8_t>> bootloader;  // by bootloader command
  std::map<uint32_t, std::vector<uint8_t>> ip;          // by LOAD_IP_FW type
  std::vector<uint8_t> toc;
  uint64_t mec_start = 0;  // the MEC's first instruction, from its header
  bool known = false;
};
ExpectedFirmware read_expected_firmware(const std::string& dir);

class Card final : public AmCard, public std::enable_shared_from_this<Card> {
 public:
  Card(VirtualOs& os, const AmCardConfig& cfg);
  ~Card() override;
  void install();

  AmCardStats stats() const override;
  std::vector<std::string> log() const override;
  std::vector<std::string> faults() const override;
  std::vector<std::string> unknown_registers() const override;
  const AmCardConfig& config() const override { return cfg_; }
  uint32_t peek(uint32_t dword) override;
  void poke(uint32_t dword, uint32_t value) override;
  void power_cycle() override;
  bool bar_read(int bar, uint64_t offset, std::span<uint8_t> out) override;
  bool bar_write(int bar, uint64_t offset, std::span<const uint8_t> data) override;
  void resize_bar0(uint64_t bytes);
  void map_host_memory(uint64_t bus, uint8_t* host, uint64_t bytes) override { dma_map(bus, host, bytes); }

  // BAR accesses.
  uint32_t read_reg(uint32_t dword);
  void write_reg(uint32_t dword, uint32_t value);
  void doorbell(uint64_t offset, uint64_t value, int bytes);
  uint64_t doorbell_value(uint64_t offset) const;
  uint8_t* vram() const { return vram_->host; }
  uint64_t vram_bytes() const { return cfg_.vram_bytes; }
  uint64_t bar0_bytes() const { return bar0_bytes_; }
  static constexpr uint64_t kRegBarBytes = 2 << 20, kDoorbellBarBytes = 2 << 20;
  // A device file's view of the BARs: BAR0's VRAM as memory (nullptr past what BAR0 shows), BAR2 and
  // BAR5 as registers the model sees (nullptr for any other BAR).
  void* bar0_memory(uint64_t offset, size_t len) const;
  std::unique_ptr<sys::Mmio> bar_mmio(int bar, size_t len);

  // Buses: host memory the GPU reaches by DMA (vfio IOMMU mappings, or pagemap-published pages).
  void dma_map(uint64_t bus, uint8_t* host, uint64_t size);
  void dma_unmap(uint64_t bus);
  void publish_page(uint64_t bus, uint8_t* host);

 private:
  friend struct PspModel;
  using Action = std::function<void()>;  // side effects run after the register lock is dropped
  struct Handler {
    std::function<uint32_t()> read;
    std::function<void(uint32_t, std::vector<Action>&)> write;
  };
  uint32_t addr(const hw::amd::Register& r) const { return hw::amd::address_of(r, bases_); }
  uint32_t& reg(const hw::amd::Register& r) { return regs_[addr(r)]; }
  void reset_registers();  // lock held
  void write_resource_file();
  void install_vfio(const std::string& group, std::shared_ptr<std::vector<uint8_t>> config);  // card_vfio.cpp
  void build_handlers();
  void note(std::string line);     // the card's log; lock held or not (own lock)
  void problem(std::string line);  // ...and a fault, or a driver mistake the hardware would punish

  // MC addresses (firmware, IH, MQDs): the FB aperture or, past it, VMID 0's page tables.
  uint8_t* mc(uint64_t address, uint64_t size, Access a);
  // GMC: the TLB fill GpuMemory calls on a miss, and the page-table walk under it.
  struct Leaf {
    uint64_t va = 0, size = 0, pa = 0;  // pa: a VRAM offset, or a bus address when `system`
    bool system = false, writable = false, executable = false;
  };
  struct VmContext {  // VMID 0's translation registers
    uint32_t cntl = 0, tlb = 0;
    uint64_t start = 0, end = 0, base = 0, ap_lo = 0, ap_hi = 0;
  };
  VmContext vm_context();
  std::optional<Leaf> leaf(uint64_t va, const VmContext& vm);
  bool walk(uint64_t va);
  std::optional<bool> walk_once(uint64_t va, uint64_t generation);  // nullopt: an invalidation came between
  uint8_t* bus(uint64_t address, uint64_t size);
  void invalidate_tlb(bool gc);
  void page_fault(uint64_t va, Access a, const std::string& message);

  // IH.
  void interrupt(uint32_t client, uint32_t src, uint32_t ring_id, std::array<uint32_t, 4> data);

  // Queues.
  uint32_t selected_queue() const;  // GRBM_GFX_CNTL me/pipe/queue as one key; lock held
  uint32_t& hqd(uint32_t key, uint32_t dword);
  void start_compute(uint32_t key);  // lock held
  void start_queues();               // every active HQD on a running MEC; lock held
  // An engine's thread is joined by an Action, after the register lock is dropped (it may be waiting for it).
  void stop_later(std::unique_ptr<QueueEngine> engine, std::vector<Action>& after);
  void stop_compute(uint32_t key, std::vector<Action>& after);
  void stop_all_compute(std::vector<Action>& after);
  void sdma_control(std::vector<Action>& after);
  std::atomic<uint64_t>* doorbell_slot(uint64_t byte_offset);

  VirtualOs& os_;
  AmCardConfig cfg_;
  hw::amd::IpBases bases_;
  std::shared_ptr<Pages> vram_;
  GpuMemory gmem_;
  GpuContext ctx_;
  uint64_t fb_base_ = uint64_t{0x80} << 32;  // where VRAM sits in the MC address space (set by the VBIOS)
  std::atomic<uint64_t> bar0_bytes_{0};      // BAR0's size now (Resizable BAR)

  // Recursive: a register write that makes the PSP read memory can walk the page tables, which reads
  // registers. Engines are never joined with it held (their stop is an Action).
  mutable std::recursive_mutex mu_;
  std::unordered_map<uint32_t, uint32_t> regs_;
  std::unordered_set<uint32_t> known_;
  std::unordered_map<uint32_t, Handler> handlers_;
  std::vector<std::string> unknown_;
  uint32_t hqd_first_ = 0, hqd_last_ = 0;                     // the per-queue HQD register window
  std::map<uint32_t, std::array<uint32_t, 56>> hqds_;         // by me/pipe/queue key
  std::map<uint32_t, std::unique_ptr<QueueEngine>> compute_;  // running queues
  std::unique_ptr<QueueEngine> sdma_;
  std::unique_ptr<std::atomic<uint64_t>[]> doorbells_;
  uint64_t mm_index_ = 0, rsmu_index_ = 0;

  // PSP and SMU state (psp.cpp).
  std::unique_ptr<struct PspModel> psp_;

  std::mutex dma_mu_;
  std::map<uint64_t, std::pair<uint8_t*, uint64_t>> dma_;  // bus address -> host, size

  mutable std::mutex log_mu_;
  std::vector<std::string> log_, faults_;
  std::atomic<uint64_t> invalidations_{0}, walks_{0}, interrupts_{0}, mode1_resets_{0};
  std::mutex tlb_mu_;            // a TLB fill's insertion against an invalidation
  uint64_t tlb_generation_ = 0;  // invalidations so far
};

// The PSP (MP0) and SMU (MP1) mailboxes and the KM ring.
struct PspModel {
  explicit PspModel(Card& c);
  void reset();
  // Register handlers for MP0/MP1 (called with the card lock held; work that touches memory is deferred).
  void bootloader_command(uint32_t cmd);
  void ring_control(uint32_t cmd);
  void ring_write_pointer(uint32_t wptr);
  void smu_message(uint32_t msg, bool debug);
  uint32_t execute(hw::amd::psp::CmdResp& cmd);  // one KM ring command; returns resp.status
  bool has(uint32_t fw_type) const { return loaded.count(fw_type) != 0; }

  Card& c;
  ExpectedFirmware expected;
  std::vector<uint32_t> bootloader_done;
  bool sos_alive = false, ring_up = false, toc_loaded = false, tmr_set = false, autoloaded = false, smu_alive = false;
  bool reset_requested = false;  // an SMU mode-1 reset, run after the register write that asked for it
  uint64_t ring_mc = 0, tmr_size = 0;
  uint32_t ring_bytes = 0, ring_read = 0, last_ip = 0;
  std::set<uint32_t> loaded;
  uint64_t commands = 0, smu_messages = 0;
  uint64_t driver_table = 0;
};

}  // namespace ugpu::emu::amd
