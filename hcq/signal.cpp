#include "hcq/signal.h"

#include <new>

namespace ugpu::hcq {

Signal::~Signal() {
  if (pool_) pool_->release(slot_);
}

void Signal::set(uint64_t v) {
  slot_->value.store(v, std::memory_order_release);
  if (pool_ && pool_->wrote_) pool_->wrote_(&slot_->value, sizeof(uint64_t));
}

SignalRef SignalPool::make(uint64_t initial) {
  SignalSlot* s;
  int64_t delta;
  {
    std::lock_guard lock(mu_);
    if (free_.empty()) {
      constexpr size_t kPerPage = 4096 / sizeof(SignalSlot);
      SignalSlot* slots;
      if (page_) {
        Page p = page_();
        slots = new (p.host) SignalSlot[kPerPage];  // the slots' atomics start their lifetime in device memory
        pages_.push_back(std::move(p.owner));
        if (p.device && p.device != reinterpret_cast<uint64_t>(p.host))
          deltas_.push_back({reinterpret_cast<uintptr_t>(p.host), static_cast<int64_t>(p.device - reinterpret_cast<uint64_t>(p.host))});
      } else {
        auto host = std::shared_ptr<SignalSlot[]>(new SignalSlot[kPerPage]);
        slots = host.get();
        pages_.push_back(std::move(host));
      }
      for (size_t i = kPerPage; i-- > 0;) free_.push_back(&slots[i]);
    }
    s = free_.back();
    free_.pop_back();
    delta = delta_of(s);
  }
  s->value.store(initial, std::memory_order_release);
  s->timestamp.store(0, std::memory_order_release);
  if (wrote_) wrote_(s, sizeof(SignalSlot));
  return std::make_shared<Signal>(s, shared_from_this(), delta);
}

int64_t SignalPool::delta_of(const SignalSlot* s) const {  // mu_ held
  auto at = reinterpret_cast<uintptr_t>(s);
  for (const auto& [page, delta] : deltas_)
    if (at - page < 4096) return delta;
  return 0;
}

size_t SignalPool::free_slots() const {
  std::lock_guard lock(mu_);
  return free_.size();
}

void SignalPool::release(SignalSlot* s) {
  std::lock_guard lock(mu_);
  free_.push_back(s);
}

}  // namespace ugpu::hcq
