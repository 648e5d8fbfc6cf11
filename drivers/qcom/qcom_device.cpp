#include "drivers/qcom/qcom_device.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "codegen/compiler.h"
#include "common/hex.h"
#include "drivers/qcom/kgsl.h"
#include "hcq/in_flight.h"
#include "hw/qcom/a6xx_regs.h"
#include "hw/qcom/ir3.h"
#include "hw/qcom/packets.h"
#include "hw/qcom/pm4_opcodes.h"
#include "hw/qcom/pm4_packets.h"

namespace ugpu::qcom {
namespace pm4 = hw::qcom::pm4;
namespace a6xx = hw::qcom::a6xx;
using hcq::Val;

namespace {

constexpr AdrenoChip kChips[] = {
    {0x0603, "a630", "a630"},  {0x0604, "a640", nullptr}, {0x0605, "a650", nullptr}, {0x0606, "a660", "a660", true},
    {0x0608, "a680", nullptr}, {0x0703, "a730", nullptr}, {0x0704, "a740", nullptr}, {0x0705, "a750", nullptr},
};
std::string supported_chips() {
  std::string s;
  for (const AdrenoChip& c : kChips)
    if (c.target) s += (s.empty() ? "" : ", ") + std::string(c.name);
  return s;
}

constexpr uint64_t kMemcpyMaxDwords = 1u << 30;  // CP_MEMCPY counts dwords in 32 bits; stay well inside

class QcomDevice;

// A kernel loaded into GPU memory, with the facts every launch of it programs.
class QcomProgram : public hcq::Program {
 public:
  QcomProgram(hcq::Device& dev, std::shared_ptr<const codegen::CompiledKernel> k) : kernel(std::move(k)) {
    if (!kernel->ir3) throw Error(dev.name() + ": kernel " + kernel->kernel.name + " has no ir3 binary");
    const codegen::Ir3Object& o = *kernel->ir3;
    name = kernel->kernel.name;
    for (const codegen::Param& prm : kernel->kernel.params) (prm.kind == codegen::Param::Kind::Buffer ? buffers : vars) += 1;
    if (o.args.size() != size_t(buffers + vars))
      throw Error(dev.name() + ": kernel " + name + ": its binary places " + std::to_string(o.args.size()) + " arguments, the kernel has " +
                  std::to_string(buffers + vars));
    for (const codegen::Ir3Object::Arg& a : o.args) arg_layout.push_back({a.offset, a.bytes});
    kernarg_bytes = std::max<uint32_t>(o.const_vec4 * 16, 16);  // the constants are loaded whole
    code = dev.alloc(o.code.size() * 8);
    std::memcpy(code.host, o.code.data(), o.code.size() * 8);
    if (vars == 0) fixed_dims = codegen::launch_dims(kernel->kernel, {});
  }
  std::shared_ptr<const codegen::CompiledKernel> kernel;
  hcq::Buffer code;
  std::optional<codegen::LaunchDims> fixed_dims;  // when the launch geometry depends on no variable
};

class QcomQueue final : public hcq::HWQueue {
 public:
  QcomQueue(QcomDevice& dev);
  std::shared_ptr<std::vector<std::string>> kernels;  // names of the kernels it runs, for fault messages

 protected:
  void pkt7(uint8_t op, uint32_t count) { put32(hw::qcom::type7_header(op, count)); }
  // A 32-bit compare of memory against lo32(value) on the CP (kgsl signals are compared in 32 bits;
  // the timeline rolls over before 2^31).
  void emit_wait(Val s, Val v) override {
    pkt7(pm4::CP_WAIT_REG_MEM, 6);
    put32(pm4::CP_WAIT_REG_MEM_0::FUNCTION.set(0, pm4::WRITE_GE) | pm4::CP_WAIT_REG_MEM_0::POLL.set(0, pm4::POLL_MEMORY));
    put32_of(s, 0);
    put32_of(s, 32);
    put32_of(v, 0);
    put32(0xffffffffu);
    put32(32);  // cycles between polls
  }
  // After everything before it, with the caches flushed (a CACHE_FLUSH_TS event to the driver's scratch
  // page, its write landed): the 64-bit value in one memory write. One patch slot for the value.
  void emit_signal(Val s, Val v) override {
    pkt7(pm4::CP_WAIT_FOR_IDLE, 0);
    flush_to_scratch();
    pkt7(pm4::CP_WAIT_MEM_WRITES, 0);
    pkt7(pm4::CP_MEM_WRITE, 4);
    put32_of(s, 0);
    put32_of(s, 32);
    put64(v);
  }
  void flush_to_scratch();
  void emit_timestamp(Val s) override {
    pkt7(pm4::CP_WAIT_FOR_IDLE, 0);
    Val ts = s;
    ts.constant += 8;
    pkt7(pm4::CP_REG_TO_MEM, 3);
    put32(pm4::CP_REG_TO_MEM_0::REG.set(0, a6xx::CP_ALWAYS_ON_COUNTER.offset) | pm4::CP_REG_TO_MEM_0::CNT.set(0, 2) |
          pm4::CP_REG_TO_MEM_0::B64B.set(0, 1));
    put32_of(ts, 0);
    put32_of(ts, 32);
  }
  void emit_memory_barrier() override;
  void emit_exec(const hcq::Program& p, const hcq::Kernargs& k) override;
  void pkt4(const hw::qcom::Register& r, std::initializer_list<uint32_t> values) {
    put32(hw::qcom::type4_header(r.offset, uint32_t(values.size())));
    for (uint32_t v : values) put32(v);
  }
  void emit_copy(Val dst, Val src, uint64_t bytes) override;

 private:
  QcomDevice& dev_;
};

class QcomDevice final : public hcq::Device {
 public:
  QcomDevice(std::shared_ptr<Kgsl> kgsl, const AdrenoChip& chip, const QcomOptions& o)
      : Device(o.name), kgsl_(std::move(kgsl)), chip_(chip), opts_(o) {
    use_signal_memory([this](size_t bytes) { return buffer(bytes, true); });
    info_.kind = o.kind, info_.arch = chip.name;
    info_.interface = "kgsl (" + std::string(Kgsl::kPath) + "), chip id " + hex(kgsl_->info().chip_id);
    if (o.ring_bytes < 4096 || o.ring_bytes % 4) throw Error(o.name + ": the command ring must be at least 4096 bytes, a multiple of 4");
    ring_ = kgsl_->alloc(o.ring_bytes, true);
    ring_dwords_ = ring_->size / 4;
    scratch_ = kgsl_->alloc(4096, true);
    retired_ = new_signal(0);
    context_ = kgsl_->create_context(opts_.priority);
  }
  ~QcomDevice() override {
    try {
      synchronize();
    } catch (const Error&) {  // a failed device: its context went with its work
    }
    if (context_) kgsl_->destroy_context(context_);
  }

  std::unique_ptr<hcq::HWQueue> compute_queue() override { return std::make_unique<QcomQueue>(*this); }
  uint64_t ring_waits() const override {
    std::lock_guard lock(mu_);
    return waits_;
  }
  hcq::DeviceInfo info() const override { return info_; }
  std::string target() const override { return chip_.target; }
  std::shared_ptr<hcq::Program> load(std::shared_ptr<const codegen::CompiledKernel> kernel) override {
    if (!kernel || kernel->target->name != target())
      throw Error(name() + ": load needs a kernel compiled for " + target() + ", not " +
                  (kernel ? std::string(kernel->target->name) : std::string("nothing")));
    return std::make_shared<QcomProgram>(*this, std::move(kernel));
  }
  // The byte-copy kernel behind copies CP_MEMCPY cannot do.
  const hcq::Program& copy_program() {
    std::lock_guard lock(copy_mu_);
    if (!copy_program_) copy_program_ = load(codegen::byte_copy_kernel(codegen::find_target(target())));
    return *copy_program_;
  }
  uint64_t clock_hz() const override { return 19200000; }  // CP_ALWAYS_ON_COUNTER
  uint64_t submit_commands(hcq::HWQueue& q) override;
  bool consumed(uint64_t position) const override { return int32_t(static_cast<uint32_t>(retired_->value()) - static_cast<uint32_t>(position)) >= 0; }
  std::string work_in_flight() override {
    std::lock_guard lock(mu_);
    return kernels_.describe(retired_->value());
  }
  std::shared_ptr<uint32_t[]> command_memory(size_t dwords) override {
    auto m = kgsl_->alloc(std::max<size_t>(dwords * 4, 4), false);
    return std::shared_ptr<uint32_t[]>(m, static_cast<uint32_t*>(m->host));
  }
  uint64_t scratch() const { return scratch_->va; }
  const AdrenoChip& chip() const { return chip_; }
  QcomFacts facts() const {
    std::lock_guard lock(mu_);
    return {kgsl_->info().chip_id, kgsl_->info().gpu_id, context_, chip_.name, submitted_, waits_};
  }
  std::vector<uint32_t> last_submission() const {
    std::lock_guard lock(mu_);
    return last_words_ ? std::vector<uint32_t>(last_words_, last_words_ + last_dwords_) : std::vector<uint32_t>{};
  }

 protected:
  hcq::Buffer alloc_memory(size_t bytes) override { return buffer(bytes, false); }
  void sleep_for_progress(std::chrono::microseconds max) override;
  // A failed device's context is destroyed: kgsl drops its queued work and stops what runs (a hung
  // kernel); recover() makes a new one.
  void on_fail() override {
    std::lock_guard lock(mu_);
    if (context_) kgsl_->destroy_context(context_);
    context_ = 0;
  }
  bool recover_queues() override;

 private:
  hcq::Buffer buffer(size_t bytes, bool uncached) {
    auto m = kgsl_->alloc(bytes, uncached);
    return {m->va, static_cast<size_t>(m->size), m->host, m};
  }
  void append_retire(std::vector<uint32_t>& out, uint64_t position) const {
    out.insert(out.end(), {hw::qcom::type7_header(pm4::CP_WAIT_FOR_IDLE, 0), hw::qcom::type7_header(pm4::CP_EVENT_WRITE, 4),
                           pm4::CP_EVENT_WRITE_0::EVENT.set(0, pm4::CACHE_FLUSH_TS), static_cast<uint32_t>(retired_->address()),
                           static_cast<uint32_t>(retired_->address() >> 32), static_cast<uint32_t>(position)});
  }
  // kgsl reported the context reset (a refused submission or wait): ask why, and fail the device.
  void context_reset();

  std::shared_ptr<Kgsl> kgsl_;
  const AdrenoChip& chip_;
  QcomOptions opts_;
  hcq::DeviceInfo info_;
  std::shared_ptr<Kgsl::Memory> ring_, scratch_;
  uint64_t ring_dwords_ = 0;
  hcq::SignalRef retired_;  // the position of the last finished submission (lo32, written by the CP)
  mutable std::mutex mu_;
  uint32_t context_ = 0;
  uint64_t submitted_ = 0;                           // positions handed out
  uint64_t ts_base_ = 0;                             // kgsl timestamp = position - ts_base_ (the context's first submission is 1)
  uint64_t written_ = 0, freed_ = 0;                 // ring dwords ever written / known to be done with
  std::deque<std::pair<uint64_t, uint64_t>> marks_;  // (position, ring dwords written after it)
  uint64_t waits_ = 0;
  hcq::KernelsInFlight kernels_;
  std::mutex copy_mu_;
  std::shared_ptr<hcq::Program> copy_program_;
  const uint32_t* last_words_ = nullptr;  // the last submission's commands, where they ran
  size_t last_dwords_ = 0;
};

QcomQueue::QcomQueue(QcomDevice& dev) : HWQueue(dev), dev_(dev) {}

void QcomQueue::flush_to_scratch() {
  pkt7(pm4::CP_EVENT_WRITE, 4);
  put32(pm4::CP_EVENT_WRITE_0::EVENT.set(0, pm4::CACHE_FLUSH_TS));
  put32(static_cast<uint32_t>(dev_.scratch()));
  put32(static_cast<uint32_t>(dev_.scratch() >> 32));
  put32(0);
}

void QcomQueue::emit_memory_barrier() {
  // Shader writes flushed from the caches (an event write to the driver's scratch page), the caches
  // invalidated for later reads, and the CP's own writes landed.
  flush_to_scratch();
  pkt7(pm4::CP_EVENT_WRITE, 1);
  put32(pm4::CP_EVENT_WRITE_0::EVENT.set(0, pm4::CACHE_INVALIDATE));
  pkt7(pm4::CP_WAIT_MEM_WRITES, 0);
  pkt7(pm4::CP_WAIT_FOR_IDLE, 0);
}

// CP_MEMCPY where both addresses and the size are whole dwords (known when recorded); otherwise the
// driver's byte-copy kernel.
void QcomQueue::emit_copy(Val dst, Val src, uint64_t bytes) {
  if (dst.var >= 0 || src.var >= 0 || (dst.constant | src.constant | bytes) % 4) return copy_by_kernel(dev_.copy_program(), dst, src, bytes);
  for (uint64_t off = 0; off < bytes; off += kMemcpyMaxDwords * 4) {
    uint64_t n = std::min(kMemcpyMaxDwords * 4, bytes - off);
    uint64_t s = src.constant + off, d = dst.constant + off;
    pkt7(pm4::CP_MEMCPY, 5);
    put32(static_cast<uint32_t>(n / 4));
    put32(static_cast<uint32_t>(s));
    put32(static_cast<uint32_t>(s >> 32));
    put32(static_cast<uint32_t>(d));
    put32(static_cast<uint32_t>(d >> 32));
  }
}

// The compute dispatch (shared/reference/nv-qcom-stack.md §7.3, registers from hw/qcom/a6xx_regs.h):
// compute mode, the state caches invalidated, the launch geometry, the shader's registers and code,
// its constants (the argument block) loaded from kernarg memory, then CP_EXEC_CS.
void QcomQueue::emit_exec(const hcq::Program& hp, const hcq::Kernargs& k) {
  namespace a = a6xx;
  const auto& p = static_cast<const QcomProgram&>(hp);
  const codegen::Ir3Object& o = *p.kernel->ir3;
  if (!kernels) kernels = std::make_shared<std::vector<std::string>>();
  if (std::find(kernels->begin(), kernels->end(), p.name) == kernels->end()) kernels->push_back(p.name);
  // From the arguments as recorded (a variable's dimension keeps its recorded value).
  codegen::LaunchDims d = p.fixed_dims ? *p.fixed_dims : codegen::launch_dims(p.kernel->kernel, p.recorded_vars(k));
  if (d.global[0] == 0 || d.global[1] == 0 || d.global[2] == 0) return;  // an empty grid launches nothing
  for (int i = 0; i < 3; ++i)
    if (d.local[i] > 1024 || d.global[i] > 0xffffffffll || d.global[i] * d.local[i] > 0xffffffffll)
      throw Error(device().name() + ": kernel " + p.name + ": a launch of " + std::to_string(d.global[i]) + " workgroups of " +
                  std::to_string(d.local[i]) + " in dimension " + std::to_string(i) + " does not fit the Adreno's 32-bit sizes");
  if (d.local[0] * d.local[1] * d.local[2] > 1024) throw Error(device().name() + ": kernel " + p.name + ": a workgroup of more than 1024 fibers");
  const uint32_t threads128 = o.threadsize == 128;
  const uint32_t instrlen = uint32_t(o.code.size() / 16);
  const uint32_t shared = o.shared_bytes ? (o.shared_bytes - 1) / 1024 : 1;  // (SHARED_SIZE + 1) KiB
  pkt7(pm4::CP_SET_MARKER, 1);
  put32(pm4::CP_SET_MARKER_0::MODE.set(0, pm4::RM6_COMPUTE));
  namespace inv = a::HLSQ_INVALIDATE_CMD_fields;
  pkt4(a::HLSQ_INVALIDATE_CMD, {inv::CS_STATE.set(0, 1) | inv::CS_IBO.set(0, 1)});
  pkt4(a::HLSQ_INVALIDATE_CMD, {0});
  pkt4(a::SP_CS_TEX_COUNT, {0x80});
  pkt4(a::SP_CS_IBO_COUNT, {0x40});
  pkt4(a::SP_MODE_CONTROL, {a::SP_MODE_CONTROL_fields::ISAMMODE.set(0, a::ISAMMODE_GL)});
  pkt4(a::SP_PERFCTR_ENABLE, {a::SP_PERFCTR_ENABLE_fields::CS.set(0, 1)});
  pkt4(a::SP_TP_MODE_CNTL, {a::SP_TP_MODE_CNTL_fields::ISAMMODE.set(0, a::ISAMMODE_GL)});
  pkt4(a::TPL1_DBG_ECO_CNTL, {0});
  pkt7(pm4::CP_WAIT_FOR_IDLE, 0);
  namespace nd = a::HLSQ_CS_NDRANGE_0_fields;
  namespace c0 = a::HLSQ_CS_CNTL_0_fields;
  namespace c1 = a::HLSQ_CS_CNTL_1_fields;
  uint32_t ndrange0 = nd::KERNELDIM.set(0, 3) | nd::LOCALSIZEX.set(0, uint32_t(d.local[0] - 1)) | nd::LOCALSIZEY.set(0, uint32_t(d.local[1] - 1)) |
                      nd::LOCALSIZEZ.set(0, uint32_t(d.local[2] - 1));
  uint32_t cntl0 = c0::WGIDCONSTID.set(0, o.wg_id_reg) | c0::WGSIZECONSTID.set(0, hw::qcom::ir3::kNoReg) |
                   c0::WGOFFSETCONSTID.set(0, hw::qcom::ir3::kNoReg) | c0::LOCALIDREGID.set(0, o.local_id_reg);
  uint32_t cntl1 = c1::LINEARLOCALIDREGID.set(0, hw::qcom::ir3::kNoReg) | c1::THREADSIZE.set(0, threads128);
  pkt4(a::HLSQ_CS_NDRANGE_0, {ndrange0, uint32_t(d.global[0] * d.local[0]), 0, uint32_t(d.global[1] * d.local[1]), 0,
                              uint32_t(d.global[2] * d.local[2]), 0, cntl0, cntl1, 1, 1, 1});
  if (dev_.chip().sp_cs_cntl) pkt4(a::SP_CS_CNTL_0, {cntl0, cntl1});  // gen 4 parts read the ids from these copies
  namespace r0 = a::SP_CS_CTRL_REG0_fields;
  uint32_t ctrl0 = r0::THREADSIZE.set(0, threads128) | r0::FULLREGFOOTPRINT.set(0, o.full_regs) | r0::BRANCHSTACK.set(0, o.branch_stack) |
                   r0::MERGEDREGS.set(0, 1);
  namespace sh = a::SP_CS_UNKNOWN_A9B1_fields;
  pkt4(a::SP_CS_CTRL_REG0,
       {ctrl0, sh::SHARED_SIZE.set(0, shared) | sh::UNK6.set(0, 1), 0, 0, uint32_t(p.code.va), uint32_t(p.code.va >> 32), 0, 0, 0, 0});
  namespace b9 = a::HLSQ_CS_UNKNOWN_B9D0_fields;
  pkt4(a::HLSQ_CS_UNKNOWN_B9D0, {b9::SHARED_SIZE.set(0, shared) | b9::UNK6.set(0, 1)});
  namespace ls = pm4::CP_LOAD_STATE6_0;
  auto load_state = [&](uint32_t type, uint32_t units, uint64_t from) {
    pkt7(pm4::CP_LOAD_STATE6_FRAG, 3);
    put32(ls::STATE_TYPE.set(0, type) | ls::STATE_SRC.set(0, pm4::SS6_INDIRECT) | ls::STATE_BLOCK.set(0, pm4::SB6_CS_SHADER) |
          ls::NUM_UNIT.set(0, units));
    put32(uint32_t(from));
    put32(uint32_t(from >> 32));
  };
  load_state(pm4::ST6_CONSTANTS, o.const_vec4, k.va);
  load_state(pm4::ST6_SHADER, instrlen, p.code.va);
  namespace cn = a::HLSQ_CS_CNTL_fields;
  pkt4(a::HLSQ_CS_CNTL, {cn::CONSTLEN.set(0, o.const_vec4 / 4) | cn::ENABLED.set(0, 1)});
  pkt4(a::SP_CS_PVT_MEM_HW_STACK_OFFSET, {0});
  pkt4(a::SP_CS_INSTRLEN, {instrlen});
  pkt4(a::SP_CS_CONFIG, {a::SP_CS_CONFIG_fields::ENABLED.set(0, 1)});
  pkt7(pm4::CP_EXEC_CS, 4);
  put32(0);
  put32(uint32_t(d.global[0]));
  put32(uint32_t(d.global[1]));
  put32(uint32_t(d.global[2]));
}

uint64_t QcomDevice::submit_commands(hcq::HWQueue& hq) {
  check_usable();
  auto& q = static_cast<QcomQueue&>(hq);
  std::span<const uint32_t> cmds = q.commands();
  const bool bound = q.bound();
  std::vector<uint32_t> tail;
  append_retire(tail, 0);
  const uint64_t n = (bound ? 0 : cmds.size()) + tail.size();
  if (n > ring_dwords_ / 2)
    throw Error(name() + ": a queue of " + std::to_string(n) + " dwords does not fit the " + std::to_string(ring_dwords_) +
                "-dword command ring; bind() it so a submission runs where it is");
  auto* ring = static_cast<uint32_t*>(ring_->host);
  auto deadline = std::chrono::steady_clock::now() + default_timeout();
  uint64_t seen = ~uint64_t{0};
  for (bool waited = false;; waited = true) {
    bool reset = false;
    {
      std::lock_guard lock(mu_);
      if (!context_) check_usable();  // failed meanwhile: the context is gone
      // Segments are contiguous, so one that would cross the end of the ring starts at 0.
      uint64_t at = written_ % ring_dwords_, pad = at + n > ring_dwords_ ? ring_dwords_ - at : 0, end = written_ + pad + n;
      while (!marks_.empty() && consumed(marks_.front().first)) freed_ = std::max(freed_, marks_.front().second), marks_.pop_front();
      if (end - freed_ <= ring_dwords_) {
        uint64_t position = submitted_ + 1;
        uint64_t seg = (at + pad) % ring_dwords_;
        if (!bound) std::memcpy(ring + seg, cmds.data(), cmds.size() * 4);
        tail.clear();
        append_retire(tail, position);
        std::memcpy(ring + seg + (bound ? 0 : cmds.size()), tail.data(), tail.size() * 4);
        uint64_t seg_va = ring_->va + seg * 4;
        try {
          uint32_t ts = bound && !cmds.empty()
                            ? kgsl_->submit(context_, {{reinterpret_cast<uint64_t>(cmds.data()), cmds.size() * 4}, {seg_va, tail.size() * 4}})
                            : kgsl_->submit(context_, {{seg_va, n * 4}});
          if (ts != position - ts_base_)
            throw Error(name() + ": kgsl numbered submission " + std::to_string(position - ts_base_) + " of the context " + std::to_string(ts) +
                        ": another user of the context?");
        } catch (const Kgsl::ContextReset&) { reset = true; }
        if (!reset) {
          last_words_ = bound ? cmds.data() : ring + seg, last_dwords_ = cmds.size();
          submitted_ = position, written_ = end;
          marks_.emplace_back(position, end);
          if (q.kernels) kernels_.add(position, q.kernels, retired_->value());
          return position;
        }
      }
      if (!waited && !reset) ++waits_;
    }
    if (reset) {  // kgsl refused the context: say why, then fail (without the lock: fail() stops the context)
      context_reset();
      check_usable();
      throw hcq::DeviceError(name() + ": kgsl refused a submission: the context was reset after a GPU fault");
    }
    // Back-pressure: wait (without the lock) for the GPU to finish submissions that hold the ring.
    check_usable();
    if (retired_->value() != seen) seen = retired_->value(), deadline = std::chrono::steady_clock::now() + default_timeout();
    if (std::chrono::steady_clock::now() > deadline) {
      fail("ring full");
      throw hcq::Timeout(name() + ": waiting for space on the command ring: the GPU finished nothing for " +
                         std::to_string(default_timeout().count()) + " ms; the device is marked failed");
    }
    sleep_for_progress(std::chrono::microseconds(200));
  }
}

void QcomDevice::sleep_for_progress(std::chrono::microseconds max) {
  uint64_t last, base;
  uint32_t ctx;
  {
    std::lock_guard lock(mu_);
    last = submitted_, base = ts_base_, ctx = context_;
    if (last == base || consumed(last) || ctx == 0) last = 0;
  }
  if (last == 0) {  // nothing of ours in flight: a host signal or another device is awaited
    std::this_thread::sleep_for(std::min(max, std::chrono::microseconds(100)));
    return;
  }
  // kgsl sleeps until the context's last submission retires; its timeout is whole milliseconds.
  auto ms = static_cast<uint32_t>(std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::milliseconds>(max).count()));
  if (kgsl_->wait(ctx, static_cast<uint32_t>(last - base), ms) == Kgsl::Wait::Reset) context_reset();
}

void QcomDevice::context_reset() {
  uint32_t status;
  {
    std::lock_guard lock(mu_);
    if (!context_) return;
    status = kgsl_->reset_status(context_);
  }
  std::string what = status == hw::qcom::kgsl::kCtxStatInnocent ? "another context's fault reset the GPU while it ran "
                                                                : "a GPU fault (kgsl reset the context) while running ";
  fail(what + work_in_flight() + " (kgsl logs the fault to the kernel log: dmesg)");
}

bool QcomDevice::recover_queues() {
  std::lock_guard lock(mu_);
  if (context_) kgsl_->destroy_context(context_);  // what it still had queued or was waiting on is dropped
  context_ = kgsl_->create_context(opts_.priority);
  ts_base_ = submitted_;
  written_ = freed_ = 0;
  marks_.clear();
  retired_->set(submitted_);  // the lost submissions count as consumed
  return true;
}

}  // namespace

const AdrenoChip* find_chip(uint32_t chip_id) {
  for (const AdrenoChip& c : kChips)
    if (c.id_prefix == chip_id >> 16) return &c;
  return nullptr;
}

std::unique_ptr<hcq::Device> open_qcom(std::shared_ptr<sys::Os> os, const QcomOptions& o) {
  auto kgsl = std::make_shared<Kgsl>(std::move(os), o.name);
  uint32_t id = kgsl->info().chip_id;
  const AdrenoChip* chip = find_chip(id);
  if (!chip || !chip->target)
    throw Error(o.name + ": Adreno chip id " + hex(id) + (chip ? std::string(" (") + chip->name + ")" : std::string(" (unknown)")) +
                ": ugpu's ir3 backend compiles for " + supported_chips() + " only");
  return std::make_unique<QcomDevice>(std::move(kgsl), *chip, o);
}

std::vector<uint32_t> last_submission(hcq::Device& dev) {
  auto* q = dynamic_cast<QcomDevice*>(&dev);
  if (!q) throw Error(dev.name() + " is not an Adreno device");
  return q->last_submission();
}

QcomFacts facts(hcq::Device& dev) {
  auto* q = dynamic_cast<QcomDevice*>(&dev);
  if (!q) throw Error(dev.name() + " is not an Adreno device");
  return q->facts();
}

}  // namespace ugpu::qcom
