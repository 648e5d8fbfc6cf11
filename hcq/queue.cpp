#include "hcq/queue.h"

#include <cstring>

#include "hcq/device.h"

namespace ugpu::hcq {

void HWQueue::put64(Val v) {
  if (bound_) throw Error("a bound queue cannot record more commands");
  if (v.var >= 0) patches_.push_back({nullptr, cmds_.size(), v, 0, false});
  cmds_.push_back(static_cast<uint32_t>(v.constant));
  cmds_.push_back(static_cast<uint32_t>(v.constant >> 32));
}

HWQueue::~HWQueue() {
  if (!last_submit_) return;
  dev_.keep_until(last_submit_, kernargs_);
  if (bound_mem_) dev_.keep_until(last_submit_, bound_mem_);
}

HWQueue& HWQueue::wait(const Signal& s, Val value) { return emit_wait(s, value), *this; }
HWQueue& HWQueue::signal(const Signal& s, Val value) { return emit_signal(s, value), *this; }
HWQueue& HWQueue::timestamp(const Signal& s) { return emit_timestamp(s), *this; }
HWQueue& HWQueue::memory_barrier() { return emit_memory_barrier(), *this; }
HWQueue& HWQueue::copy(Val dst, Val src, uint64_t bytes) {
  if (dst.var < 0 && src.var < 0 && dst.constant < src.constant + bytes && src.constant < dst.constant + bytes)
    throw Error("copy of " + std::to_string(bytes) + " bytes between overlapping ranges is refused");
  return emit_copy(dst, src, bytes), *this;
}

HWQueue& HWQueue::exec(const Program& p, std::span<const Val> args) {
  if (bound_) throw Error("a bound queue cannot record more commands");
  size_t want = static_cast<size_t>(p.buffers + p.vars);
  if (args.size() != want)
    throw Error("kernel " + p.name + " takes " + std::to_string(p.buffers) + " buffers and " + std::to_string(p.vars) +
                " variables; " + std::to_string(args.size()) + " arguments given");
  std::vector<uint64_t>& mem = kernargs_->emplace_back(args.size() ? args.size() : 1);
  for (size_t i = 0; i < args.size(); ++i) {
    mem[i] = args[i].constant;
    if (args[i].var >= 0) patches_.push_back({reinterpret_cast<uint32_t*>(&mem[i]), 0, args[i], 0, false});
  }
  emit_exec(p, mem.data(), args.size());
  return *this;
}

void HWQueue::bind() {
  if (bound_) return;
  auto mem = dev_.command_memory(cmds_.size());
  std::memcpy(mem.get(), cmds_.data(), cmds_.size() * 4);
  bound_mem_ = mem;
  bound_ = mem.get();
  size_ = cmds_.size();
}

void HWQueue::submit(std::span<const uint64_t> vars) {
  dev_.check_usable();
  bool waited = false;
  for (Patch& p : patches_) {
    if (static_cast<size_t>(p.value.var) >= vars.size())
      throw Error("the queue uses variable " + std::to_string(p.value.var) + " but the submit gives " + std::to_string(vars.size()));
    uint64_t v = vars[p.value.var] + p.value.constant;
    if (p.written && v == p.last) continue;
    if (!waited && last_submit_) dev_.wait_consumed(last_submit_);
    waited = true;
    uint32_t* where = p.mem ? p.mem : (bound_ ? bound_ : cmds_.data()) + p.at;
    where[0] = static_cast<uint32_t>(v);
    where[1] = static_cast<uint32_t>(v >> 32);
    p.last = v, p.written = true;
    ++patch_writes_;
  }
  last_submit_ = dev_.submit_commands(*this);
}

}  // namespace ugpu::hcq
