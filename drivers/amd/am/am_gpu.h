// AM: an AMD GPU driven with no kernel GPU driver (docs/amd.md §AM). AmGpu claims the PCI device
// through the PciDevice seam (vfio or sysfs), reads IP discovery, loads the firmware, and brings the
// chip up one IP block at a time — SOC, GMC, IH, PSP, SMU, GFX, SDMA, one file each, as Linux's amdgpu
// splits them — then hands queues and memory to the shared AMD device (am_interface.cpp). A clean
// previous run (checked through scratch registers) lets the next one skip the firmware boot (warm
// start); an unclean one gets an SMU mode-1 reset first.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "drivers/amd/am/discovery.h"
#include "drivers/amd/am/firmware.h"
#include "drivers/amd/am/memory.h"
#include "hw/amd/kernel_descriptor.h"
#include "hw/amd/reg_trace.h"
#include "hw/amd/registers.h"
#include "sys/pci.h"

namespace ugpu::amd::am {

struct AmOptions {
  std::string name = "amd:pci";                      // the device string, for messages
  std::string address;                               // PCI address; empty: the first AMD GPU without a kernel driver
  std::string firmware_dir;                          // empty: Firmware::default_dir()
  bool force_reset = false;                          // cold boot even after a clean previous run ($UGPU_AM_RESET=1)
  bool unbind = false;                               // unbind a kernel driver (amdgpu) that holds the device first; needs root
  bool trace = false;                                // record every register access (Regs::trace)
  std::function<void(const std::string&)> progress;  // one line per bring-up step, as it happens
  std::chrono::milliseconds timeout{2000};           // each wait for the hardware
  std::chrono::milliseconds reset_settle{500};       // after a mode-1 reset, before touching registers
};

// Calls done() until it returns true (true) or `timeout` passes (false), backing off from 1 us to 1 ms
// between calls. Every wait for the hardware in the AM driver goes through here.
bool poll(const std::function<bool()>& done, std::chrono::milliseconds timeout);

// Register access through BAR5, with registers past it reached through RSMU_INDEX/DATA, and waits
// that time out with the register and its last value named.
class Regs {
 public:
  Regs(sys::Mmio& bar, const hw::amd::IpBases& bases) : bar_(bar), bases_(bases) {}
  void set_bases(const hw::amd::IpBases& b) { bases_ = b; }
  const hw::amd::IpBases& bases() const { return bases_; }
  uint32_t addr(const hw::amd::Register& r) const { return hw::amd::address_of(r, bases_); }
  uint32_t read(uint32_t dword);
  void write(uint32_t dword, uint32_t value);
  uint32_t read(const hw::amd::Register& r) { return read(addr(r)); }
  void write(const hw::amd::Register& r, uint32_t value) { write(addr(r), value); }
  void update(const hw::amd::Register& r, hw::amd::Field f, uint32_t value) { write(r, f.set(read(r), value)); }
  // Reads `r` into `v` until done(v) holds (true) or `timeout` passes (false, with v the last read).
  bool poll(const hw::amd::Register& r, const std::function<bool(uint32_t)>& done, std::chrono::milliseconds timeout, uint32_t& v);
  // Polls until (read & mask) == value; throws Error naming `what`, the register and its last value.
  uint32_t wait(const hw::amd::Register& r, uint32_t mask, uint32_t value, std::chrono::milliseconds timeout, const std::string& what);

  void start_trace();
  hw::amd::RegTrace trace() const { return {bases_, trace_}; }
  bool tracing() const { return tracing_; }

 private:
  sys::Mmio& bar_;
  hw::amd::IpBases bases_;
  bool tracing_ = false;
  std::chrono::steady_clock::time_point t0_;
  std::vector<hw::amd::RegAccess> trace_;
};

class AmGpu;
// One IP block's part of the bring-up (drivers/amd/am/<block>_v<N>.cpp): memory it needs from the
// boot region (init_sw), programming (init_hw; `warm` when the firmware still runs from a clean
// previous run), and what it stops when the driver closes (fini, never throws).
class IpBlock {
 public:
  explicit IpBlock(AmGpu& g) : g(g) {}
  virtual ~IpBlock() = default;
  virtual const char* name() const = 0;
  virtual void init_sw() {}
  virtual void init_hw(bool warm) = 0;
  virtual void fini() noexcept {}

 protected:
  AmGpu& g;
};

// Boot memory: VRAM from the start of the boot region, at a fixed place for every run (so a warm start
// finds the TMR where the firmware left it), reached by the host through BAR0 (AmMemory::vram_write)
// and by the GPU at its MC address (the system aperture).
struct BootBuffer {
  uint64_t offset = 0, size = 0, mc = 0;
  AmMemory* mem = nullptr;
  void write(uint64_t at, std::span<const uint8_t> data) const { mem->vram_write(offset + at, data); }
  void read(uint64_t at, std::span<uint8_t> out) const { mem->vram_read(offset + at, out); }
  void zero() const { mem->vram_zero(offset, size); }
  template <class T>
  void write_object(uint64_t at, const T& v) const {
    write(at, {reinterpret_cast<const uint8_t*>(&v), sizeof v});
  }
  template <class T>
  T read_object(uint64_t at) const {
    T v;
    read(at, {reinterpret_cast<uint8_t*>(&v), sizeof v});
    return v;
  }
};

class Gmc;
class Ih;
class Psp;
class Smu;
class Gfx;
class Sdma;

class AmGpu {
 public:
  // The Os must outlive the AmGpu (and every buffer from it); the shared_ptr form keeps it alive.
  static std::shared_ptr<AmGpu> open(sys::Os& os, const AmOptions& o);
  static std::shared_ptr<AmGpu> open(std::shared_ptr<sys::Os> os, const AmOptions& o);
  // On a device already claimed (the GPU behind the USB bridge): `os` gives the firmware files and
  // the host address reservations; o.address is not used.
  // `keep`: what the device needs alive (the USB bridge), released after it.
  static std::shared_ptr<AmGpu> open(std::shared_ptr<sys::Os> os, std::unique_ptr<sys::PciDevice> pci, const AmOptions& o,
                                     std::shared_ptr<void> keep = {});
  ~AmGpu();
  void fini() noexcept;  // stops the queues and records how the run ended; idempotent

  // What the bring-up found and did.
  struct Chip {
    IpVersion gc;
    const char* arch;
    uint32_t gfx_target_version;
    const char* name;
  };
  const Chip& chip() const { return chip_; }
  const Discovery& discovery() const { return disc_; }
  const Firmware& firmware() const { return fw_; }
  sys::PciDevice& pci() { return *pci_; }
  sys::Os& os() { return *os_; }
  const std::shared_ptr<void>& keep() const { return keep_; }
  bool host_maps_vram() const { return mem_->vram().host != nullptr; }  // false: VRAM only through BAR accesses (USB)
  const std::string& address() const { return address_; }
  bool warm() const { return warm_; }
  struct Step {
    std::string block, what;
    double ms = 0;
  };
  const std::vector<Step>& steps() const { return steps_; }
  double boot_ms() const { return boot_ms_; }

  // For the IP blocks.
  Regs& regs() { return *regs_; }
  AmMemory& memory() { return *mem_; }
  sys::Mmio& doorbells() { return *doorbells_; }
  const AmOptions& options() const { return o_; }
  const std::string& name() const { return o_.name; }
  BootBuffer boot(uint64_t bytes, uint64_t align = 4096);
  uint64_t fb_base() const { return fb_base_; }
  void flush_hdp();  // host writes through BAR0 reach VRAM before the GPU reads them
  void step(const std::string& block, const std::string& what, double ms = 0);
  void set_error() { error_ = true; }
  void clear_error() { error_ = false; }
  Gmc& gmc() { return *gmc_; }
  Ih& ih() { return *ih_; }
  Psp& psp() { return *psp_; }
  Smu& smu() { return *smu_; }
  Gfx& gfx() { return *gfx_; }
  Sdma& sdma() { return *sdma_; }

  static constexpr uint32_t kVersion = 0x55470001;  // SCRATCH_REG7 after an AM boot ("UG", layout 1)
  static constexpr uint64_t kBootBytes = 64 << 20, kReservedTop = 64 << 20;
  // GPU addresses are host addresses (CPU VA == GPU VA, as on the KFD path): VMID 0's tables cover the
  // whole 48-bit space, and memory the host does not map gets addresses from a host reservation.
  static constexpr uint64_t kTableStart = 0, kTableEnd = (uint64_t{1} << 48) - 1, kPrivateVaBytes = uint64_t{64} << 30;

 private:
  AmGpu() = default;
  static std::shared_ptr<AmGpu> with_options(const AmOptions& o);  // o, and UGPU_AM_RESET=1 forcing a reset
  void claim(sys::Os& os);                                         // finds the PCI device, frees and opens it, takes its lock
  void boot(sys::Os& os);
  void read_discovery(uint64_t vram_bytes);

  std::shared_ptr<sys::Os> os_keep_;  // first: destroyed after everything that uses it
  std::shared_ptr<void> keep_;        // the bridge behind pci_, when there is one
  sys::Os* os_ = nullptr;
  AmOptions o_;
  std::string address_;
  std::unique_ptr<sys::PciDevice> pci_;
  sys::Fd lock_;
  std::unique_ptr<Regs> regs_;
  sys::Mmio* vram_bar_ = nullptr;
  sys::Mmio* doorbells_ = nullptr;
  Discovery disc_;
  Chip chip_{};
  Firmware fw_;
  uint64_t fb_base_ = 0;
  sys::Mapping private_va_, aperture_;  // host reservations: private GPU addresses; the FB aperture's MC range
  std::unique_ptr<AmMemory> mem_;
  std::vector<std::unique_ptr<IpBlock>> blocks_;
  Gmc* gmc_ = nullptr;
  Ih* ih_ = nullptr;
  Psp* psp_ = nullptr;
  Smu* smu_ = nullptr;
  Gfx* gfx_ = nullptr;
  Sdma* sdma_ = nullptr;
  bool warm_ = false, error_ = false, finished_ = false;
  std::vector<Step> steps_;
  double boot_ms_ = 0;
};

// The IP blocks (one file each). Only what other blocks and the interface call is declared here.
class Soc : public IpBlock {
 public:
  using IpBlock::IpBlock;
  const char* name() const override { return "SOC"; }
  void init_hw(bool warm) override;
};

class Gmc : public IpBlock {
 public:
  using IpBlock::IpBlock;
  const char* name() const override { return "GMC"; }
  void init_sw() override;
  void init_hw(bool warm) override;
  void init_gc_hub();  // after RLC autoload: the GC hub's registers need the graphics block running
  void flush_tlb();    // after page-table changes: HDP flush, then both hubs' TLBs
  struct Fault {
    uint64_t address = 0;
    uint32_t status = 0;
    bool write = false;
    std::string client;
  };
  std::optional<Fault> take_fault();  // the GC hub's latched fault, cleared

 private:
  void init_hub(bool gc);
  bool gc_ready_ = false;
  BootBuffer dummy_;
};

class Ih : public IpBlock {
 public:
  using IpBlock::IpBlock;
  const char* name() const override { return "IH"; }
  void init_sw() override;
  void init_hw(bool warm) override;
  void fini() noexcept override;
  struct Entry {
    uint32_t client = 0, src = 0, ring_id = 0;
    uint32_t data[4] = {};
  };
  std::vector<Entry> drain();  // every entry since the last drain

 private:
  BootBuffer ring_, wptr_;
  uint32_t rptr_ = 0;
};

class Psp : public IpBlock {
 public:
  using IpBlock::IpBlock;
  const char* name() const override { return "PSP"; }
  void init_sw() override;
  void init_hw(bool warm) override;
  bool sos_alive();

 private:
  void load_bootloader_components();
  void create_ring();
  uint32_t submit(uint32_t cmd_id, const std::function<void(uint8_t* cmd)>& fill, const std::string& what);
  void load_ip(const FwBlob& b);
  BootBuffer fw_pri_, staging_, ring_, cmd_, fence_, tmr_;
  uint32_t fence_value_ = 0;
};

class Smu : public IpBlock {
 public:
  using IpBlock::IpBlock;
  const char* name() const override { return "SMU"; }
  void init_sw() override;
  void init_hw(bool warm) override;
  void mode1_reset();
  uint32_t send(uint32_t msg, uint32_t param, const char* what);

 private:
  void post(uint32_t msg, uint32_t param);  // the message mailbox: clear the response, argument, message
  BootBuffer table_;
};

// A hardware queue's ring and the addresses of its read-pointer write-back and write-pointer shadow.
struct QueueRing {
  uint64_t ring_va = 0, ring_bytes = 0, rptr_va = 0, wptr_va = 0;
};

class Gfx : public IpBlock {
 public:
  using IpBlock::IpBlock;
  const char* name() const override { return "GFX"; }
  void init_sw() override;
  void init_hw(bool warm) override;
  void fini() noexcept override;
  // The compute queue: ME1 pipe 0 queue 0, by writing its MQD into the HQD registers.
  uint64_t start_queue(const QueueRing& q);  // returns the doorbell's byte offset in BAR2
  void stop_queue() noexcept;
  void reset_mec();  // after a hang or fault: CP soft reset, the MEC started again (queues dequeued first)

 private:
  void select(uint32_t me, uint32_t pipe, uint32_t queue, uint32_t vmid = 0);
  void start_mec();
  BootBuffer mqd_, eop_;
  bool queue_active_ = false;
};

class Sdma : public IpBlock {
 public:
  using IpBlock::IpBlock;
  const char* name() const override { return "SDMA"; }
  void init_hw(bool warm) override;
  void fini() noexcept override;
  uint64_t start_queue(const QueueRing& q);  // returns the doorbell's byte offset in BAR2
  void stop_queue() noexcept;
};

// Doorbell slots (amdgpu_doorbell.h, the NAVI10 layout soc21 keeps): 64-bit slots in BAR2.
inline constexpr uint64_t kDoorbellMecRing0 = 0x003, kDoorbellSdma0 = 0x100, kDoorbellIh = 0x178;

}  // namespace ugpu::amd::am
