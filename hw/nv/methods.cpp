#include "hw/nv/methods.h"

#include <cstdio>

#include "common/hex.h"

namespace ugpu::hw::nv {

namespace {

constexpr MethodField kSetObject[] = {{"nvclass", 0, 16}, {"engine", 16, 5}};
constexpr MethodField kSemAddrLo[] = {{"offset", 0, 32}};
constexpr MethodField kSemAddrHi[] = {{"offset_upper", 0, 8}};
constexpr MethodField kSemExecute[] = {{"operation", 0, 3},          {"acquire_switch_tsg", 12, 1}, {"release_wfi", 20, 1},
                                       {"payload_size_64", 24, 1},   {"release_timestamp", 25, 1},  {"reduction", 27, 4},
                                       {"reduction_unsigned", 31, 1}};
constexpr MethodField kWfi[] = {{"scope_all", 0, 1}};
constexpr MethodField kUpper17[] = {{"address_upper", 0, 17}};
constexpr MethodField kUpper25[] = {{"address_upper", 0, 25}};
constexpr MethodField kUpper8[] = {{"size_upper", 0, 8}};
constexpr MethodField kPcas2[] = {{"pcas_action", 0, 4}, {"select", 8, 6}, {"offset_minus_one", 14, 10}};
constexpr MethodField kNonThrottledC[] = {{"max_sm_count", 0, 9}, {"max_plural_tpc_gpc_count", 16, 8}, {"max_singleton_tpc_gpc_count", 24, 8}};
constexpr MethodField kInvalidateShader[] = {{"instruction", 0, 1}, {"global_data", 4, 1}, {"constant", 12, 1}};
constexpr MethodField kLaunchDma[] = {{"data_transfer_type", 0, 2},
                                      {"flush_enable", 2, 1},
                                      {"semaphore_type", 3, 2},
                                      {"interrupt_type", 5, 2},
                                      {"src_pitch", 7, 1},
                                      {"dst_pitch", 8, 1},
                                      {"multi_line_enable", 9, 1},
                                      {"remap_enable", 10, 1},
                                      {"force_rmwdisable", 11, 1},
                                      {"src_physical", 12, 1},
                                      {"dst_physical", 13, 1},
                                      {"semaphore_reduction", 14, 4},
                                      {"reduction_unsigned", 18, 1},
                                      {"reduction_enable", 19, 1},
                                      {"copy_type", 20, 2},
                                      {"vprmode", 22, 1},
                                      {"memory_scrub_enable", 23, 1},
                                      {"flush_type_gl", 25, 1},
                                      {"disable_plc", 26, 1},
                                      {"semaphore_payload_64", 27, 1}};

constexpr MethodInfo kMethods[] = {
    {Engine::Host, host::SET_OBJECT, "SET_OBJECT", kSetObject},
    {Engine::Host, host::NOP, "NOP", {}},
    {Engine::Host, host::NON_STALL_INTERRUPT, "NON_STALL_INTERRUPT", {}},
    {Engine::Host, host::SEM_ADDR_LO, "SEM_ADDR_LO", kSemAddrLo},
    {Engine::Host, host::SEM_ADDR_HI, "SEM_ADDR_HI", kSemAddrHi},
    {Engine::Host, host::SEM_PAYLOAD_LO, "SEM_PAYLOAD_LO", {}},
    {Engine::Host, host::SEM_PAYLOAD_HI, "SEM_PAYLOAD_HI", {}},
    {Engine::Host, host::SEM_EXECUTE, "SEM_EXECUTE", kSemExecute},
    {Engine::Host, host::WFI, "WFI", kWfi},
    {Engine::Compute, compute::SET_SHADER_SHARED_MEMORY_WINDOW_A, "SET_SHADER_SHARED_MEMORY_WINDOW_A", kUpper17},
    {Engine::Compute, compute::SET_SHADER_SHARED_MEMORY_WINDOW_B, "SET_SHADER_SHARED_MEMORY_WINDOW_B", {}},
    {Engine::Compute, compute::SEND_PCAS_A, "SEND_PCAS_A", {}},
    {Engine::Compute, compute::SEND_SIGNALING_PCAS2_B, "SEND_SIGNALING_PCAS2_B", kPcas2},
    {Engine::Compute, compute::SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A, "SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A", kUpper8},
    {Engine::Compute, compute::SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_B, "SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_B", {}},
    {Engine::Compute, compute::SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_C, "SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_C", kNonThrottledC},
    {Engine::Compute, compute::SET_SHADER_LOCAL_MEMORY_A, "SET_SHADER_LOCAL_MEMORY_A", kUpper25},
    {Engine::Compute, compute::SET_SHADER_LOCAL_MEMORY_B, "SET_SHADER_LOCAL_MEMORY_B", {}},
    {Engine::Compute, compute::SET_SHADER_LOCAL_MEMORY_WINDOW_A, "SET_SHADER_LOCAL_MEMORY_WINDOW_A", kUpper17},
    {Engine::Compute, compute::SET_SHADER_LOCAL_MEMORY_WINDOW_B, "SET_SHADER_LOCAL_MEMORY_WINDOW_B", {}},
    {Engine::Compute, compute::INVALIDATE_SHADER_CACHES_NO_WFI, "INVALIDATE_SHADER_CACHES_NO_WFI", kInvalidateShader},
    {Engine::Copy, copy::SET_SEMAPHORE_A, "SET_SEMAPHORE_A", kUpper25},
    {Engine::Copy, copy::SET_SEMAPHORE_B, "SET_SEMAPHORE_B", {}},
    {Engine::Copy, copy::SET_SEMAPHORE_PAYLOAD, "SET_SEMAPHORE_PAYLOAD", {}},
    {Engine::Copy, copy::SET_SEMAPHORE_PAYLOAD_UPPER, "SET_SEMAPHORE_PAYLOAD_UPPER", {}},
    {Engine::Copy, copy::LAUNCH_DMA, "LAUNCH_DMA", kLaunchDma},
    {Engine::Copy, copy::OFFSET_IN_UPPER, "OFFSET_IN_UPPER", kUpper25},
    {Engine::Copy, copy::OFFSET_IN_LOWER, "OFFSET_IN_LOWER", {}},
    {Engine::Copy, copy::OFFSET_OUT_UPPER, "OFFSET_OUT_UPPER", kUpper25},
    {Engine::Copy, copy::OFFSET_OUT_LOWER, "OFFSET_OUT_LOWER", {}},
    {Engine::Copy, copy::PITCH_IN, "PITCH_IN", {}},
    {Engine::Copy, copy::PITCH_OUT, "PITCH_OUT", {}},
    {Engine::Copy, copy::LINE_LENGTH_IN, "LINE_LENGTH_IN", {}},
    {Engine::Copy, copy::LINE_COUNT, "LINE_COUNT", {}},
};

const char* sem_operation(uint32_t op) {
  static constexpr const char* kNames[] = {"ACQUIRE", "RELEASE", "ACQ_STRICT_GEQ", "ACQ_CIRC_GEQ", "ACQ_AND", "ACQ_NOR", "REDUCTION", "?"};
  return kNames[op & 7];
}

}  // namespace

const char* name(Engine e) {
  switch (e) {
    case Engine::Host: return "host";
    case Engine::Compute: return "compute";
    case Engine::Copy: return "copy";
    case Engine::Other: return "unbound";
  }
  return "?";
}

Engine engine_of_class(uint32_t cls) {
  switch (cls & 0xff) {
    case 0xc0: return Engine::Compute;
    case 0xb5: return Engine::Copy;
    default: return Engine::Other;
  }
}

uint32_t method_header(SecOp op, unsigned subchannel, uint32_t method, uint32_t count) {
  if (subchannel >= kSubchannels) throw Error("pushbuffer method header: subchannel " + std::to_string(subchannel) + " (there are 8)");
  if (method > kMaxMethod || method % 4) throw Error("pushbuffer method header: method " + hex(method) + " is not a dword address below 0x4000");
  if (count > kMaxMethodCount)
    throw Error("pushbuffer method header: " + std::to_string(count) +
                (op == SecOp::Immediate ? " does not fit 13 bits of immediate data" : " data dwords (at most 8191)"));
  return static_cast<uint32_t>(op) << 29 | count << 16 | subchannel << 13 | method >> 2;
}

const MethodInfo* find_method(Engine e, uint32_t method) {
  if (method < kHostMethodEnd) e = Engine::Host;
  for (const MethodInfo& m : kMethods)
    if (m.engine == e && m.method == method) return &m;
  return nullptr;
}

std::string describe_method(Engine e, uint32_t method, uint32_t value) {
  const MethodInfo* m = find_method(e, method);
  if (!m) return std::string(name(method < kHostMethodEnd ? Engine::Host : e)) + " method " + hex(method) + " = " + hex(value);
  std::string s = m->name;
  if (m->fields.empty()) return s + " " + hex(value);
  for (const MethodField& f : m->fields) {
    uint32_t v = field_get(value, f);
    if (v == 0 && m->fields.size() > 2) continue;  // wide field tables print only what is set
    s += " " + std::string(f.name) + "=" + hex(v);
    if (m->method == host::SEM_EXECUTE && m->engine == Engine::Host && f.lo == 0) s += std::string("(") + sem_operation(v) + ")";
  }
  if (m->fields.size() > 2 && s == m->name) s += " 0";
  return s;
}

bool PushbufferReader::next(MethodWrite& out) {
  if (!error_.empty()) return false;
  while (left_ == 0) {
    if (pos_ >= w_.size()) return false;
    uint32_t h = w_[pos_];
    header_at_ = static_cast<uint32_t>(pos_++);
    op_ = static_cast<SecOp>(h >> 29);
    subch_ = static_cast<uint8_t>((h >> 13) & 7);
    method_ = (h & 0xfff) << 2;
    uint32_t count = (h >> 16) & 0x1fff;
    switch (op_) {
      case SecOp::Inc:
      case SecOp::NonInc:
      case SecOp::OneInc:
        if (count > w_.size() - pos_) {
          error_ = "method header " + hex(h) + " at dword " + std::to_string(header_at_) + " announces " + std::to_string(count) +
                   " data dwords, but the segment has " + std::to_string(w_.size() - pos_) + " left";
          return false;
        }
        left_ = count;
        first_ = true;
        break;
      case SecOp::Immediate: out = {subch_, static_cast<uint16_t>(method_), count, header_at_}; return true;
      case SecOp::EndSegment: pos_ = w_.size(); return false;
      case SecOp::Grp0:
        if (h == 0) break;  // a NOP dword
        [[fallthrough]];
      default:
        error_ = "method header " + hex(h) + " at dword " + std::to_string(header_at_) + ": " +
                 (op_ == SecOp::Reserved6 ? "SEC_OP 6 is reserved" : "subdevice-mask and legacy method formats are not supported");
        return false;
    }
  }
  out = {subch_, static_cast<uint16_t>(method_), w_[pos_], static_cast<uint32_t>(pos_)};
  ++pos_;
  --left_;
  if (op_ == SecOp::Inc || (op_ == SecOp::OneInc && first_)) method_ = (method_ + 4) & kMaxMethod;
  first_ = false;
  return true;
}

std::string describe_pushbuffer(std::span<const uint32_t> words, const SubchannelMap& initial) {
  PushbufferReader r(words);
  SubchannelMap bound = initial;
  std::string out;
  MethodWrite w;
  char at[32];
  while (r.next(w)) {
    if (w.method == host::SET_OBJECT) bound[w.subchannel] = engine_of_class(w.value & 0xffff);
    std::snprintf(at, sizeof at, "  0x%04x  subch %u ", w.dword, w.subchannel);
    out += at + describe_method(bound[w.subchannel], w.method, w.value) + "\n";
  }
  if (!r.error().empty()) out += "  error: " + r.error() + "\n";
  return out;
}

uint64_t encode_gp_entry(const GpEntry& e) {
  if (e.address >= kGpAddressLimit || e.address % 4)
    throw Error("GPFIFO entry: pushbuffer address " + hex(e.address) + " must be dword aligned and below 2^40");
  if (e.dwords > kGpMaxDwords) throw Error("GPFIFO entry: " + std::to_string(e.dwords) + " dwords (at most 2^21 - 1)");
  return e.address | uint64_t{e.conditional} | uint64_t{e.subroutine} << 41 | uint64_t{e.dwords} << 42 | uint64_t{e.sync_wait} << 63;
}

GpEntry decode_gp_entry(uint64_t raw) {
  GpEntry e;
  e.address = raw & 0xff'ffff'fffcull;
  e.conditional = raw & 1;
  e.subroutine = (raw >> 41) & 1;
  e.dwords = static_cast<uint32_t>((raw >> 42) & kGpMaxDwords);
  e.sync_wait = raw >> 63;
  return e;
}

}  // namespace ugpu::hw::nv
