#include "drivers/nv/rm/rm.h"

#include <fcntl.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "common/hex.h"
#include "hw/nv/rm_branch.h"

namespace ugpu::nv {
namespace rm = hw::nv;

namespace {

// GPU addresses ugpu hands out: CPU-visible memory must sit below 2^40 (SEND_PCAS_A takes a QMD
// address >> 8 in 32 bits, GPFIFO entries and semaphores take 40 bits).
constexpr uint64_t kVaBase = uint64_t{0x10} << 32, kVaEnd = uint64_t{1} << 40;
constexpr uint64_t kHugePage = 2u << 20, kSmallPage = 4096, kHugeFrom = 8u << 20;

// The window's allocator, one per process: every device's memory has its own CPU address too.
struct VaWindow {
  std::mutex mu;
  hcq::RangeAllocator ranges{kVaBase, kVaEnd - kVaBase, kSmallPage};
};
VaWindow& va_window() {
  static VaWindow w;
  return w;
}

}  // namespace

std::shared_ptr<Rm> Rm::open(std::shared_ptr<sys::Os> os, const std::string& name) {
  auto r = std::make_shared<Rm>();
  r->os = std::move(os);
  r->name = name;
  if (!r->os->exists("/dev/nvidiactl"))
    throw Error(name +
                ": no NVIDIA GPU: /dev/nvidiactl does not exist (is the nvidia kernel module loaded? `lsmod | grep nvidia`; "
                "nouveau cannot be used)");
  try {
    r->ctl = sys::Fd(*r->os, "/dev/nvidiactl", O_RDWR);
  } catch (const sys::OsError& e) {
    throw Error(name + ": cannot open /dev/nvidiactl: " + e.what() +
                (e.err() == EACCES ? " — check the permissions of /dev/nvidia* (the video group)" : ""));
  }
  // The root client and the version come first, with structs every branch shares.
  r->root = r->alloc(0, rm::NV01_ROOT_CLIENT, nullptr, "the root client");
  rm::NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS v{};
  r->control(r->root, rm::NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2, &v, sizeof v, "GET_BUILD_VERSION_V2");
  r->version.assign(v.driverVersionBuffer, strnlen(v.driverVersionBuffer, sizeof v.driverVersionBuffer));
  unsigned major = static_cast<unsigned>(std::atoi(r->version.c_str()));
  r->abi = rm::find_branch(major);
  if (!r->abi)
    throw Error(name + ": NVIDIA driver " + r->version + " is not supported: ugpu has the RM struct layouts of the branches " +
                rm::kSupportedBranches + " (install a 570 or newer driver)");
  // Is the GPU window free for CPU mappings here? Probe a few spread addresses.
  r->unified = false;
  for (uint64_t at = kVaBase; at < kVaEnd && !r->unified; at += (kVaEnd - kVaBase) / 8) {
    try {
      void* p =
          r->os->mmap(reinterpret_cast<void*>(at), kSmallPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
      r->unified = p == reinterpret_cast<void*>(at);
      r->os->munmap(p, kSmallPage);
    } catch (const sys::OsError& e) {
      if (e.err() != EEXIST) throw;
    }
  }
  r->uvm = sys::Fd(*r->os, "/dev/nvidia-uvm", O_RDWR);
  r->uvm_mm = sys::Fd(*r->os, "/dev/nvidia-uvm", O_RDWR);
  rm::UVM_INITIALIZE_PARAMS init{};
  r->uvm_call(rm::UVM_INITIALIZE, init, "UVM_INITIALIZE");
  rm::UVM_MM_INITIALIZE_PARAMS mm{};
  mm.uvmFd = r->uvm.get();
  r->os->ioctl(r->uvm_mm.get(), rm::UVM_MM_INITIALIZE, &mm);  // not needed everywhere (CUDA ignores its result too)
  return r;
}

[[noreturn]] void Rm::fail(uint32_t status, const std::string& what) const {
  std::string hint;
  switch (status) {
    case rm::NV_ERR_NO_MEMORY: hint = " — out of GPU memory"; break;
    case rm::NV_ERR_INSUFFICIENT_PERMISSIONS: hint = " — permissions: check /dev/nvidia* and the driver's RmProfilingAdminOnly-style settings"; break;
    case rm::NV_ERR_INVALID_PARAM_STRUCT:
    case rm::NV_ERR_INVALID_ARGUMENT:
      hint = abi ? " — if this is a driver/ugpu mismatch: driver " + version + " uses ugpu's branch " + abi->name + " layouts" : "";
      break;
    default: break;
  }
  throw RmError(status, name + ": " + what + " failed: " + rm::status_name(status) + " (" + rm::status_text(status) + ")" + hint);
}

uint32_t Rm::alloc(uint32_t parent, uint32_t cls, void* params, const std::string& what, uint32_t handle) {
  rm::NVOS21_PARAMETERS p{};
  p.hRoot = cls == rm::NV01_ROOT_CLIENT ? 0 : root;
  p.hObjectParent = parent;
  p.hObjectNew = handle;
  p.hClass = cls;
  p.pAllocParms = reinterpret_cast<uint64_t>(params);
  int r = os->ioctl(ctl.get(), rm::rm_ioctl(rm::NV_ESC_RM_ALLOC, sizeof p), &p);
  if (r < 0) sys::check_ioctl(r, "NV_ESC_RM_ALLOC of " + what + " on /dev/nvidiactl (" + name + ")");
  if (p.status != rm::NV_OK) fail(p.status, "RM_ALLOC of " + what + " (class " + hex(cls) + ")");
  return p.hObjectNew;
}

void Rm::control(uint32_t object, uint32_t cmd, void* params, uint32_t size, const std::string& what) {
  rm::NVOS54_PARAMETERS p{};
  p.hClient = root;
  p.hObject = object;
  p.cmd = cmd;
  p.params = reinterpret_cast<uint64_t>(params);
  p.paramsSize = size;
  int r = os->ioctl(ctl.get(), rm::rm_ioctl(rm::NV_ESC_RM_CONTROL, sizeof p), &p);
  if (r < 0) sys::check_ioctl(r, "NV_ESC_RM_CONTROL " + what + " on /dev/nvidiactl (" + name + ")");
  if (p.status != rm::NV_OK) fail(p.status, "RM control " + what + " (" + hex(cmd) + ")");
}

void Rm::free(uint32_t parent, uint32_t object) noexcept {
  rm::NVOS00_PARAMETERS p{root, parent, object, 0};
  os->ioctl(ctl.get(), rm::rm_ioctl(rm::NV_ESC_RM_FREE, sizeof p), &p);
}

void Rm::uvm_ioctl(unsigned long nr, void* p, const uint32_t* status, const std::string& what, bool mm) {
  int r = os->ioctl(mm ? uvm_mm.get() : uvm.get(), nr, p);
  if (r < 0) sys::check_ioctl(r, what + " on /dev/nvidia-uvm (" + name + ")", r == -ENOTTY ? "the nvidia-uvm module does not know this ioctl" : "");
  if (*status != rm::NV_OK) fail(*status, what);
}

int Rm::fresh_fd(bool control) {
  sys::Fd fd(*os, control ? "/dev/nvidiactl" : dev_path, O_RDWR);
  if (!control) {
    rm::nv_ioctl_register_fd_t reg{ctl.get()};
    sys::check_ioctl(os->ioctl(fd.get(), rm::rm_ioctl(rm::NV_ESC_REGISTER_FD, sizeof reg), &reg), "NV_ESC_REGISTER_FD on " + dev_path);
  }
  return fd.release();
}

uint64_t Rm::reserve(uint64_t size, uint64_t align) {
  for (int attempt = 0; attempt < 64; ++attempt) {
    std::optional<uint64_t> va;
    {
      std::lock_guard lock(va_window().mu);
      va = va_window().ranges.alloc(size, align);
    }
    if (!va) throw RmError(rm::NV_ERR_NO_MEMORY, name + ": no room for " + std::to_string(size) + " bytes in the GPU address window below 1 TiB");
    if (!unified) return *va;  // GPU address only: the CPU mapping goes elsewhere
    void* want = reinterpret_cast<void*>(*va);
    void* got = nullptr;
    try {
      got = os->mmap(want, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    } catch (const sys::OsError& e) {
      if (e.err() != EEXIST) throw;
      continue;  // another mapping of the process is there: leave that range allocated and try another
    }
    if (got == want) return *va;
    os->munmap(got, size);  // a kernel that ignores MAP_FIXED_NOREPLACE gave another address
  }
  throw Error(name + ": cannot reserve " + std::to_string(size) +
              " bytes of address space below 1 TiB (the process has mappings everywhere we tried)");
}

uint64_t Rm::reserve_va(uint64_t size) {
  std::lock_guard lock(va_window().mu);
  auto va = va_window().ranges.alloc(size, kHugePage);
  if (!va) throw RmError(rm::NV_ERR_NO_MEMORY, name + ": no room for " + std::to_string(size) + " bytes in the GPU address window below 1 TiB");
  return *va;
}

void Rm::release(uint64_t va, uint64_t size, void* host) {
  if (host) os->munmap(host, size);
  std::lock_guard lock(va_window().mu);
  va_window().ranges.free(va);
}

void Rm::map_to_gpu(const Memory& m, uint64_t) {
  rm::UVM_CREATE_EXTERNAL_RANGE_PARAMS range{};
  range.base = m.va, range.length = m.size;
  uvm_call(rm::UVM_CREATE_EXTERNAL_RANGE, range, "UVM_CREATE_EXTERNAL_RANGE at " + hex(m.va));
  rm::with_branch(*abi, [&](auto t) {
    typename decltype(t)::Nvos46 p{};
    p.hClient = root, p.hDevice = device, p.hDma = virtmem, p.hMemory = m.handle;
    p.length = m.size;
    p.flags = rm::NVOS46_FLAGS_PAGE_SIZE.num(rm::NVOS46_FLAGS_PAGE_SIZE_4KB) | rm::NVOS46_FLAGS_CACHE_SNOOP.num(rm::NVOS46_FLAGS_CACHE_SNOOP_ENABLE) |
              rm::NVOS46_FLAGS_DMA_OFFSET_FIXED.num(rm::NVOS46_FLAGS_DMA_OFFSET_FIXED_TRUE);
    p.dmaOffset = m.va;
    int r = os->ioctl(ctl.get(), rm::rm_ioctl(rm::NV_ESC_RM_MAP_MEMORY_DMA, sizeof p), &p);
    if (r < 0)
      sys::check_ioctl(r, "NV_ESC_RM_MAP_MEMORY_DMA on /dev/nvidiactl (" + name + ")",
                       "a struct size the driver refuses: branch " + std::string(abi->name));
    if (p.status != rm::NV_OK) fail(p.status, "RM_MAP_MEMORY_DMA at " + hex(m.va));
    if (p.dmaOffset != m.va) throw Error(name + ": RM mapped the memory at " + hex(p.dmaOffset) + ", not at the fixed address " + hex(m.va));
  });
  auto map = std::make_unique<rm::UVM_MAP_EXTERNAL_ALLOCATION_PARAMS>();
  map->base = m.va, map->length = m.size, map->offset = 0;
  std::memcpy(map->perGpuAttributes[0].gpuUuid.uuid, uuid, 16);
  map->perGpuAttributes[0].gpuMappingType = rm::UvmGpuMappingTypeReadWriteAtomic;
  map->gpuAttributesCount = 1;
  map->rmCtrlFd = ctl.get();
  map->hClient = root, map->hMemory = m.handle;
  uvm_call(rm::UVM_MAP_EXTERNAL_ALLOCATION, *map, "UVM_MAP_EXTERNAL_ALLOCATION at " + hex(m.va));
}

std::shared_ptr<Rm::Memory> Rm::alloc_memory(uint64_t size, Where where, bool write_combined) {
  uint64_t page = where == Where::Vidmem && size >= kHugeFrom ? kHugePage : kSmallPage;
  size = (std::max<uint64_t>(size, 1) + page - 1) / page * page;
  auto m = std::make_shared<Memory>();
  m->size = size, m->where = where;
  m->va = reserve(size, page);
  void* at = reinterpret_cast<void*>(m->va);
  bool rm_object = false, gpu_mapped = false;
  auto undo = [&] {
    if (gpu_mapped) {
      rm::with_branch(*abi, [&](auto t) {
        typename decltype(t)::UvmFree f{};
        f.base = m->va;
        if constexpr (requires { f.length; }) f.length = m->size;
        os->ioctl(uvm.get(), rm::UVM_FREE, &f);
      });
    }
    if (rm_object) free(device, m->handle);
    release(m->va, m->size, unified ? at : m->host);
  };
  try {
    m->handle = new_handle();
    if (where == Where::Host) {
      // The process's own pages: shared anonymous memory in place of the reservation, described to RM.
      void* got;
      if (unified) {
        os->munmap(at, size);
        got = os->mmap(at, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (got != at) {
          os->munmap(got, size);
          os->mmap(at, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);  // the range undo releases
          throw Error(name + ": host memory for the GPU could not be placed at " + hex(m->va));
        }
      } else {
        got = os->mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
      }
      m->host = got;
      rm::nv_ioctl_nvos02_parameters_with_fd p{};
      p.params.hRoot = root, p.params.hObjectParent = device, p.params.hObjectNew = m->handle;
      p.params.hClass = rm::NV01_MEMORY_SYSTEM_OS_DESCRIPTOR;
      p.params.flags = rm::NVOS02_FLAGS_PHYSICALITY.num(rm::NVOS02_FLAGS_PHYSICALITY_NONCONTIGUOUS) |
                       rm::NVOS02_FLAGS_COHERENCY.num(rm::NVOS02_FLAGS_COHERENCY_CACHED) |
                       rm::NVOS02_FLAGS_MAPPING.num(rm::NVOS02_FLAGS_MAPPING_NO_MAP);
      p.params.pMemory = reinterpret_cast<uint64_t>(m->host);
      p.params.limit = size - 1;
      p.fd = -1;
      int r = os->ioctl(dev.get(), rm::rm_ioctl(rm::NV_ESC_RM_ALLOC_MEMORY, sizeof p), &p);
      if (r < 0) sys::check_ioctl(r, "NV_ESC_RM_ALLOC_MEMORY on " + dev_path + " (" + name + ")");
      if (p.params.status != rm::NV_OK) fail(p.params.status, "RM_ALLOC_MEMORY of " + std::to_string(size) + " bytes of host memory");
      rm_object = true;
    } else {
      const bool vid = where == Where::Vidmem;
      rm::NV_MEMORY_ALLOCATION_PARAMS a{};
      a.owner = root;
      a.type = vid ? rm::NVOS32_TYPE_IMAGE : rm::NVOS32_TYPE_NOTIFIER;
      a.flags = rm::NVOS32_ALLOC_FLAGS_MAP_NOT_REQUIRED | rm::NVOS32_ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED | rm::NVOS32_ALLOC_FLAGS_ALIGNMENT_FORCE |
                rm::NVOS32_ALLOC_FLAGS_IGNORE_BANK_PLACEMENT | (vid ? rm::NVOS32_ALLOC_FLAGS_PERSISTENT_VIDMEM : 0);
      a.attr = rm::NVOS32_ATTR_PHYSICALITY.num(rm::NVOS32_ATTR_PHYSICALITY_ALLOW_NONCONTIGUOUS) |
               rm::NVOS32_ATTR_PAGE_SIZE.num(page == kHugePage ? rm::NVOS32_ATTR_PAGE_SIZE_HUGE : rm::NVOS32_ATTR_PAGE_SIZE_4KB) |
               rm::NVOS32_ATTR_LOCATION.num(vid ? rm::NVOS32_ATTR_LOCATION_VIDMEM : rm::NVOS32_ATTR_LOCATION_PCI);
      a.attr2 = rm::NVOS32_ATTR2_ZBC.num(rm::NVOS32_ATTR2_ZBC_PREFER_NO_ZBC) |
                rm::NVOS32_ATTR2_GPU_CACHEABLE.num(vid ? rm::NVOS32_ATTR2_GPU_CACHEABLE_YES : rm::NVOS32_ATTR2_GPU_CACHEABLE_NO) |
                (page == kHugePage ? rm::NVOS32_ATTR2_PAGE_SIZE_HUGE.num(rm::NVOS32_ATTR2_PAGE_SIZE_HUGE_2MB) : 0);
      a.format = 6;
      a.size = size, a.alignment = page, a.limit = size - 1;
      alloc(device, vid ? rm::NV01_MEMORY_LOCAL_USER : rm::NV01_MEMORY_SYSTEM, &a,
            std::to_string(size) + " bytes of " + (vid ? "video memory" : "system memory"), m->handle);
      rm_object = true;
      // The CPU mapping: RM_MAP_MEMORY names a fresh fd, whose mmap then maps the memory (vidmem
      // through BAR1 on a /dev/nvidiaN fd, sysmem on a /dev/nvidiactl fd).
      sys::Fd fd(*os, fresh_fd(!vid));
      rm::nv_ioctl_nvos33_parameters_with_fd p{};
      p.params.hClient = root, p.params.hDevice = device, p.params.hMemory = m->handle;
      p.params.length = size;
      p.params.flags = write_combined ? rm::NVOS33_FLAGS_CACHING_TYPE.num(rm::NVOS33_FLAGS_CACHING_TYPE_WRITECOMBINED) : 0;
      p.fd = fd.get();
      int r = os->ioctl(ctl.get(), rm::rm_ioctl(rm::NV_ESC_RM_MAP_MEMORY, sizeof p), &p);
      if (r < 0) sys::check_ioctl(r, "NV_ESC_RM_MAP_MEMORY on /dev/nvidiactl (" + name + ")");
      if (p.params.status != rm::NV_OK) fail(p.params.status, "RM_MAP_MEMORY of " + std::to_string(size) + " bytes");
      m->host = os->mmap(unified ? at : nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | (unified ? MAP_FIXED : 0), fd.get(), 0);
    }
    map_to_gpu(*m, page);
    gpu_mapped = true;
  } catch (...) {
    undo();
    throw;
  }
  // Freed when the last user lets go: the GPU mapping, the RM object, the CPU mapping, the range.
  return std::shared_ptr<Memory>(m.get(), [m, r = shared_from_this()](Memory*) {
    rm::with_branch(*r->abi, [&](auto t) {
      typename decltype(t)::UvmFree f{};
      f.base = m->va;
      if constexpr (requires { f.length; }) f.length = m->size;
      r->os->ioctl(r->uvm.get(), rm::UVM_FREE, &f);
    });
    r->free(r->device, m->handle);
    r->release(m->va, m->size, m->host);
  });
}

}  // namespace ugpu::nv
