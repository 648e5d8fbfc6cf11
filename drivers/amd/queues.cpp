// The command encoders: HCQ commands as PM4 packets (compute queue) and SDMA packets (copy queue),
// every packet built from the hw/amd tables. Variable values (hcq::Val) become patch slots at the
// dwords of the field that holds them.
#include <cstring>

#include "drivers/amd/internal.h"
#include "hw/amd/pm4.h"
#include "hw/amd/sdma6_packets.h"

namespace ugpu::amd {
namespace pm4 = hw::amd::pm4;
namespace sdma = hw::amd::sdma6;
using hcq::Val;
using hw::amd::Packet;

namespace {

class AmdQueueBase : public AmdQueue {
 public:
  AmdQueueBase(AmdDevice& dev, bool sdma) : AmdQueue(dev, sdma), dev_(dev) {}

 protected:
  AmdDevice& dev_;
  // Emits packet `pk` with `vars` (field, value) filled in: constants directly, variables as patch slots.
  template <class P>
  void emit(Packet<P>& pk, std::initializer_list<std::pair<typename P::F, Val>> vars = {}) {
    for (const auto& [f, v] : vars)
      if (v.var < 0) pk.set(f, v.constant);
    for (size_t i = 0; i < pk.dw.size();) {
      const Val* var = nullptr;
      const hw::amd::PacketField* field = nullptr;
      for (const auto& [f, v] : vars)
        if (v.var >= 0 && P::fields[f].dword == i) var = &v, field = &P::fields[f];
      if (!var) {
        put32(pk.dw[i++]);
      } else if (field->width == 64) {
        put64(*var), i += 2;
      } else if (field->width == 32) {
        put32_of(*var), i += 1;
      } else {
        throw Error(std::string(P::format.name) + "." + field->name + " cannot take a patched value (not a whole dword)");
      }
    }
  }
  void emit_words(std::span<const uint32_t> w) {
    for (uint32_t x : w) put32(x);
  }
};

class Pm4Queue final : public AmdQueueBase {
 public:
  explicit Pm4Queue(AmdDevice& dev) : AmdQueueBase(dev, false) {}

  void invalidate_instruction_cache() override {
    Packet<pm4::AcquireMem> a;
    a.set(pm4::AcquireMem::coher_size, 0xffffffff).set(pm4::AcquireMem::coher_size_hi, 0xff).set(pm4::AcquireMem::poll_interval, 10);
    a.set(pm4::AcquireMem::gcr_cntl, pm4::acquire_gcr::kGliInvAll);
    emit(a);
  }
  void indirect(std::vector<uint32_t>& out, uint64_t va, size_t dwords) const override {
    Packet<pm4::IndirectBuffer> p;
    p.set(pm4::IndirectBuffer::address, va).set(pm4::IndirectBuffer::size, dwords).set(pm4::IndirectBuffer::valid, 1);
    out.insert(out.end(), p.dw.begin(), p.dw.end());
  }
  void retire(std::vector<uint32_t>& out, uint64_t address, uint32_t position) const override {
    Packet<pm4::ReleaseMem> p = release(address, pm4::kData32);
    p.set(pm4::ReleaseMem::data, position);
    out.insert(out.end(), p.dw.begin(), p.dw.end());
  }
  void poll_equal_masked(uint64_t, uint32_t, uint32_t) override { throw Error("the bridge copy protocol runs on the SDMA queue"); }
  void write32(uint64_t, uint32_t) override { throw Error("the bridge copy protocol runs on the SDMA queue"); }

 protected:
  // An end-of-pipe release: after all earlier work, caches written back, then the data.
  static Packet<pm4::ReleaseMem> release(uint64_t address, uint32_t data_sel) {
    namespace g = pm4::release_gcr;
    Packet<pm4::ReleaseMem> p;
    p.set(pm4::ReleaseMem::event_type, pm4::kEventCacheFlushAndInvTs).set(pm4::ReleaseMem::event_index, pm4::kEventIndexEndOfPipe);
    p.set(pm4::ReleaseMem::gcr, g::kGlvInv | g::kGl1Inv | g::kGl2Inv | g::kGlmWb | g::kGlmInv | g::kGl2Wb | g::kSeq);
    p.set(pm4::ReleaseMem::data_sel, data_sel).set(pm4::ReleaseMem::address, address);
    return p;
  }
  void emit_wait(Val s, Val v) override {
    Packet<pm4::WaitRegMem> p;
    p.set(pm4::WaitRegMem::function, pm4::kGreaterEqual).set(pm4::WaitRegMem::mem_space, 1).set(pm4::WaitRegMem::mask, 0xffffffff);
    p.set(pm4::WaitRegMem::poll_interval, 4);
    emit(p, {{pm4::WaitRegMem::address, s}, {pm4::WaitRegMem::reference, v.var < 0 ? Val(v.constant & 0xffffffff) : v}});
  }
  void emit_signal(Val s, Val v) override {
    Packet<pm4::ReleaseMem> p = release(0, pm4::kData64);
    emit(p, {{pm4::ReleaseMem::address, s}, {pm4::ReleaseMem::data, v}});
    // ...and the event interrupt that wakes a host sleeping in WAIT_EVENTS.
    const AmdInterface::Interrupt irq = dev_.interrupt();
    Packet<pm4::ReleaseMem> i = release(irq.mailbox, pm4::kData32);
    i.set(pm4::ReleaseMem::data, irq.event_id).set(pm4::ReleaseMem::int_sel, pm4::kIntAfterWrite).set(pm4::ReleaseMem::int_ctxid, irq.event_id);
    emit(i);
  }
  void emit_timestamp(Val s) override {
    Packet<pm4::ReleaseMem> p = release(0, pm4::kDataGpuClock);
    emit(p, {{pm4::ReleaseMem::address, Val::variable(s.var, s.constant + 8)}});
  }
  void emit_memory_barrier() override {
    // HDP flush (host writes through the BAR reach VRAM), then write back and invalidate the caches.
    Packet<pm4::WaitRegMem> h;
    uint64_t regs = uint64_t{dev_.reg_address(dev_.regs().hdp_flush_req)} << 32 | dev_.reg_address(dev_.regs().hdp_flush_done);
    h.set(pm4::WaitRegMem::function, pm4::kEqual).set(pm4::WaitRegMem::operation, 1).set(pm4::WaitRegMem::address, regs);
    h.set(pm4::WaitRegMem::reference, 1).set(pm4::WaitRegMem::mask, 1).set(pm4::WaitRegMem::poll_interval, 0x20);
    emit(h);
    namespace g = pm4::acquire_gcr;
    Packet<pm4::AcquireMem> a;
    a.set(pm4::AcquireMem::coher_size, 0xffffffff).set(pm4::AcquireMem::coher_size_hi, 0xff).set(pm4::AcquireMem::poll_interval, 10);
    a.set(pm4::AcquireMem::gcr_cntl, g::kGlmWb | g::kGlmInv | g::kGlkWb | g::kGlkInv | g::kGlvInv | g::kGl1Inv | g::kGl2Inv | g::kGl2Wb | g::kSeq);
    emit(a);
  }
  void set_regs(const hw::amd::Register& first, std::initializer_list<uint32_t> values) {
    Packet<pm4::SetShReg> h;
    h.dw[0] = hw::amd::packet_header(pm4::SetShReg::format, 2 + values.size());
    h.set(pm4::SetShReg::reg_offset, dev_.reg_address(first) - pm4::kSetShRegStart);
    emit_words(h.dw);
    for (uint32_t v : values) put32(v);
  }
  void emit_exec(const hcq::Program& prog, const hcq::Kernargs& k) override {
    const auto& p = static_cast<const AmdProgram&>(prog);
    if (!kernels) kernels = std::make_shared<std::vector<std::string>>();
    kernels->push_back(p.name);
    // Launch dims, from the variable values as recorded.
    codegen::LaunchDims dims = p.fixed_dims ? *p.fixed_dims : codegen::launch_dims(p.kernel->kernel, p.recorded_vars(k));
    if (p.dispatch_ptr) {  // the HSA dispatch packet the kernel reads its sizes from
      uint8_t* d = reinterpret_cast<uint8_t*>(k.host) + p.user_args_bytes;
      std::memset(d, 0, 64);
      for (int i = 0; i < 3; ++i) {
        auto l = static_cast<uint16_t>(dims.local[static_cast<size_t>(i)]);
        auto g = static_cast<uint32_t>(dims.global[static_cast<size_t>(i)] * dims.local[static_cast<size_t>(i)]);
        std::memcpy(d + 4 + 2 * i, &l, 2), std::memcpy(d + 12 + 4 * i, &g, 4);
      }
      uint64_t ka = k.va;
      std::memcpy(d + 40, &ka, 8);
    }
    namespace g = pm4::acquire_gcr;
    Packet<pm4::AcquireMem> a;  // argument memory written by the host is visible to the shader
    a.set(pm4::AcquireMem::coher_size, 0xffffffff).set(pm4::AcquireMem::coher_size_hi, 0xff).set(pm4::AcquireMem::poll_interval, 10);
    a.set(pm4::AcquireMem::gcr_cntl, g::kGlmInv | g::kGlkInv | g::kGlvInv | g::kGl1Inv);
    emit(a);
    AmdDevice::Scratch scratch = dev_.scratch_for(p);
    const hw::amd::ComputeRegisters& r = dev_.regs();
    set_regs(r.pgm_lo, {static_cast<uint32_t>(p.entry >> 8), static_cast<uint32_t>(p.entry >> 40)});
    set_regs(r.pgm_rsrc1, {p.rsrc1, p.rsrc2});
    set_regs(r.pgm_rsrc3, {p.rsrc3});
    set_regs(r.tmpring_size, {scratch.tmpring});
    if (scratch.base) set_regs(r.dispatch_scratch_base_lo, {static_cast<uint32_t>(scratch.base >> 8), static_cast<uint32_t>(scratch.base >> 40)});
    set_regs(r.restart_x, {0, 0, 0});
    // User SGPRs in hardware order: private segment buffer, dispatch pointer, kernarg pointer.
    std::vector<uint32_t> user;
    const uint16_t props = p.info.kd.kernel_code_properties;
    namespace cp = hw::amd::code_props;
    if (cp::kPrivateSegmentBuffer.get(props))
      user.insert(user.end(), {static_cast<uint32_t>(scratch.base), static_cast<uint32_t>(scratch.base >> 32) | 1u << 31, 0xffffffffu, 0x20c14000u});
    if (cp::kDispatchPtr.get(props)) {
      uint64_t d = k.va + p.user_args_bytes;
      user.insert(user.end(), {static_cast<uint32_t>(d), static_cast<uint32_t>(d >> 32)});
    }
    if (cp::kKernargSegmentPtr.get(props)) user.insert(user.end(), {static_cast<uint32_t>(k.va), static_cast<uint32_t>(k.va >> 32)});
    if (!user.empty()) {
      Packet<pm4::SetShReg> h;
      h.dw[0] = hw::amd::packet_header(pm4::SetShReg::format, 2 + user.size());
      h.set(pm4::SetShReg::reg_offset, dev_.reg_address(dev_.regs().user_data_0) - pm4::kSetShRegStart);
      emit_words(h.dw);
      emit_words(user);
    }
    set_regs(r.resource_limits, {0});
    set_regs(r.start_x,
             {0, 0, 0, static_cast<uint32_t>(dims.local[0]), static_cast<uint32_t>(dims.local[1]), static_cast<uint32_t>(dims.local[2]), 0, 0});
    uint32_t initiator = r.initiator_compute_shader_en.set(0, 1);
    initiator = r.initiator_force_start_at_000.set(initiator, 1);
    initiator = r.initiator_cs_w32_en.set(initiator, p.info.wave32 ? 1 : 0);
    Packet<pm4::DispatchDirect> dd;
    dd.set(pm4::DispatchDirect::dim_x, static_cast<uint64_t>(dims.global[0])).set(pm4::DispatchDirect::dim_y, static_cast<uint64_t>(dims.global[1]));
    dd.set(pm4::DispatchDirect::dim_z, static_cast<uint64_t>(dims.global[2])).set(pm4::DispatchDirect::initiator, initiator);
    emit(dd);
    Packet<pm4::EventWrite> e;
    e.set(pm4::EventWrite::event_type, pm4::kEventCsPartialFlush).set(pm4::EventWrite::event_index, pm4::kEventIndexPartialFlush);
    emit(e);
  }
  void emit_copy(Val dst, Val src, uint64_t bytes) override {
    for (uint64_t done = 0; done < bytes;) {
      uint64_t n = std::min(bytes - done, pm4::kDmaDataMaxBytes);
      Packet<pm4::DmaData> p;
      p.set(pm4::DmaData::byte_count, n).set(pm4::DmaData::cp_sync, done + n == bytes ? 1 : 0);
      emit(p, {{pm4::DmaData::src, Val::variable(src.var, src.constant + done)}, {pm4::DmaData::dst, Val::variable(dst.var, dst.constant + done)}});
      done += n;
    }
  }
};

class SdmaQueue final : public AmdQueueBase {
 public:
  explicit SdmaQueue(AmdDevice& dev) : AmdQueueBase(dev, true) {}
  void invalidate_instruction_cache() override { throw Error("the SDMA queue has no instruction cache to invalidate"); }
  void indirect(std::vector<uint32_t>& out, uint64_t va, size_t dwords) const override {
    Packet<sdma::Indirect> p;
    p.set(sdma::Indirect::ib_base, va).set(sdma::Indirect::ib_size, dwords);
    out.insert(out.end(), p.dw.begin(), p.dw.end());
  }
  void retire(std::vector<uint32_t>& out, uint64_t address, uint32_t position) const override {
    Packet<sdma::Fence> p;
    p.set(sdma::Fence::mtype, 3).set(sdma::Fence::addr, address).set(sdma::Fence::data, position);
    out.insert(out.end(), p.dw.begin(), p.dw.end());
  }
  void poll_equal_masked(uint64_t va, uint32_t value, uint32_t mask) override {
    Packet<sdma::PollRegmem> p;
    p.set(sdma::PollRegmem::func, pm4::kEqual).set(sdma::PollRegmem::mem_poll, 1).set(sdma::PollRegmem::mask, mask);
    p.set(sdma::PollRegmem::interval, 4).set(sdma::PollRegmem::retry_count, 0xfff);
    p.set(sdma::PollRegmem::addr, va).set(sdma::PollRegmem::value, value);
    emit(p);
  }
  void write32(uint64_t va, uint32_t value) override {
    Packet<sdma::Fence> p;
    p.set(sdma::Fence::mtype, 3).set(sdma::Fence::addr, va).set(sdma::Fence::data, value);
    emit(p);
  }

 protected:
  void emit_wait(Val s, Val v) override {
    Packet<sdma::PollRegmem> p;
    p.set(sdma::PollRegmem::func, pm4::kGreaterEqual).set(sdma::PollRegmem::mem_poll, 1).set(sdma::PollRegmem::mask, 0xffffffff);
    p.set(sdma::PollRegmem::interval, 4).set(sdma::PollRegmem::retry_count, 0xfff);
    emit(p, {{sdma::PollRegmem::addr, s}, {sdma::PollRegmem::value, v.var < 0 ? Val(v.constant & 0xffffffff) : v}});
  }
  void emit_signal(Val s, Val v) override {
    // FENCE writes 32 bits: the low half first, so a reader never sees a value above the real one.
    for (unsigned half : {0u, 1u}) {
      Packet<sdma::Fence> p;
      p.set(sdma::Fence::mtype, 3);
      Val addr = Val::variable(s.var, s.constant + 4 * half);
      if (addr.var < 0) p.set(sdma::Fence::addr, addr.constant);
      if (v.var < 0) p.set(sdma::Fence::data, static_cast<uint32_t>(v.constant >> (32 * half)));
      put32(p.dw[0]);
      addr.var >= 0 ? put64(addr) : (put32(p.dw[1]), put32(p.dw[2]));
      v.var >= 0 ? put32_of(v, 32 * half) : put32(p.dw[3]);
    }
    Packet<sdma::Fence> m;
    m.set(sdma::Fence::mtype, 3).set(sdma::Fence::addr, dev_.interrupt().mailbox).set(sdma::Fence::data, dev_.interrupt().event_id);
    emit(m);
    Packet<sdma::Trap> t;
    t.set(sdma::Trap::int_context, dev_.interrupt().event_id);
    emit(t);
  }
  void emit_timestamp(Val s) override {
    Packet<sdma::TimestampGetGlobal> p;
    emit(p, {{sdma::TimestampGetGlobal::write_addr, Val::variable(s.var, s.constant + 8)}});
  }
  void emit_memory_barrier() override {}  // SDMA packets complete in order; its writes go straight to memory
  void emit_exec(const hcq::Program& p, const hcq::Kernargs&) override {
    throw Error(dev_.name() + ": the SDMA copy queue runs no kernels; exec " + p.name + " on a compute queue");
  }
  void emit_copy(Val dst, Val src, uint64_t bytes) override {
    constexpr uint64_t kMax = uint64_t{1} << 30;  // COPY_LINEAR's 30-bit count
    for (uint64_t done = 0; done < bytes;) {
      uint64_t n = std::min(bytes - done, kMax);
      Packet<sdma::CopyLinear> p;
      p.set(sdma::CopyLinear::count, n - 1);
      emit(p, {{sdma::CopyLinear::src_addr, Val::variable(src.var, src.constant + done)},
               {sdma::CopyLinear::dst_addr, Val::variable(dst.var, dst.constant + done)}});
      done += n;
    }
  }
};

}  // namespace

std::unique_ptr<AmdQueue> make_pm4_queue(AmdDevice& dev) { return std::make_unique<Pm4Queue>(dev); }
std::unique_ptr<AmdQueue> make_sdma_queue(AmdDevice& dev) { return std::make_unique<SdmaQueue>(dev); }

void append_nop(std::vector<uint32_t>& out, bool is_sdma, size_t dwords) {
  if (!dwords) return;
  if (is_sdma) {
    Packet<sdma::Nop> p;
    p.set(sdma::Nop::count, dwords - 1);
    out.push_back(p.dw[0]);
    out.insert(out.end(), dwords - 1, 0u);
  } else {
    out.push_back(dwords == 1 ? hw::amd::packet_header(pm4::Nop::format, 2) | 0x3fffu << 16 : hw::amd::packet_header(pm4::Nop::format, dwords));
    out.insert(out.end(), dwords - 1, 0u);
  }
}

}  // namespace ugpu::amd
