#include "sys/os.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

namespace ugpu::sys {

std::string errno_name(int err) {
#if defined(__GLIBC__)
  if (const char* n = strerrorname_np(err)) return n;
#endif
  return "errno " + std::to_string(err);
}

namespace {
std::string_view generic_hint(int err) {
  switch (err) {
    case EACCES:
    case EPERM: return "check its permissions: run as root, or add your user to the group that owns it (render, video)";
    case ENOENT: return "it does not exist: is the kernel driver loaded and the device present?";
    case EBUSY: return "another process (or kernel driver) is using it";
    case ENOMEM: return "out of memory, or over the locked-memory limit (raise `ulimit -l`)";
    case ENODEV:
    case ENXIO: return "the device is gone, or its driver does not support this";
    case ENOTTY: return "the driver does not know this ioctl: is the kernel driver the expected version?";
    default: return {};
  }
}
// "fd 7 (/dev/kfd)": the target of /proc/self/fd/N, looked up only to write an error message.
std::string describe_fd(int fd) {
  if (fd < 0) return "anonymous memory";
  char buf[256];
  ssize_t n = ::readlink(("/proc/self/fd/" + std::to_string(fd)).c_str(), buf, sizeof buf);
  return "fd " + std::to_string(fd) + (n > 0 ? " (" + std::string(buf, size_t(n)) + ")" : "");
}
template <class F>
auto retry(F f) {  // restarts a call interrupted by a signal
  for (;;) {
    auto r = f();
    if (!(r == -1 && errno == EINTR)) return r;
  }
}
}  // namespace

void throw_os_error(int err, std::string_view what, std::string_view hint) {
  if (hint.empty()) hint = generic_hint(err);
  std::string msg = std::string(what) + ": " + std::strerror(err) + " (" + errno_name(err) + ")";
  if (!hint.empty()) msg += " — " + std::string(hint);
  throw OsError(err, msg);
}

int check_ioctl(int result, std::string_view what, std::string_view hint) {
  if (result < 0) throw_os_error(-result, what, hint);
  return result;
}

int PosixOs::open(const std::string& path, int flags) {
  int fd = retry([&] { return ::open(path.c_str(), flags | O_CLOEXEC, 0644); });
  if (fd < 0) throw_os_error(errno, "open " + path);
  return fd;
}

void PosixOs::close(int fd) {
  if (fd >= 0) ::close(fd);  // not retried: on Linux the fd is gone even when close reports EINTR
}

int PosixOs::ioctl(int fd, unsigned long request, void* arg) {
  int r = retry([&] { return ::ioctl(fd, request, arg); });
  return r < 0 ? -errno : r;
}

void* PosixOs::mmap(void* addr, size_t len, int prot, int flags, int fd, uint64_t offset) {
  void* p = ::mmap(addr, len, prot, flags, fd, off_t(offset));
  if (p == MAP_FAILED)
    throw_os_error(errno, "mmap of " + std::to_string(len) + " bytes at offset " + std::to_string(offset) + " of " + describe_fd(fd));
  return p;
}

void PosixOs::munmap(void* addr, size_t len) {
  if (addr) ::munmap(addr, len);
}

size_t PosixOs::pread(int fd, std::span<uint8_t> dst, uint64_t offset) {
  ssize_t n = retry([&] { return ::pread(fd, dst.data(), dst.size(), off_t(offset)); });
  if (n < 0 && errno == ESPIPE) n = retry([&] { return ::read(fd, dst.data(), dst.size()); });  // eventfd, pipe
  if (n < 0)
    throw_os_error(errno, "pread of " + std::to_string(dst.size()) + " bytes at offset " + std::to_string(offset) + " of " + describe_fd(fd));
  return size_t(n);
}

size_t PosixOs::pwrite(int fd, std::span<const uint8_t> src, uint64_t offset) {
  ssize_t n = retry([&] { return ::pwrite(fd, src.data(), src.size(), off_t(offset)); });
  if (n < 0 && errno == ESPIPE) n = retry([&] { return ::write(fd, src.data(), src.size()); });
  if (n < 0)
    throw_os_error(errno, "pwrite of " + std::to_string(src.size()) + " bytes at offset " + std::to_string(offset) + " of " + describe_fd(fd));
  return size_t(n);
}

std::string PosixOs::read_file(const std::string& path) {
  Fd fd(*this, path, O_RDONLY);
  std::string out;
  char buf[4096];  // sysfs reports every attribute as 4096 bytes long, so read to the end instead of trusting st_size
  for (;;) {
    ssize_t n = retry([&] { return ::read(fd.get(), buf, sizeof buf); });
    if (n < 0) throw_os_error(errno, "read " + path);
    if (n == 0) return out;
    out.append(buf, size_t(n));
  }
}

void PosixOs::write_file(const std::string& path, std::string_view contents) {
  Fd fd(*this, path, O_WRONLY | O_TRUNC);  // no O_CREAT: a missing sysfs attribute is an error, not a new file
  ssize_t n = retry([&] { return ::write(fd.get(), contents.data(), contents.size()); });
  if (n < 0) throw_os_error(errno, "write " + path);
  if (size_t(n) != contents.size()) throw_os_error(EIO, "write " + path + " (short write)");
}

std::vector<std::string> PosixOs::listdir(const std::string& path) {
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(path.c_str()), &::closedir);
  if (!d) throw_os_error(errno, "list directory " + path);
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d.get()))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.emplace_back(e->d_name);
  std::sort(names.begin(), names.end());
  return names;
}

bool PosixOs::exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string PosixOs::readlink(const std::string& path) {
  for (size_t cap = 256;; cap *= 4) {
    std::string buf(cap, '\0');
    ssize_t n = ::readlink(path.c_str(), buf.data(), cap);
    if (n < 0) throw_os_error(errno, "readlink " + path);
    if (size_t(n) < cap) return buf.substr(0, size_t(n));
  }
}

int PosixOs::flock(int fd, int operation) {
  int r = retry([&] { return ::flock(fd, operation); });
  return r < 0 ? -errno : 0;
}

Os& posix_os() {
  static PosixOs os;
  return os;
}

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) reset(), os_ = o.os_, fd_ = o.release();
  return *this;
}
void Fd::reset() {
  if (fd_ >= 0 && os_) os_->close(fd_);
  fd_ = -1;
}

Mapping& Mapping::operator=(Mapping&& o) noexcept {
  if (this != &o) reset(), os_ = o.os_, addr_ = std::exchange(o.addr_, nullptr), len_ = std::exchange(o.len_, 0);
  return *this;
}
void Mapping::reset() {
  if (addr_ && os_) os_->munmap(addr_, len_);
  addr_ = nullptr, len_ = 0;
}

}  // namespace ugpu::sys
