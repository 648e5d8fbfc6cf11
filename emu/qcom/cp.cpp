#include "emu/qcom/cp.h"

#include <chrono>
#include <cstring>
#include <thread>

#include "common/hex.h"
#include "hw/qcom/a6xx_regs.h"
#include "hw/qcom/packets.h"
#include "hw/qcom/pm4_opcodes.h"
#include "hw/qcom/pm4_packets.h"

namespace ugpu::emu::qcom {
namespace pm4 = hw::qcom::pm4;
namespace a6xx = hw::qcom::a6xx;

namespace {
uint64_t addr64(uint32_t lo, uint32_t hi) { return uint64_t{hi} << 32 | lo; }

bool compare(uint32_t function, bool is_signed, uint32_t value, uint32_t ref) {
  auto cmp = [&](auto a, auto b) {
    switch (function) {
      case pm4::WRITE_ALWAYS: return true;
      case pm4::WRITE_LT: return a < b;
      case pm4::WRITE_LE: return a <= b;
      case pm4::WRITE_EQ: return a == b;
      case pm4::WRITE_NE: return a != b;
      case pm4::WRITE_GE: return a >= b;
      case pm4::WRITE_GT: return a > b;
    }
    return false;
  };
  return is_signed ? cmp(int32_t(value), int32_t(ref)) : cmp(value, ref);
}
}  // namespace

uint64_t CommandProcessor::always_on_counter() {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  return static_cast<uint64_t>(ns) / 1000 * 192 / 10000;  // 19.2 ticks per microsecond
}

void CommandProcessor::fault(const std::string& what) const {
  throw CpFault("CP fault at " + hex(where_) + (*packet_name_ ? std::string(" (") + packet_name_ + ")" : std::string()) + ": " + what);
}

uint8_t* CommandProcessor::at(uint64_t address, uint64_t bytes, Access access, const char* what) {
  auto s = memory_.translate(address, bytes, access);
  if (!s) fault(std::string("page fault: ") + name(access) + " of " + std::to_string(bytes) + " bytes at " + hex(address) + " (" + what + ")");
  return s->host + (address - s->device);
}

bool CommandProcessor::run_ib(uint64_t address, uint64_t dwords, int depth, const std::atomic<bool>& cancelled) {
  if (address % 4) fault("an indirect buffer at " + hex(address) + " is not dword aligned");
  if (dwords == 0) return true;
  GpuMemory::Use use(memory_);
  const auto* words = reinterpret_cast<const uint32_t*>(at(address, dwords * 4, Access::Read, "indirect buffer"));
  for (uint64_t i = 0; i < dwords;) {
    where_ = address + i * 4, packet_name_ = "";
    std::string why;
    auto h = hw::qcom::read_header(words[i], &why);
    if (!h) fault("not a packet header: " + hex(words[i]) + " (" + why + ")");
    if (i + 1 + h->count > dwords)
      fault("a packet of " + std::to_string(h->count) + " dwords runs past the end of its " + std::to_string(dwords) + "-dword indirect buffer");
    std::span<const uint32_t> payload(words + i + 1, h->count);
    ++packets_;
    if (!h->type7) {
      if (uint64_t{h->reg} + h->count > kRegisters) fault("a register write past the register space");
      std::copy(payload.begin(), payload.end(), regs_.begin() + h->reg);
    } else {
      std::string n = hw::qcom::opcode_name(h->opcode);
      static thread_local std::string name_buf;
      name_buf = n.empty() ? "opcode " + hex(h->opcode) : n;
      packet_name_ = name_buf.c_str();
      if (n.empty()) fault("an opcode the A6XX tables do not have");
      if (!packet(h->opcode, payload, depth, cancelled)) return false;
    }
    i += 1 + h->count;
  }
  return true;
}

bool CommandProcessor::packet(uint8_t op, std::span<const uint32_t> p, int depth, const std::atomic<bool>& cancelled) {
  auto need = [&](size_t n) {
    if (p.size() < n) fault("needs " + std::to_string(n) + " payload dwords, has " + std::to_string(p.size()));
  };
  switch (op) {
    case pm4::CP_NOP:
    case pm4::CP_WAIT_FOR_IDLE:  // the CP runs one packet at a time: everything before has finished
    case pm4::CP_WAIT_MEM_WRITES:
    case pm4::CP_WAIT_FOR_ME:
    case pm4::CP_SET_MARKER: return true;
    case pm4::CP_EVENT_WRITE: {
      need(1);
      uint32_t event = pm4::CP_EVENT_WRITE_0::EVENT.get(p[0]);
      if (event != pm4::CACHE_FLUSH_TS && event != pm4::CACHE_INVALIDATE && event != pm4::WT_DONE_TS && event != pm4::RB_DONE_TS)
        fault("event " + std::to_string(event) + " is not modelled");
      if (pm4::CP_EVENT_WRITE_0::TIMESTAMP.get(p[0])) fault("the TIMESTAMP form is not modelled");
      if (event == pm4::CACHE_INVALIDATE) return true;
      if (p.size() == 1) return true;  // a flush without a write
      need(4);
      uint32_t v = p[3];
      std::memcpy(at(addr64(p[1], p[2]), 4, Access::Write, "event write"), &v, 4);
      return true;
    }
    case pm4::CP_MEM_WRITE: {
      need(3);
      size_t n = p.size() - 2;
      std::memcpy(at(addr64(p[0], p[1]), n * 4, Access::Write, "memory write"), p.data() + 2, n * 4);
      return true;
    }
    case pm4::CP_REG_TO_MEM: {
      need(3);
      uint32_t reg = pm4::CP_REG_TO_MEM_0::REG.get(p[0]), cnt = std::max<uint32_t>(pm4::CP_REG_TO_MEM_0::CNT.get(p[0]), 1);
      if (pm4::CP_REG_TO_MEM_0::ACCUMULATE.get(p[0])) fault("the ACCUMULATE form is not modelled");
      if (uint64_t{reg} + cnt > kRegisters) fault("registers past the register space");
      std::vector<uint32_t> v(regs_.begin() + reg, regs_.begin() + reg + cnt);
      uint64_t aon = always_on_counter();  // one snapshot for both halves
      for (uint32_t i = 0; i < cnt; ++i)
        if (reg + i == a6xx::CP_ALWAYS_ON_COUNTER.offset) v[i] = uint32_t(aon);
        else if (reg + i == a6xx::CP_ALWAYS_ON_COUNTER.offset + 1) v[i] = uint32_t(aon >> 32);
      std::memcpy(at(addr64(p[1], p[2]), cnt * 4, Access::Write, "register to memory"), v.data(), cnt * 4);
      return true;
    }
    case pm4::CP_WAIT_REG_MEM: {
      need(6);
      uint32_t fn = pm4::CP_WAIT_REG_MEM_0::FUNCTION.get(p[0]), poll = pm4::CP_WAIT_REG_MEM_0::POLL.get(p[0]);
      bool is_signed = pm4::CP_WAIT_REG_MEM_0::SIGNED_COMPARE.get(p[0]);
      if (fn > pm4::WRITE_GT) fault("compare function " + std::to_string(fn) + " is not defined");
      if (poll != pm4::POLL_MEMORY && poll != pm4::POLL_REGISTER) fault("poll source " + std::to_string(poll) + " is not modelled");
      if (pm4::CP_WAIT_REG_MEM_0::WRITE_MEMORY.get(p[0])) fault("the WRITE_MEMORY form is not modelled");
      uint64_t address = addr64(p[1], p[2]);
      auto value = [&] {
        if (poll == pm4::POLL_REGISTER) return reg(uint32_t(address));
        uint32_t v;
        std::memcpy(&v, at(address, 4, Access::Read, "wait"), 4);
        return v;
      };
      for (auto sleep = std::chrono::microseconds(1); !compare(fn, is_signed, value() & p[4], p[3]);) {
        if (cancelled.load(std::memory_order_relaxed)) return false;
        std::this_thread::sleep_for(sleep);
        sleep = std::min(sleep * 2, std::chrono::microseconds(200));
      }
      return true;
    }
    case pm4::CP_MEMCPY: {
      need(5);
      uint64_t bytes = uint64_t{p[0]} * 4, src = addr64(p[1], p[2]), dst = addr64(p[3], p[4]);
      if ((src | dst) % 4) fault("source " + hex(src) + " and destination " + hex(dst) + " must be dword aligned");
      if (bytes == 0) return true;
      const uint8_t* s = at(src, bytes, Access::Read, "copy source");
      std::memmove(at(dst, bytes, Access::Write, "copy destination"), s, bytes);
      return true;
    }
    case pm4::CP_LOAD_STATE6_FRAG:
    case pm4::CP_LOAD_STATE6_GEOM: load_state(p); return true;
    case pm4::CP_EXEC_CS: exec_cs(p, cancelled); return !cancelled.load();
    case pm4::CP_INDIRECT_BUFFER: {
      need(3);
      if (depth >= kMaxIbDepth) fault("indirect buffers nest deeper than " + std::to_string(kMaxIbDepth));
      uint32_t size = p[2] & 0xfffff;
      uint64_t address = addr64(p[0], p[1]), where = where_;
      const char* name = packet_name_;
      bool done = run_ib(address, size, depth + 1, cancelled);
      where_ = where, packet_name_ = name;
      return done;
    }
    case pm4::CP_RUN_OPENCL: fault("Qualcomm's OpenCL binaries are not emulated: only ir3 code through CP_EXEC_CS");
    default: fault("not modelled by the emulated CP");
  }
}

void CommandProcessor::load_state(std::span<const uint32_t> p) {
  if (p.size() < 3) fault("needs 3 payload dwords");
  namespace f = pm4::CP_LOAD_STATE6_0;
  uint32_t dst = f::DST_OFF.get(p[0]), type = f::STATE_TYPE.get(p[0]), src = f::STATE_SRC.get(p[0]);
  uint32_t block = f::STATE_BLOCK.get(p[0]), units = f::NUM_UNIT.get(p[0]);
  if (block != pm4::SB6_CS_SHADER || (type != pm4::ST6_CONSTANTS && type != pm4::ST6_SHADER))
    fault("state block " + std::to_string(block) + " type " + std::to_string(type) + " is not modelled (compute constants and shader only)");
  if (src != pm4::SS6_DIRECT && src != pm4::SS6_INDIRECT) fault("state source " + std::to_string(src) + " is not modelled");
  if (type == pm4::ST6_SHADER) {  // a prefetch of the code SP_CS_OBJ_START names: check it can be fetched
    if (src == pm4::SS6_INDIRECT && units) at(addr64(p[1], p[2]), 8, Access::Execute, "shader prefetch");
    return;
  }
  if (uint64_t{dst} + units > kConstVec4) fault("constants " + std::to_string(dst) + "+" + std::to_string(units) + " past the constant file");
  const uint32_t* data;
  if (src == pm4::SS6_INDIRECT) {
    data = units ? reinterpret_cast<const uint32_t*>(at(addr64(p[1], p[2]), uint64_t{units} * 16, Access::Read, "constants")) : nullptr;
  } else {
    if (p.size() < 3 + size_t{units} * 4) fault("direct constants run past the packet");
    data = p.data() + 3;
  }
  if (units) std::memcpy(consts_.data() + dst * 4, data, size_t{units} * 16);
}

void CommandProcessor::exec_cs(std::span<const uint32_t> p, const std::atomic<bool>& cancelled) {
  if (p.size() < 4) fault("needs 4 payload dwords");
  if (!sp_) fault("this emulated Adreno has no shader processor");
  if (sp_cs_cntl_ &&
      (reg(a6xx::SP_CS_CNTL_0.offset) != reg(a6xx::HLSQ_CS_CNTL_0.offset) || reg(a6xx::SP_CS_CNTL_1.offset) != reg(a6xx::HLSQ_CS_CNTL_1.offset)))
    fault("SP_CS_CNTL_0/1 (" + hex(reg(a6xx::SP_CS_CNTL_0.offset)) + ", " + hex(reg(a6xx::SP_CS_CNTL_1.offset)) +
          ") do not repeat HLSQ_CS_CNTL_0/1 (" + hex(reg(a6xx::HLSQ_CS_CNTL_0.offset)) + ", " + hex(reg(a6xx::HLSQ_CS_CNTL_1.offset)) +
          "): this chip reads the ids from both");
  ComputeDispatch d;
  d.reg = [this](uint32_t o) { return reg(o); };
  d.consts = consts_;
  d.groups = {p[1], p[2], p[3]};
  ++dispatches_;
  if (d.groups[0] == 0 || d.groups[1] == 0 || d.groups[2] == 0) return;
  try {
    instructions_ += sp_->run(d, memory_, cancelled);
  } catch (const CpFault& e) { fault(e.what()); }
}

}  // namespace ugpu::emu::qcom
