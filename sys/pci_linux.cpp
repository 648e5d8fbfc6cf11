// The PCI devices of Linux (sys/pci.h): SysfsPciDevice and VfioPciDevice, and open_pci_device choosing
// between them. Built only with -Dlinux_drivers (a build without has sys/no_linux.cpp instead).
#include <fcntl.h>
#include <linux/vfio.h>
#include <sys/mman.h>

#include <cerrno>
#include <sstream>

#include "common/hex.h"
#include "sys/pci.h"

namespace ugpu::sys {
namespace {
constexpr uint32_t kCommand = 0x04;                              // config-space command register
constexpr uint16_t kMemoryDecode = 1 << 1, kBusMaster = 1 << 2;  // its bits a driver needs
constexpr uint64_t kResourceIo = 0x100;                          // IORESOURCE_IO in the `resource` flags column
constexpr size_t kPage = 4096, kHugePage = 2 << 20;
constexpr uint32_t kConfigRegion = VFIO_PCI_CONFIG_REGION_INDEX;

size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

void check_config(const std::string& addr, uint32_t offset, int size) {
  if (size != 1 && size != 2 && size != 4) throw Error("config access of " + std::to_string(size) + " bytes to " + addr + ": sizes are 1, 2 or 4");
  if (offset > 4096 - uint32_t(size)) throw Error("config offset " + hex(offset) + " of " + addr + " is outside the 4 KiB config space");
}
uint32_t config_read_at(Os& os, int fd, uint64_t base, const std::string& addr, uint32_t offset, int size) {
  check_config(addr, offset, size);
  uint8_t b[4] = {};
  if (os.pread(fd, {b, size_t(size)}, base + offset) != size_t(size))
    throw Error("config space of " + addr + " ends before offset " + hex(offset) +
                " — without root the kernel shows only its first 64 bytes: run as root or bind the device to vfio-pci");
  return b[0] | b[1] << 8 | b[2] << 16 | uint32_t(b[3]) << 24;
}
void config_write_at(Os& os, int fd, uint64_t base, const std::string& addr, uint32_t offset, int size, uint32_t v) {
  check_config(addr, offset, size);
  uint8_t b[4] = {uint8_t(v), uint8_t(v >> 8), uint8_t(v >> 16), uint8_t(v >> 24)};
  if (os.pwrite(fd, {b, size_t(size)}, base + offset) != size_t(size))
    throw Error("config write at offset " + hex(offset) + " of " + addr + " was cut short by the kernel");
}
void enable_bus_master(PciDevice& d) {
  uint32_t cmd = d.config_read(kCommand, 2);
  if ((cmd & (kMemoryDecode | kBusMaster)) != (kMemoryDecode | kBusMaster)) d.config_write(kCommand, 2, cmd | kMemoryDecode | kBusMaster);
}
void check_bar_index(const std::string& addr, int n) {
  if (n < 0 || n > 5) throw Error("BAR" + std::to_string(n) + " of " + addr + ": PCI devices have BARs 0 to 5");
}
[[noreturn]] void no_bar(const std::string& addr, int n) {
  throw Error(addr + " has no BAR" + std::to_string(n) + " (absent, or the upper half of 64-bit BAR" + std::to_string(n - 1) + ")");
}

// Pinned (populated, shared so a fork cannot copy-on-write it away from the device) host memory;
// 2 MiB hugepages for larger buffers when the system has them reserved, else 4 KiB pages.
Mapping map_dma_memory(Os& os, size_t bytes, bool lock, size_t& page) {
  if (!bytes) throw Error("dma_alloc of 0 bytes");
  int flags = MAP_SHARED | MAP_ANONYMOUS | MAP_POPULATE | (lock ? MAP_LOCKED : 0);
  if (bytes >= kHugePage / 2) {
    try {
      page = kHugePage;
      return Mapping(os, round_up(bytes, kHugePage), PROT_READ | PROT_WRITE, flags | MAP_HUGETLB, -1, 0);
    } catch (const OsError&) {  // no hugepages reserved (vm.nr_hugepages): fall back to small pages
    }
  }
  page = kPage;
  try {
    return Mapping(os, round_up(bytes, kPage), PROT_READ | PROT_WRITE, flags, -1, 0);
  } catch (const OsError& e) {
    if (e.err() != EAGAIN) throw;  // MAP_LOCKED over RLIMIT_MEMLOCK reports EAGAIN, whose generic hint would mislead
    throw_os_error(e.err(), "pinning " + std::to_string(bytes) + " bytes of DMA memory (mmap MAP_LOCKED)",
                   "over the locked-memory limit: raise `ulimit -l` (LimitMEMLOCK= for a service) or run as root");
  }
}
// Pinned host memory whose bus addresses are its physical addresses (no IOMMU in between): sysfs and
// vfio's no-IOMMU mode.
DmaBuffer pinned_dma(Os& os, size_t bytes, const char* alternative) {
  size_t page = 0;
  Mapping m = map_dma_memory(os, bytes, true, page);
  DmaBuffer d{m.data(), m.size(), page, {}, {}};
  // /proc/self/pagemap: one 64-bit entry per 4 KiB page; bit 63 = present, bits 0-54 = page frame number.
  Fd pagemap(os, "/proc/self/pagemap", O_RDONLY);
  for (size_t off = 0; off < m.size(); off += page) {
    uint64_t va = reinterpret_cast<uintptr_t>(m.data()) + off, e = 0;
    if (os.pread(pagemap.get(), {reinterpret_cast<uint8_t*>(&e), 8}, va / kPage * 8) != 8 || !(e >> 63))
      throw Error("DMA memory at " + hex(va) + " is not resident after MAP_POPULATE | MAP_LOCKED (/proc/self/pagemap entry " + hex(e) + ")");
    uint64_t pfn = e & ((uint64_t{1} << 55) - 1);
    if (!pfn)
      throw_os_error(EPERM, "reading the physical address of DMA memory from /proc/self/pagemap",
                     std::string("the kernel hides page frame numbers from processes without CAP_SYS_ADMIN: run as root, or ") + alternative);
    d.bus.push_back(pfn * kPage);
  }
  d.owner = std::make_shared<Mapping>(std::move(m));
  return d;
}
}  // namespace

std::unique_ptr<PciDevice> open_pci_device(Os& os, std::string_view address) {
  std::string addr = normalize_pci_address(address), dir = pci_sysfs_dir(addr);
  if (!os.exists(dir)) {
    std::string msg = "PCI device " + addr + " not found (no " + dir + ")";
    std::string gpus;
    try {
      for (const PciInfo& p : list_pci_devices(os))
        if (p.class_code >> 16 == 0x03 || p.class_code >> 16 == 0x12) gpus += (gpus.empty() ? "" : ", ") + p.address;
    } catch (const Error&) {  // a listing problem must not hide the real one
    }
    throw Error(msg + (gpus.empty() ? "; no display or accelerator devices are present" : "; display and accelerator devices: " + gpus) +
                " (`lspci -D` lists every address)");
  }
  std::string drv = bound_driver(os, addr);
  if (drv == "vfio-pci") return std::make_unique<VfioPciDevice>(os, addr);
  if (drv.empty()) return std::make_unique<SysfsPciDevice>(os, addr);
  std::string alt = drv == "amdgpu" ? "; or keep amdgpu and use the amd:kfd device" : drv == "nvidia" ? "; or keep nvidia and use the nv device" : "";
  throw Error(addr + " is bound to the kernel driver " + drv + ", which owns the hardware. To drive it from userspace unbind it (`echo " + addr +
              " | sudo tee " + dir + "/driver/unbind`) and run as root, or bind it to vfio-pci (`sudo modprobe vfio-pci; echo vfio-pci | sudo tee " +
              dir + "/driver_override; echo " + addr + " | sudo tee /sys/bus/pci/drivers_probe`)" + alt);
}

// ---- sysfs ----

SysfsPciDevice::SysfsPciDevice(Os& os, std::string_view address) : os_(os), addr_(normalize_pci_address(address)), dir_(pci_sysfs_dir(addr_)) {
  if (!os.exists(dir_)) throw Error("PCI device " + addr_ + " not found (no " + dir_ + "); `lspci -D` lists the addresses");
  try {
    config_ = Fd(os, dir_ + "/config", O_RDWR);
  } catch (const OsError& e) {
    if (e.err() != EACCES && e.err() != EPERM) throw;
    throw_os_error(e.err(), "open " + dir_ + "/config", "raw PCI access through sysfs needs root: run as root or bind to vfio-pci");
  }
  read_resources();
  if (os.read_file(dir_ + "/enable").starts_with('0')) os.write_file(dir_ + "/enable", "1");
  enable_bus_master(*this);
}

void SysfsPciDevice::read_resources() {
  // `resource`: one line per BAR (then ROM and bridge windows) of "start end flags" in hex.
  std::istringstream table(os_.read_file(dir_ + "/resource"));
  for (Bar& b : bars_) {
    std::string s, e, f;
    if (!(table >> s >> e >> f)) throw Error("malformed " + dir_ + "/resource: fewer than 6 BAR lines");
    uint64_t start = parse_sysfs_hex(s, dir_ + "/resource"), end = parse_sysfs_hex(e, dir_ + "/resource");
    if (end < start) throw Error("malformed " + dir_ + "/resource: BAR ends at " + e + " before it starts at " + s);
    b.size = end ? end - start + 1 : 0;
    b.flags = parse_sysfs_hex(f, dir_ + "/resource");
  }
}

uint64_t SysfsPciDevice::resize_bar(int n) {
  check_bar_index(addr_, n);
  std::lock_guard lock(mu_);
  // resourceN_resize: a hexadecimal mask of the sizes the device offers (bit i: 2^i MiB); writing i
  // makes the kernel reassign the BAR (no driver may hold the device).
  std::string file = dir_ + "/resource" + std::to_string(n) + "_resize";
  if (!os_.exists(file)) return 0;
  if (bars_[n].mmio) throw Error("BAR" + std::to_string(n) + " of " + addr_ + " is mapped already; resize it before mapping it");
  uint64_t sizes = parse_sysfs_hex(os_.read_file(file), file);
  if (!sizes) return 0;
  int best = 63 - __builtin_clzll(sizes);
  uint64_t want = (uint64_t{1} << best) << 20;
  if (want <= bars_[n].size) return 0;
  try {
    os_.write_file(file, std::to_string(best));
  } catch (const OsError& e) {
    throw_os_error(e.err(), "resizing BAR" + std::to_string(n) + " of " + addr_ + " to " + std::to_string(want >> 20) + " MiB (" + file + ")",
                   "the kernel could not fit the larger BAR behind the bridge: enable Above 4G decoding and Resizable BAR in the firmware setup");
  }
  read_resources();
  return bars_[n].size;
}

uint32_t SysfsPciDevice::config_read(uint32_t offset, int size) { return config_read_at(os_, config_.get(), 0, addr_, offset, size); }
void SysfsPciDevice::config_write(uint32_t offset, int size, uint32_t value) { config_write_at(os_, config_.get(), 0, addr_, offset, size, value); }

uint64_t SysfsPciDevice::bar_size(int n) {
  check_bar_index(addr_, n);
  return bars_[n].size;
}

Mmio& SysfsPciDevice::bar(int n) {
  check_bar_index(addr_, n);
  std::lock_guard lock(mu_);
  Bar& b = bars_[n];
  if (b.mmio) return *b.mmio;
  if (!b.size) no_bar(addr_, n);
  if (b.flags & kResourceIo) throw Error("BAR" + std::to_string(n) + " of " + addr_ + " is an I/O-port BAR; only memory BARs can be mapped");
  Fd fd(os_, dir_ + "/resource" + std::to_string(n), O_RDWR | O_SYNC);
  b.mmio = os_.map_mmio(fd.get(), b.size, 0, "BAR" + std::to_string(n) + " of " + addr_);
  return *b.mmio;
}

DmaBuffer SysfsPciDevice::dma_alloc(size_t bytes) { return pinned_dma(os_, bytes, "bind the device to vfio-pci"); }

void SysfsPciDevice::reset() {
  std::string f = dir_ + "/reset";
  if (!os_.exists(f)) throw Error(addr_ + " cannot be reset: the kernel found no reset method for it (no " + f + ")");
  os_.write_file(f, "1");  // the kernel saves and restores config space around the reset
}

// ---- vfio ----

VfioPciDevice::VfioPciDevice(Os& os, std::string_view address) : os_(os), addr_(normalize_pci_address(address)) {
  std::string dir = pci_sysfs_dir(addr_);
  if (!os.exists(dir)) throw Error("PCI device " + addr_ + " not found (no " + dir + "); `lspci -D` lists the addresses");
  if (!os.exists(dir + "/iommu_group"))
    throw Error(addr_ +
                " has no IOMMU group, so vfio cannot drive it: enable the IOMMU "
                "(intel_iommu=on or amd_iommu=on on the kernel command line), load vfio in no-IOMMU mode "
                "(modprobe vfio enable_unsafe_noiommu_mode=1, then bind vfio-pci again; needs root), "
                "or use the sysfs path as root");
  std::string link = os.readlink(dir + "/iommu_group");
  group_id_ = link.substr(link.rfind('/') + 1);
  // vfio's no-IOMMU mode names the group noiommu-N: no translation, DMA goes to physical addresses.
  noiommu_ = !os.exists("/dev/vfio/" + group_id_) && os.exists("/dev/vfio/noiommu-" + group_id_);
  auto io = [&](int fd, unsigned long req, void* arg, const std::string& what, std::string_view hint = {}) {
    return check_ioctl(os.ioctl(fd, req, arg), what, hint);
  };
  try {
    container_ = std::make_shared<Fd>(os, "/dev/vfio/vfio", O_RDWR);
  } catch (const OsError& e) {
    if (e.err() != ENOENT) throw;
    throw_os_error(e.err(), "open /dev/vfio/vfio", "the vfio module is not loaded: sudo modprobe vfio-pci");
  }
  int c = container_->get();
  if (int v = io(c, VFIO_GET_API_VERSION, nullptr, "VFIO_GET_API_VERSION on /dev/vfio/vfio"); v != VFIO_API_VERSION)
    throw Error("/dev/vfio/vfio speaks vfio API version " + std::to_string(v) + "; ugpu knows version " + std::to_string(VFIO_API_VERSION));
  auto has = [&](unsigned long ext) { return os.ioctl(c, VFIO_CHECK_EXTENSION, reinterpret_cast<void*>(ext)) > 0; };
  unsigned long iommu = noiommu_                  ? (has(VFIO_NOIOMMU_IOMMU) ? VFIO_NOIOMMU_IOMMU : 0)
                        : has(VFIO_TYPE1v2_IOMMU) ? VFIO_TYPE1v2_IOMMU
                        : has(VFIO_TYPE1_IOMMU)   ? VFIO_TYPE1_IOMMU
                                                  : 0;
  if (!iommu)
    throw Error(noiommu_ ? "/dev/vfio/vfio does not offer no-IOMMU mode (VFIO_CHECK_EXTENSION): load vfio with enable_unsafe_noiommu_mode=1"
                         : "/dev/vfio/vfio offers no type-1 IOMMU (VFIO_CHECK_EXTENSION): is the IOMMU enabled and vfio_iommu_type1 loaded?");

  std::string gpath = std::string("/dev/vfio/") + (noiommu_ ? "noiommu-" : "") + group_id_;
  try {
    group_ = Fd(os, gpath, O_RDWR);
  } catch (const OsError& e) {
    if (e.err() == EACCES || e.err() == EPERM)
      throw_os_error(e.err(), "open " + gpath, "run as root, or give your user the group: sudo chown $USER " + gpath);
    if (e.err() == EBUSY) throw_os_error(e.err(), "open " + gpath, "the IOMMU group is open in another process (a VM, or another ugpu)");
    throw;
  }
  vfio_group_status status{};
  status.argsz = sizeof status;
  io(group_.get(), VFIO_GROUP_GET_STATUS, &status, "VFIO_GROUP_GET_STATUS on " + gpath);
  if (!(status.flags & VFIO_GROUP_FLAGS_VIABLE)) {
    std::string gdir = "/sys/kernel/iommu_groups/" + group_id_ + "/devices", members;
    for (const std::string& d : os.exists(gdir) ? os.listdir(gdir) : std::vector<std::string>{}) {
      std::string drv = bound_driver(os, d);
      members += (members.empty() ? "" : ", ") + d + " (" + (drv.empty() ? "no driver" : drv) + ")";
    }
    throw Error("IOMMU group " + group_id_ + " of " + addr_ +
                " is not viable: every device in the group must be bound to vfio-pci or to no driver. " +
                "Devices in the group: " + (members.empty() ? "unknown (no " + gdir + ")" : members) +
                ". Unbind the others (`echo <address> | sudo tee /sys/bus/pci/devices/<address>/driver/unbind`) or bind them to "
                "vfio-pci");
  }
  io(group_.get(), VFIO_GROUP_SET_CONTAINER, &c, "VFIO_GROUP_SET_CONTAINER on " + gpath);
  io(c, VFIO_SET_IOMMU, reinterpret_cast<void*>(iommu), "VFIO_SET_IOMMU on /dev/vfio/vfio");
  device_ = Fd(os, io(group_.get(), VFIO_GROUP_GET_DEVICE_FD, addr_.data(), "VFIO_GROUP_GET_DEVICE_FD(" + addr_ + ") on " + gpath));

  vfio_device_info info{};
  info.argsz = sizeof info;
  io(device_.get(), VFIO_DEVICE_GET_INFO, &info, "VFIO_DEVICE_GET_INFO for " + addr_);
  if (!(info.flags & VFIO_DEVICE_FLAGS_PCI) || info.num_regions <= kConfigRegion)
    throw Error("vfio describes " + addr_ + " as a non-PCI device (flags " + hex(info.flags) + ", " + std::to_string(info.num_regions) + " regions)");
  device_flags_ = info.flags;
  for (uint32_t i = 0; i < regions_.size(); ++i) {
    vfio_region_info r{};
    r.argsz = sizeof r;
    r.index = i;
    io(device_.get(), VFIO_DEVICE_GET_REGION_INFO, &r, "VFIO_DEVICE_GET_REGION_INFO(" + std::to_string(i) + ") for " + addr_);
    regions_[i].size = r.size, regions_[i].offset = r.offset, regions_[i].flags = r.flags;
  }
  enable_bus_master(*this);
}

uint32_t VfioPciDevice::config_read(uint32_t offset, int size) {
  return config_read_at(os_, device_.get(), regions_[kConfigRegion].offset, addr_, offset, size);
}
void VfioPciDevice::config_write(uint32_t offset, int size, uint32_t value) {
  config_write_at(os_, device_.get(), regions_[kConfigRegion].offset, addr_, offset, size, value);
}

uint64_t VfioPciDevice::bar_size(int n) {
  check_bar_index(addr_, n);
  return regions_[n].size;
}

Mmio& VfioPciDevice::bar(int n) {
  check_bar_index(addr_, n);
  std::lock_guard lock(mu_);
  Region& r = regions_[n];
  if (r.mmio) return *r.mmio;
  if (!r.size) no_bar(addr_, n);
  if (!(r.flags & VFIO_REGION_INFO_FLAG_MMAP))
    throw Error("BAR" + std::to_string(n) + " of " + addr_ + " cannot be mapped through vfio (region flags " + hex(r.flags) + "; an I/O-port BAR?)");
  r.mmio = os_.map_mmio(device_.get(), r.size, r.offset, "BAR" + std::to_string(n) + " of " + addr_);
  return *r.mmio;
}

namespace {
struct VfioDma {  // unmaps from the IOMMU before the memory itself goes
  Os* os;
  std::shared_ptr<Fd> container;
  uint64_t iova, size;
  Mapping map;
  VfioDma(Os* o, std::shared_ptr<Fd> c, uint64_t i, Mapping m) : os(o), container(std::move(c)), iova(i), size(m.size()), map(std::move(m)) {}
  ~VfioDma() {
    vfio_iommu_type1_dma_unmap u{};
    u.argsz = sizeof u, u.iova = iova, u.size = size;
    os->ioctl(container->get(), VFIO_IOMMU_UNMAP_DMA, &u);
  }
};
}  // namespace

DmaBuffer VfioPciDevice::dma_alloc(size_t bytes) {
  if (noiommu_) return pinned_dma(os_, bytes, "use vfio with the IOMMU on");
  size_t page = 0;
  Mapping m = map_dma_memory(os_, bytes, false, page);  // MAP_DMA pins the pages itself
  uint64_t iova;
  {
    std::lock_guard lock(mu_);
    iova = next_iova_ = round_up(next_iova_, page);
    next_iova_ += m.size();
  }
  vfio_iommu_type1_dma_map map{};
  map.argsz = sizeof map, map.flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE;
  map.vaddr = reinterpret_cast<uintptr_t>(m.data()), map.iova = iova, map.size = m.size();
  int r = os_.ioctl(container_->get(), VFIO_IOMMU_MAP_DMA, &map);
  const char* hint = "vfio pins DMA memory: raise the locked-memory limit (`ulimit -l`, LimitMEMLOCK= for a service) or run as root";
  check_ioctl(r, "VFIO_IOMMU_MAP_DMA of " + std::to_string(m.size()) + " bytes at IOVA " + hex(iova) + " for " + addr_, r == -ENOMEM ? hint : "");
  DmaBuffer d{m.data(), m.size(), m.size(), {iova}, {}};
  d.owner = std::make_shared<VfioDma>(&os_, container_, iova, std::move(m));
  return d;
}

void VfioPciDevice::reset() {
  if (!(device_flags_ & VFIO_DEVICE_FLAGS_RESET)) throw Error("vfio reports no reset method for " + addr_ + " (no FLR or bus reset available)");
  check_ioctl(os_.ioctl(device_.get(), VFIO_DEVICE_RESET, nullptr), "VFIO_DEVICE_RESET for " + addr_);
}

}  // namespace ugpu::sys
