#include "drivers/amd/am/am_gpu.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "common/error.h"
#include "common/hex.h"
#include "hw/amd/am11_regs.h"
#include "hw/amd/discovery.h"
#include "hw/amd/packets.h"

namespace ugpu::amd::am {
namespace r = hw::amd::am11;
using Clock = std::chrono::steady_clock;

namespace {
#ifdef MAP_FIXED_NOREPLACE
constexpr int kNoReplace = MAP_FIXED_NOREPLACE;  // exactly that address, or an error
#else
constexpr int kNoReplace = 0;  // macOS: the address is a hint, checked after the call
#endif
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// GPUs by GC version: which AM can boot, and what the others are, so a refusal names the part.
struct ChipRow {
  IpVersion gc;
  const char* arch;
  uint32_t gfx_target_version;
  const char* name;
  bool supported;
};
constexpr ChipRow kChips[] = {
    {{11, 0, 0}, "gfx1100", 110000, "Navi31 (Radeon RX 7900 XT/XTX, Pro W7800/W7900)", true},
    {{11, 0, 1}, "gfx1101", 110001, "Navi32 (Radeon RX 7700/7800)", false},
    {{11, 0, 2}, "gfx1102", 110002, "Navi33 (Radeon RX 7600)", false},
    {{11, 0, 3}, "gfx1103", 110003, "Phoenix APU", false},
    {{12, 0, 0}, "gfx1200", 120000, "Navi44 (Radeon RX 9060)", false},
    {{12, 0, 1}, "gfx1201", 120001, "Navi48 (Radeon RX 9070)", false},
    {{9, 4, 3}, "gfx942", 90402, "MI300", false},
};
}  // namespace

// ---- registers ----

uint32_t Regs::read(uint32_t dword) {
  uint32_t v;
  if (uint64_t(dword) * 4 + 4 <= bar_.size()) {
    v = bar_.read32(uint64_t(dword) * 4);
  } else {  // past BAR5: the RSMU index/data pair
    bar_.write32(uint64_t(address_of(r::BIF_BX_PF0_RSMU_INDEX, bases_)) * 4, dword * 4);
    v = bar_.read32(uint64_t(address_of(r::BIF_BX_PF0_RSMU_DATA, bases_)) * 4);
  }
  if (tracing_) trace_.push_back({ms_since(t0_), false, dword, v});
  return v;
}

void Regs::write(uint32_t dword, uint32_t value) {
  if (tracing_) trace_.push_back({ms_since(t0_), true, dword, value});
  if (uint64_t(dword) * 4 + 4 <= bar_.size()) return bar_.write32(uint64_t(dword) * 4, value);
  bar_.write32(uint64_t(address_of(r::BIF_BX_PF0_RSMU_INDEX, bases_)) * 4, dword * 4);
  bar_.write32(uint64_t(address_of(r::BIF_BX_PF0_RSMU_DATA, bases_)) * 4, value);
}

bool poll(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  auto pause = std::chrono::microseconds(1);
  for (;;) {
    if (done()) return true;
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
}

bool Regs::poll(const hw::amd::Register& reg, const std::function<bool(uint32_t)>& done, std::chrono::milliseconds timeout, uint32_t& v) {
  return am::poll([&] { return done(v = read(reg)); }, timeout);
}

uint32_t Regs::wait(const hw::amd::Register& reg, uint32_t mask, uint32_t value, std::chrono::milliseconds timeout, const std::string& what) {
  uint32_t v;
  if (!poll(reg, [&](uint32_t x) { return (x & mask) == value; }, timeout, v))
    throw Error(what + ": timed out after " + std::to_string(timeout.count()) + " ms waiting for " + reg.name + " & " + hex(mask) +
                " == " + hex(value) + " (it reads " + hex(v) + ")");
  return v;
}

void Regs::start_trace() {
  tracing_ = true;
  t0_ = Clock::now();
  trace_.clear();
}

// ---- the device ----

std::shared_ptr<AmGpu> AmGpu::with_options(const AmOptions& o) {
  std::shared_ptr<AmGpu> g(new AmGpu());
  g->o_ = o;
  if (const char* e = std::getenv("UGPU_AM_RESET"); e && std::string(e) == "1") g->o_.force_reset = true;
  return g;
}

std::shared_ptr<AmGpu> AmGpu::open(sys::Os& os, const AmOptions& o) {
  auto g = with_options(o);
  g->boot(os);
  return g;
}

std::shared_ptr<AmGpu> AmGpu::open(std::shared_ptr<sys::Os> os, const AmOptions& o) {
  auto g = with_options(o);
  g->os_keep_ = os;
  g->boot(*os);
  return g;
}

AmGpu::~AmGpu() { fini(); }

BootBuffer AmGpu::boot(uint64_t bytes, uint64_t align) {
  uint64_t at = mem_->boot_alloc(bytes, align);
  return {at, bytes, fb_base_ + at, mem_.get()};
}

void AmGpu::flush_hdp() {
  regs_->write(r::BIF_BX_PF0_HDP_MEM_COHERENCY_FLUSH_CNTL, 0);
  regs_->read(r::RCC_DEV0_EPF0_RCC_CONFIG_MEMSIZE);  // posts the write
}

void AmGpu::step(const std::string& block, const std::string& what, double ms) {
  steps_.push_back({block, what, ms});
  if (o_.progress) o_.progress(block + ": " + what + (ms > 0 ? " (" + std::to_string(int(ms + 0.5)) + " ms)" : ""));
}

void AmGpu::read_discovery(uint64_t vram_bytes) {
  std::vector<uint8_t> table(hw::amd::discovery::kTableMaxBytes);
  uint64_t at = vram_bytes - hw::amd::discovery::kTableFromTop;
  if (at + table.size() <= vram_bar_->size()) {
    vram_bar_->copy_out(at, table);
  } else {  // BAR0 does not reach the top of VRAM: dword by dword through MM_INDEX/MM_DATA
    // Only as far as the binary's header says it goes (each dword is a round trip behind the USB bridge).
    size_t bytes = table.size();
    uint32_t high = ~0u;
    for (size_t i = 0; i < bytes; i += 4) {
      uint64_t a = at + i;
      regs_->write(r::BIF_BX_PF0_MM_INDEX, uint32_t(a) | 0x80000000u);
      if (uint32_t(a >> 31) != high) regs_->write(r::BIF_BX_PF0_MM_INDEX_HI, high = uint32_t(a >> 31));
      uint32_t v = regs_->read(r::BIF_BX_PF0_MM_DATA);
      std::memcpy(table.data() + i, &v, 4);
      constexpr size_t kSize = offsetof(hw::amd::discovery::BinaryHeader, size);
      if (i == kSize / 4 * 4) {
        uint16_t size;
        std::memcpy(&size, table.data() + kSize, 2);
        bytes = std::clamp<size_t>((size + 3u) / 4 * 4, kSize + 4, table.size());  // a bad size is parse_discovery's to name
      }
    }
  }
  disc_ = parse_discovery(table);
}

std::shared_ptr<AmGpu> AmGpu::open(std::shared_ptr<sys::Os> os, std::unique_ptr<sys::PciDevice> pci, const AmOptions& o, std::shared_ptr<void> keep) {
  auto g = with_options(o);
  g->os_keep_ = os;
  g->keep_ = std::move(keep);
  g->pci_ = std::move(pci);
  g->address_ = g->pci_->address();
  g->boot(*os);
  return g;
}

void AmGpu::claim(sys::Os& os) {
  // The device, one process at a time.
  address_ = o_.address;
  if (address_.empty()) {
    for (const auto& p : sys::list_pci_devices(os, 0x1002))
      if ((p.class_code >> 16 == 0x03 || p.class_code >> 16 == 0x12) && (p.driver.empty() || p.driver == "vfio-pci")) {
        address_ = p.address;
        break;
      }
    if (address_.empty())
      throw Error(o_.name + ": no AMD GPU without a kernel driver was found (`ugpu devices` lists the GPUs, their drivers and how to free one)");
  }
  address_ = sys::normalize_pci_address(address_);
  if (std::string drv = sys::bound_driver(os, address_); o_.unbind && !drv.empty() && drv != "vfio-pci") {
    sys::unbind_driver(os, address_);
    step("PCI", "unbound " + drv + " from " + address_);
  }
  pci_ = sys::open_pci_device(os, address_);
  if (pci_->vendor_id() != 0x1002) throw Error(o_.name + ": " + address_ + " is not an AMD device (vendor " + hex(pci_->vendor_id()) + ")");
  std::string lock_path = "/tmp/ugpu-am-" + address_ + ".lock";
  try {
    lock_ = sys::Fd(os, lock_path, O_RDWR | O_CREAT);
  } catch (const sys::OsError& e) { throw Error(o_.name + ": cannot create the device lock " + lock_path + ": " + e.what()); }
  if (int rc = os.flock(lock_.get(), LOCK_EX | LOCK_NB); rc < 0)
    throw Error(o_.name + ": " + address_ + " is in use by another ugpu process (" + lock_path + " is locked" +
                (rc == -EWOULDBLOCK ? "" : ", " + sys::errno_name(-rc)) + ")");
}

void AmGpu::boot(sys::Os& os) {
  auto t0 = Clock::now();
  os_ = &os;
  if (!pci_) claim(os);
  regs_ = std::make_unique<Regs>(pci_->bar(5), hw::amd::IpBases{});
  if (o_.trace) regs_->start_trace();
  doorbells_ = &pci_->bar(2);
  uint32_t memsize = regs_->read(r::RCC_DEV0_EPF0_RCC_CONFIG_MEMSIZE);
  if (memsize == 0 || memsize == 0xFFFFFFFF)
    throw Error(o_.name + ": " + address_ + " reports " + hex(memsize) +
                " MiB of VRAM (RCC_CONFIG_MEMSIZE): the GPU is powered off or fell off the bus (check `lspci -vv -s " + address_ + "`)");
  uint64_t vram = uint64_t(memsize) << 20;
  // BAR0 as large as VRAM where the device and the path allow (Resizable BAR), before it is mapped.
  if (uint64_t before = pci_->bar_size(0); before < vram)
    if (uint64_t after = pci_->resize_bar(0))
      step("PCI", "BAR0 resized from " + std::to_string(before >> 20) + " to " + std::to_string(after >> 20) + " MiB (Resizable BAR)");
  vram_bar_ = &pci_->bar(0);
  auto* mapped = dynamic_cast<sys::MappedMmio*>(vram_bar_);
  step("PCI", pci_->kind() + " " + address_ + ", device " + hex(pci_->device_id()) + ", BAR0 " + std::to_string(vram_bar_->size() >> 20) + " of " +
                  std::to_string(memsize) + " MiB of VRAM");

  // Discovery, then the chip.
  auto t = Clock::now();
  read_discovery(vram);
  const ChipRow* row = nullptr;
  for (const auto& c : kChips)
    if (c.gc == disc_.version(hw::amd::discovery::kGcHw)) row = &c;
  std::string gc = disc_.version(hw::amd::discovery::kGcHw).str();
  if (!row)
    throw Error(o_.name + ": " + address_ + " has GC " + gc + ", a GPU generation ugpu does not know; use amd:kfd (the amdgpu kernel driver)");
  if (!row->supported)
    throw Error(o_.name + ": " + address_ + " is a " + row->name + " (GC " + gc + ", " + row->arch +
                "); AM boots GC 11.0.0 (gfx1100) so far. Use amd:kfd with the amdgpu kernel driver for this GPU");
  chip_ = {row->gc, row->arch, row->gfx_target_version, row->name};
  regs_->set_bases(disc_.bases);
  step("discovery",
       std::string(row->arch) + " " + row->name + ", " + std::to_string(disc_.cu_count()) + " CUs, " + std::to_string(memsize) + " MiB VRAM",
       ms_since(t));
  if (vram_bar_->size() < kBootBytes + (64 << 20))
    throw Error(o_.name + ": BAR0 of " + address_ + " shows " + std::to_string(vram_bar_->size() >> 20) +
                " MiB of VRAM; AM needs at least 128 MiB (enable Resizable BAR / Above 4G decoding in the firmware setup)");

  t = Clock::now();
  fw_ = Firmware::load(os, o_.firmware_dir.empty() ? Firmware::default_dir() : o_.firmware_dir,
                       {disc_.version(hw::amd::discovery::kGcHw), disc_.version(hw::amd::discovery::kMp0), disc_.version(hw::amd::discovery::kMp1),
                        disc_.version(hw::amd::discovery::kSdma0)});
  step("firmware", std::to_string(fw_.files.size()) + " files, " + std::to_string(fw_.sos.size() + fw_.ip.size() + 1) + " images", ms_since(t));

  fb_base_ = uint64_t(regs_->read(r::MMMC_VM_FB_LOCATION_BASE) & 0xFFFFFF) << 24;
  // GPU addresses are host addresses. Keep the host from placing anything at the MC addresses VMID 0
  // reaches VRAM by (the system aperture; ASan's shadow may already hold them, which serves as well),
  // and reserve host addresses for memory only the GPU sees.
  try {
    void* at = os.mmap(reinterpret_cast<void*>(fb_base_), vram, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | kNoReplace, -1, 0);
    aperture_ = sys::Mapping(os, at, vram);
    if (reinterpret_cast<uint64_t>(at) != fb_base_) aperture_ = {};  // taken as a hint (an old kernel; no MAP_FIXED_NOREPLACE): not held
  } catch (const sys::OsError&) {}
  private_va_ = sys::Mapping(os, kPrivateVaBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  mem_ = std::make_unique<AmMemory>(
      hw::amd::kPteGfx11, VramWindow{vram, fb_base_, mapped ? mapped->base() : nullptr, std::min<uint64_t>(vram, vram_bar_->size()), vram_bar_},
      kBootBytes, kReservedTop, kTableStart, reinterpret_cast<uint64_t>(private_va_.data()), kPrivateVaBytes);

  auto add = [&](auto block) {
    auto* p = block.get();
    blocks_.push_back(std::move(block));
    return p;
  };
  add(std::make_unique<Soc>(*this));
  gmc_ = add(std::make_unique<Gmc>(*this));
  ih_ = add(std::make_unique<Ih>(*this));
  psp_ = add(std::make_unique<Psp>(*this));
  smu_ = add(std::make_unique<Smu>(*this));
  gfx_ = add(std::make_unique<Gfx>(*this));
  sdma_ = add(std::make_unique<Sdma>(*this));
  for (auto& b : blocks_) b->init_sw();
  mem_->changed = [this] { gmc_->flush_tlb(); };

  // A clean previous AM run leaves the firmware running and says so; anything else gets a reset.
  uint32_t version = regs_->read(r::SCRATCH_REG7), state = regs_->read(r::SCRATCH_REG6);
  bool psp_up = psp_->sos_alive();
  warm_ = !o_.force_reset && version == kVersion && state == 0 && psp_up && regs_->read(r::GCVM_L2_PROTECTION_FAULT_STATUS) == 0;
  if (!warm_ && psp_up) {
    t = Clock::now();
    std::string why = o_.force_reset        ? "a reset was asked for"
                      : version != kVersion ? "the firmware was started by another driver"
                      : state != 0          ? "the previous run did not finish cleanly"
                                            : "the previous run left a GPU fault";
    smu_->mode1_reset();
    step("SMU", "mode-1 reset (" + why + ")", ms_since(t));
  }
  step("boot", warm_ ? "warm start: the firmware is still running from a clean previous run" : "cold start");
  regs_->write(r::SCRATCH_REG6, 1);  // running: a crash before fini leaves this set
  error_ = true;                     // until every block is up: a failed boot must not look clean to the next run
  for (auto& b : blocks_) {
    t = Clock::now();
    b->init_hw(warm_);
    step(b->name(), "ready", ms_since(t));
  }
  error_ = false;
  regs_->write(r::SCRATCH_REG7, kVersion);
  boot_ms_ = ms_since(t0);
}

void AmGpu::fini() noexcept {
  if (finished_ || !regs_ || blocks_.empty()) return;
  finished_ = true;
  for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) (*it)->fini();
  try {
    regs_->write(r::SCRATCH_REG6, error_ ? 2 : 0);
  } catch (const Error&) {  // the device is gone: the next run resets it anyway
  }
}

}  // namespace ugpu::amd::am
