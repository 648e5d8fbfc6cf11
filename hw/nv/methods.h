// NVIDIA command submission as data (docs/design.md §2): pushbuffer method headers, the methods ugpu uses
// on the host (channel), compute and copy-engine classes with their fields, GPFIFO entries and the
// USERD control page. One table per method gives the driver's encoder, the emulator's decoder and
// `ugpu decode --nv`'s text.
//
// Facts: NVIDIA's class headers — host methods, GP entry, method header and USERD from clc56f.h
// (AMPERE_CHANNEL_GPFIFO_A; Hopper's clc86f.h keeps them), compute methods from clcbc0.h
// (HOPPER_COMPUTE_A; the same offsets as Ampere's clc6c0.h), copy methods from clc8b5.h
// (HOPPER_DMA_COPY_A), the doorbell from clc361.h (NOTIFY_CHANNEL_PENDING).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "common/error.h"

namespace ugpu::hw::nv {

// --- pushbuffer method headers (NV_FIFO_DMA_*) ----------------------------------------------------
// Bits 31:29 SEC_OP, 28:16 count (or immediate data), 15:13 subchannel, 11:0 method dword address.
enum class SecOp : uint8_t { Grp0 = 0, Inc = 1, Grp2 = 2, NonInc = 3, Immediate = 4, OneInc = 5, Reserved6 = 6, EndSegment = 7 };
constexpr unsigned kSubchannels = 8;
constexpr uint32_t kMaxMethodCount = 0x1fff;  // 13 bits of count (or of immediate data)
constexpr uint32_t kMaxMethod = 0x3ffc;       // byte address: 12 bits of dword address

// The header of `count` data dwords for `method` (a byte address, as the class headers give it), or
// of an immediate method carrying `count` as its data. Throws Error when a value does not fit.
uint32_t method_header(SecOp op, unsigned subchannel, uint32_t method, uint32_t count);

// --- engines and the methods ugpu uses ------------------------------------------------------------
enum class Engine : uint8_t { Host, Compute, Copy, Other };
const char* name(Engine e);
// What engine a class bound with SET_OBJECT is: 0x..c0 compute, 0x..b5 copy.
Engine engine_of_class(uint32_t cls);

struct MethodField {
  const char* name;
  uint8_t lo, width;
};
struct MethodInfo {
  Engine engine;
  uint16_t method;  // byte address
  const char* name;
  std::span<const MethodField> fields;  // empty: the whole dword is one value
};
// Methods below 0x100 are the channel's own (host) methods on every subchannel.
constexpr uint32_t kHostMethodEnd = 0x100;
const MethodInfo* find_method(Engine e, uint32_t method);  // nullptr when ugpu's tables do not have it
// "SEM_EXECUTE operation=ACQ_CIRC_GEQ(3) payload_size=1" or "COMPUTE method 0x1234 = 0x5" when unknown.
std::string describe_method(Engine e, uint32_t method, uint32_t value);

constexpr uint32_t field_get(uint32_t v, const MethodField& f) { return (v >> f.lo) & ((f.width == 32 ? 0 : (1u << f.width)) - 1u); }

namespace host {  // clc56f.h
constexpr uint32_t SET_OBJECT = 0x0000, NOP = 0x0008, NON_STALL_INTERRUPT = 0x0020, SEM_ADDR_LO = 0x005c, SEM_ADDR_HI = 0x0060,
                   SEM_PAYLOAD_LO = 0x0064, SEM_PAYLOAD_HI = 0x0068, SEM_EXECUTE = 0x006c, WFI = 0x0078;
namespace sem {  // SEM_EXECUTE
constexpr uint32_t kAcquire = 0, kRelease = 1, kAcqStrictGeq = 2, kAcqCircGeq = 3, kAcqAnd = 4, kAcqNor = 5, kReduction = 6;
constexpr uint32_t kOperationMask = 0x7;
constexpr uint32_t kReleaseWfi = 1u << 20, kPayload64 = 1u << 24, kReleaseTimestamp = 1u << 25;
}  // namespace sem
}  // namespace host

namespace compute {  // clcbc0.h (HOPPER_COMPUTE_A); the same offsets on Ampere and Ada
constexpr uint32_t SET_SHADER_SHARED_MEMORY_WINDOW_A = 0x02a0, SET_SHADER_SHARED_MEMORY_WINDOW_B = 0x02a4, SEND_PCAS_A = 0x02b4,
                   SEND_SIGNALING_PCAS2_B = 0x02c0, SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A = 0x02e4,
                   SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_B = 0x02e8, SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_C = 0x02ec,
                   SET_SHADER_LOCAL_MEMORY_A = 0x0790, SET_SHADER_LOCAL_MEMORY_B = 0x0794, SET_SHADER_LOCAL_MEMORY_WINDOW_A = 0x07b0,
                   SET_SHADER_LOCAL_MEMORY_WINDOW_B = 0x07b4, INVALIDATE_SHADER_CACHES_NO_WFI = 0x1698;
constexpr uint32_t kPcasPrefetchSchedule = 9, kPcasSchedule = 2;  // SEND_SIGNALING_PCAS2_B.PCAS_ACTION
constexpr uint32_t kInvalidateInstruction = 1u << 0, kInvalidateGlobalData = 1u << 4, kInvalidateConstant = 1u << 12;
}  // namespace compute

namespace copy {  // clc8b5.h (HOPPER_DMA_COPY_A); the same offsets on Ampere's clc6b5.h
constexpr uint32_t SET_SEMAPHORE_A = 0x0240, SET_SEMAPHORE_B = 0x0244, SET_SEMAPHORE_PAYLOAD = 0x0248, SET_SEMAPHORE_PAYLOAD_UPPER = 0x024c,
                   LAUNCH_DMA = 0x0300, OFFSET_IN_UPPER = 0x0400, OFFSET_IN_LOWER = 0x0404, OFFSET_OUT_UPPER = 0x0408, OFFSET_OUT_LOWER = 0x040c,
                   PITCH_IN = 0x0410, PITCH_OUT = 0x0414, LINE_LENGTH_IN = 0x0418, LINE_COUNT = 0x041c;
namespace launch {  // LAUNCH_DMA fields
constexpr uint32_t kTransferNonPipelined = 2, kTransferPipelined = 1, kTransferMask = 0x3;
constexpr uint32_t kFlush = 1u << 2;
constexpr uint32_t kSemaphoreShift = 3, kSemaphoreMask = 0x3u << 3, kSemaphoreOneWord = 1, kSemaphoreFourWord = 2;  // four-word: payload + timestamp
constexpr uint32_t kSrcPitch = 1u << 7, kDstPitch = 1u << 8, kMultiLine = 1u << 9, kRemap = 1u << 10;
constexpr uint32_t kSrcPhysical = 1u << 12, kDstPhysical = 1u << 13, kSemaphoreReduction = 1u << 19, kPayload64 = 1u << 27;
}  // namespace launch
constexpr uint64_t kMaxLine = 0xffffffffull;  // LINE_LENGTH_IN is 32 bits of bytes
}  // namespace copy

// --- reading a pushbuffer -------------------------------------------------------------------------
struct MethodWrite {
  uint8_t subchannel = 0;
  uint16_t method = 0;  // byte address
  uint32_t value = 0;
  uint32_t dword = 0;  // where the value (or an immediate method's header) is in the segment
};
// Walks a pushbuffer segment method write by method write, as the channel's PBDMA does. Subdevice
// masks, the legacy Fermi-era formats and RESERVED6 are refused (ugpu never emits them).
class PushbufferReader {
 public:
  explicit PushbufferReader(std::span<const uint32_t> words) : w_(words) {}
  // The next write; false at the end of the segment (or an END_PB_SEGMENT) or on an error.
  bool next(MethodWrite& out);
  const std::string& error() const { return error_; }
  size_t position() const { return pos_; }  // dwords consumed

 private:
  std::span<const uint32_t> w_;
  size_t pos_ = 0;
  uint32_t header_at_ = 0, left_ = 0, method_ = 0;
  uint8_t subch_ = 0;
  SecOp op_ = SecOp::Inc;
  bool first_ = false;
  std::string error_;
};
// Which engine each subchannel is bound to. ugpu binds the compute engine to subchannel 1 and the copy
// engine to subchannel 4 (SET_OBJECT when a channel starts), as tinygrad does.
using SubchannelMap = std::array<Engine, kSubchannels>;
constexpr unsigned kComputeSubchannel = 1, kCopySubchannel = 4;
constexpr SubchannelMap kUnbound = {Engine::Other, Engine::Other, Engine::Other, Engine::Other,
                                    Engine::Other, Engine::Other, Engine::Other, Engine::Other};
constexpr SubchannelMap kUgpuSubchannels = {Engine::Other, Engine::Compute, Engine::Other, Engine::Other,
                                            Engine::Copy,  Engine::Other,   Engine::Other, Engine::Other};
// One line per method write ("0x0004  subch 1 SEND_PCAS_A 0x..."), starting from the bindings `bound`
// and following SET_OBJECT; methods of an unbound subchannel print as "unbound". Stops at a malformed
// header, naming it.
std::string describe_pushbuffer(std::span<const uint32_t> words, const SubchannelMap& bound = kUnbound);

// --- GPFIFO entries (NV_PPBDMA_GP_ENTRY) ----------------------------------------------------------
// 64 bits: 39:2 pushbuffer address (dword aligned, 40-bit), 41 level (1 = subroutine), 62:42 length in
// dwords, 63 sync (wait for the previous entry's work); bit 0 conditional fetch.
struct GpEntry {
  uint64_t address = 0;
  uint32_t dwords = 0;
  bool subroutine = false, sync_wait = false, conditional = false;
};
constexpr uint64_t kGpAddressLimit = uint64_t{1} << 40;
constexpr uint32_t kGpMaxDwords = (1u << 21) - 1;
uint64_t encode_gp_entry(const GpEntry& e);  // throws Error for an address >= 2^40, unaligned, or too long
GpEntry decode_gp_entry(uint64_t raw);
constexpr size_t kGpEntryBytes = 8;

// --- USERD (Nvc56fControl) and the doorbell -------------------------------------------------------
struct Userd {
  uint32_t ignored0[16];
  uint32_t put, get, reference, put_hi;
  uint32_t ignored1[2];
  uint32_t top_level_get, top_level_get_hi, get_hi;
  uint32_t ignored2[7];
  uint32_t ignored3, ignored4;
  uint32_t gp_get;  // GPFIFO entries the channel has fetched (read only)
  uint32_t gp_put;  // the next entry the host will write
  uint32_t ignored5[0x5c];
};
static_assert(offsetof(Userd, put) == 0x40 && offsetof(Userd, gp_get) == 0x88 && offsetof(Userd, gp_put) == 0x8c);
static_assert(sizeof(Userd) == 0x200);
constexpr size_t kUserdBytes = sizeof(Userd);
// NOTIFY_CHANNEL_PENDING: writing a channel's work-submit token here makes the GPU look at its GPPut.
constexpr uint32_t kDoorbellOffset = 0x90;
constexpr size_t kUsermodeBytes = 0x10000;

}  // namespace ugpu::hw::nv
