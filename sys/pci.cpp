// The PCI seam's portable part: DMA buffers, addresses, and what sysfs says about the bus (read through
// an Os, so it finds nothing where there is no sysfs). The devices themselves, through sysfs and vfio,
// are Linux-only: pci_linux.cpp.
#include "sys/pci.h"

#include <cerrno>
#include <charconv>

#include "common/hex.h"

namespace ugpu::sys {
namespace {
std::string driver_of(Os& os, const std::string& dir) {
  if (!os.exists(dir + "/driver")) return {};
  std::string target = os.readlink(dir + "/driver");
  return target.substr(target.rfind('/') + 1);
}
}  // namespace

std::string pci_sysfs_dir(const std::string& address) { return std::string(kPciSysfs) + "/" + address; }

uint64_t parse_sysfs_hex(std::string_view s, const std::string& file) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  if (s.starts_with("0x") || s.starts_with("0X")) s.remove_prefix(2);
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size())
    throw Error("malformed " + file + ": '" + std::string(s) + "' is not a hexadecimal number");
  return v;
}

uint64_t DmaBuffer::bus_address(size_t offset) const {
  if (offset >= size || !page_size) throw Error("offset " + hex(offset) + " is outside the " + hex(size) + "-byte DMA buffer");
  return bus.at(offset / page_size) + offset % page_size;
}

std::string normalize_pci_address(std::string_view a) {
  auto bad = [&] { return Error("'" + std::string(a) + "' is not a PCI address: expected [domain:]bus:device.function, e.g. 0000:03:00.0"); };
  std::string s(a);
  if (s.size() == 7) s = "0000:" + s;
  if (s.size() != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.' || s[11] < '0' || s[11] > '7') throw bad();
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9}) {
    if (!std::isxdigit(static_cast<unsigned char>(s[i]))) throw bad();
    s[i] = char(std::tolower(static_cast<unsigned char>(s[i])));
  }
  return s;
}

std::vector<PciInfo> list_pci_devices(Os& os, std::optional<uint16_t> vendor) {
  std::vector<PciInfo> out;
  if (!os.exists(kPciSysfs)) return out;  // no PCI bus (a container, another OS)
  for (const std::string& name : os.listdir(kPciSysfs)) {
    std::string dir = pci_sysfs_dir(name);
    try {
      PciInfo p{name, uint16_t(parse_sysfs_hex(os.read_file(dir + "/vendor"), dir + "/vendor")), 0, 0, {}};
      if (vendor && p.vendor != *vendor) continue;
      p.device = uint16_t(parse_sysfs_hex(os.read_file(dir + "/device"), dir + "/device"));
      p.class_code = uint32_t(parse_sysfs_hex(os.read_file(dir + "/class"), dir + "/class"));
      p.driver = driver_of(os, dir);
      out.push_back(std::move(p));
    } catch (const OsError& e) {
      if (e.err() != ENOENT) throw;  // ENOENT: unplugged while we looked
    }
  }
  return out;
}

std::string bound_driver(Os& os, std::string_view address) { return driver_of(os, pci_sysfs_dir(normalize_pci_address(address))); }

void unbind_driver(Os& os, std::string_view address) {
  std::string addr = normalize_pci_address(address), dir = pci_sysfs_dir(addr), drv = driver_of(os, dir);
  if (drv.empty()) return;
  try {
    os.write_file(dir + "/driver/unbind", addr);
  } catch (const OsError& e) {
    throw_os_error(e.err(), "unbinding " + drv + " from " + addr + " (" + dir + "/driver/unbind)",
                   e.err() == EACCES || e.err() == EPERM ? "unbinding a kernel driver needs root" : "");
  }
  if (!driver_of(os, dir).empty()) throw Error(drv + " did not let go of " + addr + " (it is still bound after the unbind)");
}

}  // namespace ugpu::sys
