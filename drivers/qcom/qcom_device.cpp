#include "drivers/qcom/qcom_device.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "common/hex.h"
#include "drivers/qcom/kgsl.h"
#include "hcq/in_flight.h"
#include "hw/qcom/a6xx_regs.h"
#include "hw/qcom/packets.h"
#include "hw/qcom/pm4_opcodes.h"
#include "hw/qcom/pm4_packets.h"

namespace ugpu::qcom {
namespace pm4 = hw::qcom::pm4;
namespace a6xx = hw::qcom::a6xx;
using hcq::Val;

namespace {

constexpr AdrenoChip kChips[] = {
    {0x0603, "a630", "a630"},  {0x0604, "a640", nullptr}, {0x0605, "a650", nullptr}, {0x0606, "a660", nullptr},
    {0x0608, "a680", nullptr}, {0x0703, "a730", nullptr}, {0x0704, "a740", nullptr}, {0x0705, "a750", nullptr},
};
std::string supported_chips() {
  std::string s;
  for (const AdrenoChip& c : kChips)
    if (c.target) s += (s.empty() ? "" : ", ") + std::string(c.name);
  return s;
}

constexpr uint32_t kRetireDwords = 1 + 5;        // WAIT_FOR_IDLE, then the flush-and-write of the position
constexpr uint64_t kMemcpyMaxDwords = 1u << 30;  // CP_MEMCPY counts dwords in 32 bits; stay well inside

// Packets, appended to a dword vector (the queue's put32 or a driver tail).
template <class Put>
void type7(Put&& put, uint8_t opcode, uint32_t count) {
  put(hw::qcom::type7_header(opcode, count));
}

class QcomDevice;

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
  // After everything before it: the high half with a memory write, then the low half with the
  // CACHE_FLUSH_TS event, which writes once the caches are flushed (the write a waiter sees last).
  void emit_signal(Val s, Val v) override {
    pkt7(pm4::CP_WAIT_FOR_IDLE, 0);
    Val hi = s;
    hi.constant += 4;
    pkt7(pm4::CP_MEM_WRITE, 3);
    put32_of(hi, 0);
    put32_of(hi, 32);
    put32_of(v, 32);
    pkt7(pm4::CP_EVENT_WRITE, 4);
    put32(pm4::CP_EVENT_WRITE_0::EVENT.set(0, pm4::CACHE_FLUSH_TS));
    put32_of(s, 0);
    put32_of(s, 32);
    put32_of(v, 0);
  }
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
  void emit_copy(Val dst, Val src, uint64_t bytes) override {
    if (dst.var >= 0 || src.var >= 0 || (dst.constant | src.constant | bytes) % 4)
      throw Error(device().name() + ": a copy of " + std::to_string(bytes) + " bytes from " + hex(src.constant) + " to " + hex(dst.constant) +
                  (dst.var >= 0 || src.var >= 0 ? " at an address given per submit" : "") +
                  ": CP_MEMCPY moves whole dwords between dword-aligned addresses; other copies need the ir3 copy kernel, which this build "
                  "does not have yet");
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
    } catch (const Error&) {  // a failed device: its context goes with its work
    }
    kgsl_->destroy_context(context_);
  }

  std::unique_ptr<hcq::HWQueue> compute_queue() override { return std::make_unique<QcomQueue>(*this); }
  uint64_t ring_waits() const override {
    std::lock_guard lock(mu_);
    return waits_;
  }
  hcq::DeviceInfo info() const override { return info_; }
  std::string target() const override { return chip_.target; }
  std::shared_ptr<hcq::Program> load(std::shared_ptr<const codegen::CompiledKernel>) override {
    throw Error(name() + ": kernels for " + chip_.name + " need the ir3 backend, which this build does not have yet");
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
  QcomFacts facts() const {
    std::lock_guard lock(mu_);
    return {kgsl_->info().chip_id, kgsl_->info().gpu_id, context_, chip_.name, submitted_, waits_};
  }

 protected:
  hcq::Buffer alloc_memory(size_t bytes) override { return buffer(bytes, false); }
  void sleep_for_progress(std::chrono::microseconds max) override;
  bool recover_queues() override;

 private:
  hcq::Buffer buffer(size_t bytes, bool uncached) {
    auto m = kgsl_->alloc(bytes, uncached);
    return {m->va, static_cast<size_t>(m->size), m->host, m};
  }
  void append_retire(std::vector<uint32_t>& out, uint64_t position) const {
    auto put = [&](uint32_t v) { out.push_back(v); };
    type7(put, pm4::CP_WAIT_FOR_IDLE, 0);
    type7(put, pm4::CP_EVENT_WRITE, 4);
    put(pm4::CP_EVENT_WRITE_0::EVENT.set(0, pm4::CACHE_FLUSH_TS));
    put(static_cast<uint32_t>(retired_->address()));
    put(static_cast<uint32_t>(retired_->address() >> 32));
    put(static_cast<uint32_t>(position));
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
};

QcomQueue::QcomQueue(QcomDevice& dev) : HWQueue(dev), dev_(dev) {}

void QcomQueue::emit_memory_barrier() {
  // Shader writes flushed from the caches (an event write to the driver's scratch page), the caches
  // invalidated for later reads, and the CP's own writes landed.
  pkt7(pm4::CP_EVENT_WRITE, 4);
  put32(pm4::CP_EVENT_WRITE_0::EVENT.set(0, pm4::CACHE_FLUSH_TS));
  put32(static_cast<uint32_t>(dev_.scratch()));
  put32(static_cast<uint32_t>(dev_.scratch() >> 32));
  put32(0);
  pkt7(pm4::CP_EVENT_WRITE, 1);
  put32(pm4::CP_EVENT_WRITE_0::EVENT.set(0, pm4::CACHE_INVALIDATE));
  pkt7(pm4::CP_WAIT_MEM_WRITES, 0);
  pkt7(pm4::CP_WAIT_FOR_IDLE, 0);
}

void QcomQueue::emit_exec(const hcq::Program& p, const hcq::Kernargs&) {
  throw Error(device().name() + ": kernel " + p.name + ": this build has no ir3 backend to run kernels with");
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
    {
      std::lock_guard lock(mu_);
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
        } catch (const Kgsl::ContextReset&) {
          context_reset();
          check_usable();
          throw;
        }
        submitted_ = position, written_ = end;
        marks_.emplace_back(position, end);
        if (q.kernels) kernels_.add(position, q.kernels, retired_->value());
        return position;
      }
      if (!waited) ++waits_;
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
    if (last == base || consumed(last)) last = 0;
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
  uint32_t status = kgsl_->reset_status(context_);
  std::string what = status == hw::qcom::kgsl::kCtxStatInnocent ? "another context's fault reset the GPU while it ran "
                                                                : "a GPU fault (kgsl reset the context) while running ";
  fail(what + work_in_flight() + " (kgsl logs the fault to the kernel log: dmesg)");
}

bool QcomDevice::recover_queues() {
  std::lock_guard lock(mu_);
  kgsl_->destroy_context(context_);  // what it still had queued or was waiting on is dropped
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

QcomFacts facts(hcq::Device& dev) {
  auto* q = dynamic_cast<QcomDevice*>(&dev);
  if (!q) throw Error(dev.name() + " is not an Adreno device");
  return q->facts();
}

}  // namespace ugpu::qcom
