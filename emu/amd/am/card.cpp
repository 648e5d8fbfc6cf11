#include "emu/amd/am/card.h"

#include <fcntl.h>
#include <sys/mman.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "common/error.h"
#include "common/hex.h"
#include "emu/amd/am/discovery_image.h"
#include "hw/amd/am11_regs.h"
#include "hw/amd/discovery.h"
#include "hw/amd/gfx11_regs.h"
#include "hw/amd/page_table.h"
#include "hw/amd/psp.h"

namespace ugpu::emu::amd {
namespace r = hw::amd::am11;
using hw::amd::Field;

namespace {
constexpr uint32_t kHqdRegs = 56;  // CP_MQD_BASE_ADDR .. CP_HQD_PQ_WPTR_HI, one bank per queue
constexpr int kIommuGroup = 23;
// IH client and source ids (soc15_ih_clientid.h, irqsrcs_gfx_11_0_0.h).
constexpr uint32_t kClientGfx = 0x0A, kClientGrbmCp = 0x14;
constexpr uint32_t kSrcUtcl2Fault = 0, kSrcSdmaTrap = 49, kSrcCpEop = 181, kSrcCpBadOpcode = 183, kSrcSq = 239;

// BAR2 or BAR5 as the host maps it: every access goes to the card's model (Card::bar_read/bar_write).
class RegisterBar final : public sys::Mmio {
 public:
  RegisterBar(std::shared_ptr<Card> c, int bar, size_t size) : c_(std::move(c)), bar_(bar), size_(size) {}
  size_t size() const override { return size_; }
  uint32_t read32(uint64_t off) override { return read<uint32_t>(off); }
  uint64_t read64(uint64_t off) override { return read<uint64_t>(off); }
  void write32(uint64_t off, uint32_t v) override { write(off, v); }
  void write64(uint64_t off, uint64_t v) override { write(off, v); }
  void copy_in(uint64_t off, std::span<const uint8_t> src) override {
    check(off, src.size(), 4);
    c_->bar_write(bar_, off, src);
  }
  void copy_out(uint64_t off, std::span<uint8_t> dst) override {
    check(off, dst.size(), 4);
    c_->bar_read(bar_, off, dst);
  }

 private:
  template <class T>
  T read(uint64_t off) {
    T v;
    copy_out(off, {reinterpret_cast<uint8_t*>(&v), sizeof v});
    return v;
  }
  template <class T>
  void write(uint64_t off, T v) {
    copy_in(off, {reinterpret_cast<const uint8_t*>(&v), sizeof v});
  }
  // Whole, aligned dwords inside the BAR; an 8-byte access is 8-byte aligned.
  void check(uint64_t off, uint64_t n, uint64_t align) const {
    if (n == 8) align = 8;
    if (off % align || n % 4 || off > size_ || n > size_ - off)
      throw Error("emu:amd:pci: " + std::to_string(n) + "-byte access at " + hex(off) + " of the " + (bar_ == 2 ? "doorbell" : "register") +
                  " BAR (" + hex(size_) + " bytes) is misaligned, not whole dwords, or outside it");
  }
  std::shared_ptr<Card> c_;
  int bar_;
  size_t size_;
};

// A BAR's sysfs resourceN: BAR0 maps as memory (VRAM, as far as BAR0 shows it), BAR2 and BAR5 as
// registers the model sees. (The vfio device fd, with all of them as regions, is card_vfio.cpp's.)
struct ResourceFile final : VirtualFile {
  std::shared_ptr<Card> card;
  int bar = 0;
  void* mmap(uint64_t offset, size_t len, int) override { return bar == 0 ? card->bar0_memory(offset, len) : nullptr; }
  std::unique_ptr<sys::Mmio> mmio(uint64_t, size_t len, const std::string&) override { return card->bar_mmio(bar, len); }
};
}  // namespace

// ---- construction and the PCI device ----

Card::Card(VirtualOs& os, const AmCardConfig& cfg)
    : os_(os), cfg_(cfg), vram_(Pages::create(cfg.vram_bytes, "emu-amd-pci-vram")), gmem_(cfg.vram_bytes), ctx_(gmem_) {
  if (!vram_) throw Error("emu:amd:pci: cannot create " + std::to_string(cfg.vram_bytes >> 20) + " MiB of emulated VRAM");
  if (cfg.vram_bytes < (256 << 20) || cfg.vram_bytes % (2 << 20)) throw Error("emu:amd:pci: VRAM must be a multiple of 2 MiB, at least 256 MiB");
  doorbells_ = std::make_unique<std::atomic<uint64_t>[]>(kDoorbellBarBytes / 8);
  bar0_bytes_ = cfg.bar0_bytes ? std::min(cfg.bar0_bytes, cfg.vram_bytes) : cfg.vram_bytes;
  ctx_.bases = bases_;
  ctx_.executor_threads = cfg.executor_threads;
  ctx_.on_interrupt = [this](uint32_t id, QueueKind from) {
    if (from == QueueKind::Compute) interrupt(kClientGrbmCp, kSrcCpEop, 1 << 2, {id, 0, 0, 0});  // me 1, pipe 0, queue 0
    else interrupt(kClientGfx, kSrcSdmaTrap, 0, {id & 0x0FFFFFFF, 0, 0, 0});
  };
  ctx_.on_page_fault = [this](uint64_t va, Access a, const std::string& m) { page_fault(va, a, m); };
  ctx_.on_device_fault = [this](const std::string& m) {
    problem("device fault: " + m);
    std::fprintf(stderr, "emu:amd:pci: %s\n", m.c_str());
    bool sq = m.find("instruction") != std::string::npos;  // the shader executor's faults name the instruction
    // SQ error interrupt: ctxid1 ENCODING = 2 (error), ctxid0 TYPE = 1 (ILLEGAL_INST); else a CP bad-opcode interrupt.
    if (sq) interrupt(kClientGrbmCp, kSrcSq, 0, {1u << 21, 2u << 6, 0, 0});
    else interrupt(kClientGrbmCp, kSrcCpBadOpcode, 1 << 2, {0, 0, 0, 0});
  };
  gmem_.fill = [this](uint64_t va) { return walk(va); };
  psp_ = std::make_unique<PspModel>(*this);
  if (!cfg.firmware_dir.empty()) psp_->expected = read_expected_firmware(cfg.firmware_dir);
  // The discovery table lives at the top of VRAM, as the VBIOS leaves it.
  DiscoveryShape shape;
  shape.bases = bases_;
  auto table = discovery_binary(shape);
  std::memcpy(vram_->host + cfg.vram_bytes - hw::amd::discovery::kTableFromTop, table.data(), table.size());
  for (const auto& reg : r::kRegisters) known_.insert(addr(reg));
  for (const auto& reg : hw::amd::gfx11::kRegisters) known_.insert(addr(reg));
  for (uint32_t i = 0; i < kHqdRegs; ++i) known_.insert(addr(r::CP_MQD_BASE_ADDR) + i);
  hqd_first_ = addr(r::CP_MQD_BASE_ADDR), hqd_last_ = addr(r::CP_HQD_PQ_WPTR_HI);
  if (hqd_last_ - hqd_first_ + 1 != kHqdRegs) throw Error("emu:amd:pci: the HQD register window is not 56 registers");
  build_handlers();
  std::lock_guard lock(mu_);
  reset_registers();
}

Card::~Card() {
  std::map<uint32_t, std::unique_ptr<QueueEngine>> engines;
  std::unique_ptr<QueueEngine> sdma;
  {
    std::lock_guard lock(mu_);
    engines.swap(compute_);
    sdma.swap(sdma_);
  }
}

void Card::install() {
  const std::string addr = cfg_.address, real = "/sys/devices/pci0000:00/0000:00:01.0/" + addr;
  auto self = shared_from_this();
  if (!os_.exists("/tmp")) os_.add_dir("/tmp");  // where drivers keep their device locks
  // The emulated machine has the firmware package installed: the board's files, at the same path.
  if (!cfg_.firmware_dir.empty())
    for (const char* name : {"psp_13_0_0_sos.bin", "psp_13_0_0_ta.bin", "smu_13_0_0.bin", "sdma_6_0_0.bin", "gc_11_0_0_pfp.bin", "gc_11_0_0_me.bin",
                             "gc_11_0_0_mec.bin", "gc_11_0_0_imu.bin", "gc_11_0_0_rlc.bin"}) {
      std::ifstream in(cfg_.firmware_dir + "/" + name, std::ios::binary);
      std::vector<char> bytes{std::istreambuf_iterator<char>(in), {}};
      if (bytes.empty()) continue;
      auto f = os_.add_mmap_file(cfg_.firmware_dir + "/" + name, bytes.size());
      std::memcpy(f.data(), bytes.data(), bytes.size());
    }
  os_.add_symlink(std::string("/sys/bus/pci/devices/") + addr, "../../../devices/pci0000:00/0000:00:01.0/" + addr);
  char buf[64];
  std::snprintf(buf, sizeof buf, "0x%04x\n", cfg_.device_id);
  os_.add_file(real + "/vendor", "0x1002\n");
  os_.add_file(real + "/device", buf);
  os_.add_file(real + "/class", "0x030000\n");
  os_.add_file(real + "/enable", "0\n");
  os_.add_file(real + "/reset", "");
  // Config space: ids, command, class, 64-bit prefetchable BAR0 and BAR2, 32-bit BAR5.
  auto config = os_.add_mmap_file(real + "/config", 4096);
  auto put = [&](size_t at, uint32_t v, int n) { std::memcpy(config.data() + at, &v, n); };
  put(0, 0x1002, 2), put(2, cfg_.device_id, 2), put(8, 0x030000c8, 4), put(0x10, 0x0000000c, 4), put(0x18, 0x0000000c, 4), put(0x24, 0, 4);
  auto config_copy = std::make_shared<std::vector<uint8_t>>(config.begin(), config.end());
  write_resource_file();
  // Resizable BAR: the sizes BAR0 offers (bit i: 2^i MiB), and writing one of them reassigns it.
  if (cfg_.resizable_bar) {
    uint64_t mask = 0;
    for (int i = 8; (uint64_t(1) << i) <= (cfg_.vram_bytes >> 20); ++i) mask |= uint64_t(1) << i;
    auto resize = std::make_shared<FunctionFile>();
    resize->on_pread = [mask](std::span<uint8_t> d, uint64_t off) -> long {
      char text[32];
      int n = std::snprintf(text, sizeof text, "%016llx\n", (unsigned long long)mask);
      if (off >= uint64_t(n)) return 0;
      size_t k = std::min(d.size(), size_t(n) - off);
      std::memcpy(d.data(), text + off, k);
      return long(k);
    };
    resize->on_pwrite = [w = std::weak_ptr<Card>(self), mask, real, this](std::span<const uint8_t> src, uint64_t) -> long {
      auto c = w.lock();
      if (!c) return -ENODEV;
      int i = std::atoi(std::string(src.begin(), src.end()).c_str());
      if (i < 0 || i > 63 || !(mask >> i & 1)) return -EINVAL;
      if (os_.exists(real + "/driver") && cfg_.binding != AmCardConfig::Binding::None) return -EBUSY;  // a driver holds it
      bar0_bytes_ = (uint64_t(1) << i) << 20;
      write_resource_file();
      note("BAR0 resized to " + std::to_string(bar0_bytes_ >> 20) + " MiB");
      return long(src.size());
    };
    os_.add_device(real + "/resource0_resize", resize);
  }
  for (int b : {0, 2, 5}) {
    auto f = std::make_shared<ResourceFile>();
    f->card = self, f->bar = b;
    os_.add_device(real + "/resource" + std::to_string(b), f);
  }
  using B = AmCardConfig::Binding;
  if (cfg_.binding != B::None) {
    std::string drv = cfg_.binding == B::Vfio ? "vfio-pci" : "amdgpu";
    os_.add_dir("/sys/bus/pci/drivers/" + drv);
    os_.add_symlink(real + "/driver", "../../../../bus/pci/drivers/" + drv);
    // `echo ADDRESS > driver/unbind` lets the device go.
    auto unbind = std::make_shared<FunctionFile>();
    unbind->on_pwrite = [this, real, addr](std::span<const uint8_t> src, uint64_t) -> long {
      std::string a(src.begin(), src.end());
      while (!a.empty() && std::isspace(static_cast<unsigned char>(a.back()))) a.pop_back();
      if (a != addr) return -ENODEV;
      os_.remove(real + "/driver");
      note("unbound from its kernel driver");
      return long(src.size());
    };
    os_.add_device("/sys/bus/pci/drivers/" + drv + "/unbind", unbind);
  }
  // /proc/self/pagemap: the emulated "physical" address of a page is its host address (published, so
  // the card reaches only pages the driver asked about).
  auto pagemap = std::make_shared<FunctionFile>();
  pagemap->on_pread = [w = std::weak_ptr<Card>(self)](std::span<uint8_t> d, uint64_t off) -> long {
    auto c = w.lock();
    if (!c || d.size() % 8 || off % 8) return -EINVAL;
    for (size_t i = 0; i < d.size(); i += 8) {
      uint64_t va = (off + i) / 8 * 4096, e = uint64_t{1} << 63 | va >> 12;
      c->publish_page(va, reinterpret_cast<uint8_t*>(va));
      std::memcpy(d.data() + i, &e, 8);
    }
    return long(d.size());
  };
  os_.add_device("/proc/self/pagemap", pagemap);
  if (!cfg_.iommu_group) return;
  const std::string group = std::to_string(kIommuGroup);
  os_.add_symlink(real + "/iommu_group", "../../../../kernel/iommu_groups/" + group);
  os_.add_symlink("/sys/kernel/iommu_groups/" + group + "/devices/" + addr, "../../../../devices/pci0000:00/0000:00:01.0/" + addr);
  // vfio's nodes (card_vfio.cpp) exist only in a build with the Linux drivers, whose vfio path opens them.
  if constexpr (UGPU_LINUX_DRIVERS)
    if (cfg_.binding == B::Vfio) install_vfio(group, config_copy);
}

void* Card::bar0_memory(uint64_t offset, size_t len) const {
  if (offset > bar0_bytes_ || len > bar0_bytes_ - offset) return nullptr;
  return vram() + offset;
}

std::unique_ptr<sys::Mmio> Card::bar_mmio(int bar, size_t len) {
  if (bar == 2) return std::make_unique<RegisterBar>(shared_from_this(), 2, std::min<size_t>(len, kDoorbellBarBytes));
  if (bar == 5) return std::make_unique<RegisterBar>(shared_from_this(), 5, std::min<size_t>(len, kRegBarBytes));
  return nullptr;
}

void Card::write_resource_file() {
  // Six BAR lines, then ROM and bridge windows; BAR0 VRAM, BAR2 doorbells, BAR5 registers.
  std::string res;
  char buf[96];
  auto line = [&](uint64_t start, uint64_t size, uint64_t flags) {
    std::snprintf(buf, sizeof buf, "0x%016llx 0x%016llx 0x%016llx\n", (unsigned long long)start, (unsigned long long)(size ? start + size - 1 : 0),
                  (unsigned long long)flags);
    res += buf;
  };
  line(0x7800000000, bar0_bytes_, 0x14220c), line(0, 0, 0), line(0x7c00000000, kDoorbellBarBytes, 0x14220c), line(0, 0, 0), line(0, 0, 0),
      line(0xfcc00000, kRegBarBytes, 0x40200), line(0, 0, 0);
  os_.add_file("/sys/devices/pci0000:00/0000:00:01.0/" + cfg_.address + "/resource", res);
}

void Card::dma_map(uint64_t bus, uint8_t* host, uint64_t size) {
  std::lock_guard lock(dma_mu_);
  dma_[bus] = {host, size};
}
void Card::dma_unmap(uint64_t bus) {
  {
    std::lock_guard lock(dma_mu_);
    dma_.erase(bus);
  }
  gmem_.unmap_range(0, ~uint64_t{0});  // nothing may keep reaching memory the IOMMU no longer maps
}
void Card::publish_page(uint64_t bus, uint8_t* host) {
  std::lock_guard lock(dma_mu_);
  dma_[bus] = {host, 4096};
}
uint8_t* Card::bus(uint64_t address, uint64_t size) {
  std::lock_guard lock(dma_mu_);
  auto it = dma_.upper_bound(address);
  if (it == dma_.begin()) return nullptr;
  --it;
  // Contiguous published pages (sysfs: one entry per page) count as one range.
  uint64_t start = it->first, end = it->first + it->second.second;
  uint8_t* host = it->second.first;
  if (address >= end) return nullptr;
  while (address + size > end) {
    auto next = dma_.find(end);
    if (next == dma_.end() || next->second.first != host + (end - start)) return nullptr;
    end += next->second.second;
  }
  return host + (address - start);
}

// ---- stats, log, test hooks ----

AmCardStats Card::stats() const {
  AmCardStats s;
  s.dispatches = ctx_.dispatches, s.wave_instructions = ctx_.wave_instructions, s.packets = ctx_.packets;
  s.tlb_invalidations = invalidations_, s.page_walks = walks_, s.interrupts = interrupts_, s.mode1_resets = mode1_resets_;
  std::lock_guard lock(mu_);
  s.queues = compute_.size() + (sdma_ ? 1 : 0);
  s.psp_commands = psp_->commands, s.smu_messages = psp_->smu_messages, s.sos_alive = psp_->sos_alive, s.rlc_autoloaded = psp_->autoloaded;
  return s;
}
std::vector<std::string> Card::log() const {
  std::lock_guard lock(log_mu_);
  return log_;
}
void Card::note(std::string line) {
  std::lock_guard lock(log_mu_);
  log_.push_back(std::move(line));
}
void Card::problem(std::string line) {
  std::lock_guard lock(log_mu_);
  faults_.push_back(line);
  log_.push_back(std::move(line));
}
std::vector<std::string> Card::faults() const {
  std::lock_guard lock(log_mu_);
  return faults_;
}
std::vector<std::string> Card::unknown_registers() const {
  std::lock_guard lock(mu_);
  return unknown_;
}
uint32_t Card::peek(uint32_t dword) {
  std::lock_guard lock(mu_);
  if (dword >= hqd_first_ && dword <= hqd_last_) return hqd(selected_queue(), dword);
  auto it = regs_.find(dword);
  return it == regs_.end() ? 0 : it->second;
}
void Card::poke(uint32_t dword, uint32_t value) {
  std::lock_guard lock(mu_);
  regs_[dword] = value;
}

bool Card::bar_read(int bar, uint64_t offset, std::span<uint8_t> out) {
  if (bar == 0) {
    if (offset > bar0_bytes_ || out.size() > bar0_bytes_ - offset) return false;
    std::memcpy(out.data(), vram_->host + offset, out.size());
    return true;
  }
  if ((bar != 2 && bar != 5) || offset % 4 || out.size() % 4) return false;
  if (offset + out.size() > (bar == 2 ? kDoorbellBarBytes : kRegBarBytes)) return false;
  for (size_t i = 0; i < out.size(); i += 4) {
    uint32_t v = bar == 5 ? read_reg(uint32_t((offset + i) / 4)) : uint32_t(doorbell_value((offset + i) & ~7ull) >> ((offset + i) & 4 ? 32 : 0));
    std::memcpy(out.data() + i, &v, 4);
  }
  return true;
}

bool Card::bar_write(int bar, uint64_t offset, std::span<const uint8_t> data) {
  if (bar == 0) {
    if (offset > bar0_bytes_ || data.size() > bar0_bytes_ - offset) return false;
    std::memcpy(vram_->host + offset, data.data(), data.size());
    return true;
  }
  if ((bar != 2 && bar != 5) || offset % 4 || data.size() % 4) return false;
  if (offset + data.size() > (bar == 2 ? kDoorbellBarBytes : kRegBarBytes)) return false;
  for (size_t i = 0; i < data.size();) {
    if (bar == 2 && (offset + i) % 8 == 0 && data.size() - i >= 8) {  // a 64-bit doorbell in one write
      uint64_t v;
      std::memcpy(&v, data.data() + i, 8);
      doorbell(offset + i, v, 8);
      i += 8;
      continue;
    }
    uint32_t v;
    std::memcpy(&v, data.data() + i, 4);
    bar == 5 ? write_reg(uint32_t((offset + i) / 4), v) : doorbell(offset + i, v, 4);
    i += 4;
  }
  return true;
}

void Card::resize_bar0(uint64_t bytes) {
  bar0_bytes_ = std::min(bytes, cfg_.vram_bytes);
  note("BAR0 resized to " + std::to_string(bar0_bytes_ >> 20) + " MiB");
}

void Card::power_cycle() {
  std::map<uint32_t, std::unique_ptr<QueueEngine>> engines;
  std::unique_ptr<QueueEngine> sdma;
  {
    std::lock_guard lock(mu_);
    engines.swap(compute_);
    sdma.swap(sdma_);
    reset_registers();
  }
  engines.clear(), sdma.reset();
  gmem_.unmap_range(0, ~uint64_t{0});
  note("power cycle: registers and firmware reset");
}

void Card::reset_registers() {
  regs_.clear();
  hqds_.clear();
  psp_->reset();
  mm_index_ = rsmu_index_ = 0;
  for (size_t i = 0; i < kDoorbellBarBytes / 8; ++i) doorbells_[i] = 0;
  reg(r::RCC_DEV0_EPF0_RCC_CONFIG_MEMSIZE) = uint32_t(cfg_.vram_bytes >> 20);
  for (auto [base, top] :
       {std::pair{r::GCMC_VM_FB_LOCATION_BASE, r::GCMC_VM_FB_LOCATION_TOP}, {r::MMMC_VM_FB_LOCATION_BASE, r::MMMC_VM_FB_LOCATION_TOP}})
    reg(base) = uint32_t(fb_base_ >> 24), reg(top) = uint32_t((fb_base_ + cfg_.vram_bytes - 1) >> 24);
  reg(r::CP_MEC_RS64_CNTL) = 0x40000000;  // MEC halted
  reg(r::SDMA0_F32_CNTL) = 0x08084001;    // SDMA halted
  reg(r::SDMA0_QUEUE0_RB_CNTL) = 0x00040800;
  reg(r::GCVM_CONTEXT0_CNTL) = 0x01FFFE00, reg(r::MMVM_CONTEXT0_CNTL) = 0x01FFFE00;
  reg(r::MP0_SMN_C2PMSG_35) = hw::amd::psp::kBlReady;
}

// ---- registers ----

uint32_t Card::selected_queue() const {
  auto it = regs_.find(addr(r::GRBM_GFX_CNTL));
  uint32_t v = it == regs_.end() ? 0 : it->second;
  namespace f = r::GRBM_GFX_CNTL_fields;
  return f::MEID.get(v) << 8 | f::PIPEID.get(v) << 4 | f::QUEUEID.get(v);
}

uint32_t& Card::hqd(uint32_t key, uint32_t dword) { return hqds_[key][dword - hqd_first_]; }

uint32_t Card::read_reg(uint32_t dword) {
  std::lock_guard lock(mu_);
  if (dword >= hqd_first_ && dword <= hqd_last_) return hqd(selected_queue(), dword);
  if (auto h = handlers_.find(dword); h != handlers_.end() && h->second.read) return h->second.read();
  if (!known_.count(dword)) {
    std::string name = hw::amd::register_name(dword, bases_);
    if (cfg_.strict_registers)
      throw Error("emu:amd:pci: the driver read register " + hex(dword) + (name.empty() ? "" : " (" + name + ")") +
                  ", which the emulated card does not model");
    unknown_.push_back("read " + hex(dword));
  }
  auto it = regs_.find(dword);
  return it == regs_.end() ? 0 : it->second;
}

void Card::write_reg(uint32_t dword, uint32_t value) {
  std::vector<Action> after;
  {
    std::lock_guard lock(mu_);
    if (dword >= hqd_first_ && dword <= hqd_last_) {
      uint32_t key = selected_queue();
      hqd(key, dword) = value;
      if (dword == addr(r::CP_HQD_ACTIVE)) {
        if (value & 1) start_compute(key);
        else stop_compute(key, after);
      } else if (dword == addr(r::CP_HQD_DEQUEUE_REQUEST) && value) {
        stop_compute(key, after);
        hqd(key, addr(r::CP_HQD_ACTIVE)) = 0;
      }
    } else if (auto h = handlers_.find(dword); h != handlers_.end() && h->second.write) {
      h->second.write(value, after);
    } else {
      if (!known_.count(dword)) unknown_.push_back("write " + hex(dword) + " = " + hex(value));
      regs_[dword] = value;
    }
  }
  for (auto& a : after) a();
}

void Card::build_handlers() {
  auto store = [this](const hw::amd::Register& x) { return [this, a = addr(x)](uint32_t v, std::vector<Action>&) { regs_[a] = v; }; };
  auto on_write = [&](const hw::amd::Register& x, std::function<void(uint32_t, std::vector<Action>&)> w) { handlers_[addr(x)].write = std::move(w); };
  auto on_read = [&](const hw::amd::Register& x, std::function<uint32_t()> rd) { handlers_[addr(x)].read = std::move(rd); };
  // GMC: TLB invalidation on engine 17 of both hubs; the MM hub's semaphore is always free.
  for (auto [req, ack, gc] : {std::tuple{r::GCVM_INVALIDATE_ENG17_REQ, r::GCVM_INVALIDATE_ENG17_ACK, true},
                              std::tuple{r::MMVM_INVALIDATE_ENG17_REQ, r::MMVM_INVALIDATE_ENG17_ACK, false}})
    on_write(req, [this, ack, gc](uint32_t v, std::vector<Action>& after) {
      reg(ack) = v & 0xFFFF;
      after.push_back([this, gc] { invalidate_tlb(gc); });
    });
  on_read(r::MMVM_INVALIDATE_ENG17_SEM, [] { return 1u; });
  on_write(r::MMVM_INVALIDATE_ENG17_SEM, [](uint32_t, std::vector<Action>&) {});
  // Fault status: writing CLEAR_PROTECTION_FAULT_STATUS_ADDR to the control register clears it.
  for (auto [cntl, status] : {std::pair{r::GCVM_L2_PROTECTION_FAULT_CNTL, r::GCVM_L2_PROTECTION_FAULT_STATUS},
                              std::pair{r::MMVM_L2_PROTECTION_FAULT_CNTL, r::MMVM_L2_PROTECTION_FAULT_STATUS}})
    on_write(cntl, [this, cntl, status](uint32_t v, std::vector<Action>&) {
      reg(cntl) = v & ~1u;
      if (v & 1) reg(status) = 0;
    });
  // RLC autoload: CP is busy and the bootload incomplete until the PSP has run AUTOLOAD_RLC.
  on_read(r::CP_STAT, [this] { return psp_->autoloaded ? 0u : 0x80000000u; });
  on_read(r::RLC_RLCS_BOOTLOAD_STATUS, [this] { return psp_->autoloaded ? 0x80000001u : 0u; });
  // MEC: starting it starts the queues already active on it; halting it stops them.
  on_write(r::CP_MEC_RS64_CNTL, [this](uint32_t v, std::vector<Action>& after) {
    reg(r::CP_MEC_RS64_CNTL) = v;
    namespace f = r::CP_MEC_RS64_CNTL_fields;
    if (!f::MEC_HALT.get(v) && f::MEC_PIPE0_ACTIVE.get(v) && !f::MEC_PIPE0_RESET.get(v)) return start_queues();
    stop_all_compute(after);
  });
  for (const auto& x : {r::CP_MEC_RS64_PRGRM_CNTR_START, r::CP_MEC_RS64_PRGRM_CNTR_START_HI}) on_write(x, store(x));
  on_write(r::SPI_COMPUTE_QUEUE_RESET, [this](uint32_t v, std::vector<Action>& after) {
    if (v & 1) stop_compute(selected_queue(), after);
  });
  on_write(r::GRBM_SOFT_RESET, [this](uint32_t v, std::vector<Action>& after) {
    namespace f = r::GRBM_SOFT_RESET_fields;
    if (f::SOFT_RESET_CP.get(v) || f::SOFT_RESET_CPC.get(v)) {
      stop_all_compute(after);
      for (auto& [key, bank] : hqds_) bank[addr(r::CP_HQD_ACTIVE) - hqd_first_] = 0;
    }
    if (f::SOFT_RESET_SDMA0.get(v)) stop_later(std::move(sdma_), after);
    reg(r::GRBM_SOFT_RESET) = v;
  });
  // SDMA queue 0.
  for (const auto& x : {r::SDMA0_QUEUE0_RB_CNTL, r::SDMA0_F32_CNTL})
    on_write(x, [this, x](uint32_t v, std::vector<Action>& after) {
      reg(x) = v;
      sdma_control(after);
    });
  // PSP and SMU mailboxes.
  on_write(r::MP0_SMN_C2PMSG_35, [this](uint32_t v, std::vector<Action>&) { psp_->bootloader_command(v); });
  on_write(r::MP0_SMN_C2PMSG_64, [this](uint32_t v, std::vector<Action>&) { psp_->ring_control(v); });
  on_write(r::MP0_SMN_C2PMSG_67, [this](uint32_t v, std::vector<Action>&) { psp_->ring_write_pointer(v); });
  on_read(r::MP0_SMN_C2PMSG_81, [this] { return psp_->sos_alive ? 0x310025u : 0u; });
  on_read(r::MP0_SMN_C2PMSG_58, [this] { return psp_->sos_alive ? 0x310025u : 0u; });
  for (auto [x, debug] : {std::pair{r::MP1_SMN_C2PMSG_66, false}, std::pair{r::MP1_SMN_C2PMSG_75, true}})
    on_write(x, [this, debug](uint32_t v, std::vector<Action>& after) {
      psp_->smu_message(v, debug);
      if (psp_->reset_requested)
        after.push_back([this] {
          ++mode1_resets_;
          power_cycle();
        });
    });
  // Indirect access: VRAM through MM_INDEX/MM_DATA, registers past BAR5 through RSMU_INDEX/DATA.
  on_write(r::BIF_BX_PF0_MM_INDEX, [this](uint32_t v, std::vector<Action>&) { mm_index_ = (mm_index_ & ~0x7FFFFFFFull) | (v & 0x7FFFFFFF); });
  on_write(r::BIF_BX_PF0_MM_INDEX_HI, [this](uint32_t v, std::vector<Action>&) { mm_index_ = (mm_index_ & 0x7FFFFFFF) | uint64_t(v) << 31; });
  on_read(r::BIF_BX_PF0_MM_DATA, [this]() -> uint32_t {
    if (mm_index_ + 4 > cfg_.vram_bytes) throw Error("emu:amd:pci: MM_DATA read at VRAM offset " + hex(mm_index_) + " is past the end of VRAM");
    uint32_t v;
    std::memcpy(&v, vram_->host + mm_index_, 4);
    return v;
  });
  on_write(r::BIF_BX_PF0_MM_DATA, [this](uint32_t v, std::vector<Action>&) {
    if (mm_index_ + 4 <= cfg_.vram_bytes) std::memcpy(vram_->host + mm_index_, &v, 4);
  });
  on_write(r::BIF_BX_PF0_RSMU_INDEX, [this](uint32_t v, std::vector<Action>&) { rsmu_index_ = v; });
  on_read(r::BIF_BX_PF0_RSMU_DATA, [this] { return read_reg(uint32_t(rsmu_index_ / 4)); });
  on_write(r::BIF_BX_PF0_RSMU_DATA, [this](uint32_t v, std::vector<Action>& after) {
    uint32_t target = uint32_t(rsmu_index_ / 4);
    after.push_back([this, target, v] { write_reg(target, v); });
  });
  // The CPU-side HDP flush is a no-op: the emulated memory is coherent.
  on_write(r::BIF_BX_PF0_HDP_MEM_COHERENCY_FLUSH_CNTL, [](uint32_t, std::vector<Action>&) {});
}

// ---- GMC ----

uint8_t* Card::mc(uint64_t address, uint64_t size, Access a) {
  if (address >= fb_base_ && address - fb_base_ + size <= cfg_.vram_bytes) return vram_->host + (address - fb_base_);
  return gmem_.host(address, size, a);
}

void Card::invalidate_tlb(bool) {
  ++invalidations_;
  std::lock_guard lock(tlb_mu_);
  ++tlb_generation_;  // a fill that read the tables before this must not land after it
  gmem_.unmap_range(0, ~uint64_t{0});
}

Card::VmContext Card::vm_context() {
  std::lock_guard lock(mu_);
  VmContext c;
  c.cntl = reg(r::GCVM_CONTEXT0_CNTL), c.tlb = reg(r::GCMC_VM_MX_L1_TLB_CNTL);
  c.start = uint64_t(reg(r::GCVM_CONTEXT0_PAGE_TABLE_START_ADDR_HI32) & 0xF) << 32 | reg(r::GCVM_CONTEXT0_PAGE_TABLE_START_ADDR_LO32);
  c.end = uint64_t(reg(r::GCVM_CONTEXT0_PAGE_TABLE_END_ADDR_HI32) & 0xF) << 32 | reg(r::GCVM_CONTEXT0_PAGE_TABLE_END_ADDR_LO32);
  c.base = uint64_t(reg(r::GCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32)) << 32 | reg(r::GCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32);
  c.ap_lo = uint64_t(reg(r::GCMC_VM_SYSTEM_APERTURE_LOW_ADDR)) << 18, c.ap_hi = (uint64_t(reg(r::GCMC_VM_SYSTEM_APERTURE_HIGH_ADDR)) + 1) << 18;
  return c;
}

std::optional<Card::Leaf> Card::leaf(uint64_t va, const VmContext& vm) {
  // The system aperture: with SYSTEM_ACCESS_MODE 3, VMID 0 reaches the framebuffer by MC address directly.
  namespace tf = r::GCMC_VM_MX_L1_TLB_CNTL_fields;
  if (tf::ENABLE_L1_TLB.get(vm.tlb) && tf::SYSTEM_ACCESS_MODE.get(vm.tlb) == 3 && va >= vm.ap_lo && va < vm.ap_hi && va >= fb_base_ &&
      va < fb_base_ + cfg_.vram_bytes)
    return Leaf{fb_base_, cfg_.vram_bytes, 0, false, true, true};
  namespace cf = r::GCVM_CONTEXT0_CNTL_fields;
  if (!cf::ENABLE_CONTEXT.get(vm.cntl) || !(vm.base & 1)) return std::nullopt;
  uint64_t page = va >> 12;
  if (page < vm.start || page > vm.end) return std::nullopt;
  const auto& f = hw::amd::kPteGfx11;
  int depth = int(cf::PAGE_TABLE_DEPTH.get(vm.cntl));  // directory levels above the PTB
  uint64_t rel = va - (vm.start << 12), table = vm.base & f.address_mask;
  const int top = 3 - depth;  // the root's level; a flat table (depth 0) is one PTB as long as the range
  for (int level = top; level < 4; ++level) {
    int shift = hw::amd::kLevelShift[level];
    uint64_t index = rel >> shift;
    if (level != top) index &= 511;
    if (table + index * 8 + 8 > cfg_.vram_bytes) return std::nullopt;  // a table outside VRAM: a walker error
    uint64_t e;
    std::memcpy(&e, vram_->host + table + index * 8, 8);
    auto p = hw::amd::decode_pte(f, e);
    if (!p.valid) return std::nullopt;
    if (level < 3 && !p.leaf_pde) {
      table = p.address;
      continue;
    }
    if (!p.readable) return std::nullopt;
    uint64_t size = uint64_t(1) << shift;
    return Leaf{va & ~(size - 1), size, p.address, p.system, p.writeable, p.executable};
  }
  return std::nullopt;
}

bool Card::walk(uint64_t va) {
  for (;;) {
    uint64_t generation;
    {
      std::lock_guard lock(tlb_mu_);
      generation = tlb_generation_;
    }
    if (auto filled = walk_once(va, generation)) return *filled;
  }
}

std::optional<bool> Card::walk_once(uint64_t va, uint64_t generation) {
  ++walks_;
  const VmContext vm = vm_context();  // one read of the context registers per fill, however many leaves
  auto first = leaf(va, vm);
  if (!first) return false;
  // A TLB fill maps the leaf and the leaves after it that continue it (same kind of memory, the next
  // physical address, the same access), up to 64 MiB, so a ring or a buffer made of many pages is one
  // span to the engines.
  Leaf run = *first;
  constexpr uint64_t kMaxRun = 64 << 20;
  while (run.size < kMaxRun) {
    auto next = leaf(run.va + run.size, vm);
    if (!next || next->va != run.va + run.size || next->system != run.system || next->pa != run.pa + run.size || next->writable != run.writable ||
        next->executable != run.executable)
      break;
    run.size += next->size;
  }
  auto map = [&](const Leaf& l) -> bool {
    if (l.system) {
      uint8_t* h = bus(l.pa, l.size);
      return h && gmem_.map({l.va, l.size, 0, Pages::borrow(h, l.size), l.writable, l.executable});
    }
    return l.pa + l.size <= cfg_.vram_bytes && gmem_.map({l.va, l.size, l.pa, vram_, l.writable, l.executable});
  };
  std::lock_guard lock(tlb_mu_);
  if (generation != tlb_generation_) return std::nullopt;  // the tables changed while they were walked: again
  if (map(run)) return true;
  // A span filled from another address overlaps this run (the TLB caches spans, not pages; a fill from
  // further on in a buffer covers only its tail): the run replaces it, so an access that starts here
  // sees the whole buffer.
  gmem_.evict(run.va, run.size);
  if (map(run) || map(*first)) return true;
  return gmem_.host(va, 1, Access::Read) != nullptr;  // raced with another fill of the same page
}

void Card::page_fault(uint64_t va, Access a, const std::string& message) {
  problem(message);
  std::fprintf(stderr, "emu:amd:pci: %s\n", message.c_str());
  {
    std::lock_guard lock(mu_);
    // The first fault latches its address until the driver clears the status.
    if (!reg(r::GCVM_L2_PROTECTION_FAULT_STATUS)) {
      namespace sf = r::GCVM_L2_PROTECTION_FAULT_STATUS_fields;
      uint32_t s = sf::MAPPING_ERROR.set(0, 1);
      s = sf::RW.set(s, a == Access::Write || a == Access::Atomic);
      s = sf::CID.set(s, 5);  // CPC
      reg(r::GCVM_L2_PROTECTION_FAULT_STATUS) = s;
      reg(r::GCVM_L2_PROTECTION_FAULT_ADDR_LO32) = uint32_t(va >> 12);
      reg(r::GCVM_L2_PROTECTION_FAULT_ADDR_HI32) = uint32_t(va >> 44) & 0xF;
    } else {
      reg(r::GCVM_L2_PROTECTION_FAULT_STATUS) |= 1;  // MORE_FAULTS
    }
  }
  interrupt(kClientGfx, kSrcUtcl2Fault, 0, {uint32_t(va >> 12), uint32_t(va >> 44 & 0xF) | (a == Access::Write ? 0x20u : 0u), 0, 0});
}

// ---- IH ----

void Card::interrupt(uint32_t client, uint32_t src, uint32_t ring_id, std::array<uint32_t, 4> data) {
  ++interrupts_;
  std::lock_guard lock(mu_);
  namespace f = r::IH_RB_CNTL_fields;
  uint32_t cntl = reg(r::IH_RB_CNTL);
  if (!f::RB_ENABLE.get(cntl)) return;
  uint64_t base = uint64_t(reg(r::IH_RB_BASE)) << 8 | uint64_t(reg(r::IH_RB_BASE_HI) & 0xFF) << 40;
  uint64_t size = uint64_t(4) << f::RB_SIZE.get(cntl);
  uint32_t& wreg = reg(r::IH_RB_WPTR);
  uint64_t w = (wreg & 0x3FFFC) & (size - 1), rp = reg(r::IH_RB_RPTR) & 0x3FFFC & (size - 1), next = (w + 32) & (size - 1);
  if (next == rp) {
    wreg |= 1;  // RB_OVERFLOW: the entry is lost
    return;
  }
  uint8_t* e = mc(base + w, 32, Access::Write);
  if (!e) {
    problem("IH ring at " + hex(base) + " is not reachable; interrupt dropped");
    return;
  }
  uint64_t ts = GpuContext::clock();
  uint32_t entry[8] = {client | src << 8 | ring_id << 16, uint32_t(ts), uint32_t(ts >> 32) & 0xFFFF, 0, data[0], data[1], data[2], data[3]};
  std::memcpy(e, entry, 32);
  wreg = uint32_t(next) | (wreg & 1);
  if (f::WPTR_WRITEBACK_ENABLE.get(cntl)) {
    uint64_t wb = uint64_t(reg(r::IH_RB_WPTR_ADDR_HI) & 0xFFFF) << 32 | (reg(r::IH_RB_WPTR_ADDR_LO) & ~3u);
    if (uint8_t* p = mc(wb, 4, Access::Write)) std::memcpy(p, &wreg, 4);
  }
}

// ---- queues ----

std::atomic<uint64_t>* Card::doorbell_slot(uint64_t byte_offset) {
  return byte_offset % 8 == 0 && byte_offset < kDoorbellBarBytes ? &doorbells_[byte_offset / 8] : nullptr;
}

uint64_t Card::doorbell_value(uint64_t offset) const { return doorbells_[offset / 8].load(); }

void Card::doorbell(uint64_t offset, uint64_t value, int bytes) {
  std::lock_guard lock(mu_);
  if (!(reg(r::RCC_DEV0_EPF0_RCC_DOORBELL_APER_EN) & 1)) {
    problem("doorbell write at " + hex(offset) + " dropped: the doorbell aperture is disabled (RCC_DOORBELL_APER_EN)");
    return;
  }
  std::atomic<uint64_t>& slot = doorbells_[offset / 8];
  if (bytes == 8) slot = value;
  else slot = (slot & ~(uint64_t{0xFFFFFFFF} << (offset & 4 ? 32 : 0))) | uint64_t(uint32_t(value)) << (offset & 4 ? 32 : 0);
  for (auto& [key, e] : compute_)
    if (e->setup().doorbell == &slot) {
      uint64_t lo = reg(r::CP_MEC_DOORBELL_RANGE_LOWER) & 0xFFC, hi = reg(r::CP_MEC_DOORBELL_RANGE_UPPER) & 0xFFC;
      if (offset < lo || offset > hi) {
        problem("MEC doorbell at " + hex(offset) + " is outside CP_MEC_DOORBELL_RANGE [" + hex(lo) + ", " + hex(hi) + "]; ignored");
        continue;
      }
      e->kick();
    }
  if (sdma_ && sdma_->setup().doorbell == &slot) sdma_->kick();
}

void Card::start_compute(uint32_t key) {
  uint32_t cntl = reg(r::CP_MEC_RS64_CNTL);
  namespace f = r::CP_MEC_RS64_CNTL_fields;
  if (f::MEC_HALT.get(cntl) || !f::MEC_PIPE0_ACTIVE.get(cntl) || f::MEC_PIPE0_RESET.get(cntl) || compute_.count(key)) return;  // waits for the MEC
  if ((key >> 8) != 1 || ((key >> 4) & 0xF) != 0) {
    problem("HQD me " + std::to_string(key >> 8) + " pipe " + std::to_string((key >> 4) & 0xF) + " activated; the card runs ME1 pipe 0 only");
    return;
  }
  if (!psp_->autoloaded || !psp_->has(hw::amd::psp::kFwRs64Mec)) {
    problem("HQD activated but the MEC has no firmware (PSP LOAD_IP_FW RS64_MEC and AUTOLOAD_RLC did not happen): the queue never runs");
    return;
  }
  // The program counter registers hold the firmware's byte start address in dwords: START = bits 2-33, HI = bits 34 and up.
  uint64_t pc = uint64_t(reg(r::CP_MEC_RS64_PRGRM_CNTR_START_HI)) << 32 | reg(r::CP_MEC_RS64_PRGRM_CNTR_START);
  uint64_t want = psp_->expected.mec_start;
  if (want ? pc != (uint64_t(uint32_t(want >> 34)) << 32 | uint32_t(want >> 2)) : pc == 0) {
    problem("MEC started at program counter " + hex(pc) + ", not the firmware's entry: the queue never runs");
    return;
  }
  auto h = [&](const hw::amd::Register& x) { return hqd(key, addr(x)); };
  namespace pq = r::CP_HQD_PQ_CONTROL_fields;
  namespace db = r::CP_HQD_PQ_DOORBELL_CONTROL_fields;
  uint32_t doorbell = h(r::CP_HQD_PQ_DOORBELL_CONTROL);
  QueueSetup s{QueueKind::Compute,
               key,
               (uint64_t(h(r::CP_HQD_PQ_BASE_HI)) << 32 | h(r::CP_HQD_PQ_BASE)) << 8,
               uint64_t(4) << (pq::QUEUE_SIZE.get(h(r::CP_HQD_PQ_CONTROL)) + 1),
               uint64_t(h(r::CP_HQD_PQ_RPTR_REPORT_ADDR_HI) & 0xFFFF) << 32 | (h(r::CP_HQD_PQ_RPTR_REPORT_ADDR) & ~3u),
               uint64_t(h(r::CP_HQD_PQ_WPTR_POLL_ADDR_HI) & 0xFFFF) << 32 | (h(r::CP_HQD_PQ_WPTR_POLL_ADDR) & ~3u),
               doorbell_slot(uint64_t(db::DOORBELL_OFFSET.get(doorbell)) * 4)};
  if (!db::DOORBELL_EN.get(doorbell) || !s.doorbell) {
    problem("HQD activated without a usable doorbell (CP_HQD_PQ_DOORBELL_CONTROL " + hex(doorbell) + "): the queue never runs");
    return;
  }
  if (h(r::CP_HQD_VMID) & 0xF) {
    problem("HQD activated on VMID " + std::to_string(h(r::CP_HQD_VMID) & 0xF) + "; the card translates VMID 0 only");
    return;
  }
  *s.doorbell = uint64_t(h(r::CP_HQD_PQ_WPTR_HI)) << 32 | h(r::CP_HQD_PQ_WPTR_LO);
  compute_[key] = std::make_unique<QueueEngine>(ctx_, s);
  note("compute queue started: me 1 pipe 0 queue " + std::to_string(key & 0xF) + ", ring " + hex(s.ring_va) + " (" + std::to_string(s.ring_bytes) +
       " bytes), doorbell " + hex(uint64_t(db::DOORBELL_OFFSET.get(doorbell)) * 4));
}

void Card::start_queues() {
  for (auto& [key, bank] : hqds_)
    if (bank[addr(r::CP_HQD_ACTIVE) - hqd_first_] & 1) start_compute(key);
}

void Card::stop_later(std::unique_ptr<QueueEngine> engine, std::vector<Action>& after) {
  if (engine) after.push_back([e = std::shared_ptr<QueueEngine>(std::move(engine))] {});  // joined outside the lock
}

void Card::stop_all_compute(std::vector<Action>& after) {
  for (auto& [key, e] : compute_) stop_later(std::move(e), after);
  compute_.clear();
}

void Card::stop_compute(uint32_t key, std::vector<Action>& after) {
  auto it = compute_.find(key);
  if (it == compute_.end()) return;
  stop_later(std::move(it->second), after);
  compute_.erase(it);
}

void Card::sdma_control(std::vector<Action>& after) {
  namespace rb = r::SDMA0_QUEUE0_RB_CNTL_fields;
  namespace fc = r::SDMA0_F32_CNTL_fields;
  uint32_t cntl = reg(r::SDMA0_QUEUE0_RB_CNTL), f32 = reg(r::SDMA0_F32_CNTL);
  bool run = rb::RB_ENABLE.get(cntl) && !fc::HALT.get(f32);
  if (!run) return stop_later(std::move(sdma_), after);
  if (sdma_) return;
  if (!psp_->autoloaded || !psp_->has(hw::amd::psp::kFwSdmaTh0) || !psp_->has(hw::amd::psp::kFwSdmaTh1)) {
    problem("SDMA queue enabled but SDMA has no firmware (PSP LOAD_IP_FW SDMA_UCODE_TH0/TH1): the queue never runs");
    return;
  }
  uint32_t door = reg(r::SDMA0_QUEUE0_DOORBELL), off = reg(r::SDMA0_QUEUE0_DOORBELL_OFFSET);
  QueueSetup s{QueueKind::Sdma,
               0,
               (uint64_t(reg(r::SDMA0_QUEUE0_RB_BASE_HI)) << 32 | reg(r::SDMA0_QUEUE0_RB_BASE)) << 8,
               uint64_t(4) << rb::RB_SIZE.get(cntl),
               uint64_t(reg(r::SDMA0_QUEUE0_RB_RPTR_ADDR_HI)) << 32 | (reg(r::SDMA0_QUEUE0_RB_RPTR_ADDR_LO) & ~3u),
               uint64_t(reg(r::SDMA0_QUEUE0_RB_WPTR_POLL_ADDR_HI)) << 32 | (reg(r::SDMA0_QUEUE0_RB_WPTR_POLL_ADDR_LO) & ~3u),
               doorbell_slot(uint64_t((off >> 2) & 0x3FFFFFF) * 4)};
  if (!r::SDMA0_QUEUE0_DOORBELL_fields::ENABLE.get(door) || !s.doorbell) {
    problem("SDMA queue enabled without a usable doorbell: the queue never runs");
    return;
  }
  *s.doorbell = uint64_t(reg(r::SDMA0_QUEUE0_RB_WPTR_HI)) << 32 | reg(r::SDMA0_QUEUE0_RB_WPTR);
  sdma_ = std::make_unique<QueueEngine>(ctx_, s);
  note("SDMA queue 0 started: ring " + hex(s.ring_va) + " (" + std::to_string(s.ring_bytes) + " bytes)");
}

std::shared_ptr<AmCard> install_am_gpu(VirtualOs& os, const AmCardConfig& cfg) {
  auto c = std::make_shared<Card>(os, cfg);
  c->install();
  return c;
}

}  // namespace ugpu::emu::amd
