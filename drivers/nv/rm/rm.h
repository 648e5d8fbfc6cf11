// The RM and UVM clients of the NVIDIA driver: /dev/nvidiactl escapes (alloc, control, free, CPU and
// GPU mappings), /dev/nvidia-uvm ioctls, and RM memory with one address for CPU and GPU. Statuses are
// errors naming the call, the object, NVIDIA's status name and text, and a hint.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "hcq/allocator.h"
#include "hw/nv/rm_abi.h"
#include "sys/os.h"

namespace ugpu::nv {

// An RM or UVM call that returned a status other than NV_OK.
class RmError : public Error {
 public:
  RmError(uint32_t status, const std::string& msg) : Error(msg), status_(status) {}
  uint32_t status() const { return status_; }

 private:
  uint32_t status_;
};

struct Rm : std::enable_shared_from_this<Rm> {
  std::shared_ptr<sys::Os> os;
  std::string name;  // the device string, for messages
  sys::Fd ctl, dev, uvm, uvm_mm;
  std::string dev_path;  // /dev/nvidiaN
  uint32_t root = 0, device = 0, subdevice = 0, virtmem = 0, vaspace = 0;
  std::string version;  // "580.105.08"
  const hw::nv::AbiBranch* abi = nullptr;
  uint8_t uuid[16] = {};

  // Opens /dev/nvidiactl, allocates the root client and reads the driver version (with structs every
  // branch shares), then picks the branch; an unsupported branch is an Error naming the version.
  static std::shared_ptr<Rm> open(std::shared_ptr<sys::Os> os, const std::string& name);

  uint32_t alloc(uint32_t parent, uint32_t cls, void* params, const std::string& what, uint32_t handle = 0);
  void control(uint32_t object, uint32_t cmd, void* params, uint32_t size, const std::string& what);
  void free(uint32_t parent, uint32_t object) noexcept;
  template <class P>
  void uvm_call(unsigned long nr, P& p, const std::string& what, bool mm = false) {
    uvm_ioctl(nr, &p, &p.rmStatus, what, mm);
  }
  void uvm_ioctl(unsigned long nr, void* p, const uint32_t* status, const std::string& what, bool mm);
  [[noreturn]] void fail(uint32_t status, const std::string& what) const;
  uint32_t new_handle() { return next_handle_++; }

  // RM memory at one address for CPU and GPU. The address comes from the process's range allocator
  // over the window below 2^40 (shared by every NVIDIA device of the process) (QMDs, pushbuffers and semaphores must be there); the CPU mapping is
  // made inside a reservation taken with MAP_FIXED_NOREPLACE, so it never lands on another mapping.
  enum class Where { Vidmem, Sysmem, Host };  // host: the process's own pages (OS descriptor)
  struct Memory {
    uint32_t handle = 0;
    uint64_t va = 0, size = 0;
    void* host = nullptr;
    Where where = Where::Vidmem;
  };
  std::shared_ptr<Memory> alloc_memory(uint64_t size, Where where, bool write_combined = false);
  // Whether CPU mappings sit at the GPU address. They cannot where the window below 1 TiB is not free
  // in this process (AddressSanitizer keeps its shadow there): then the CPU mapping goes wherever the
  // kernel puts it and `Memory::host` differs from `va`.
  bool unified = true;
  uint64_t reserve_va(uint64_t size);  // GPU address space only (UVM_REGISTER_CHANNEL's range)

 private:
  uint64_t reserve(uint64_t size, uint64_t align);       // a VA with a PROT_NONE reservation there
  void release(uint64_t va, uint64_t size, void* host);  // the GPU range, and the CPU mapping (or reservation) at host
  void map_to_gpu(const Memory& m, uint64_t page);
  int fresh_fd(bool control);  // a new fd to map one allocation through (registered with ctl)
  uint32_t next_handle_ = 0x1001;
};

}  // namespace ugpu::nv
