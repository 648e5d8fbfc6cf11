// The amdkfd ioctl ABI (/dev/kfd) as ugpu uses it: struct layouts and request numbers from Linux's
// include/uapi/linux/kfd_ioctl.h (interface 1.17, Linux 6.12), written out here because Debian 12's
// linux-libc-dev carries 1.11, which lacks RUNTIME_ENABLE. Sizes and offsets are checked below; the
// request number encodes the size, so a wrong struct is an ioctl the kernel refuses.
#pragma once
#include <linux/ioctl.h>

#include <cstddef>
#include <cstdint>

namespace ugpu::hw::amd::kfd {

inline constexpr uint32_t kMajor = 1, kMinor = 17;      // what this table describes
inline constexpr uint32_t kMinMinorRuntimeEnable = 14;  // RUNTIME_ENABLE exists from 1.14

struct GetVersion {
  uint32_t major_version, minor_version;
};
inline constexpr uint32_t kQueueCompute = 0, kQueueSdma = 1, kQueueComputeAql = 2;
inline constexpr uint32_t kMaxQueuePercentage = 100, kMaxQueuePriority = 15, kMinQueueRingSize = 1024;
struct CreateQueue {
  uint64_t ring_base_address, write_pointer_address, read_pointer_address, doorbell_offset;
  uint32_t ring_size, gpu_id, queue_type, queue_percentage, queue_priority, queue_id;
  uint64_t eop_buffer_address, eop_buffer_size, ctx_save_restore_address;
  uint32_t ctx_save_restore_size, ctl_stack_size, sdma_engine_id, pad;
};
struct DestroyQueue {
  uint32_t queue_id, pad;
};
inline constexpr uint32_t kEventSignal = 0, kEventHwException = 3, kEventMemory = 8;
inline constexpr uint32_t kWaitComplete = 0, kWaitTimeout = 1, kWaitFail = 2;
inline constexpr uint32_t kSignalEventLimit = 4096;
inline constexpr uint64_t kEventPageSize = kSignalEventLimit * 8;  // one u64 mailbox slot per signal event
struct CreateEvent {
  uint64_t event_page_offset;
  uint32_t event_trigger_data, event_type, auto_reset, node_id, event_id, event_slot_index;
};
struct DestroyEvent {
  uint32_t event_id, pad;
};
struct MemoryExceptionData {
  uint32_t not_present, read_only, no_execute, imprecise;
  uint64_t va;
  uint32_t gpu_id, error_type;
};
struct HwExceptionData {
  uint32_t reset_type, reset_cause, memory_lost, gpu_id;
};
struct EventData {
  union {
    MemoryExceptionData memory_exception;
    HwExceptionData hw_exception;
    uint64_t last_event_age;
  };
  uint64_t event_data_ext;
  uint32_t event_id, pad;
};
struct WaitEvents {
  uint64_t events_ptr;
  uint32_t num_events, wait_for_all, timeout, wait_result;
};
struct AcquireVm {
  uint32_t drm_fd, gpu_id;
};
namespace mem {
inline constexpr uint32_t kVram = 1u << 0, kGtt = 1u << 1, kUserptr = 1u << 2, kDoorbell = 1u << 3, kMmioRemap = 1u << 4, kWritable = 1u << 31,
                          kExecutable = 1u << 30, kPublic = 1u << 29, kNoSubstitute = 1u << 28, kAqlQueueMem = 1u << 27, kCoherent = 1u << 26,
                          kUncached = 1u << 25, kExtCoherent = 1u << 24, kContiguous = 1u << 23;
}
struct AllocMemoryOfGpu {
  uint64_t va_addr, size, handle, mmap_offset;
  uint32_t gpu_id, flags;
};
struct FreeMemoryOfGpu {
  uint64_t handle;
};
struct MapMemoryToGpu {  // also UNMAP_MEMORY_FROM_GPU
  uint64_t handle, device_ids_array_ptr;
  uint32_t n_devices, n_success;
};
struct RuntimeEnable {
  uint64_t r_debug;
  uint32_t mode_mask, capabilities_mask;
};

static_assert(sizeof(CreateQueue) == 96 && offsetof(CreateQueue, ring_size) == 32 && offsetof(CreateQueue, eop_buffer_address) == 56 &&
              offsetof(CreateQueue, ctx_save_restore_size) == 80);
static_assert(sizeof(CreateEvent) == 32 && offsetof(CreateEvent, event_slot_index) == 28);
static_assert(sizeof(MemoryExceptionData) == 32 && offsetof(MemoryExceptionData, va) == 16);
static_assert(sizeof(EventData) == 48 && offsetof(EventData, event_id) == 40);
static_assert(sizeof(WaitEvents) == 24 && sizeof(AllocMemoryOfGpu) == 40 && sizeof(MapMemoryToGpu) == 24 && sizeof(RuntimeEnable) == 16);

inline constexpr unsigned long kIocType = 'K';
inline constexpr unsigned long kGetVersion = _IOR('K', 0x01, GetVersion);
inline constexpr unsigned long kCreateQueue = _IOWR('K', 0x02, CreateQueue);
inline constexpr unsigned long kDestroyQueue = _IOWR('K', 0x03, DestroyQueue);
inline constexpr unsigned long kCreateEvent = _IOWR('K', 0x08, CreateEvent);
inline constexpr unsigned long kDestroyEvent = _IOW('K', 0x09, DestroyEvent);
inline constexpr unsigned long kWaitEvents = _IOWR('K', 0x0C, WaitEvents);
inline constexpr unsigned long kAcquireVm = _IOW('K', 0x15, AcquireVm);
inline constexpr unsigned long kAllocMemoryOfGpu = _IOWR('K', 0x16, AllocMemoryOfGpu);
inline constexpr unsigned long kFreeMemoryOfGpu = _IOW('K', 0x17, FreeMemoryOfGpu);
inline constexpr unsigned long kMapMemoryToGpu = _IOWR('K', 0x18, MapMemoryToGpu);
inline constexpr unsigned long kUnmapMemoryFromGpu = _IOWR('K', 0x19, MapMemoryToGpu);
inline constexpr unsigned long kRuntimeEnable = _IOWR('K', 0x25, RuntimeEnable);
inline constexpr uint32_t kCommandEnd = 0x27;  // request numbers at or past this are unknown to 1.17

// The doorbell pages: mmap of /dev/kfd at the doorbell offset CREATE_QUEUE returns (rounded down to
// the page pair); the queue's doorbell is the 64-bit word at the remainder.
inline constexpr uint64_t kDoorbellPagesSize = 0x2000;

// Context save area sizes the kernel expects for a queue (amdkfd/kfd_queue.c, Linux 6.12): a queue
// whose CWSR area or control-stack size disagrees is refused with EINVAL.
struct CwsrSizes {
  uint32_t ctl_stack, cwsr, debug_memory, eop;
};
constexpr uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
constexpr CwsrSizes cwsr_sizes(uint32_t gfx_target_version, uint32_t cu_count) {
  uint32_t gfxv = gfx_target_version;
  uint32_t vgpr = (gfxv / 100 * 100 == 90400 || gfxv == 90010 || gfxv == 90008)                              ? 0x80000
                  : (gfxv == 110000 || gfxv == 110001 || gfxv == 110501 || gfxv == 120000 || gfxv == 120001) ? 0x60000
                                                                                                             : 0x40000;
  uint32_t per_cu = vgpr + 0x4000 /*SGPR*/ + 0x10000 /*LDS*/ + 0x1000 /*HWREG*/;
  uint32_t waves = cu_count * 32;  // gfx10+ (the 40-per-CU rule of gfx9 is not needed here)
  uint32_t wg_data = static_cast<uint32_t>(align_up(uint64_t{cu_count} * per_cu, 4096));
  uint32_t ctl = static_cast<uint32_t>(align_up(40 + waves * (gfxv >= 100100 ? 12u : 8u) + 8, 4096));
  if (gfxv / 10000 * 10000 == 100000 && ctl > 0x7000) ctl = 0x7000;
  return {ctl, ctl + wg_data, static_cast<uint32_t>(align_up(uint64_t{waves} * 32, 64)), 4096};
}

}  // namespace ugpu::hw::amd::kfd
