// The Os seam (docs/design.md §3): every system call a driver path makes — files, ioctls, mmaps, sysfs —
// goes through an Os, so the same driver code runs against the kernel (PosixOs) and against an
// emulator's virtual files (emu::VirtualOs).
//
// Conventions, the same for every implementation:
//  - Failures throw OsError (errno + a message naming the call, the path and a hint)...
//  - ...except ioctl, which returns the kernel's result: >= 0 on success, -errno on failure, because
//    only the caller knows which ioctl it was and which errors are expected (probing, EAGAIN).
//    check_ioctl() turns a failure into an OsError naming the ioctl.
//  - close and munmap never throw: they run in destructors, and there is nothing a caller could do.
//  - Paths are absolute; fds are ints valid only for the Os that returned them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"

namespace ugpu::sys {

class Mmio;

class OsError : public Error {
 public:
  OsError(int err, const std::string& msg) : Error(msg), err_(err) {}
  int err() const { return err_; }  // the errno

 private:
  int err_;
};

std::string errno_name(int err);  // "EACCES"; "errno 1234" for unknown values
// Throws OsError "<what>: <strerror> (<ENAME>) — <hint>"; an empty hint picks a generic one for err.
[[noreturn]] void throw_os_error(int err, std::string_view what, std::string_view hint = {});
// Returns result when it is >= 0, else throws OsError for -result naming `what` (e.g. "AMDKFD_IOC_CREATE_QUEUE on /dev/kfd").
int check_ioctl(int result, std::string_view what, std::string_view hint = {});

class Os {
 public:
  virtual ~Os() = default;
  virtual int open(const std::string& path, int flags) = 0;  // O_* flags; O_CLOEXEC is implied
  virtual void close(int fd) = 0;
  // `arg` is passed verbatim as the third ioctl argument: a pointer to the struct, or an integer
  // cast to a pointer for ioctls that take a value (VFIO_CHECK_EXTENSION). Returns >= 0 or -errno.
  virtual int ioctl(int fd, unsigned long request, void* arg) = 0;
  virtual void* mmap(void* addr, size_t len, int prot, int flags, int fd, uint64_t offset) = 0;  // never MAP_FAILED
  virtual void munmap(void* addr, size_t len) = 0;
  // Bytes moved; short at the end of a file. On files without positions (eventfd) offset is ignored.
  virtual size_t pread(int fd, std::span<uint8_t> dst, uint64_t offset) = 0;
  virtual size_t pwrite(int fd, std::span<const uint8_t> src, uint64_t offset) = 0;
  virtual std::string read_file(const std::string& path) = 0;  // a whole small file (sysfs, procfs)
  // Replaces the contents in one write, as sysfs attributes require; the file must exist.
  virtual void write_file(const std::string& path, std::string_view contents) = 0;
  virtual std::vector<std::string> listdir(const std::string& path) = 0;  // names, sorted, without . and ..
  // Follows symlinks: a dangling link does not exist.
  virtual bool exists(const std::string& path) = 0;
  virtual std::string readlink(const std::string& path) = 0;
  // flags: EFD_NONBLOCK (= O_NONBLOCK). PosixOs has it only on Linux: built without the Linux drivers it
  // throws ENOSYS.
  virtual int eventfd(unsigned initial, int flags) = 0;
  // An advisory whole-file lock (LOCK_EX / LOCK_SH, | LOCK_NB; LOCK_UN), released with the fd.
  // Returns 0 or -errno (EWOULDBLOCK when LOCK_NB and another open file holds it), as ioctl does.
  virtual int flock(int fd, int operation) = 0;
  // A device range (a BAR's resourceN file, a vfio region) as an Mmio: by default mmap(MAP_SHARED) of
  // `len` bytes at `offset` with volatile accesses (MappedMmio, sys/mmio.h). An emulated device whose
  // registers have side effects answers with its own Mmio, so register writes reach its model.
  virtual std::unique_ptr<Mmio> map_mmio(int fd, size_t len, uint64_t offset, const std::string& name);
};

// The kernel. Interrupted calls (EINTR) are restarted.
class PosixOs : public Os {
 public:
  int open(const std::string& path, int flags) override;
  void close(int fd) override;
  int ioctl(int fd, unsigned long request, void* arg) override;
  void* mmap(void* addr, size_t len, int prot, int flags, int fd, uint64_t offset) override;
  void munmap(void* addr, size_t len) override;
  size_t pread(int fd, std::span<uint8_t> dst, uint64_t offset) override;
  size_t pwrite(int fd, std::span<const uint8_t> src, uint64_t offset) override;
  std::string read_file(const std::string& path) override;
  void write_file(const std::string& path, std::string_view contents) override;
  std::vector<std::string> listdir(const std::string& path) override;
  bool exists(const std::string& path) override;
  std::string readlink(const std::string& path) override;
  int eventfd(unsigned initial, int flags) override;
  int flock(int fd, int operation) override;
};
Os& posix_os();  // one stateless PosixOs for the process

// An fd opened through an Os and closed through the same Os.
class Fd {
 public:
  Fd() = default;
  Fd(Os& os, int fd) : os_(&os), fd_(fd) {}  // adopts fd
  Fd(Os& os, const std::string& path, int flags) : os_(&os), fd_(os.open(path, flags)) {}
  ~Fd() { reset(); }
  Fd(Fd&& o) noexcept : os_(o.os_), fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset();

 private:
  Os* os_ = nullptr;
  int fd_ = -1;
};

// A mapping made through an Os and unmapped through the same Os.
class Mapping {
 public:
  Mapping() = default;
  Mapping(Os& os, void* addr, size_t len) : os_(&os), addr_(addr), len_(len) {}  // adopts
  Mapping(Os& os, size_t len, int prot, int flags, int fd, uint64_t offset)
      : os_(&os), addr_(os.mmap(nullptr, len, prot, flags, fd, offset)), len_(len) {}
  ~Mapping() { reset(); }
  Mapping(Mapping&& o) noexcept : os_(o.os_), addr_(std::exchange(o.addr_, nullptr)), len_(std::exchange(o.len_, 0)) {}
  Mapping& operator=(Mapping&& o) noexcept;
  uint8_t* data() const { return static_cast<uint8_t*>(addr_); }
  size_t size() const { return len_; }
  std::span<uint8_t> bytes() const { return {data(), len_}; }
  void reset();

 private:
  Os* os_ = nullptr;
  void* addr_ = nullptr;
  size_t len_ = 0;
};

}  // namespace ugpu::sys
