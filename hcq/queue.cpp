#include "hcq/queue.h"

#include <algorithm>
#include <cstring>

#include "hcq/device.h"

namespace ugpu::hcq {

void HWQueue::put64(Val v) {
  if (bound_) throw Error("a bound queue cannot record more commands");
  if (v.var >= 0) patches_.push_back({nullptr, cmds_.size(), v, 0, false});
  cmds_.push_back(static_cast<uint32_t>(v.constant));
  cmds_.push_back(static_cast<uint32_t>(v.constant >> 32));
}

void HWQueue::put32_of(Val v, unsigned shift) {
  if (bound_) throw Error("a bound queue cannot record more commands");
  if (v.var >= 0) patches_.push_back({nullptr, cmds_.size(), v, 0, false, 1, static_cast<uint8_t>(shift)});
  cmds_.push_back(static_cast<uint32_t>(v.constant >> shift));
}

HWQueue::~HWQueue() {
  for (const Kernargs& k : kernargs_) dev_.release_kernargs(k, last_submit_);
  if (!last_submit_) return;
  if (bound_mem_) dev_.keep_until(last_submit_, bound_mem_);
  if (!programs_.empty()) dev_.keep_until(last_submit_, std::make_shared<decltype(programs_)>(std::move(programs_)));
}

HWQueue& HWQueue::wait(const Signal& s, Val value) { return wait_at(s.address(), value); }
HWQueue& HWQueue::signal(const Signal& s, Val value) { return signal_at(s.address(), value); }
HWQueue& HWQueue::timestamp(const Signal& s) { return emit_timestamp(s.address()), *this; }
HWQueue& HWQueue::wait_at(Val a, Val value) { return emit_wait(a, value), *this; }
HWQueue& HWQueue::signal_at(Val a, Val value) { return emit_signal(a, value), *this; }
HWQueue& HWQueue::memory_barrier() { return emit_memory_barrier(), *this; }

template <class F>
void HWQueue::timed(const std::string& name, bool copy, F emit) {
  if (!dev_.profiler()) return emit();
  TimedCommand t{name, copy, dev_.new_signal(), dev_.new_signal()};
  timestamp(*t.start);
  emit();
  timestamp(*t.end);
  timed_.push_back(std::move(t));
}

HWQueue& HWQueue::copy(Val dst, Val src, uint64_t bytes) {
  if (dst.var < 0 && src.var < 0 && dst.constant < src.constant + bytes && src.constant < dst.constant + bytes)
    throw Error("copy of " + std::to_string(bytes) + " bytes between overlapping ranges is refused");
  timed("copy " + std::to_string(bytes) + " B", true, [&] { emit_copy(dst, src, bytes); });
  return *this;
}

HWQueue& HWQueue::exec(const Program& p, std::span<const Val> args) { return record_exec(p, args, true), *this; }
void HWQueue::exec_untimed(const Program& p, std::span<const Val> args) { record_exec(p, args, false); }

void HWQueue::copy_by_kernel(const Program& copy, Val dst, Val src, uint64_t bytes) {
  constexpr uint64_t kChunk = 0x7fffffff;  // the kernel's byte count is an int32
  for (uint64_t off = 0; off < bytes; off += kChunk) {
    Val s = src, d = dst;
    s.constant += off, d.constant += off;
    Val args[] = {d, s, Val(std::min(kChunk, bytes - off))};
    exec_untimed(copy, args);
  }
}

void HWQueue::record_exec(const Program& p, std::span<const Val> args, bool time) {
  if (bound_) throw Error("a bound queue cannot record more commands");
  size_t want = static_cast<size_t>(p.buffers + p.vars);
  if (args.size() != want)
    throw Error("kernel " + p.name + " takes " + std::to_string(p.buffers) + " buffers and " + std::to_string(p.vars) + " variables; " +
                std::to_string(args.size()) + " arguments given");
  std::shared_ptr<const Program> keep = p.weak_from_this().lock();
  if (!keep) throw Error("kernel " + p.name + ": a queue runs only programs held by a shared_ptr (as Device::load returns them)");
  const bool packed = !p.arg_layout.empty();
  Kernargs& k = kernargs_.emplace_back(dev_.alloc_kernargs(packed ? p.kernarg_bytes : args.size() * 8));
  auto* bytes = reinterpret_cast<uint8_t*>(k.host);
  if (packed) std::memset(bytes, 0, p.kernarg_bytes);
  for (size_t i = 0; i < args.size(); ++i) {
    Program::ArgSlot slot = packed ? p.arg_layout[i] : Program::ArgSlot{static_cast<uint32_t>(8 * i), 8};
    std::memcpy(bytes + slot.offset, &args[i].constant, slot.bytes);
    if (args[i].var >= 0)
      patches_.push_back({reinterpret_cast<uint32_t*>(bytes + slot.offset), 0, args[i], 0, false, static_cast<uint8_t>(slot.bytes / 4), 0});
  }
  if (programs_.empty() || programs_.back() != keep) programs_.push_back(std::move(keep));
  if (time) timed(p.name, false, [&] { emit_exec(p, k); });
  else emit_exec(p, k);
}

void HWQueue::bind() {
  if (bound_) return;
  auto mem = dev_.command_memory(cmds_.size());
  std::memcpy(mem.get(), cmds_.data(), cmds_.size() * 4);
  bound_mem_ = mem;
  bound_ = mem.get();
  size_ = cmds_.size();
  flushed_ = false;
}

void HWQueue::submit(std::span<const uint64_t> vars) {
  dev_.check_usable();
  bool waited = false;
  if (!timed_.empty() && last_submit_) {  // the timestamps of the last submit are read before they are overwritten
    dev_.wait_consumed(last_submit_);
    waited = true;
    dev_.collect_profile();
  }
  for (Patch& p : patches_) {
    if (static_cast<size_t>(p.value.var) >= vars.size())
      throw Error("the queue uses variable " + std::to_string(p.value.var) + " but the submit gives " + std::to_string(vars.size()));
    uint64_t v = vars[p.value.var] + p.value.constant;
    if (p.written && v == p.last) continue;
    if (!waited && last_submit_) dev_.wait_consumed(last_submit_);
    waited = true;
    uint32_t* where = p.mem ? p.mem : (bound_ ? bound_ : cmds_.data()) + p.at;
    where[0] = static_cast<uint32_t>(v >> p.shift);
    if (p.dwords == 2) where[1] = static_cast<uint32_t>(v >> 32);
    if (flushed_ && (p.mem || bound_)) dev_.host_wrote(where, p.dwords * 4u);
    p.last = v, p.written = true;
    ++patch_writes_;
  }
  if (!flushed_) {  // the device memory this queue wrote (argument blocks, the bound commands), once
    for (const Kernargs& k : kernargs_) dev_.host_wrote(k.host, k.bytes);
    if (bound_) dev_.host_wrote(bound_, size_ * 4);
    flushed_ = true;
  }
  last_submit_ = dev_.submit_commands(*this);
  if (!timed_.empty()) dev_.add_pending_profile(last_submit_, timed_);
}

}  // namespace ugpu::hcq
