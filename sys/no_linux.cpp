// A build with -Dlinux_drivers=disabled (POSIX and libusb only, as on macOS): what os_linux.cpp and
// pci_linux.cpp define there, as errors that say why they are missing.
#include <cerrno>

#include "sys/os.h"
#include "sys/pci.h"

namespace ugpu::sys {
namespace {
constexpr const char* kNoLinux = "this build has no Linux drivers (configured with -Dlinux_drivers=disabled)";
}

int PosixOs::eventfd(unsigned, int) { throw_os_error(ENOSYS, "eventfd", std::string("eventfd is Linux's, and ") + kNoLinux); }

std::unique_ptr<PciDevice> open_pci_device(Os&, std::string_view address) {
  throw Error("PCI device " + normalize_pci_address(address) + ": " + kNoLinux + ", so no PCI access through sysfs or vfio");
}

}  // namespace ugpu::sys
