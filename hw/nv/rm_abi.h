// The NVIDIA kernel driver's user ABI as ugpu uses it: RM escapes on /dev/nvidiactl and /dev/nvidiaN,
// RM allocation and control parameter structs, class ids, status codes, and the UVM ioctls on
// /dev/nvidia-uvm. No NVIDIA header is included; every layout here is written out from the facts in
// NVIDIA/open-gpu-kernel-modules (OGKM; src/common/sdk/nvidia/inc/{nvos.h, nvgputypes.h, nverror.h,
// alloc/alloc_channel.h, class/*.h, ctrl/*}, kernel-open/common/inc/{nv-ioctl.h, nv-ioctl-numbers.h,
// nvstatuscodes.h}, src/nvidia/arch/nvalloc/unix/include/{nv_escape.h, nv-unix-nvos-params-wrappers.h},
// kernel-open/nvidia-uvm/{uvm_ioctl.h, uvm_linux_ioctl.h, uvm_types.h}) and, for 610, from tinygrad's
// generated runtime/autogen/nv_610.py (OGKM tag 610.43.03).
//
// Names are NVIDIA's (struct, field and constant), so a reader can grep OGKM and tinygrad for them.
//
// Driver branches. Most structs are one layout from 570 to 610 (checked against OGKM tags 570.86.15,
// 570.86.16, 570.211.01, 575.51.02, 575.64.05, 580.65.06, 580.105.08, 580.142, 590.44.01, 590.48.01,
// 595.45.04 and tinygrad's 610.43.03). The ones that change live in namespaces v570 .. v610 below, and
// `find_branch` maps a driver's major version to them. Escapes are size-checked by the kernel (a wrong
// size is a clean EINVAL-style failure) and so are control params (NV_ERR_INVALID_PARAM_STRUCT); alloc
// params and UVM params are not, and a wrong layout there is misread silently.
#pragma once
#include <linux/ioctl.h>

#include <cstddef>
#include <cstdint>

namespace ugpu::hw::nv {

// A DRF bit range `hi:lo` of a 32-bit word, as NVIDIA's headers write them.
struct Bits {
  uint8_t hi, lo;
  constexpr uint32_t mask() const { return (hi - lo == 31 ? 0xffffffffu : ((1u << (hi - lo + 1)) - 1u)) << lo; }
  constexpr uint32_t num(uint32_t v) const { return (v << lo) & mask(); }
  constexpr uint32_t get(uint32_t word) const { return (word & mask()) >> lo; }
};

// ---------------------------------------------------------------------------------------------------
// Escapes (nv_escape.h, nv-ioctl-numbers.h). RM escapes are _IOWR('F', nr, size) with the size of the
// struct passed; RM compares that size with its own.

inline constexpr uint32_t NV_IOCTL_MAGIC = 'F';
// ALLOC_MEMORY goes to a /dev/nvidiaN fd (RM refuses it on /dev/nvidiactl); every other RM escape
// goes to /dev/nvidiactl.
inline constexpr uint32_t NV_ESC_RM_ALLOC_MEMORY = 0x27;  // NVOS02 (+fd)
inline constexpr uint32_t NV_ESC_RM_FREE = 0x29;          // NVOS00
inline constexpr uint32_t NV_ESC_RM_CONTROL = 0x2A;       // NVOS54
inline constexpr uint32_t NV_ESC_RM_ALLOC = 0x2B;         // NVOS21 or NVOS64
inline constexpr uint32_t NV_ESC_RM_DUP_OBJECT = 0x34;
inline constexpr uint32_t NV_ESC_RM_MAP_MEMORY = 0x4E;        // nvos33_with_fd
inline constexpr uint32_t NV_ESC_RM_UNMAP_MEMORY = 0x4F;      // NVOS34
inline constexpr uint32_t NV_ESC_RM_MAP_MEMORY_DMA = 0x57;    // NVOS46 (per branch)
inline constexpr uint32_t NV_ESC_RM_UNMAP_MEMORY_DMA = 0x58;  // NVOS47
inline constexpr uint32_t NV_IOCTL_BASE = 200;
inline constexpr uint32_t NV_ESC_CARD_INFO = NV_IOCTL_BASE + 0;    // nv_ioctl_card_info_t[kMaxCards]
inline constexpr uint32_t NV_ESC_REGISTER_FD = NV_IOCTL_BASE + 1;  // nv_ioctl_register_fd_t, on /dev/nvidiaN
inline constexpr uint32_t NV_ESC_ALLOC_OS_EVENT = NV_IOCTL_BASE + 6;
inline constexpr uint32_t NV_ESC_FREE_OS_EVENT = NV_IOCTL_BASE + 7;
inline constexpr uint32_t NV_ESC_STATUS_CODE = NV_IOCTL_BASE + 9;
inline constexpr uint32_t NV_ESC_CHECK_VERSION_STR = NV_IOCTL_BASE + 10;
inline constexpr uint32_t NV_ESC_IOCTL_XFER_CMD = NV_IOCTL_BASE + 11;
inline constexpr uint32_t NV_ESC_ATTACH_GPUS_TO_FD = NV_IOCTL_BASE + 12;
inline constexpr uint32_t NV_ESC_QUERY_DEVICE_INTR = NV_IOCTL_BASE + 13;
inline constexpr uint32_t NV_ESC_SYS_PARAMS = NV_IOCTL_BASE + 14;
inline constexpr uint32_t NV_ESC_EXPORT_TO_DMABUF_FD = NV_IOCTL_BASE + 17;
inline constexpr uint32_t NV_ESC_WAIT_OPEN_COMPLETE = NV_IOCTL_BASE + 18;

// The request number of an RM escape carrying `size` bytes. The _IOC size field has 14 bits; larger
// transfers go through NV_ESC_IOCTL_XFER_CMD, which ugpu does not need.
constexpr unsigned long rm_ioctl(uint32_t nr, uint32_t size) { return _IOC(_IOC_READ | _IOC_WRITE, NV_IOCTL_MAGIC, nr, size); }
inline constexpr uint32_t kMaxIocSize = (1u << _IOC_SIZEBITS) - 1;

// ---------------------------------------------------------------------------------------------------
// Class ids (g_allclasses.h, class/cl*.h).

inline constexpr uint32_t NV01_ROOT_CLIENT = 0x41;
inline constexpr uint32_t NV01_DEVICE_0 = 0x80;
inline constexpr uint32_t NV20_SUBDEVICE_0 = 0x2080;
inline constexpr uint32_t NV01_MEMORY_SYSTEM = 0x3e;      // alias NV1_MEMORY_SYSTEM
inline constexpr uint32_t NV01_MEMORY_LOCAL_USER = 0x40;  // alias NV1_MEMORY_USER
inline constexpr uint32_t NV01_MEMORY_VIRTUAL = 0x70;
inline constexpr uint32_t NV01_MEMORY_SYSTEM_OS_DESCRIPTOR = 0x71;
inline constexpr uint32_t NV01_EVENT_OS_EVENT = 0x79;
inline constexpr uint32_t GT200_DEBUGGER = 0x83de;
inline constexpr uint32_t FERMI_CONTEXT_SHARE_A = 0x9067;
inline constexpr uint32_t FERMI_VASPACE_A = 0x90f1;
inline constexpr uint32_t KEPLER_CHANNEL_GROUP_A = 0xa06c;
inline constexpr uint32_t MAXWELL_PROFILER_DEVICE = 0xb2cc;
// Usermode (doorbell page) classes, allocated under the subdevice and mapped 64 KiB.
inline constexpr uint32_t VOLTA_USERMODE_A = 0xc361;
inline constexpr uint32_t TURING_USERMODE_A = 0xc461;
inline constexpr uint32_t AMPERE_USERMODE_A = 0xc561;
inline constexpr uint32_t HOPPER_USERMODE_A = 0xc661;
inline constexpr uint32_t BLACKWELL_USERMODE_A = 0xc761;
inline constexpr uint32_t NVC361_NV_USERMODE__SIZE = 0x10000;
inline constexpr uint32_t NVC361_NOTIFY_CHANNEL_PENDING = 0x90;  // write a work-submit token here (doorbell)
// GPFIFO channel classes.
inline constexpr uint32_t VOLTA_CHANNEL_GPFIFO_A = 0xc36f;
inline constexpr uint32_t TURING_CHANNEL_GPFIFO_A = 0xc46f;
inline constexpr uint32_t AMPERE_CHANNEL_GPFIFO_A = 0xc56f;
inline constexpr uint32_t HOPPER_CHANNEL_GPFIFO_A = 0xc86f;
inline constexpr uint32_t BLACKWELL_CHANNEL_GPFIFO_A = 0xc96f;
inline constexpr uint32_t BLACKWELL_CHANNEL_GPFIFO_B = 0xca6f;
// Compute classes.
inline constexpr uint32_t TURING_COMPUTE_A = 0xc5c0;
inline constexpr uint32_t AMPERE_COMPUTE_A = 0xc6c0;
inline constexpr uint32_t AMPERE_COMPUTE_B = 0xc7c0;
inline constexpr uint32_t ADA_COMPUTE_A = 0xc9c0;
inline constexpr uint32_t HOPPER_COMPUTE_A = 0xcbc0;
inline constexpr uint32_t BLACKWELL_COMPUTE_A = 0xcdc0;
inline constexpr uint32_t BLACKWELL_COMPUTE_B = 0xcec0;
// Copy-engine classes.
inline constexpr uint32_t TURING_DMA_COPY_A = 0xc5b5;
inline constexpr uint32_t AMPERE_DMA_COPY_A = 0xc6b5;
inline constexpr uint32_t AMPERE_DMA_COPY_B = 0xc7b5;
inline constexpr uint32_t HOPPER_DMA_COPY_A = 0xc8b5;
inline constexpr uint32_t BLACKWELL_DMA_COPY_A = 0xc9b5;
inline constexpr uint32_t BLACKWELL_DMA_COPY_B = 0xcab5;

inline constexpr uint32_t NV_MAX_DEVICES = 32, NV_MAX_SUBDEVICES = 8;

// ---------------------------------------------------------------------------------------------------
// Escape structs (nvos.h, nv-ioctl.h, nv-unix-nvos-params-wrappers.h). Pointers are carried as u64.

struct NVOS00_PARAMETERS {  // NV_ESC_RM_FREE
  uint32_t hRoot, hObjectParent, hObjectOld, status;
};
static_assert(sizeof(NVOS00_PARAMETERS) == 16 && offsetof(NVOS00_PARAMETERS, status) == 12);

struct NVOS02_PARAMETERS {  // NV_ESC_RM_ALLOC_MEMORY (OS-descriptor memory: user pages mapped into the GPU)
  uint32_t hRoot, hObjectParent, hObjectNew, hClass;
  uint32_t flags;  // NVOS02_FLAGS_*
  uint32_t pad0_;
  uint64_t pMemory, limit;
  uint32_t status, pad1_;
};
static_assert(sizeof(NVOS02_PARAMETERS) == 48 && offsetof(NVOS02_PARAMETERS, flags) == 16 && offsetof(NVOS02_PARAMETERS, pMemory) == 24 &&
              offsetof(NVOS02_PARAMETERS, limit) == 32 && offsetof(NVOS02_PARAMETERS, status) == 40);
struct nv_ioctl_nvos02_parameters_with_fd {
  NVOS02_PARAMETERS params;
  int32_t fd, pad_;
};
static_assert(sizeof(nv_ioctl_nvos02_parameters_with_fd) == 56 && offsetof(nv_ioctl_nvos02_parameters_with_fd, fd) == 48);

inline constexpr Bits NVOS02_FLAGS_PHYSICALITY{7, 4};
inline constexpr uint32_t NVOS02_FLAGS_PHYSICALITY_CONTIGUOUS = 0, NVOS02_FLAGS_PHYSICALITY_NONCONTIGUOUS = 1;
inline constexpr Bits NVOS02_FLAGS_LOCATION{11, 8};
inline constexpr uint32_t NVOS02_FLAGS_LOCATION_PCI = 0, NVOS02_FLAGS_LOCATION_VIDMEM = 2;
inline constexpr Bits NVOS02_FLAGS_COHERENCY{15, 12};
inline constexpr uint32_t NVOS02_FLAGS_COHERENCY_UNCACHED = 0, NVOS02_FLAGS_COHERENCY_CACHED = 1, NVOS02_FLAGS_COHERENCY_WRITE_COMBINE = 2,
                          NVOS02_FLAGS_COHERENCY_WRITE_THROUGH = 3, NVOS02_FLAGS_COHERENCY_WRITE_PROTECT = 4, NVOS02_FLAGS_COHERENCY_WRITE_BACK = 5;
inline constexpr Bits NVOS02_FLAGS_GPU_CACHEABLE{18, 18};
inline constexpr uint32_t NVOS02_FLAGS_GPU_CACHEABLE_NO = 0, NVOS02_FLAGS_GPU_CACHEABLE_YES = 1;
inline constexpr Bits NVOS02_FLAGS_ALLOC_USER_READ_ONLY{21, 21};
inline constexpr Bits NVOS02_FLAGS_ALLOC_DEVICE_READ_ONLY{22, 22};
inline constexpr Bits NVOS02_FLAGS_MAPPING{31, 30};
inline constexpr uint32_t NVOS02_FLAGS_MAPPING_DEFAULT = 0, NVOS02_FLAGS_MAPPING_NO_MAP = 1, NVOS02_FLAGS_MAPPING_NEVER_MAP = 2;

struct NVOS21_PARAMETERS {  // NV_ESC_RM_ALLOC
  uint32_t hRoot, hObjectParent, hObjectNew, hClass;
  uint64_t pAllocParms;  // the class's alloc params; RM derives their size from hClass when paramsSize is 0
  uint32_t paramsSize, status;
};
static_assert(sizeof(NVOS21_PARAMETERS) == 32 && offsetof(NVOS21_PARAMETERS, pAllocParms) == 16 && offsetof(NVOS21_PARAMETERS, paramsSize) == 24 &&
              offsetof(NVOS21_PARAMETERS, status) == 28);

struct NVOS64_PARAMETERS {  // NV_ESC_RM_ALLOC with access rights
  uint32_t hRoot, hObjectParent, hObjectNew, hClass;
  uint64_t pAllocParms, pRightsRequested;
  uint32_t paramsSize, flags, status, pad_;
};
static_assert(sizeof(NVOS64_PARAMETERS) == 48 && offsetof(NVOS64_PARAMETERS, pRightsRequested) == 24 &&
              offsetof(NVOS64_PARAMETERS, paramsSize) == 32 && offsetof(NVOS64_PARAMETERS, status) == 40);

struct NVOS33_PARAMETERS {  // NV_ESC_RM_MAP_MEMORY: map RM memory for the CPU; then mmap the fd passed
  uint32_t hClient, hDevice, hMemory, pad0_;
  uint64_t offset, length;
  uint64_t pLinearAddress;  // out: the mmap offset to use
  uint32_t status, flags;   // NVOS33_FLAGS_*
};
static_assert(sizeof(NVOS33_PARAMETERS) == 48 && offsetof(NVOS33_PARAMETERS, offset) == 16 && offsetof(NVOS33_PARAMETERS, length) == 24 &&
              offsetof(NVOS33_PARAMETERS, pLinearAddress) == 32 && offsetof(NVOS33_PARAMETERS, status) == 40 &&
              offsetof(NVOS33_PARAMETERS, flags) == 44);
struct nv_ioctl_nvos33_parameters_with_fd {
  NVOS33_PARAMETERS params;
  int32_t fd, pad_;  // a fresh /dev/nvidiaN (vidmem) or /dev/nvidiactl (sysmem) fd, to be mmapped
};
static_assert(sizeof(nv_ioctl_nvos33_parameters_with_fd) == 56 && offsetof(nv_ioctl_nvos33_parameters_with_fd, fd) == 48);

inline constexpr Bits NVOS33_FLAGS_ACCESS{1, 0};
inline constexpr uint32_t NVOS33_FLAGS_ACCESS_READ_WRITE = 0, NVOS33_FLAGS_ACCESS_READ_ONLY = 1, NVOS33_FLAGS_ACCESS_WRITE_ONLY = 2;
inline constexpr Bits NVOS33_FLAGS_MAPPING{16, 15};
inline constexpr uint32_t NVOS33_FLAGS_MAPPING_DEFAULT = 0, NVOS33_FLAGS_MAPPING_DIRECT = 1, NVOS33_FLAGS_MAPPING_REFLECTED = 2;
inline constexpr Bits NVOS33_FLAGS_MAP_FIXED{18, 18};
inline constexpr Bits NVOS33_FLAGS_CACHING_TYPE{25, 23};
inline constexpr uint32_t NVOS33_FLAGS_CACHING_TYPE_CACHED = 0, NVOS33_FLAGS_CACHING_TYPE_UNCACHED = 1, NVOS33_FLAGS_CACHING_TYPE_WRITECOMBINED = 2,
                          NVOS33_FLAGS_CACHING_TYPE_WRITEBACK = 5, NVOS33_FLAGS_CACHING_TYPE_DEFAULT = 6, NVOS33_FLAGS_CACHING_TYPE_UNCACHED_WEAK = 7;

struct NVOS34_PARAMETERS {  // NV_ESC_RM_UNMAP_MEMORY
  uint32_t hClient, hDevice, hMemory, pad0_;
  uint64_t pLinearAddress;
  uint32_t status, flags;
};
static_assert(sizeof(NVOS34_PARAMETERS) == 32 && offsetof(NVOS34_PARAMETERS, pLinearAddress) == 16 && offsetof(NVOS34_PARAMETERS, status) == 24);

// NVOS46 (MAP_MEMORY_DMA) changes size at 580 and lives in the branch namespaces; its flags do not.
inline constexpr Bits NVOS46_FLAGS_ACCESS{1, 0};
inline constexpr Bits NVOS46_FLAGS_PAGE_KIND{3, 3};
inline constexpr uint32_t NVOS46_FLAGS_PAGE_KIND_PHYSICAL = 0, NVOS46_FLAGS_PAGE_KIND_VIRTUAL = 1;
inline constexpr Bits NVOS46_FLAGS_CACHE_SNOOP{4, 4};
inline constexpr uint32_t NVOS46_FLAGS_CACHE_SNOOP_DISABLE = 0, NVOS46_FLAGS_CACHE_SNOOP_ENABLE = 1;
inline constexpr Bits NVOS46_FLAGS_SHADER_ACCESS{7, 6};
inline constexpr Bits NVOS46_FLAGS_PAGE_SIZE{11, 8};
inline constexpr uint32_t NVOS46_FLAGS_PAGE_SIZE_DEFAULT = 0, NVOS46_FLAGS_PAGE_SIZE_4KB = 1, NVOS46_FLAGS_PAGE_SIZE_BIG = 2,
                          NVOS46_FLAGS_PAGE_SIZE_BOTH = 3, NVOS46_FLAGS_PAGE_SIZE_HUGE = 4, NVOS46_FLAGS_PAGE_SIZE_512M = 5;
inline constexpr Bits NVOS46_FLAGS_DMA_OFFSET_GROWS{14, 14};
inline constexpr Bits NVOS46_FLAGS_DMA_OFFSET_FIXED{15, 15};
inline constexpr uint32_t NVOS46_FLAGS_DMA_OFFSET_FIXED_FALSE = 0, NVOS46_FLAGS_DMA_OFFSET_FIXED_TRUE = 1;
inline constexpr Bits NVOS46_FLAGS_GPU_CACHEABLE{18, 17};  // 580 and later
inline constexpr Bits NVOS46_FLAGS_DEFER_TLB_INVALIDATION{31, 31};

struct NVOS47_PARAMETERS {  // NV_ESC_RM_UNMAP_MEMORY_DMA
  uint32_t hClient, hDevice, hDma, hMemory;
  uint32_t flags, pad0_;
  uint64_t dmaOffset, size;
  uint32_t status, pad1_;
};
static_assert(sizeof(NVOS47_PARAMETERS) == 48 && offsetof(NVOS47_PARAMETERS, dmaOffset) == 24 && offsetof(NVOS47_PARAMETERS, size) == 32 &&
              offsetof(NVOS47_PARAMETERS, status) == 40);

struct NVOS54_PARAMETERS {  // NV_ESC_RM_CONTROL
  uint32_t hClient, hObject, cmd;
  uint32_t flags;       // NVOS54_FLAGS_*
  uint64_t params;      // the control's param struct
  uint32_t paramsSize;  // must equal RM's size for `cmd`, else NV_ERR_INVALID_PARAM_STRUCT
  uint32_t status;
};
static_assert(sizeof(NVOS54_PARAMETERS) == 32 && offsetof(NVOS54_PARAMETERS, params) == 16 && offsetof(NVOS54_PARAMETERS, paramsSize) == 24 &&
              offsetof(NVOS54_PARAMETERS, status) == 28);
inline constexpr uint32_t NVOS54_FLAGS_NONE = 0, NVOS54_FLAGS_IRQL_RAISED = 1, NVOS54_FLAGS_LOCK_BYPASS = 2, NVOS54_FLAGS_FINN_SERIALIZED = 4;

struct nv_pci_info_t {
  uint32_t domain;
  uint8_t bus, slot, function, pad_;
  uint16_t vendor_id, device_id;
};
static_assert(sizeof(nv_pci_info_t) == 12 && offsetof(nv_pci_info_t, vendor_id) == 8);

// NV_ESC_CARD_INFO fills an array of this many entries (the length CUDA and tinygrad pass).
inline constexpr uint32_t kMaxCards = 64;
struct nv_ioctl_card_info_t {
  uint8_t valid, pad0_[3];
  nv_pci_info_t pci_info;
  uint32_t gpu_id;
  uint16_t interrupt_line, pad1_;
  uint64_t reg_address, reg_size, fb_address, fb_size;
  uint32_t minor_number;  // N of /dev/nvidiaN
  uint8_t dev_name[10];
  uint8_t pad2_[2];
};
static_assert(sizeof(nv_ioctl_card_info_t) == 72 && offsetof(nv_ioctl_card_info_t, pci_info) == 4 && offsetof(nv_ioctl_card_info_t, gpu_id) == 16 &&
              offsetof(nv_ioctl_card_info_t, reg_address) == 24 && offsetof(nv_ioctl_card_info_t, fb_size) == 48 &&
              offsetof(nv_ioctl_card_info_t, minor_number) == 56 && offsetof(nv_ioctl_card_info_t, dev_name) == 60);

struct nv_ioctl_register_fd_t {
  int32_t ctl_fd;
};
static_assert(sizeof(nv_ioctl_register_fd_t) == 4);

struct nv_ioctl_alloc_os_event_t {  // NV_ESC_ALLOC_OS_EVENT / NV_ESC_FREE_OS_EVENT
  uint32_t hClient, hDevice, fd, Status;
};
static_assert(sizeof(nv_ioctl_alloc_os_event_t) == 16);
using nv_ioctl_free_os_event_t = nv_ioctl_alloc_os_event_t;

static_assert(rm_ioctl(NV_ESC_RM_ALLOC, sizeof(NVOS21_PARAMETERS)) == 0xC020462Bu);
static_assert(rm_ioctl(NV_ESC_RM_CONTROL, sizeof(NVOS54_PARAMETERS)) == 0xC020462Au);
static_assert(rm_ioctl(NV_ESC_RM_FREE, sizeof(NVOS00_PARAMETERS)) == 0xC0104629u);
static_assert(rm_ioctl(NV_ESC_RM_MAP_MEMORY, sizeof(nv_ioctl_nvos33_parameters_with_fd)) == 0xC038464Eu);
static_assert(rm_ioctl(NV_ESC_RM_ALLOC_MEMORY, sizeof(nv_ioctl_nvos02_parameters_with_fd)) == 0xC0384627u);
static_assert(rm_ioctl(NV_ESC_CARD_INFO, kMaxCards * sizeof(nv_ioctl_card_info_t)) == 0xD20046C8u);
static_assert(rm_ioctl(NV_ESC_REGISTER_FD, sizeof(nv_ioctl_register_fd_t)) == 0xC00446C9u);

// ---------------------------------------------------------------------------------------------------
// Allocation params (nvos.h, class/cl0080.h, cl2080.h, cl0070.h, cl83de.h, alloc/alloc_channel.h).

// NV01_MEMORY_LOCAL_USER (vidmem) / NV01_MEMORY_SYSTEM (sysmem); flags and attrs are NVOS32_*.
struct NV_MEMORY_ALLOCATION_PARAMS {
  uint32_t owner, type, flags;
  uint32_t width, height;
  int32_t pitch;
  uint32_t attr, attr2;
  uint32_t format, comprCovg, zcullCovg, pad0_;
  uint64_t rangeLo, rangeHi;
  uint64_t size, alignment, offset, limit;
  uint64_t address;
  uint32_t ctagOffset, hVASpace, internalflags, tag;
  int32_t numaNode;
  uint32_t pad1_;
};
static_assert(sizeof(NV_MEMORY_ALLOCATION_PARAMS) == 128 && offsetof(NV_MEMORY_ALLOCATION_PARAMS, attr) == 24 &&
              offsetof(NV_MEMORY_ALLOCATION_PARAMS, attr2) == 28 && offsetof(NV_MEMORY_ALLOCATION_PARAMS, format) == 32 &&
              offsetof(NV_MEMORY_ALLOCATION_PARAMS, rangeLo) == 48 && offsetof(NV_MEMORY_ALLOCATION_PARAMS, size) == 64 &&
              offsetof(NV_MEMORY_ALLOCATION_PARAMS, alignment) == 72 && offsetof(NV_MEMORY_ALLOCATION_PARAMS, offset) == 80 &&
              offsetof(NV_MEMORY_ALLOCATION_PARAMS, limit) == 88 && offsetof(NV_MEMORY_ALLOCATION_PARAMS, address) == 96 &&
              offsetof(NV_MEMORY_ALLOCATION_PARAMS, hVASpace) == 108 && offsetof(NV_MEMORY_ALLOCATION_PARAMS, numaNode) == 120);

inline constexpr uint32_t NVOS32_TYPE_IMAGE = 0, NVOS32_TYPE_DEPTH = 1, NVOS32_TYPE_TEXTURE = 2, NVOS32_TYPE_VIDEO = 3, NVOS32_TYPE_FONT = 4,
                          NVOS32_TYPE_CURSOR = 5, NVOS32_TYPE_DMA = 6, NVOS32_TYPE_INSTANCE = 7, NVOS32_TYPE_PRIMARY = 8, NVOS32_TYPE_ZCULL = 9,
                          NVOS32_TYPE_UNUSED = 10, NVOS32_TYPE_SHADER_PROGRAM = 11, NVOS32_TYPE_OWNER_RM = 12, NVOS32_TYPE_NOTIFIER = 13,
                          NVOS32_TYPE_RESERVED = 14, NVOS32_TYPE_PMA = 15, NVOS32_TYPE_STENCIL = 16;

inline constexpr uint32_t NVOS32_ALLOC_FLAGS_IGNORE_BANK_PLACEMENT = 0x00000001;
inline constexpr uint32_t NVOS32_ALLOC_FLAGS_FORCE_MEM_GROWS_UP = 0x00000002;
inline constexpr uint32_t NVOS32_ALLOC_FLAGS_FORCE_MEM_GROWS_DOWN = 0x00000004;
inline constexpr uint32_t NVOS32_ALLOC_FLAGS_FORCE_ALIGN_HOST_PAGE = 0x00000008;
inline constexpr uint32_t NVOS32_ALLOC_FLAGS_FIXED_ADDRESS_ALLOCATE = 0x00000010;
inline constexpr uint32_t NVOS32_ALLOC_FLAGS_ALIGNMENT_HINT = 0x00000080;
inline constexpr uint32_t NVOS32_ALLOC_FLAGS_ALIGNMENT_FORCE = 0x00000100;
inline constexpr uint32_t NVOS32_ALLOC_FLAGS_NO_SCANOUT = 0x00001000;
inline constexpr uint32_t NVOS32_ALLOC_FLAGS_MEMORY_HANDLE_PROVIDED = 0x00004000;
inline constexpr uint32_t NVOS32_ALLOC_FLAGS_MAP_NOT_REQUIRED = 0x00008000;
inline constexpr uint32_t NVOS32_ALLOC_FLAGS_PERSISTENT_VIDMEM = 0x00010000;
inline constexpr uint32_t NVOS32_ALLOC_FLAGS_VIRTUAL = 0x00080000;
inline constexpr uint32_t NVOS32_ALLOC_FLAGS_EXTERNALLY_MANAGED = 0x00400000;
inline constexpr uint32_t NVOS32_ALLOC_FLAGS_PROTECTED = 0x01000000;
inline constexpr uint32_t NVOS32_ALLOC_FLAGS_SPARSE = 0x04000000;

inline constexpr Bits NVOS32_ATTR_COMPR{13, 12};
inline constexpr uint32_t NVOS32_ATTR_COMPR_NONE = 0, NVOS32_ATTR_COMPR_REQUIRED = 1, NVOS32_ATTR_COMPR_ANY = 2;
inline constexpr Bits NVOS32_ATTR_FORMAT{17, 16};
inline constexpr uint32_t NVOS32_ATTR_FORMAT_PITCH = 0, NVOS32_ATTR_FORMAT_SWIZZLED = 1, NVOS32_ATTR_FORMAT_BLOCK_LINEAR = 2;
// BIG is 64 KiB (128 KiB where the VA space says so); HUGE is 2 MiB unless NVOS32_ATTR2_PAGE_SIZE_HUGE
// says otherwise.
inline constexpr Bits NVOS32_ATTR_PAGE_SIZE{24, 23};
inline constexpr uint32_t NVOS32_ATTR_PAGE_SIZE_DEFAULT = 0, NVOS32_ATTR_PAGE_SIZE_4KB = 1, NVOS32_ATTR_PAGE_SIZE_BIG = 2,
                          NVOS32_ATTR_PAGE_SIZE_HUGE = 3;
inline constexpr Bits NVOS32_ATTR_LOCATION{26, 25};
inline constexpr uint32_t NVOS32_ATTR_LOCATION_VIDMEM = 0, NVOS32_ATTR_LOCATION_PCI = 1, NVOS32_ATTR_LOCATION_ANY = 3;
inline constexpr Bits NVOS32_ATTR_PHYSICALITY{28, 27};
inline constexpr uint32_t NVOS32_ATTR_PHYSICALITY_DEFAULT = 0, NVOS32_ATTR_PHYSICALITY_NONCONTIGUOUS = 1, NVOS32_ATTR_PHYSICALITY_CONTIGUOUS = 2,
                          NVOS32_ATTR_PHYSICALITY_ALLOW_NONCONTIGUOUS = 3;
inline constexpr Bits NVOS32_ATTR_COHERENCY{31, 29};
inline constexpr uint32_t NVOS32_ATTR_COHERENCY_UNCACHED = 0, NVOS32_ATTR_COHERENCY_CACHED = 1, NVOS32_ATTR_COHERENCY_WRITE_COMBINE = 2,
                          NVOS32_ATTR_COHERENCY_WRITE_THROUGH = 3, NVOS32_ATTR_COHERENCY_WRITE_PROTECT = 4, NVOS32_ATTR_COHERENCY_WRITE_BACK = 5;

inline constexpr Bits NVOS32_ATTR2_ZBC{1, 0};
inline constexpr uint32_t NVOS32_ATTR2_ZBC_DEFAULT = 0, NVOS32_ATTR2_ZBC_PREFER_NO_ZBC = 1, NVOS32_ATTR2_ZBC_PREFER_ZBC = 2;
inline constexpr Bits NVOS32_ATTR2_GPU_CACHEABLE{3, 2};
inline constexpr uint32_t NVOS32_ATTR2_GPU_CACHEABLE_DEFAULT = 0, NVOS32_ATTR2_GPU_CACHEABLE_YES = 1, NVOS32_ATTR2_GPU_CACHEABLE_NO = 2;
inline constexpr Bits NVOS32_ATTR2_P2P_GPU_CACHEABLE{5, 4};
inline constexpr Bits NVOS32_ATTR2_PAGE_SIZE_HUGE{21, 20};
inline constexpr uint32_t NVOS32_ATTR2_PAGE_SIZE_HUGE_DEFAULT = 0, NVOS32_ATTR2_PAGE_SIZE_HUGE_2MB = 1, NVOS32_ATTR2_PAGE_SIZE_HUGE_512MB = 2,
                          NVOS32_ATTR2_PAGE_SIZE_HUGE_256GB = 3;
inline constexpr Bits NVOS32_ATTR2_PROTECTION_USER{22, 22};
inline constexpr uint32_t NVOS32_ATTR2_PROTECTION_USER_READ_WRITE = 0, NVOS32_ATTR2_PROTECTION_USER_READ_ONLY = 1;
inline constexpr Bits NVOS32_ATTR2_PROTECTION_DEVICE{23, 23};
inline constexpr uint32_t NVOS32_ATTR2_PROTECTION_DEVICE_READ_WRITE = 0, NVOS32_ATTR2_PROTECTION_DEVICE_READ_ONLY = 1;
inline constexpr Bits NVOS32_ATTR2_MEMORY_PROTECTION{26, 25};

struct NV0080_ALLOC_PARAMETERS {  // NV01_DEVICE_0
  uint32_t deviceId;              // NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS.deviceInstance
  uint32_t hClientShare, hTargetClient, hTargetDevice;
  uint32_t flags;  // NV_DEVICE_ALLOCATION_FLAGS_*
  uint32_t pad0_;
  uint64_t vaSpaceSize, vaStartInternal, vaLimitInternal;
  uint32_t vaMode, pad1_;
};
static_assert(sizeof(NV0080_ALLOC_PARAMETERS) == 56 && offsetof(NV0080_ALLOC_PARAMETERS, flags) == 16 &&
              offsetof(NV0080_ALLOC_PARAMETERS, vaSpaceSize) == 24 && offsetof(NV0080_ALLOC_PARAMETERS, vaMode) == 48);
inline constexpr uint32_t NV_DEVICE_ALLOCATION_FLAGS_NONE = 0, NV_DEVICE_ALLOCATION_FLAGS_MAP_PTE_GLOBALLY = 0x1,
                          NV_DEVICE_ALLOCATION_FLAGS_VASPACE_SIZE = 0x8, NV_DEVICE_ALLOCATION_FLAGS_VASPACE_IS_TARGET = 0x20,
                          NV_DEVICE_ALLOCATION_FLAGS_VASPACE_SHARED_MANAGEMENT = 0x100;
inline constexpr uint32_t NV_DEVICE_ALLOCATION_VAMODE_OPTIONAL_MULTIPLE_VASPACES = 0, NV_DEVICE_ALLOCATION_VAMODE_SINGLE_VASPACE = 1,
                          NV_DEVICE_ALLOCATION_VAMODE_MULTIPLE_VASPACES = 2;

struct NV2080_ALLOC_PARAMETERS {  // NV20_SUBDEVICE_0
  uint32_t subDeviceId;
};
static_assert(sizeof(NV2080_ALLOC_PARAMETERS) == 4);

struct NV_MEMORY_VIRTUAL_ALLOCATION_PARAMS {  // NV01_MEMORY_VIRTUAL: the hDma of MAP_MEMORY_DMA
  uint64_t offset, limit;
  uint32_t hVASpace, pad_;
};
static_assert(sizeof(NV_MEMORY_VIRTUAL_ALLOCATION_PARAMS) == 24 && offsetof(NV_MEMORY_VIRTUAL_ALLOCATION_PARAMS, hVASpace) == 16);

// FERMI_VASPACE_A: the struct is per branch (580 adds pasid); the flags and indices are not.
inline constexpr uint32_t NV_VASPACE_ALLOCATION_FLAGS_NONE = 0;
inline constexpr uint32_t NV_VASPACE_ALLOCATION_FLAGS_MINIMIZE_PTETABLE_SIZE = 1u << 0;
inline constexpr uint32_t NV_VASPACE_ALLOCATION_FLAGS_RETRY_PTE_ALLOC_IN_SYS = 1u << 1;
inline constexpr uint32_t NV_VASPACE_ALLOCATION_FLAGS_SHARED_MANAGEMENT = 1u << 2;
// IS_EXTERNALLY_OWNED: UVM manages the page tables (after UVM_REGISTER_GPU_VASPACE).
inline constexpr uint32_t NV_VASPACE_ALLOCATION_FLAGS_IS_EXTERNALLY_OWNED = 1u << 3;
inline constexpr uint32_t NV_VASPACE_ALLOCATION_FLAGS_ENABLE_NVLINK_ATS = 1u << 4;
inline constexpr uint32_t NV_VASPACE_ALLOCATION_FLAGS_IS_MIRRORED = 1u << 5;  // gone from 595's header
inline constexpr uint32_t NV_VASPACE_ALLOCATION_FLAGS_ENABLE_PAGE_FAULTING = 1u << 6;
inline constexpr uint32_t NV_VASPACE_ALLOCATION_FLAGS_VA_INTERNAL_LIMIT = 1u << 7;
inline constexpr uint32_t NV_VASPACE_ALLOCATION_FLAGS_ALLOW_ZERO_ADDRESS = 1u << 8;
inline constexpr uint32_t NV_VASPACE_ALLOCATION_FLAGS_IS_FLA = 1u << 9;
inline constexpr uint32_t NV_VASPACE_ALLOCATION_FLAGS_SKIP_SCRUB_MEMPOOL = 1u << 10;
inline constexpr uint32_t NV_VASPACE_ALLOCATION_FLAGS_OPTIMIZE_PTETABLE_MEMPOOL_USAGE = 1u << 11;
inline constexpr uint32_t NV_VASPACE_ALLOCATION_FLAGS_REQUIRE_FIXED_OFFSET = 1u << 12;
inline constexpr uint32_t NV_VASPACE_ALLOCATION_FLAGS_PTETABLE_HEAP_MANAGED = 1u << 13;
inline constexpr uint32_t NV_VASPACE_ALLOCATION_INDEX_GPU_NEW = 0, NV_VASPACE_ALLOCATION_INDEX_GPU_HOST = 1,
                          NV_VASPACE_ALLOCATION_INDEX_GPU_GLOBAL = 2, NV_VASPACE_ALLOCATION_INDEX_GPU_DEVICE = 3,
                          NV_VASPACE_ALLOCATION_INDEX_GPU_FLA = 4;
inline constexpr uint32_t NV_VASPACE_BIG_PAGE_SIZE_64K = 64 * 1024, NV_VASPACE_BIG_PAGE_SIZE_128K = 128 * 1024;

// Engine types (class/cl2080_notification.h): channel groups, channels, NVA06F_CTRL_CMD_BIND.
inline constexpr uint32_t NV2080_ENGINE_TYPE_NULL = 0x00;
inline constexpr uint32_t NV2080_ENGINE_TYPE_GRAPHICS = 0x01;  // GR0; GR1..GR7 are 0x02..0x08
inline constexpr uint32_t NV2080_ENGINE_TYPE_COPY0 = 0x09;     // COPY0..COPY9 are 0x09..0x12
inline constexpr uint32_t NV2080_ENGINE_TYPE_NVDEC0 = 0x13;    // also BSP
inline constexpr uint32_t NV2080_ENGINE_TYPE_COPY10 = 0x34;    // COPY10..COPY19 are 0x34..0x3d
inline constexpr uint32_t NV2080_ENGINE_TYPE_LAST = 0x54;
constexpr uint32_t NV2080_ENGINE_TYPE_COPY(uint32_t i) { return i < 10 ? NV2080_ENGINE_TYPE_COPY0 + i : NV2080_ENGINE_TYPE_COPY10 + (i - 10); }

struct NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS {  // KEPLER_CHANNEL_GROUP_A (a TSG)
  uint32_t hObjectError, hObjectEccError, hVASpace;
  uint32_t engineType;  // NV2080_ENGINE_TYPE_*
  uint8_t bIsCallingContextVgpuPlugin, pad_[3];
};
static_assert(sizeof(NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS) == 20 && offsetof(NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS, engineType) == 12);

struct NV_CTXSHARE_ALLOCATION_PARAMETERS {  // FERMI_CONTEXT_SHARE_A (a subcontext), under the TSG
  uint32_t hVASpace, flags, subctxId;
};
static_assert(sizeof(NV_CTXSHARE_ALLOCATION_PARAMETERS) == 12 && offsetof(NV_CTXSHARE_ALLOCATION_PARAMETERS, flags) == 4);
inline constexpr Bits NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT{1, 0};
inline constexpr uint32_t NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_SYNC = 0, NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_ASYNC = 1,
                          NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_SPECIFIED = 2, NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_ASYNC_PREFER_LOWER = 3;

struct NV83DE_ALLOC_PARAMETERS {  // GT200_DEBUGGER, under the device, watching one compute object
  uint32_t hDebuggerClient_Obsolete, hAppClient, hClass3dObject;
};
static_assert(sizeof(NV83DE_ALLOC_PARAMETERS) == 12 && offsetof(NV83DE_ALLOC_PARAMETERS, hClass3dObject) == 8);

// Part of NV_CHANNEL_ALLOC_PARAMS (per branch, below); RM-internal fields ugpu leaves zero.
struct NV_MEMORY_DESC_PARAMS {
  uint64_t base, size;
  uint32_t addressSpace, cacheAttrib;
};
static_assert(sizeof(NV_MEMORY_DESC_PARAMS) == 24);
inline constexpr uint32_t CC_CHAN_ALLOC_IV_SIZE_DWORD = 3, CC_CHAN_ALLOC_NONCE_SIZE_DWORD = 8;

// ---------------------------------------------------------------------------------------------------
// Controls (ctrl/ctrl0000, ctrl0080, ctrl2080, ctrl83de, ctrla06c.h, ctrla06f, ctrlc36f.h). The command
// id says which object it goes to: 0x0000xxxx the client, 0x0080xxxx the device, 0x2080xxxx the
// subdevice, 0x83dexxxx the debugger, 0xa06cxxxx the TSG, 0xa06fxxxx / 0xc36fxxxx the channel.

inline constexpr uint32_t NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2 = 0x13e;
inline constexpr uint32_t NV0000_CTRL_CMD_GPU_GET_ATTACHED_IDS = 0x201;
inline constexpr uint32_t NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2 = 0x205;
inline constexpr uint32_t NV0080_CTRL_CMD_GPU_GET_CLASSLIST = 0x800201;
inline constexpr uint32_t NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2 = 0x800292;
inline constexpr uint32_t NV2080_CTRL_CMD_GPU_GET_GID_INFO = 0x2080014a;
inline constexpr uint32_t NV2080_CTRL_CMD_GR_GET_INFO = 0x20801201;
inline constexpr uint32_t NV2080_CTRL_CMD_FB_FLUSH_GPU_CACHE = 0x2080130e;
inline constexpr uint32_t NV2080_CTRL_CMD_PERF_BOOST = 0x2080200a;
inline constexpr uint32_t NV83DE_CTRL_CMD_DEBUG_READ_ALL_SM_ERROR_STATES = 0x83de030c;
inline constexpr uint32_t NV83DE_CTRL_CMD_DEBUG_CLEAR_ALL_SM_ERROR_STATES = 0x83de0310;
inline constexpr uint32_t NV83DE_CTRL_CMD_DEBUG_READ_MMU_FAULT_INFO = 0x83de0328;
inline constexpr uint32_t NVA06C_CTRL_CMD_GPFIFO_SCHEDULE = 0xa06c0101;
inline constexpr uint32_t NVA06C_CTRL_CMD_SET_TIMESLICE = 0xa06c0103;
inline constexpr uint32_t NVA06F_CTRL_CMD_GPFIFO_SCHEDULE = 0xa06f0103;
inline constexpr uint32_t NVA06F_CTRL_CMD_BIND = 0xa06f0104;
inline constexpr uint32_t NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN = 0xc36f0108;

inline constexpr uint32_t NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_MAX_STRING_SIZE = 256;
struct NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS {
  char driverVersionBuffer[NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_MAX_STRING_SIZE];  // "580.159.04"
  char versionBuffer[NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_MAX_STRING_SIZE];
  char driverBranch[NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_MAX_STRING_SIZE];
  char titleBuffer[NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_MAX_STRING_SIZE];
  uint32_t changelistNumber, officialChangelistNumber;
};
static_assert(sizeof(NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS) == 1032 &&
              offsetof(NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS, driverBranch) == 512 &&
              offsetof(NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS, changelistNumber) == 1024);

inline constexpr uint32_t NV0000_CTRL_GPU_MAX_ATTACHED_GPUS = 32, NV0000_CTRL_GPU_INVALID_ID = 0xffffffff;
struct NV0000_CTRL_GPU_GET_ATTACHED_IDS_PARAMS {
  uint32_t gpuIds[NV0000_CTRL_GPU_MAX_ATTACHED_GPUS];  // ends at the first NV0000_CTRL_GPU_INVALID_ID
};
static_assert(sizeof(NV0000_CTRL_GPU_GET_ATTACHED_IDS_PARAMS) == 128);

struct NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS {
  uint32_t gpuId;  // in: nv_ioctl_card_info_t.gpu_id
  uint32_t gpuFlags, deviceInstance, subDeviceInstance, sliStatus, boardId, gpuInstance;
  int32_t numaId;
};
static_assert(sizeof(NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS) == 32 && offsetof(NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS, deviceInstance) == 8 &&
              offsetof(NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS, numaId) == 28);

struct NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS {  // call with classList 0 for the count, then with an array
  uint32_t numClasses, pad_;
  uint64_t classList;  // u32 array of numClasses
};
static_assert(sizeof(NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS) == 16 && offsetof(NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS, classList) == 8);

inline constexpr uint32_t NV2080_GPU_MAX_GID_LENGTH = 256;
struct NV2080_CTRL_GPU_GET_GID_INFO_PARAMS {
  uint32_t index, flags, length;
  uint8_t data[NV2080_GPU_MAX_GID_LENGTH];
};
static_assert(sizeof(NV2080_CTRL_GPU_GET_GID_INFO_PARAMS) == 268 && offsetof(NV2080_CTRL_GPU_GET_GID_INFO_PARAMS, data) == 12);
inline constexpr Bits NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT{1, 0};
inline constexpr uint32_t NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT_ASCII = 0, NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT_BINARY = 2;
inline constexpr Bits NV2080_GPU_CMD_GPU_GET_GID_FLAGS_TYPE{2, 2};
inline constexpr uint32_t NV2080_GPU_CMD_GPU_GET_GID_FLAGS_TYPE_SHA1 = 0;

struct NV2080_CTRL_GR_INFO {
  uint32_t index, data;
};
static_assert(sizeof(NV2080_CTRL_GR_INFO) == 8);
struct NV2080_CTRL_GR_ROUTE_INFO {  // NV0080_CTRL_GR_ROUTE_INFO; zero routes to the only GR engine
  uint32_t flags, pad_;
  uint64_t route;
};
static_assert(sizeof(NV2080_CTRL_GR_ROUTE_INFO) == 16);
struct NV2080_CTRL_GR_GET_INFO_PARAMS {
  uint32_t grInfoListSize, pad_;
  uint64_t grInfoList;  // NV2080_CTRL_GR_INFO array of grInfoListSize
  NV2080_CTRL_GR_ROUTE_INFO grRouteInfo;
};
static_assert(sizeof(NV2080_CTRL_GR_GET_INFO_PARAMS) == 32 && offsetof(NV2080_CTRL_GR_GET_INFO_PARAMS, grInfoList) == 8 &&
              offsetof(NV2080_CTRL_GR_GET_INFO_PARAMS, grRouteInfo) == 16);
// NV2080_CTRL_GR_INFO_INDEX_* = NV0080_CTRL_GR_INFO_INDEX_* (ctrl0080gr.h).
inline constexpr uint32_t NV2080_CTRL_GR_INFO_INDEX_SM_VERSION = 0x0c;  // 0x900 on sm_90: major << 8 | minor
inline constexpr uint32_t NV2080_CTRL_GR_INFO_INDEX_MAX_WARPS_PER_SM = 0x0d;
inline constexpr uint32_t NV2080_CTRL_GR_INFO_INDEX_MAX_THREADS_PER_WARP = 0x0e;
inline constexpr uint32_t NV2080_CTRL_GR_INFO_INDEX_MAX_SP_PER_SM = 0x13;
inline constexpr uint32_t NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_GPCS = 0x14;
inline constexpr uint32_t NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_FBPS = 0x15;
inline constexpr uint32_t NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_TPC_PER_GPC = 0x17;
inline constexpr uint32_t NV2080_CTRL_GR_INFO_INDEX_GPU_CORE_COUNT = 0x1d;
inline constexpr uint32_t NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_SM_PER_TPC = 0x20;
inline constexpr uint32_t NV2080_CTRL_GR_INFO_INDEX_TENSOR_CORE_COUNT = 0x23;
inline constexpr uint32_t NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_LTCS = 0x25;
inline constexpr uint32_t NV2080_CTRL_GR_INFO_INDEX_MAX_SUBCONTEXT_COUNT = 0x2c;
// tinygrad's "num_gpcs", "num_tpc_per_gpc", "num_sm_per_tpc" are the LITTER_ indices above.
inline constexpr uint32_t NV2080_CTRL_GR_INFO_INDEX_NUM_GPCS = NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_GPCS;
inline constexpr uint32_t NV2080_CTRL_GR_INFO_INDEX_NUM_TPC_PER_GPC = NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_TPC_PER_GPC;
inline constexpr uint32_t NV2080_CTRL_GR_INFO_INDEX_NUM_SM_PER_TPC = NV2080_CTRL_GR_INFO_INDEX_LITTER_NUM_SM_PER_TPC;

struct NV2080_CTRL_PERF_BOOST_PARAMS {
  uint32_t flags, duration;  // duration in seconds, or NV2080_CTRL_PERF_BOOST_DURATION_INFINITE
};
static_assert(sizeof(NV2080_CTRL_PERF_BOOST_PARAMS) == 8);
inline constexpr Bits NV2080_CTRL_PERF_BOOST_FLAGS_CMD{1, 0};
inline constexpr uint32_t NV2080_CTRL_PERF_BOOST_FLAGS_CMD_CLEAR = 0, NV2080_CTRL_PERF_BOOST_FLAGS_CMD_BOOST_1LEVEL = 1,
                          NV2080_CTRL_PERF_BOOST_FLAGS_CMD_BOOST_TO_MAX = 2;
inline constexpr Bits NV2080_CTRL_PERF_BOOST_FLAGS_CUDA{4, 4};
inline constexpr Bits NV2080_CTRL_PERF_BOOST_FLAGS_ASYNC{5, 5};
inline constexpr Bits NV2080_CTRL_PERF_BOOST_FLAGS_CUDA_PRIORITY{6, 6};
inline constexpr uint32_t NV2080_CTRL_PERF_BOOST_FLAGS_CUDA_PRIORITY_HIGH = 1;
inline constexpr uint32_t NV2080_CTRL_PERF_BOOST_DURATION_MAX = 3600, NV2080_CTRL_PERF_BOOST_DURATION_INFINITE = 0xffffffff;

inline constexpr uint32_t NV2080_CTRL_FB_FLUSH_GPU_CACHE_MAX_ADDRESSES = 500;
struct NV2080_CTRL_FB_FLUSH_GPU_CACHE_PARAMS {
  uint64_t addressArray[NV2080_CTRL_FB_FLUSH_GPU_CACHE_MAX_ADDRESSES];
  uint32_t addressArraySize, addressAlign;
  uint64_t memBlockSizeBytes;
  uint32_t flags, pad_;
};
static_assert(sizeof(NV2080_CTRL_FB_FLUSH_GPU_CACHE_PARAMS) == 4024 && offsetof(NV2080_CTRL_FB_FLUSH_GPU_CACHE_PARAMS, addressArraySize) == 4000 &&
              offsetof(NV2080_CTRL_FB_FLUSH_GPU_CACHE_PARAMS, memBlockSizeBytes) == 4008 &&
              offsetof(NV2080_CTRL_FB_FLUSH_GPU_CACHE_PARAMS, flags) == 4016);
inline constexpr Bits NV2080_CTRL_FB_FLUSH_GPU_CACHE_FLAGS_APERTURE{1, 0};
inline constexpr Bits NV2080_CTRL_FB_FLUSH_GPU_CACHE_FLAGS_WRITE_BACK{2, 2};
inline constexpr Bits NV2080_CTRL_FB_FLUSH_GPU_CACHE_FLAGS_INVALIDATE{3, 3};
inline constexpr Bits NV2080_CTRL_FB_FLUSH_GPU_CACHE_FLAGS_FLUSH_MODE{4, 4};
inline constexpr uint32_t NV2080_CTRL_FB_FLUSH_GPU_CACHE_FLAGS_FLUSH_MODE_ADDRESS_ARRAY = 0,
                          NV2080_CTRL_FB_FLUSH_GPU_CACHE_FLAGS_FLUSH_MODE_FULL_CACHE = 1;
inline constexpr Bits NV2080_CTRL_FB_FLUSH_GPU_CACHE_FLAGS_FB_FLUSH{5, 5};

struct NVA06F_CTRL_BIND_PARAMS {
  uint32_t engineType;
};
static_assert(sizeof(NVA06F_CTRL_BIND_PARAMS) == 4);
struct NVA06C_CTRL_TIMESLICE_PARAMS {
  uint64_t timesliceUs;
};
static_assert(sizeof(NVA06C_CTRL_TIMESLICE_PARAMS) == 8);

struct NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS {
  uint32_t workSubmitToken;  // the value to write to NVC361_NOTIFY_CHANNEL_PENDING
};
static_assert(sizeof(NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS) == 4);

// The debugger object's fault report (ctrl83dedebug.h).
inline constexpr uint32_t NV83DE_CTRL_DEBUG_MAX_SMS_PER_CALL = 100;
struct NV83DE_SM_ERROR_STATE_REGISTERS {
  uint32_t hwwGlobalEsr, hwwWarpEsr, hwwWarpEsrPc, hwwGlobalEsrReportMask, hwwWarpEsrReportMask, pad_;
  uint64_t hwwEsrAddr, hwwWarpEsrPc64;
  uint32_t hwwCgaEsr, hwwCgaEsrReportMask;
};
static_assert(sizeof(NV83DE_SM_ERROR_STATE_REGISTERS) == 48 && offsetof(NV83DE_SM_ERROR_STATE_REGISTERS, hwwEsrAddr) == 24 &&
              offsetof(NV83DE_SM_ERROR_STATE_REGISTERS, hwwWarpEsrPc64) == 32 && offsetof(NV83DE_SM_ERROR_STATE_REGISTERS, hwwCgaEsr) == 40);
struct NV83DE_MMU_FAULT_INFO {
  uint8_t valid, pad_[3];
  uint32_t faultInfo;
};
static_assert(sizeof(NV83DE_MMU_FAULT_INFO) == 8 && offsetof(NV83DE_MMU_FAULT_INFO, faultInfo) == 4);
struct NV83DE_CTRL_DEBUG_READ_ALL_SM_ERROR_STATES_PARAMS {
  uint32_t hTargetChannel, numSMsToRead;
  NV83DE_SM_ERROR_STATE_REGISTERS smErrorStateArray[NV83DE_CTRL_DEBUG_MAX_SMS_PER_CALL];
  uint32_t mmuFaultInfo;  // deprecated copy of mmuFault.faultInfo
  NV83DE_MMU_FAULT_INFO mmuFault;
  uint32_t startingSM;
};
static_assert(sizeof(NV83DE_CTRL_DEBUG_READ_ALL_SM_ERROR_STATES_PARAMS) == 4824 &&
              offsetof(NV83DE_CTRL_DEBUG_READ_ALL_SM_ERROR_STATES_PARAMS, smErrorStateArray) == 8 &&
              offsetof(NV83DE_CTRL_DEBUG_READ_ALL_SM_ERROR_STATES_PARAMS, mmuFaultInfo) == 4808 &&
              offsetof(NV83DE_CTRL_DEBUG_READ_ALL_SM_ERROR_STATES_PARAMS, mmuFault) == 4812 &&
              offsetof(NV83DE_CTRL_DEBUG_READ_ALL_SM_ERROR_STATES_PARAMS, startingSM) == 4820);
struct NV83DE_CTRL_DEBUG_CLEAR_ALL_SM_ERROR_STATES_PARAMS {
  uint32_t hTargetChannel, numSMsToClear;
};
static_assert(sizeof(NV83DE_CTRL_DEBUG_CLEAR_ALL_SM_ERROR_STATES_PARAMS) == 8);
inline constexpr uint32_t NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_MAX_ENTRIES = 4;
struct NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_ENTRY {
  uint64_t faultAddress;
  uint32_t faultType;   // NV_PFAULT_FAULT_TYPE_*
  uint32_t accessType;  // NV_PFAULT_ACCESS_TYPE_*
};
static_assert(sizeof(NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_ENTRY) == 16);
struct NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_PARAMS {
  NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_ENTRY mmuFaultInfoList[4];  // _MAX_ENTRIES
  uint32_t count, pad_;
};
static_assert(sizeof(NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_PARAMS) == 72 && offsetof(NV83DE_CTRL_DEBUG_READ_MMU_FAULT_INFO_PARAMS, count) == 64);

// MMU fault and access types (kernel-open/nvidia-uvm/hwref/ampere/ga100/dev_fault.h).
inline constexpr uint32_t NV_PFAULT_FAULT_TYPE_PDE = 0x0, NV_PFAULT_FAULT_TYPE_PDE_SIZE = 0x1, NV_PFAULT_FAULT_TYPE_PTE = 0x2,
                          NV_PFAULT_FAULT_TYPE_VA_LIMIT_VIOLATION = 0x3, NV_PFAULT_FAULT_TYPE_UNBOUND_INST_BLOCK = 0x4,
                          NV_PFAULT_FAULT_TYPE_PRIV_VIOLATION = 0x5, NV_PFAULT_FAULT_TYPE_RO_VIOLATION = 0x6, NV_PFAULT_FAULT_TYPE_WO_VIOLATION = 0x7,
                          NV_PFAULT_FAULT_TYPE_PITCH_MASK_VIOLATION = 0x8, NV_PFAULT_FAULT_TYPE_WORK_CREATION = 0x9,
                          NV_PFAULT_FAULT_TYPE_UNSUPPORTED_APERTURE = 0xa, NV_PFAULT_FAULT_TYPE_COMPRESSION_FAILURE = 0xb,
                          NV_PFAULT_FAULT_TYPE_UNSUPPORTED_KIND = 0xc, NV_PFAULT_FAULT_TYPE_REGION_VIOLATION = 0xd,
                          NV_PFAULT_FAULT_TYPE_POISONED = 0xe, NV_PFAULT_FAULT_TYPE_ATOMIC_VIOLATION = 0xf;
inline constexpr uint32_t NV_PFAULT_ACCESS_TYPE_VIRT_READ = 0x0, NV_PFAULT_ACCESS_TYPE_VIRT_WRITE = 0x1,
                          NV_PFAULT_ACCESS_TYPE_VIRT_ATOMIC_STRONG = 0x2, NV_PFAULT_ACCESS_TYPE_VIRT_PREFETCH = 0x3,
                          NV_PFAULT_ACCESS_TYPE_VIRT_ATOMIC_WEAK = 0x4, NV_PFAULT_ACCESS_TYPE_PHYS_READ = 0x8, NV_PFAULT_ACCESS_TYPE_PHYS_WRITE = 0x9,
                          NV_PFAULT_ACCESS_TYPE_PHYS_ATOMIC = 0xa, NV_PFAULT_ACCESS_TYPE_PHYS_PREFETCH = 0xb;
// "PTE", "RO_VIOLATION", ...; nullptr for a value not listed.
const char* mmu_fault_type_name(uint32_t fault_type);
const char* mmu_access_type_name(uint32_t access_type);

// ---------------------------------------------------------------------------------------------------
// The channel error notifier (nvgputypes.h NvNotification, nvos.h NV_CHANNELGPFIFO_NOTIFICATION_*):
// RM writes one of these into the channel's hObjectError memory (entry NV_CHANNELGPFIFO_NOTIFICATION
// _TYPE_ERROR) when it kills the channel: timestamp, info32 = the ROBUST_CHANNEL_* error, info16, then
// status. The GPU writes it; read it through volatile/atomic loads, status last.

struct NvNotification {
  uint32_t timeStamp_nanoseconds[2];  // ns since 1970, low word first
  uint32_t info32;
  uint16_t info16;
  uint16_t status;  // bit 15 set while in progress; NV_CHANNELGPFIFO_NOTIFICATION_STATUS_VALUE otherwise
};
static_assert(sizeof(NvNotification) == 16 && offsetof(NvNotification, info32) == 8 && offsetof(NvNotification, info16) == 12 &&
              offsetof(NvNotification, status) == 14);
inline constexpr uint32_t NV_CHANNELGPFIFO_NOTIFICATION_TYPE_ERROR = 0, NV_CHANNELGPFIFO_NOTIFICATION_TYPE_WORK_SUBMIT_TOKEN = 1,
                          NV_CHANNELGPFIFO_NOTIFICATION_TYPE_KEY_ROTATION_STATUS = 2, NV_CHANNELGPFIFO_NOTIFICATION_TYPE__SIZE_1 = 3;
inline constexpr Bits NV_CHANNELGPFIFO_NOTIFICATION_STATUS_VALUE{14, 0};
inline constexpr Bits NV_CHANNELGPFIFO_NOTIFICATION_STATUS_IN_PROGRESS{15, 15};

// Robust-channel (RC) error codes (nverror.h), the Xid numbers in the kernel log; the common ones.
inline constexpr uint32_t ROBUST_CHANNEL_GR_EXCEPTION = 13;  // an SM/GR exception (illegal instruction, bad address ...)
inline constexpr uint32_t ROBUST_CHANNEL_FAKE_ERROR = 14;
inline constexpr uint32_t ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT = 31;  // MMU fault
inline constexpr uint32_t ROBUST_CHANNEL_PBDMA_ERROR = 32;             // bad pushbuffer / GPFIFO entry
inline constexpr uint32_t ROBUST_CHANNEL_CE0_ERROR = 39, ROBUST_CHANNEL_CE1_ERROR = 40, ROBUST_CHANNEL_CE2_ERROR = 41;
inline constexpr uint32_t ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR = 43;
inline constexpr uint32_t ROBUST_CHANNEL_GR_FAULT_DURING_CTXSW = 44;
inline constexpr uint32_t ROBUST_CHANNEL_PREEMPTIVE_REMOVAL = 45;  // the channel was torn down (often a timeout)
inline constexpr uint32_t ROBUST_CHANNEL_GPU_ECC_DBE = 48;
inline constexpr uint32_t ROBUST_CHANNEL_GR_CLASS_ERROR = 69;  // an illegal method or method data for the class
inline constexpr uint32_t ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS = 79;
inline constexpr uint32_t ROBUST_CHANNEL_CONTAINED_ERROR = 94, ROBUST_CHANNEL_UNCONTAINED_ERROR = 95;
inline constexpr uint32_t GSP_RPC_TIMEOUT = 119, GSP_ERROR = 120;
// Every code of nverror.h (595) by name without the ROBUST_CHANNEL_ prefix: "GR_EXCEPTION",
// "FIFO_ERROR_MMU_ERR_FLT", ...; nullptr for a code it does not list.
const char* rc_error_name(uint32_t rc_error);

// ---------------------------------------------------------------------------------------------------
// UVM (/dev/nvidia-uvm; uvm_ioctl.h, uvm_linux_ioctl.h, uvm_types.h, nv_uvm_user_types.h). The request
// is the raw number below, not an _IOC encoding, and the kernel copies its own sizeof of the struct:
// a layout mismatch is not refused, it is misread. Every struct ends in rmStatus (an NV_STATUS).

inline constexpr unsigned long UVM_INITIALIZE = 0x30000001;  // must be the first ioctl on the fd
inline constexpr unsigned long UVM_DEINITIALIZE = 0x30000002;
inline constexpr unsigned long UVM_REGISTER_GPU_VASPACE = 25;
inline constexpr unsigned long UVM_UNREGISTER_GPU_VASPACE = 26;
inline constexpr unsigned long UVM_REGISTER_CHANNEL = 27;
inline constexpr unsigned long UVM_UNREGISTER_CHANNEL = 28;
inline constexpr unsigned long UVM_ENABLE_PEER_ACCESS = 29;
inline constexpr unsigned long UVM_DISABLE_PEER_ACCESS = 30;
inline constexpr unsigned long UVM_MAP_EXTERNAL_ALLOCATION = 33;
inline constexpr unsigned long UVM_FREE = 34;
inline constexpr unsigned long UVM_REGISTER_GPU = 37;
inline constexpr unsigned long UVM_UNREGISTER_GPU = 38;
inline constexpr unsigned long UVM_UNMAP_EXTERNAL = 66;
inline constexpr unsigned long UVM_CREATE_EXTERNAL_RANGE = 73;
inline constexpr unsigned long UVM_MM_INITIALIZE = 75;  // on a second uvm fd; NV_WARN_NOTHING_TO_DO where not needed

inline constexpr uint32_t UVM_MAX_GPUS = NV_MAX_DEVICES * 8;  // NV_MAX_DEVICES * UVM_PARENT_ID_MAX_SUB_PROCESSORS
inline constexpr uint64_t UVM_INIT_FLAGS_DISABLE_HMM = 0x1, UVM_INIT_FLAGS_MULTI_PROCESS_SHARING_MODE = 0x2;

struct NvProcessorUuid {
  uint8_t uuid[16];
};
static_assert(sizeof(NvProcessorUuid) == 16);

struct UVM_INITIALIZE_PARAMS {
  uint64_t flags;  // UVM_INIT_FLAGS_*
  uint32_t rmStatus, pad_;
};
static_assert(sizeof(UVM_INITIALIZE_PARAMS) == 16 && offsetof(UVM_INITIALIZE_PARAMS, rmStatus) == 8);

struct UVM_MM_INITIALIZE_PARAMS {
  int32_t uvmFd;  // the first, UVM_INITIALIZEd fd
  uint32_t rmStatus;
};
static_assert(sizeof(UVM_MM_INITIALIZE_PARAMS) == 8 && offsetof(UVM_MM_INITIALIZE_PARAMS, rmStatus) == 4);

struct UVM_REGISTER_GPU_PARAMS {
  NvProcessorUuid gpu_uuid;  // NV2080_CTRL_CMD_GPU_GET_GID_INFO, binary, 16 bytes
  uint8_t numaEnabled, pad0_[3];
  int32_t numaNodeId;
  int32_t rmCtrlFd;  // -1: UVM uses its own RM client
  uint32_t hClient, hSmcPartRef;
  uint32_t rmStatus;
};
static_assert(sizeof(UVM_REGISTER_GPU_PARAMS) == 40 && offsetof(UVM_REGISTER_GPU_PARAMS, numaNodeId) == 20 &&
              offsetof(UVM_REGISTER_GPU_PARAMS, rmCtrlFd) == 24 && offsetof(UVM_REGISTER_GPU_PARAMS, hClient) == 28 &&
              offsetof(UVM_REGISTER_GPU_PARAMS, rmStatus) == 36);

struct UVM_UNREGISTER_GPU_PARAMS {
  NvProcessorUuid gpu_uuid;
  uint32_t rmStatus;
};
static_assert(sizeof(UVM_UNREGISTER_GPU_PARAMS) == 20);

struct UVM_REGISTER_GPU_VASPACE_PARAMS {
  NvProcessorUuid gpuUuid;
  int32_t rmCtrlFd;
  uint32_t hClient, hVaSpace;
  uint32_t rmStatus;
};
static_assert(sizeof(UVM_REGISTER_GPU_VASPACE_PARAMS) == 32 && offsetof(UVM_REGISTER_GPU_VASPACE_PARAMS, rmCtrlFd) == 16 &&
              offsetof(UVM_REGISTER_GPU_VASPACE_PARAMS, hVaSpace) == 24 && offsetof(UVM_REGISTER_GPU_VASPACE_PARAMS, rmStatus) == 28);

struct UVM_UNREGISTER_GPU_VASPACE_PARAMS {
  NvProcessorUuid gpuUuid;
  uint32_t rmStatus;
};
static_assert(sizeof(UVM_UNREGISTER_GPU_VASPACE_PARAMS) == 20);

struct UVM_REGISTER_CHANNEL_PARAMS {
  NvProcessorUuid gpuUuid;
  int32_t rmCtrlFd;
  uint32_t hClient, hChannel, pad0_;
  uint64_t base, length;  // a VA range UVM reserves for the channel's RM-internal buffers
  uint32_t rmStatus, pad1_;
};
static_assert(sizeof(UVM_REGISTER_CHANNEL_PARAMS) == 56 && offsetof(UVM_REGISTER_CHANNEL_PARAMS, hChannel) == 24 &&
              offsetof(UVM_REGISTER_CHANNEL_PARAMS, base) == 32 && offsetof(UVM_REGISTER_CHANNEL_PARAMS, length) == 40 &&
              offsetof(UVM_REGISTER_CHANNEL_PARAMS, rmStatus) == 48);

struct UVM_ENABLE_PEER_ACCESS_PARAMS {  // also UVM_DISABLE_PEER_ACCESS
  NvProcessorUuid gpuUuidA, gpuUuidB;
  uint32_t rmStatus;
};
static_assert(sizeof(UVM_ENABLE_PEER_ACCESS_PARAMS) == 36 && offsetof(UVM_ENABLE_PEER_ACCESS_PARAMS, rmStatus) == 32);
using UVM_DISABLE_PEER_ACCESS_PARAMS = UVM_ENABLE_PEER_ACCESS_PARAMS;

struct UVM_CREATE_EXTERNAL_RANGE_PARAMS {
  uint64_t base, length;
  uint32_t rmStatus, pad_;
};
static_assert(sizeof(UVM_CREATE_EXTERNAL_RANGE_PARAMS) == 24 && offsetof(UVM_CREATE_EXTERNAL_RANGE_PARAMS, rmStatus) == 16);

inline constexpr uint32_t UvmGpuMappingTypeDefault = 0, UvmGpuMappingTypeReadWriteAtomic = 1, UvmGpuMappingTypeReadWrite = 2,
                          UvmGpuMappingTypeReadOnly = 3;
inline constexpr uint32_t UvmGpuCachingTypeDefault = 0, UvmGpuCachingTypeForceUncached = 1, UvmGpuCachingTypeForceCached = 2;
inline constexpr uint32_t UvmGpuFormatTypeDefault = 0, UvmGpuFormatTypeBlockLinear = 1;
inline constexpr uint32_t UvmGpuFormatElementBitsDefault = 0;
inline constexpr uint32_t UvmGpuCompressionTypeDefault = 0;
struct UvmGpuMappingAttributes {
  NvProcessorUuid gpuUuid;
  uint32_t gpuMappingType, gpuCachingType, gpuFormatType, gpuElementBits, gpuCompressionType;
};
static_assert(sizeof(UvmGpuMappingAttributes) == 36 && offsetof(UvmGpuMappingAttributes, gpuMappingType) == 16 &&
              offsetof(UvmGpuMappingAttributes, gpuCompressionType) == 32);

struct UVM_MAP_EXTERNAL_ALLOCATION_PARAMS {  // 9 KiB: allocate it, do not put it on a small stack
  uint64_t base, length, offset;
  UvmGpuMappingAttributes perGpuAttributes[UVM_MAX_GPUS];
  uint64_t gpuAttributesCount;
  int32_t rmCtrlFd;
  uint32_t hClient, hMemory;
  uint32_t rmStatus;
};
static_assert(sizeof(UVM_MAP_EXTERNAL_ALLOCATION_PARAMS) == 9264 && offsetof(UVM_MAP_EXTERNAL_ALLOCATION_PARAMS, perGpuAttributes) == 24 &&
              offsetof(UVM_MAP_EXTERNAL_ALLOCATION_PARAMS, gpuAttributesCount) == 9240 &&
              offsetof(UVM_MAP_EXTERNAL_ALLOCATION_PARAMS, rmCtrlFd) == 9248 && offsetof(UVM_MAP_EXTERNAL_ALLOCATION_PARAMS, hClient) == 9252 &&
              offsetof(UVM_MAP_EXTERNAL_ALLOCATION_PARAMS, hMemory) == 9256 && offsetof(UVM_MAP_EXTERNAL_ALLOCATION_PARAMS, rmStatus) == 9260);

struct UVM_UNMAP_EXTERNAL_PARAMS {
  uint64_t base, length;
  NvProcessorUuid gpuUuid;
  uint32_t rmStatus, pad_;
};
static_assert(sizeof(UVM_UNMAP_EXTERNAL_PARAMS) == 40 && offsetof(UVM_UNMAP_EXTERNAL_PARAMS, rmStatus) == 32);

// ---------------------------------------------------------------------------------------------------
// Per-branch layouts. Each struct is defined in the first branch that has its layout and aliased in
// the later ones. A branch namespace holds exactly the structs that differ somewhere in 570 .. 610.
//
//   struct                                    570  575  580  590  610  (bytes)
//   NVOS46_PARAMETERS (MAP_MEMORY_DMA)         56   56   64   64   64  580: flags2, kindOverride
//   NV_VASPACE_ALLOCATION_PARAMETERS           48   48   56   56   56  580: + pasid
//   NVA06F/NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS   2    3    3    3    3  575: + bSkipEnable
//   NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS   404  404  804  804  804  580: 200 classes, not 100
//   NV_CHANNEL_ALLOC_PARAMS                   368  368  368  368  376  610: hHandleVASpace at 32
//   UVM_FREE_PARAMS                            24   24   24   16   16  590: no length
//   UVM_UNREGISTER_CHANNEL_PARAMS              28   28   28   12   12  590: no gpuUuid
//
// 575 and 590 (595 has 590's layouts) are not tinygrad's branches: tinygrad reads 575 with its 570
// layouts and 590/595 with its 580 ones, which gets GPFIFO_SCHEDULE (575) and UVM_FREE (590) wrong.

namespace v570 {

struct NVOS46_PARAMETERS {  // NV_ESC_RM_MAP_MEMORY_DMA: map RM memory into a GPU VA space
  uint32_t hClient, hDevice, hDma, hMemory;
  uint64_t offset, length;
  uint32_t flags, pad0_;  // NVOS46_FLAGS_*
  uint64_t dmaOffset;     // in: the VA when DMA_OFFSET_FIXED; out: the VA used
  uint32_t status, pad1_;
};
static_assert(sizeof(NVOS46_PARAMETERS) == 56 && offsetof(NVOS46_PARAMETERS, offset) == 16 && offsetof(NVOS46_PARAMETERS, length) == 24 &&
              offsetof(NVOS46_PARAMETERS, flags) == 32 && offsetof(NVOS46_PARAMETERS, dmaOffset) == 40 && offsetof(NVOS46_PARAMETERS, status) == 48);

struct NV_VASPACE_ALLOCATION_PARAMETERS {  // FERMI_VASPACE_A
  uint32_t index, flags;                   // NV_VASPACE_ALLOCATION_INDEX_*, NV_VASPACE_ALLOCATION_FLAGS_*
  uint64_t vaSize, vaStartInternal, vaLimitInternal;
  uint32_t bigPageSize, pad0_;
  uint64_t vaBase;
};
static_assert(sizeof(NV_VASPACE_ALLOCATION_PARAMETERS) == 48 && offsetof(NV_VASPACE_ALLOCATION_PARAMETERS, vaSize) == 8 &&
              offsetof(NV_VASPACE_ALLOCATION_PARAMETERS, bigPageSize) == 32 && offsetof(NV_VASPACE_ALLOCATION_PARAMETERS, vaBase) == 40);

struct NVA06F_CTRL_GPFIFO_SCHEDULE_PARAMS {
  uint8_t bEnable, bSkipSubmit;
};
static_assert(sizeof(NVA06F_CTRL_GPFIFO_SCHEDULE_PARAMS) == 2);
using NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS = NVA06F_CTRL_GPFIFO_SCHEDULE_PARAMS;

inline constexpr uint32_t NV0080_CTRL_GPU_CLASSLIST_MAX_SIZE = 100;
struct NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS {
  uint32_t numClasses;
  uint32_t classList[NV0080_CTRL_GPU_CLASSLIST_MAX_SIZE];
};
static_assert(sizeof(NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS) == 404);

// A GPFIFO channel (AMPERE_CHANNEL_GPFIFO_A ...), under a TSG or the device.
struct NV_CHANNEL_ALLOC_PARAMS {
  uint32_t hObjectError;   // the error notifier memory (NvNotification array)
  uint32_t hObjectBuffer;  // the memory holding the ring
  uint64_t gpFifoOffset;   // GPU VA of the ring
  uint32_t gpFifoEntries, flags;
  uint32_t hContextShare, hVASpace;
  uint32_t hUserdMemory[NV_MAX_SUBDEVICES];  // USERD memory; [0] is the one used
  uint64_t userdOffset[NV_MAX_SUBDEVICES];
  uint32_t engineType, cid, subDeviceId, hObjectEccError;
  NV_MEMORY_DESC_PARAMS instanceMem, userdMem, ramfcMem, mthdbufMem;
  uint32_t hPhysChannelGroup, internalFlags;
  NV_MEMORY_DESC_PARAMS errorNotifierMem, eccErrorNotifierMem;
  uint32_t ProcessID, SubProcessID;
  uint32_t encryptIv[CC_CHAN_ALLOC_IV_SIZE_DWORD], decryptIv[CC_CHAN_ALLOC_IV_SIZE_DWORD];
  uint32_t hmacNonce[CC_CHAN_ALLOC_NONCE_SIZE_DWORD];
  uint32_t tpcConfigID, pad_;
};
static_assert(sizeof(NV_CHANNEL_ALLOC_PARAMS) == 368 && offsetof(NV_CHANNEL_ALLOC_PARAMS, gpFifoOffset) == 8 &&
              offsetof(NV_CHANNEL_ALLOC_PARAMS, gpFifoEntries) == 16 && offsetof(NV_CHANNEL_ALLOC_PARAMS, hContextShare) == 24 &&
              offsetof(NV_CHANNEL_ALLOC_PARAMS, hVASpace) == 28 && offsetof(NV_CHANNEL_ALLOC_PARAMS, hUserdMemory) == 32 &&
              offsetof(NV_CHANNEL_ALLOC_PARAMS, userdOffset) == 64 && offsetof(NV_CHANNEL_ALLOC_PARAMS, engineType) == 128 &&
              offsetof(NV_CHANNEL_ALLOC_PARAMS, hObjectEccError) == 140 && offsetof(NV_CHANNEL_ALLOC_PARAMS, instanceMem) == 144 &&
              offsetof(NV_CHANNEL_ALLOC_PARAMS, hPhysChannelGroup) == 240 && offsetof(NV_CHANNEL_ALLOC_PARAMS, errorNotifierMem) == 248 &&
              offsetof(NV_CHANNEL_ALLOC_PARAMS, ProcessID) == 296 && offsetof(NV_CHANNEL_ALLOC_PARAMS, encryptIv) == 304 &&
              offsetof(NV_CHANNEL_ALLOC_PARAMS, hmacNonce) == 328 && offsetof(NV_CHANNEL_ALLOC_PARAMS, tpcConfigID) == 360);

struct UVM_FREE_PARAMS {
  uint64_t base, length;
  uint32_t rmStatus, pad_;
};
static_assert(sizeof(UVM_FREE_PARAMS) == 24 && offsetof(UVM_FREE_PARAMS, rmStatus) == 16);

struct UVM_UNREGISTER_CHANNEL_PARAMS {
  NvProcessorUuid gpuUuid;
  uint32_t hClient, hChannel;
  uint32_t rmStatus;
};
static_assert(sizeof(UVM_UNREGISTER_CHANNEL_PARAMS) == 28 && offsetof(UVM_UNREGISTER_CHANNEL_PARAMS, rmStatus) == 24);

}  // namespace v570

namespace v580 {

struct NVOS46_PARAMETERS {
  uint32_t hClient, hDevice, hDma, hMemory;
  uint64_t offset, length;
  uint32_t flags;         // NVOS46_FLAGS_*
  uint32_t flags2;        // NVOS46_FLAGS2_*
  uint32_t kindOverride;  // used with NVOS46_FLAGS_PAGE_KIND_OVERRIDE
  uint32_t pad0_;
  uint64_t dmaOffset;
  uint32_t status, pad1_;
};
static_assert(sizeof(NVOS46_PARAMETERS) == 64 && offsetof(NVOS46_PARAMETERS, flags) == 32 && offsetof(NVOS46_PARAMETERS, flags2) == 36 &&
              offsetof(NVOS46_PARAMETERS, kindOverride) == 40 && offsetof(NVOS46_PARAMETERS, dmaOffset) == 48 &&
              offsetof(NVOS46_PARAMETERS, status) == 56);

struct NV_VASPACE_ALLOCATION_PARAMETERS {
  uint32_t index, flags;
  uint64_t vaSize, vaStartInternal, vaLimitInternal;
  uint32_t bigPageSize, pad0_;
  uint64_t vaBase;
  uint32_t pasid, pad1_;
};
static_assert(sizeof(NV_VASPACE_ALLOCATION_PARAMETERS) == 56 && offsetof(NV_VASPACE_ALLOCATION_PARAMETERS, vaBase) == 40 &&
              offsetof(NV_VASPACE_ALLOCATION_PARAMETERS, pasid) == 48);

struct NVA06F_CTRL_GPFIFO_SCHEDULE_PARAMS {
  uint8_t bEnable, bSkipSubmit, bSkipEnable;
};
static_assert(sizeof(NVA06F_CTRL_GPFIFO_SCHEDULE_PARAMS) == 3);
using NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS = NVA06F_CTRL_GPFIFO_SCHEDULE_PARAMS;

inline constexpr uint32_t NV0080_CTRL_GPU_CLASSLIST_MAX_SIZE = 200;
struct NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS {
  uint32_t numClasses;
  uint32_t classList[NV0080_CTRL_GPU_CLASSLIST_MAX_SIZE];
};
static_assert(sizeof(NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS) == 804);

using v570::NV_CHANNEL_ALLOC_PARAMS;
using v570::UVM_FREE_PARAMS;
using v570::UVM_UNREGISTER_CHANNEL_PARAMS;

}  // namespace v580

namespace v575 {
using v570::NV0080_CTRL_GPU_CLASSLIST_MAX_SIZE;
using v570::NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS;
using v570::NV_CHANNEL_ALLOC_PARAMS;
using v570::NV_VASPACE_ALLOCATION_PARAMETERS;
using v570::NVOS46_PARAMETERS;
using v570::UVM_FREE_PARAMS;
using v570::UVM_UNREGISTER_CHANNEL_PARAMS;
using v580::NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS;
using v580::NVA06F_CTRL_GPFIFO_SCHEDULE_PARAMS;
}  // namespace v575

namespace v590 {

using v570::NV_CHANNEL_ALLOC_PARAMS;
using v580::NV0080_CTRL_GPU_CLASSLIST_MAX_SIZE;
using v580::NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS;
using v580::NV_VASPACE_ALLOCATION_PARAMETERS;
using v580::NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS;
using v580::NVA06F_CTRL_GPFIFO_SCHEDULE_PARAMS;
using v580::NVOS46_PARAMETERS;

struct UVM_FREE_PARAMS {
  uint64_t base;
  uint32_t rmStatus, pad_;
};
static_assert(sizeof(UVM_FREE_PARAMS) == 16 && offsetof(UVM_FREE_PARAMS, rmStatus) == 8);

struct UVM_UNREGISTER_CHANNEL_PARAMS {
  uint32_t hClient, hChannel;
  uint32_t rmStatus;
};
static_assert(sizeof(UVM_UNREGISTER_CHANNEL_PARAMS) == 12 && offsetof(UVM_UNREGISTER_CHANNEL_PARAMS, rmStatus) == 8);

}  // namespace v590

namespace v610 {

using v580::NV0080_CTRL_GPU_CLASSLIST_MAX_SIZE;
using v580::NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS;
using v580::NV_VASPACE_ALLOCATION_PARAMETERS;
using v580::NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS;
using v580::NVA06F_CTRL_GPFIFO_SCHEDULE_PARAMS;
using v580::NVOS46_PARAMETERS;
using v590::UVM_FREE_PARAMS;
using v590::UVM_UNREGISTER_CHANNEL_PARAMS;

struct NV_CHANNEL_ALLOC_PARAMS {
  uint32_t hObjectError, hObjectBuffer;
  uint64_t gpFifoOffset;
  uint32_t gpFifoEntries, flags;
  uint32_t hContextShare, hVASpace;
  uint32_t hHandleVASpace;  // new in 610; every field after it moves
  uint32_t hUserdMemory[NV_MAX_SUBDEVICES];
  uint64_t userdOffset[NV_MAX_SUBDEVICES];
  uint32_t engineType, cid, subDeviceId, hObjectEccError;
  NV_MEMORY_DESC_PARAMS instanceMem, userdMem, ramfcMem, mthdbufMem;
  uint32_t hPhysChannelGroup, internalFlags;
  NV_MEMORY_DESC_PARAMS errorNotifierMem, eccErrorNotifierMem;
  uint32_t ProcessID, SubProcessID;
  uint32_t encryptIv[CC_CHAN_ALLOC_IV_SIZE_DWORD], decryptIv[CC_CHAN_ALLOC_IV_SIZE_DWORD];
  uint32_t hmacNonce[CC_CHAN_ALLOC_NONCE_SIZE_DWORD];
  uint32_t tpcConfigID, pad_;
};
static_assert(sizeof(NV_CHANNEL_ALLOC_PARAMS) == 376 && offsetof(NV_CHANNEL_ALLOC_PARAMS, hVASpace) == 28 &&
              offsetof(NV_CHANNEL_ALLOC_PARAMS, hHandleVASpace) == 32 && offsetof(NV_CHANNEL_ALLOC_PARAMS, hUserdMemory) == 36 &&
              offsetof(NV_CHANNEL_ALLOC_PARAMS, userdOffset) == 72 && offsetof(NV_CHANNEL_ALLOC_PARAMS, engineType) == 136 &&
              offsetof(NV_CHANNEL_ALLOC_PARAMS, hObjectEccError) == 148 && offsetof(NV_CHANNEL_ALLOC_PARAMS, instanceMem) == 152 &&
              offsetof(NV_CHANNEL_ALLOC_PARAMS, hPhysChannelGroup) == 248 && offsetof(NV_CHANNEL_ALLOC_PARAMS, errorNotifierMem) == 256 &&
              offsetof(NV_CHANNEL_ALLOC_PARAMS, ProcessID) == 304 && offsetof(NV_CHANNEL_ALLOC_PARAMS, encryptIv) == 312 &&
              offsetof(NV_CHANNEL_ALLOC_PARAMS, hmacNonce) == 336 && offsetof(NV_CHANNEL_ALLOC_PARAMS, tpcConfigID) == 368);

}  // namespace v610

// The branch a driver version uses, as data: sizes of the structs that change and offsets of the
// fields a driver writes or an emulated RM reads. One entry per row of the table above.
struct AbiBranch {
  unsigned major;               // first driver major version with these layouts
  const char* name;             // "580"
  const char* checked_against;  // the sources the layouts were taken from
  uint32_t sizeof_nvos46, sizeof_vaspace, sizeof_channel_alloc, sizeof_gpfifo_schedule, sizeof_classlist_v2, sizeof_uvm_free,
      sizeof_uvm_unregister_channel;
  uint32_t nvos46_flags2;  // offset, or 0 where the struct has no flags2
  uint32_t nvos46_dma_offset, nvos46_status;
  uint32_t channel_alloc_userd_memory, channel_alloc_userd_offset, channel_alloc_engine_type, channel_alloc_error_notifier;
  uint32_t uvm_free_status;
};
extern const AbiBranch kAbiBranches[5];  // oldest first
// The newest branch whose `major` is at most driver_major (a newer driver than 610 gets 610's layouts);
// nullptr below 570.
const AbiBranch* find_branch(unsigned driver_major);
inline constexpr const char* kSupportedBranches = "570, 575, 580, 590 (and 595), 610";

// ---------------------------------------------------------------------------------------------------
// Status codes (nvstatuscodes.h). rm_abi.cpp holds every code of 570 .. 610 with NVIDIA's text.

struct RmStatus {
  uint32_t code;
  const char* name;  // "NV_ERR_INVALID_ARGUMENT"
  const char* text;  // "Invalid argument to call"
};
// The table, ordered by code. Codes are as in 590 and later: 580 numbers NV_ERR_DMA_XFER_FAILED 0x8b,
// which 590 gives to NV_ERR_OPERATION_ABORTED (moving DMA_XFER_FAILED to 0x8c).
extern const RmStatus kRmStatuses[];
extern const size_t kRmStatusCount;
const RmStatus* find_status(uint32_t code);  // nullptr if unknown
const char* status_name(uint32_t code);      // "NV_ERR_...", or "NV_ERR_UNKNOWN_STATUS" for a code not in the table
const char* status_text(uint32_t code);      // NVIDIA's message, or "Unknown status code"

inline constexpr uint32_t NV_OK = 0x00;
inline constexpr uint32_t NV_ERR_BUSY_RETRY = 0x03;
inline constexpr uint32_t NV_ERR_GPU_IS_LOST = 0x0f;
inline constexpr uint32_t NV_ERR_ILLEGAL_ACTION = 0x16;
inline constexpr uint32_t NV_ERR_IN_USE = 0x17;
inline constexpr uint32_t NV_ERR_INSUFFICIENT_RESOURCES = 0x1a;
inline constexpr uint32_t NV_ERR_INSUFFICIENT_PERMISSIONS = 0x1b;
inline constexpr uint32_t NV_ERR_INVALID_ADDRESS = 0x1e;
inline constexpr uint32_t NV_ERR_INVALID_ARGUMENT = 0x1f;
inline constexpr uint32_t NV_ERR_INVALID_CHANNEL = 0x21;
inline constexpr uint32_t NV_ERR_INVALID_CLASS = 0x22;
inline constexpr uint32_t NV_ERR_INVALID_CLIENT = 0x23;
inline constexpr uint32_t NV_ERR_INVALID_COMMAND = 0x24;
inline constexpr uint32_t NV_ERR_INVALID_DEVICE = 0x26;
inline constexpr uint32_t NV_ERR_INVALID_FLAGS = 0x29;
inline constexpr uint32_t NV_ERR_INVALID_LIMIT = 0x2e;
inline constexpr uint32_t NV_ERR_INVALID_OBJECT = 0x31;
inline constexpr uint32_t NV_ERR_INVALID_OBJECT_HANDLE = 0x33;
inline constexpr uint32_t NV_ERR_INVALID_OBJECT_NEW = 0x34;
inline constexpr uint32_t NV_ERR_INVALID_OBJECT_PARENT = 0x36;
inline constexpr uint32_t NV_ERR_INVALID_OFFSET = 0x37;
inline constexpr uint32_t NV_ERR_INVALID_PARAM_STRUCT = 0x3a;
inline constexpr uint32_t NV_ERR_INVALID_POINTER = 0x3d;
inline constexpr uint32_t NV_ERR_INVALID_REQUEST = 0x3f;
inline constexpr uint32_t NV_ERR_INVALID_STATE = 0x40;
inline constexpr uint32_t NV_ERR_NO_MEMORY = 0x51;
inline constexpr uint32_t NV_ERR_NOT_READY = 0x55;
inline constexpr uint32_t NV_ERR_NOT_SUPPORTED = 0x56;
inline constexpr uint32_t NV_ERR_OBJECT_NOT_FOUND = 0x57;
inline constexpr uint32_t NV_ERR_OPERATING_SYSTEM = 0x59;
inline constexpr uint32_t NV_ERR_RC_ERROR = 0x60;
inline constexpr uint32_t NV_ERR_RESET_REQUIRED = 0x62;
inline constexpr uint32_t NV_ERR_STATE_IN_USE = 0x63;
inline constexpr uint32_t NV_ERR_TIMEOUT = 0x65;
inline constexpr uint32_t NV_ERR_UVM_ADDRESS_IN_USE = 0x68;
inline constexpr uint32_t NV_ERR_GENERIC = 0xffff;
inline constexpr uint32_t NV_WARN_NOTHING_TO_DO = 0x10006;

}  // namespace ugpu::hw::nv
