// The emulated AM card's vfio nodes (am_card.h): the container (a type-1 IOMMU whose DMA maps are the
// card's bus), the IOMMU group, and the device fd with the BARs and config space as regions. Built only
// with -Dlinux_drivers: vfio is Linux's, and so is the driver path that opens these nodes.
#include <linux/vfio.h>

#include <cstring>

#include "emu/amd/am/card.h"

namespace ugpu::emu::amd {
namespace {
constexpr uint64_t kVfioRegion = uint64_t{1} << 40;  // region i starts at i * kVfioRegion of the device fd

// The device fd: regions by offset; config space reads and writes go to `config`.
struct VfioDevice final : VirtualFile {
  std::shared_ptr<Card> card;
  std::shared_ptr<std::vector<uint8_t>> config;
  void* mmap(uint64_t offset, size_t len, int) override { return offset / kVfioRegion == 0 ? card->bar0_memory(offset, len) : nullptr; }
  std::unique_ptr<sys::Mmio> mmio(uint64_t offset, size_t len, const std::string&) override { return card->bar_mmio(int(offset / kVfioRegion), len); }
  long pread(std::span<uint8_t> d, uint64_t off) override {
    if (off / kVfioRegion != VFIO_PCI_CONFIG_REGION_INDEX) return -EINVAL;
    off %= kVfioRegion;
    if (off >= config->size()) return 0;
    size_t n = std::min(d.size(), config->size() - off);
    std::memcpy(d.data(), config->data() + off, n);
    return long(n);
  }
  long pwrite(std::span<const uint8_t> s, uint64_t off) override {
    if (off / kVfioRegion != VFIO_PCI_CONFIG_REGION_INDEX) return -EINVAL;
    off %= kVfioRegion;
    if (off + s.size() > config->size()) return -EINVAL;
    std::memcpy(config->data() + off, s.data(), s.size());
    return long(s.size());
  }
  int ioctl(unsigned long req, void* arg) override {
    if (req == VFIO_DEVICE_GET_INFO) {
      auto* i = static_cast<vfio_device_info*>(arg);
      if (i->argsz < 16) return -EINVAL;
      i->flags = VFIO_DEVICE_FLAGS_PCI | VFIO_DEVICE_FLAGS_RESET, i->num_regions = VFIO_PCI_NUM_REGIONS, i->num_irqs = 5;
      return 0;
    }
    if (req == VFIO_DEVICE_GET_REGION_INFO) {
      auto* ri = static_cast<vfio_region_info*>(arg);
      if (ri->argsz < sizeof *ri) return -EINVAL;
      const uint32_t rw = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
      ri->offset = uint64_t(ri->index) * kVfioRegion, ri->size = 0, ri->flags = 0;
      if (ri->index == 0) ri->size = card->bar0_bytes(), ri->flags = rw | VFIO_REGION_INFO_FLAG_MMAP;
      if (ri->index == 2) ri->size = Card::kDoorbellBarBytes, ri->flags = rw | VFIO_REGION_INFO_FLAG_MMAP;
      if (ri->index == 5) ri->size = Card::kRegBarBytes, ri->flags = rw | VFIO_REGION_INFO_FLAG_MMAP;
      if (ri->index == VFIO_PCI_CONFIG_REGION_INDEX) ri->size = 4096, ri->flags = rw;
      return 0;
    }
    if (req == VFIO_DEVICE_RESET) return card->power_cycle(), 0;
    return -ENOTTY;
  }
};
}  // namespace

void Card::install_vfio(const std::string& group, std::shared_ptr<std::vector<uint8_t>> config) {
  const std::string addr = cfg_.address;
  auto self = shared_from_this();
  struct Vfio {
    bool container_set = false;
  };
  auto state = std::make_shared<Vfio>();
  auto container = std::make_shared<FunctionFile>();
  container->on_ioctl = [w = std::weak_ptr<Card>(self), state](unsigned long req, void* arg) -> int {
    auto value = reinterpret_cast<uintptr_t>(arg);
    auto c = w.lock();
    if (!c) return -ENODEV;
    switch (req) {
      case VFIO_GET_API_VERSION: return VFIO_API_VERSION;
      case VFIO_CHECK_EXTENSION:
        return c->config().vfio_noiommu ? value == VFIO_NOIOMMU_IOMMU : value == VFIO_TYPE1_IOMMU || value == VFIO_TYPE1v2_IOMMU;
      case VFIO_SET_IOMMU: return state->container_set ? 0 : -EINVAL;
      case VFIO_IOMMU_MAP_DMA: {
        auto* m = static_cast<vfio_iommu_type1_dma_map*>(arg);
        if (m->argsz < sizeof *m || !state->container_set || c->config().vfio_noiommu) return -EINVAL;
        c->dma_map(m->iova, reinterpret_cast<uint8_t*>(m->vaddr), m->size);
        return 0;
      }
      case VFIO_IOMMU_UNMAP_DMA: {
        auto* u = static_cast<vfio_iommu_type1_dma_unmap*>(arg);
        if (u->argsz < sizeof *u) return -EINVAL;
        c->dma_unmap(u->iova);
        return 0;
      }
    }
    return -ENOTTY;
  };
  auto device = std::make_shared<VfioDevice>();
  device->card = self, device->config = std::move(config);
  auto group_file = std::make_shared<FunctionFile>();
  group_file->on_ioctl = [this, state, device, addr](unsigned long req, void* arg) -> int {
    switch (req) {
      case VFIO_GROUP_GET_STATUS: static_cast<vfio_group_status*>(arg)->flags = VFIO_GROUP_FLAGS_VIABLE; return 0;
      case VFIO_GROUP_SET_CONTAINER:
        if (os_.fd_path(*static_cast<int*>(arg)) != "/dev/vfio/vfio") return -EBADF;
        state->container_set = true;
        return 0;
      case VFIO_GROUP_GET_DEVICE_FD:
        if (!state->container_set) return -EINVAL;
        if (addr != static_cast<const char*>(arg)) return -ENODEV;
        return os_.add_fd(device, "vfio device " + addr);
    }
    return -ENOTTY;
  };
  os_.add_device("/dev/vfio/vfio", container);
  os_.add_device(std::string("/dev/vfio/") + (cfg_.vfio_noiommu ? "noiommu-" : "") + group, group_file);
}

}  // namespace ugpu::emu::amd
