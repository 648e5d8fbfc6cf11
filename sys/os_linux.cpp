// PosixOs's Linux-only call (sys/os.h): eventfd. Built only with -Dlinux_drivers (a build without has
// sys/no_linux.cpp instead).
#include <sys/eventfd.h>

#include <cerrno>

#include "sys/os.h"

namespace ugpu::sys {

int PosixOs::eventfd(unsigned initial, int flags) {
  int fd = ::eventfd(initial, flags | EFD_CLOEXEC);
  if (fd < 0) throw_os_error(errno, "eventfd");
  return fd;
}

}  // namespace ugpu::sys
