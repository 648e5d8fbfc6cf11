#include "emu/amd/engines.h"

#include <chrono>
#include <cstdio>
#include <cstring>

#include "common/hex.h"
#include "hw/amd/gfx11_regs.h"
#include "hw/amd/pm4.h"
#include "hw/amd/sdma6_packets.h"

namespace ugpu::emu::amd {
namespace pm4 = hw::amd::pm4;
namespace sdma = hw::amd::sdma6;
namespace gfx11 = hw::amd::gfx11;
using hw::amd::DecodedPacket;
using hw::amd::Engine;

namespace {
template <class T>
void store(uint8_t* p, T v) {
  __atomic_store_n(reinterpret_cast<T*>(p), v, __ATOMIC_RELEASE);
}
template <class T>
T load(const uint8_t* p) {
  return __atomic_load_n(reinterpret_cast<const T*>(p), __ATOMIC_ACQUIRE);
}
bool compare(uint32_t function, uint32_t v, uint32_t ref) {
  switch (function) {
    case pm4::kAlways: return true;
    case pm4::kLess: return v < ref;
    case pm4::kLessEqual: return v <= ref;
    case pm4::kEqual: return v == ref;
    case pm4::kNotEqual: return v != ref;
    case pm4::kGreaterEqual: return v >= ref;
    case pm4::kGreater: return v > ref;
    default: return false;
  }
}
constexpr int kMaxIbDepth = 1;
}  // namespace

uint64_t GpuContext::clock() {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  return static_cast<uint64_t>(ns) / 10;
}

QueueEngine::QueueEngine(GpuContext& gpu, QueueSetup s) : gpu_(gpu), s_(s) {
  thread_ = std::thread([this] { loop(); });
}

QueueEngine::~QueueEngine() {
  stop_ = true, interrupt_ = true;
  kick();
  thread_.join();
}

void QueueEngine::kick() {
  {
    std::lock_guard lock(mu_);
    kicked_ = true;
  }
  cv_.notify_all();
}

void QueueEngine::loop() {
  auto backoff = std::chrono::microseconds(20);
  int idle = 0;
  while (!stop_) {
    uint64_t w = s_.doorbell->load(std::memory_order_acquire);
    if (!halted_ && w != rptr_) {
      idle = 0, backoff = std::chrono::microseconds(20);
      GpuMemory::Use use(gpu_.memory);
      if (!step(w)) halted_ = true;
      continue;
    }
    // Idle: look again soon (a submit that follows quickly is seen at once), then less and less often.
    if (++idle < 64) {
      std::this_thread::yield();
      continue;
    }
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, backoff, [&] { return kicked_ || stop_.load(); });
    if (!kicked_) backoff = std::min(backoff * 2, std::chrono::microseconds(2000));
    kicked_ = false;
  }
}

bool QueueEngine::device_fault(const std::string& what) {
  const char* q = s_.kind == QueueKind::Compute ? "compute" : "SDMA";
  std::string at;
  if (where_.known) {
    at = " at ring dword " + hex(where_.ring_dword);
    if (where_.packet) at += " (" + std::string(where_.packet->name) + ")";
    if (where_.ib)
      at += ", IB " + hex(where_.ib) + " dword " + hex(where_.ib_dword) + (where_.ib_packet ? " (" + std::string(where_.ib_packet->name) + ")" : "");
  }
  gpu_.on_device_fault(std::string(q) + " queue " + std::to_string(s_.id) + at + ": " + what);
  return false;
}

bool QueueEngine::page_fault(uint64_t va, Access a, const std::string& what) {
  const char* q = s_.kind == QueueKind::Compute ? "compute" : "SDMA";
  gpu_.on_page_fault(va, a, std::string(q) + " queue " + std::to_string(s_.id) + ": GPU page fault: " + what);
  return false;
}

uint8_t* QueueEngine::at(uint64_t va, uint64_t size, Access a, const char* what) {
  uint8_t* p = gpu_.memory.host(va, size, a);
  if (!p) page_fault(va, a, std::string(what) + " " + name(a) + " of " + std::to_string(size) + " bytes at " + hex(va) + " is not mapped");
  return p;
}

bool QueueEngine::step(uint64_t w) {
  const bool compute = s_.kind == QueueKind::Compute;
  const uint64_t unit = compute ? 1 : 4;  // the pointers count dwords (PM4) or bytes (SDMA)
  const uint64_t ring_dw = s_.ring_bytes / 4;
  where_ = {};
  if (w < rptr_ || (w - rptr_) / unit > ring_dw)
    return device_fault("the write pointer " + std::to_string(w) + " is " + (w < rptr_ ? "behind" : "more than a ring ahead of") +
                        " the read pointer " + std::to_string(rptr_) + ": the ring was overrun or corrupted");
  if (!compute && (w % 4 || rptr_ % 4)) return device_fault("SDMA write pointer " + std::to_string(w) + " is not dword aligned");
  auto* ring = reinterpret_cast<uint32_t*>(at(s_.ring_va, s_.ring_bytes, Access::Read, "ring"));
  if (!ring) return false;
  uint64_t pos = (rptr_ / unit) % ring_dw, avail = (w - rptr_) / unit;
  where_.known = true, where_.ring_dword = pos;
  Engine e = compute ? Engine::Pm4 : Engine::Sdma;
  std::span<const uint32_t> stream(ring + pos, std::min(avail, ring_dw - pos));
  DecodedPacket p = hw::amd::decode_packet(e, stream);
  std::vector<uint32_t> wrapped;
  if (p.truncated && stream.size() < avail) {  // the packet continues at the ring's start
    if (!compute) return device_fault(p.format->name + std::string(" straddles the end of the ring (SDMA packets must not wrap)"));
    wrapped.assign(stream.begin(), stream.end());
    wrapped.insert(wrapped.end(), ring, ring + std::min<uint64_t>(avail - stream.size(), 0x4001));
    p = hw::amd::decode_packet(e, wrapped);
  }
  if (!p.ok()) return device_fault(p.error + (p.truncated ? " (the write pointer ends the submission there)" : ""));
  where_.packet = p.format;
  bool ok = compute ? pm4(p, 0) : sdma(p, 0);
  if (!ok) return false;
  rptr_ += p.words.size() * unit;
  if (uint8_t* r = at(s_.rptr_va, 8, Access::Write, "read-pointer write-back")) store<uint64_t>(r, rptr_);
  ++gpu_.packets;
  return !halted_;
}

bool QueueEngine::wait_until(const std::function<bool()>& ready) {
  auto sleep = std::chrono::microseconds(5);
  for (int spin = 0; !ready(); ++spin) {
    if (stop_ || halted_) return false;
    if (spin < 64) {
      std::this_thread::yield();
      continue;
    }
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, std::chrono::microseconds(500));
  }
  return true;
}

uint32_t QueueEngine::reg(uint32_t a) const {
  if (a >= pm4::kSetShRegStart && a < pm4::kShRegEnd) return sh_[a - pm4::kSetShRegStart];
  return 0;
}

bool QueueEngine::run_ib(uint64_t va, uint64_t dwords, int depth) {
  if (depth >= kMaxIbDepth) return device_fault("an indirect buffer inside an indirect buffer (chaining is not modelled)");
  if (va % 4 || !dwords) return device_fault("indirect buffer at " + hex(va) + " of " + std::to_string(dwords) + " dwords");
  auto* ib = reinterpret_cast<const uint32_t*>(at(va, dwords * 4, Access::Read, "indirect buffer"));
  if (!ib) return false;
  std::span<const uint32_t> all(ib, dwords);
  where_.ib = va;
  Engine e = s_.kind == QueueKind::Compute ? Engine::Pm4 : Engine::Sdma;
  for (size_t i = 0; i < all.size();) {
    where_.ib_dword = i, where_.ib_packet = nullptr;
    DecodedPacket p = hw::amd::decode_packet(e, all.subspan(i));
    if (!p.ok()) return device_fault(p.error);
    where_.ib_packet = p.format;
    if (!(e == Engine::Pm4 ? pm4(p, depth + 1) : sdma(p, depth + 1))) return false;
    i += p.words.size();
  }
  where_.ib = 0;
  return true;
}

bool QueueEngine::pm4(const DecodedPacket& p, int depth) {
  const hw::amd::PacketFormat* f = p.format;
  auto mem_write = [&](uint64_t va, uint64_t v, int bytes, const char* what) {
    if (va % static_cast<uint64_t>(bytes))
      return device_fault(std::string(what) + " address " + hex(va) + " is not " + std::to_string(bytes) + "-byte aligned");
    uint8_t* h = at(va, static_cast<uint64_t>(bytes), Access::Write, what);
    if (!h) return false;
    bytes == 4 ? store<uint32_t>(h, static_cast<uint32_t>(v)) : store<uint64_t>(h, v);
    return true;
  };
  if (f == &pm4::Nop::format) return true;
  if (f == &pm4::SetShReg::format || f == &pm4::SetUconfigReg::format) {
    bool sh = f == &pm4::SetShReg::format;
    uint32_t start = (sh ? pm4::kSetShRegStart : pm4::kSetUconfigRegStart) + static_cast<uint32_t>(p.get(pm4::SetShReg::reg_offset));
    for (size_t i = 0; i < p.data().size(); ++i) {
      uint32_t a = start + static_cast<uint32_t>(i);
      std::string name = hw::amd::register_name(a, gpu_.bases);
      if (name.empty() || (sh && (a < pm4::kSetShRegStart || a >= pm4::kShRegEnd)))
        return device_fault(std::string(f->name) + " of register " + hex(a) + ", which the emulator does not model");
      if (sh) sh_[a - pm4::kSetShRegStart] = p.data()[i];  // GRBM_GFX_INDEX (uconfig) only selects SEs: nothing to keep
    }
    return true;
  }
  if (f == &pm4::AcquireMem::format) {
    if (p.get(pm4::AcquireMem::gcr_cntl) & 3) {  // GLI_INV: the instruction cache; code may have been rewritten
      std::lock_guard lock(gpu_.executor_mu);
      gpu_.executor.invalidate_code();
    }
    return true;
  }
  if (f == &pm4::ReleaseMem::format) {
    using R = pm4::ReleaseMem;
    uint64_t ev = p.get(R::event_type), idx = p.get(R::event_index);
    if (!((ev == pm4::kEventCacheFlushAndInvTs || ev == pm4::kEventBottomOfPipeTs) && idx == pm4::kEventIndexEndOfPipe))
      return device_fault("RELEASE_MEM event " + std::to_string(ev) + " index " + std::to_string(idx) +
                          " is not an end-of-pipe event the emulator models");
    uint64_t addr = p.get(R::address), data = p.get(R::data);
    switch (p.get(R::data_sel)) {
      case pm4::kDataNone: break;
      case pm4::kData32:
        if (!mem_write(addr, data, 4, "RELEASE_MEM")) return false;
        break;
      case pm4::kData64:
        if (!mem_write(addr, data, 8, "RELEASE_MEM")) return false;
        break;
      case pm4::kDataGpuClock:
      case pm4::kDataSysClock:
        if (!mem_write(addr, GpuContext::clock(), 8, "RELEASE_MEM timestamp")) return false;
        break;
      default: return device_fault("RELEASE_MEM data_sel " + std::to_string(p.get(R::data_sel)));
    }
    uint64_t is = p.get(R::int_sel);
    if (is > pm4::kIntAfterWrite) return device_fault("RELEASE_MEM int_sel " + std::to_string(is));
    if (is != pm4::kIntNone) gpu_.on_interrupt(static_cast<uint32_t>(p.get(R::int_ctxid)), QueueKind::Compute);
    return true;
  }
  if (f == &pm4::WaitRegMem::format) {
    using W = pm4::WaitRegMem;
    uint32_t fn = static_cast<uint32_t>(p.get(W::function)), ref = static_cast<uint32_t>(p.get(W::reference)),
             mask = static_cast<uint32_t>(p.get(W::mask));
    uint64_t addr = p.get(W::address);
    if (fn > pm4::kGreater) return device_fault("WAIT_REG_MEM function " + std::to_string(fn));
    if (p.get(W::mem_space) == 1) {
      if (p.get(W::operation) != 0) return device_fault("WAIT_REG_MEM on memory with operation " + std::to_string(p.get(W::operation)));
      if (addr % 4) return device_fault("WAIT_REG_MEM address " + hex(addr) + " is not dword aligned");
      const uint8_t* h = at(addr, 4, Access::Read, "WAIT_REG_MEM");
      if (!h) return false;
      return wait_until([&] { return compare(fn, load<uint32_t>(h) & mask, ref); });
    }
    // Registers: the HDP flush handshake (write REQ, wait for DONE), which completes at once here.
    uint32_t poll = static_cast<uint32_t>(addr), write = static_cast<uint32_t>(addr >> 32);
    uint32_t req = hw::amd::address_of(gfx11::BIF_BX_PF0_GPU_HDP_FLUSH_REQ, gpu_.bases);
    uint32_t done = hw::amd::address_of(gfx11::BIF_BX_PF0_GPU_HDP_FLUSH_DONE, gpu_.bases);
    if (p.get(W::operation) == 1 && write != req)
      return device_fault("WAIT_REG_MEM writes register " + hex(write) + ", which the emulator does not model");
    if (poll != done) return device_fault("WAIT_REG_MEM polls register " + hex(poll) + ", which the emulator does not model");
    if (p.get(W::operation) == 1) hdp_flush_ = ref;
    if (!compare(fn, hdp_flush_ & mask, ref)) return device_fault("WAIT_REG_MEM on HDP_FLUSH_DONE would never complete (no flush was requested)");
    return true;
  }
  if (f == &pm4::DispatchDirect::format) return dispatch(p);
  if (f == &pm4::IndirectBuffer::format) {
    using I = pm4::IndirectBuffer;
    if (!p.get(I::valid)) return device_fault("INDIRECT_BUFFER without the valid bit");
    if (p.get(I::chain)) return device_fault("chained INDIRECT_BUFFER (not modelled)");
    return run_ib(p.get(I::address), p.get(I::size), depth);
  }
  if (f == &pm4::EventWrite::format) {
    if (p.get(pm4::EventWrite::event_type) == pm4::kEventCsPartialFlush) return true;  // dispatches complete in order here
    return device_fault("EVENT_WRITE event " + std::to_string(p.get(pm4::EventWrite::event_type)) + " is not modelled");
  }
  if (f == &pm4::CopyData::format) {
    using C = pm4::CopyData;
    bool wide = p.get(C::count_sel);
    uint64_t src = p.get(C::src), v = 0;
    switch (p.get(C::src_sel)) {
      case 0: v = reg(static_cast<uint32_t>(src)); break;
      case 1:
      case 2: {
        const uint8_t* h = at(src, wide ? 8 : 4, Access::Read, "COPY_DATA source");
        if (!h) return false;
        v = wide ? load<uint64_t>(h) : load<uint32_t>(h);
        break;
      }
      case 5: v = wide ? src : static_cast<uint32_t>(src); break;
      case 9: v = GpuContext::clock(); break;
      default: return device_fault("COPY_DATA src_sel " + std::to_string(p.get(C::src_sel)) + " is not modelled");
    }
    switch (p.get(C::dst_sel)) {
      case 1:
      case 2:
      case 5: return mem_write(p.get(C::dst), v, wide ? 8 : 4, "COPY_DATA");
      default: return device_fault("COPY_DATA dst_sel " + std::to_string(p.get(C::dst_sel)) + " is not modelled");
    }
  }
  if (f == &pm4::DmaData::format) {
    using M = pm4::DmaData;
    if (p.get(M::src_sel) || p.get(M::dst_sel) || p.get(M::sas) || p.get(M::das) || p.get(M::saic) || p.get(M::daic))
      return device_fault("DMA_DATA other than memory to memory is not modelled");
    return copy(p.get(M::src), p.get(M::dst), p.get(M::byte_count), "DMA_DATA");
  }
  return device_fault(std::string(f->name) + " is not modelled on compute queues");
}

bool QueueEngine::dispatch(const DecodedPacket& p) {
  using D = pm4::DispatchDirect;
  namespace init = gfx11::COMPUTE_DISPATCH_INITIATOR_fields;
  namespace tmp = gfx11::COMPUTE_TMPRING_SIZE_fields;
  auto r = [&](const hw::amd::Register& x) { return sh_[hw::amd::address_of(x, gpu_.bases) - pm4::kSetShRegStart]; };
  uint32_t initiator = static_cast<uint32_t>(p.get(D::initiator));
  if (!init::COMPUTE_SHADER_EN.get(initiator)) return device_fault("DISPATCH_DIRECT without COMPUTE_SHADER_EN");
  if (!init::CS_W32_EN.get(initiator)) return device_fault("a wave64 dispatch (CS_W32_EN clear): the emulator runs wave32 only");
  if (!init::FORCE_START_AT_000.get(initiator) && (r(gfx11::COMPUTE_START_X) | r(gfx11::COMPUTE_START_Y) | r(gfx11::COMPUTE_START_Z)))
    return device_fault("a dispatch that starts past workgroup 0 (COMPUTE_START_*) is not modelled");
  Dispatch d;
  d.entry = (uint64_t{r(gfx11::COMPUTE_PGM_HI)} << 32 | r(gfx11::COMPUTE_PGM_LO)) << 8;
  auto& kd = d.descriptor;
  kd.compute_pgm_rsrc1 = r(gfx11::COMPUTE_PGM_RSRC1);
  kd.compute_pgm_rsrc2 = r(gfx11::COMPUTE_PGM_RSRC2);
  kd.compute_pgm_rsrc3 = r(gfx11::COMPUTE_PGM_RSRC3);
  kd.kernel_code_properties = static_cast<uint16_t>(hw::amd::code_props::kWavefrontSize32.set(0, 1));
  kd.group_segment_fixed_size = hw::amd::rsrc2::kLdsGranules.get(kd.compute_pgm_rsrc2) * 512;
  uint32_t tmpring = r(gfx11::COMPUTE_TMPRING_SIZE);
  uint32_t wave_bytes = tmp::WAVESIZE.get(tmpring) * 256;
  kd.private_segment_fixed_size = wave_bytes / 32;
  if (hw::amd::rsrc2::kPrivateSegment.get(kd.compute_pgm_rsrc2) && wave_bytes) {
    uint64_t base = (uint64_t{r(gfx11::COMPUTE_DISPATCH_SCRATCH_BASE_HI)} << 32 | r(gfx11::COMPUTE_DISPATCH_SCRATCH_BASE_LO)) << 8;
    uint64_t need = uint64_t{tmp::WAVES.get(tmpring)} * wave_bytes;
    if (!need || !at(base, need, Access::Write, "scratch (COMPUTE_DISPATCH_SCRATCH_BASE, COMPUTE_TMPRING_SIZE)")) return false;
  }
  uint32_t users = hw::amd::rsrc2::kUserSgprCount.get(kd.compute_pgm_rsrc2);
  if (users > 16) return device_fault("RSRC2 asks for " + std::to_string(users) + " user SGPRs; COMPUTE_USER_DATA has 16");
  const uint32_t user_data = hw::amd::address_of(gfx11::COMPUTE_USER_DATA_0, gpu_.bases) - pm4::kSetShRegStart;
  for (uint32_t i = 0; i < users; ++i) d.user_sgprs[i] = sh_[user_data + i];
  d.workgroups = {static_cast<uint32_t>(p.get(D::dim_x)), static_cast<uint32_t>(p.get(D::dim_y)), static_cast<uint32_t>(p.get(D::dim_z))};
  d.workgroup_size = {r(gfx11::COMPUTE_NUM_THREAD_X) & 0x3ff, r(gfx11::COMPUTE_NUM_THREAD_Y) & 0x3ff, r(gfx11::COMPUTE_NUM_THREAD_Z) & 0x3ff};
  d.memory = &gpu_.memory;
  if (!d.workgroups[0] || !d.workgroups[1] || !d.workgroups[2]) return true;  // an empty grid launches nothing
  RunOptions o;
  o.threads = gpu_.executor_threads;
  o.interrupt = &interrupt_;
  RunResult res;
  try {
    std::lock_guard lock(gpu_.executor_mu);
    res = gpu_.executor.run(d, o);
  } catch (const std::exception& e) { return device_fault(std::string("dispatch refused: ") + e.what()); }
  ++gpu_.dispatches;
  gpu_.wave_instructions += res.wave_instructions;
  if (!res.fault) return true;
  const Fault& f = *res.fault;
  if (f.kind == Fault::Kind::Interrupted) return false;  // the queue is being destroyed
  // A global address goes through the GPU's page tables: a page fault (KFD's memory exception).
  // LDS and scratch are per-workgroup and per-lane allocations, not pages: running past their end is
  // the wave's error, reported as a hardware exception that names it.
  if (f.kind == Fault::Kind::Memory && f.space != "LDS" && f.space != "scratch") return page_fault(f.address, f.access, f.message);
  return device_fault(f.message);
}

bool QueueEngine::copy(uint64_t src, uint64_t dst, uint64_t n, const char* what) {
  for (uint64_t done = 0; done < n;) {
    auto s = gpu_.memory.translate(src + done, 1, Access::Read);
    if (!s) return page_fault(src + done, Access::Read, std::string(what) + " reads " + hex(src + done) + ", which is not mapped");
    auto t = gpu_.memory.translate(dst + done, 1, Access::Write);
    if (!t) return page_fault(dst + done, Access::Write, std::string(what) + " writes " + hex(dst + done) + ", which is not mapped or read-only");
    uint64_t chunk = std::min({n - done, s->device + s->size - (src + done), t->device + t->size - (dst + done)});
    std::memmove(t->host + (dst + done - t->device), s->host + (src + done - s->device), chunk);
    done += chunk;
  }
  return true;
}

bool QueueEngine::sdma(const DecodedPacket& p, int depth) {
  const hw::amd::PacketFormat* f = p.format;
  if (f == &sdma::Nop::format) return true;
  if (f == &sdma::CopyLinear::format)
    return copy(p.get(sdma::CopyLinear::src_addr), p.get(sdma::CopyLinear::dst_addr), p.get(sdma::CopyLinear::count) + 1, "COPY_LINEAR");
  if (f == &sdma::Fence::format) {
    uint64_t a = p.get(sdma::Fence::addr);
    if (a % 4) return device_fault("FENCE address " + hex(a) + " is not dword aligned");
    uint8_t* h = at(a, 4, Access::Write, "FENCE");
    if (!h) return false;
    store<uint32_t>(h, static_cast<uint32_t>(p.get(sdma::Fence::data)));
    return true;
  }
  if (f == &sdma::Trap::format) {
    gpu_.on_interrupt(static_cast<uint32_t>(p.get(sdma::Trap::int_context)), QueueKind::Sdma);
    return true;
  }
  if (f == &sdma::PollRegmem::format) {
    using P = sdma::PollRegmem;
    if (!p.get(P::mem_poll)) {
      if (p.get(P::hdp_flush)) return true;  // an HDP flush request: done at once here
      return device_fault("POLL_REGMEM on a register (not modelled)");
    }
    uint64_t a = p.get(P::addr);
    uint32_t fn = static_cast<uint32_t>(p.get(P::func)), ref = static_cast<uint32_t>(p.get(P::value)), mask = static_cast<uint32_t>(p.get(P::mask));
    if (a % 4 || fn > pm4::kGreater) return device_fault("POLL_REGMEM address " + hex(a) + " function " + std::to_string(fn));
    const uint8_t* h = at(a, 4, Access::Read, "POLL_REGMEM");
    if (!h) return false;
    return wait_until([&] { return compare(fn, load<uint32_t>(h) & mask, ref); });
  }
  if (f == &sdma::TimestampGetGlobal::format) {
    uint64_t a = p.get(sdma::TimestampGetGlobal::write_addr);
    if (a % 8) return device_fault("TIMESTAMP address " + hex(a) + " is not 8-byte aligned");
    uint8_t* h = at(a, 8, Access::Write, "TIMESTAMP");
    if (!h) return false;
    store<uint64_t>(h, GpuContext::clock());
    return true;
  }
  if (f == &sdma::WriteUntiled::format) {
    uint64_t a = p.get(sdma::WriteUntiled::dst_addr);
    std::span<const uint32_t> data = p.data();
    if (a % 4) return device_fault("WRITE address " + hex(a) + " is not dword aligned");
    uint8_t* h = at(a, data.size() * 4, Access::Write, "WRITE");
    if (!h) return false;
    for (size_t i = 0; i < data.size(); ++i) store<uint32_t>(h + 4 * i, data[i]);
    return true;
  }
  if (f == &sdma::Indirect::format) return run_ib(p.get(sdma::Indirect::ib_base), p.get(sdma::Indirect::ib_size), depth);
  return device_fault(std::string(f->name) + " is not modelled on SDMA queues");
}

}  // namespace ugpu::emu::amd
