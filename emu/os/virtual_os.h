// VirtualOs: the Os seam served from memory (docs/design.md §3, §6). Tests build a fake /sys or /dev tree
// in it, and emulated GPUs plug their kernel-driver models in as device nodes, so the KFD, RM, sysfs
// and vfio paths run unchanged against it.
//
// It behaves like Linux where drivers can tell: unknown paths are ENOENT, symlinks are followed
// (relative targets from the link's directory, ".." after the link as the kernel does), reads of
// write-only fds are EBADF, mmap beyond a file is EINVAL, and errors are sys::OsError with the same
// messages PosixOs gives. Limits: no working directory (relative paths start at /), no permissions
// beyond set_errno_on_open, MAP_FIXED only for device files that map pages and only inside a mapping
// this VirtualOs made (a reservation), no partial munmap, and no hugepages (MAP_HUGETLB fails with
// ENOMEM, so callers take their small-page path). Anonymous mmaps are real memory. Thread-safe;
// VirtualFile calls run without the lock held, so a handler may call back into the VirtualOs.
#pragma once
#include <cerrno>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>

#include "sys/mmio.h"
#include "sys/os.h"

namespace ugpu::emu {

// What an emulated driver serves behind one open file. Results follow the kernel: >= 0, or -errno.
class VirtualFile {
 public:
  virtual ~VirtualFile() = default;
  virtual int ioctl(unsigned long /*request*/, void* /*arg*/) { return -ENOTTY; }
  // Memory for mmap(len) at offset, valid while this file lives; nullptr refuses with ENODEV.
  virtual void* mmap(uint64_t /*offset*/, size_t /*len*/, int /*prot*/) { return nullptr; }
  // A fresh mapping of the file's pages (a memfd behind a GPU buffer): at `addr` exactly when flags
  // has MAP_FIXED, else anywhere. The VirtualOs unmaps it on munmap. nullptr: not such a file (mmap()
  // is asked instead, and MAP_FIXED is refused with EINVAL).
  virtual void* map_pages(void* /*addr*/, uint64_t /*offset*/, size_t /*len*/, int /*prot*/, int /*flags*/) { return nullptr; }
  virtual long pread(std::span<uint8_t> /*dst*/, uint64_t /*offset*/) { return -EINVAL; }
  // A register range whose accesses the model sees (an emulated BAR): what map_mmio() of this file
  // returns. nullptr: the file's memory is plain (mmap() is asked, as for any mapping).
  virtual std::unique_ptr<sys::Mmio> mmio(uint64_t /*offset*/, size_t /*len*/, const std::string& /*name*/) { return nullptr; }
  virtual long pwrite(std::span<const uint8_t> /*src*/, uint64_t /*offset*/) { return -EINVAL; }
};
// A VirtualFile from functions, for tests and small fakes; an unset function behaves as the default.
struct FunctionFile : VirtualFile {
  std::function<int(unsigned long, void*)> on_ioctl;
  std::function<void*(uint64_t, size_t)> on_mmap;
  std::function<long(std::span<uint8_t>, uint64_t)> on_pread;
  std::function<long(std::span<const uint8_t>, uint64_t)> on_pwrite;
  int ioctl(unsigned long r, void* a) override { return on_ioctl ? on_ioctl(r, a) : -ENOTTY; }
  void* mmap(uint64_t o, size_t n, int) override { return on_mmap ? on_mmap(o, n) : nullptr; }
  long pread(std::span<uint8_t> d, uint64_t o) override { return on_pread ? on_pread(d, o) : -EINVAL; }
  long pwrite(std::span<const uint8_t> s, uint64_t o) override { return on_pwrite ? on_pwrite(s, o) : -EINVAL; }
};
// Called on every open(path, flags) of a device node: a fresh file per open (per-fd driver state),
// or the same one; it may throw sys::OsError to refuse (EBUSY).
using VirtualFileFactory = std::function<std::shared_ptr<VirtualFile>(int flags)>;

class VirtualOs : public sys::Os {
 public:
  VirtualOs();
  ~VirtualOs() override;

  // Building the tree: missing parent directories are created; an existing node is replaced.
  void add_dir(const std::string& path);
  void add_file(const std::string& path, std::string contents);  // a text file (sysfs attribute)
  void add_symlink(const std::string& path, std::string target);
  // A file backed by one zeroed, page-aligned block of `size` bytes: pread/pwrite and mmap all reach
  // the same memory (fake `config`, `resourceN`). The span stays valid while the VirtualOs lives.
  std::span<uint8_t> add_mmap_file(const std::string& path, size_t size);
  void add_device(const std::string& path, VirtualFileFactory open);
  void add_device(const std::string& path, std::shared_ptr<VirtualFile> file);  // every open shares it
  void remove(const std::string& path);                                         // with everything under it; open fds keep working (unplug)
  void set_errno_on_open(const std::string& path, int err);                     // opens of path fail with err; 0 clears
  // An fd that is not in the tree (the fd VFIO_GROUP_GET_DEVICE_FD returns); name is for messages.
  int add_fd(std::shared_ptr<VirtualFile> file, std::string name);

  std::string fd_path(int fd) const;  // the path behind an open fd, "" when fd is not open
  // The emulated driver's file behind an open device fd (null otherwise): how a model finds the file
  // an ioctl names by fd number (NVIDIA's RM_MAP_MEMORY names the /dev/nvidiaN fd to map through).
  std::shared_ptr<VirtualFile> device_of(int fd) const;
  size_t open_fds() const;
  size_t mappings() const;

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
  std::unique_ptr<sys::Mmio> map_mmio(int fd, size_t len, uint64_t offset, const std::string& name) override;
  int flock(int fd, int operation) override;          // per path, exclusive only (LOCK_SH is taken as LOCK_EX)
  int eventfd(unsigned initial, int flags) override;  // pread/pwrite of 8 bytes take/add to the counter

 private:
  struct Block;
  struct Node;
  struct OpenFile;
  struct Map {
    size_t len;
    bool anonymous;              // or pages a device mapped (map_pages): really unmapped on munmap
    std::shared_ptr<void> keep;  // the block or VirtualFile the memory belongs to
  };
  std::string resolve(const std::string& path, bool follow_last, int& err) const;  // lock held
  std::string place(const std::string& path);                                      // resolved path for a new node, parents made; lock held
  void add(const std::string& path, std::shared_ptr<Node> node);
  std::shared_ptr<OpenFile> file(int fd, const char* what) const;

  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Node>> nodes_;
  std::map<std::string, int> open_errno_;
  std::map<int, std::shared_ptr<OpenFile>> fds_;
  std::map<std::string, int> locks_;  // path -> the fd holding its flock
  std::map<uintptr_t, Map> maps_;
  int next_fd_ = 1000;  // far from the process's real fds, so a stray real syscall on one fails loudly
};

}  // namespace ugpu::emu
