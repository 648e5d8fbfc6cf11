#include "hcq/device.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

#include "common/hex.h"
#include "hcq/profiler.h"

namespace ugpu::hcq {

std::vector<int64_t> Program::recorded_vars(const Kernargs& k) const {
  std::vector<int64_t> vars;
  const auto* bytes = reinterpret_cast<const uint8_t*>(k.host);
  for (size_t i = static_cast<size_t>(buffers); i < static_cast<size_t>(buffers + this->vars); ++i) {
    ArgSlot slot = arg_layout.empty() ? ArgSlot{static_cast<uint32_t>(8 * i), 8} : arg_layout[i];
    int64_t v = 0;
    std::memcpy(&v, bytes + slot.offset, slot.bytes);
    if (slot.bytes == 4) v = static_cast<int32_t>(v);
    vars.push_back(v);
  }
  return vars;
}
namespace {
// UGPU_WAIT_TIMEOUT_MS, else 30 s; at most Device::kMaxTimeout. Anything that is not such a number is
// an error, not a silent default.
std::chrono::milliseconds env_timeout() {
  constexpr long long kMaxMs = Device::kMaxTimeout.count();
  const char* e = std::getenv("UGPU_WAIT_TIMEOUT_MS");
  if (!e || !*e) return std::chrono::milliseconds(30000);
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(e, &end, 10);
  if (!end || *end || errno || v < 1 || v > kMaxMs)
    throw Error(std::string("UGPU_WAIT_TIMEOUT_MS=") + e + ": a whole number of milliseconds from 1 to " + std::to_string(kMaxMs));
  return std::chrono::milliseconds(v);
}
}  // namespace

Device::Device(std::string name) : name_(std::move(name)), pool_(SignalPool::create()), timeout_(env_timeout()) {
  timeline_ = pool_->make(0);
  shadow_ = pool_->make(0);
  timeline_cur_ = timeline_.get();
  open_memory();
}

Device::~Device() { close_memory(); }

void Device::use_signal_memory(std::function<Buffer(size_t)> page, std::function<void(const void*, size_t)> wrote) {
  pool_ = SignalPool::create(
      [page = std::move(page)] {
        Buffer b = page(4096);
        return SignalPool::Page{b.host, b.owner, b.va};
      },
      std::move(wrote));
  timeline_ = pool_->make(0);
  shadow_ = pool_->make(0);
  timeline_cur_ = timeline_.get();
}

uint64_t Device::next_timeline() {
  check_usable();
  if (next_ >= rollover_at_) {
    // Everything so far must have signalled the old timeline before it is retired.
    wait(*timeline_, next_ - 1, "timeline before rollover");
    std::swap(timeline_, shadow_);
    timeline_->set(0);
    timeline_cur_ = timeline_.get();
    next_ = 1;
    ++rollovers_;
    for (Staging& s : staging_) s.done_at = 0;
  }
  return next_++;
}

void Device::set_rollover_for_test(uint64_t next_value, uint64_t rollover_at) {
  synchronize();
  timeline_->set(next_value - 1);
  next_ = next_value;
  rollover_at_ = rollover_at;
}

void Device::sleep_for_progress(std::chrono::microseconds max) { std::this_thread::sleep_for(std::min(max, std::chrono::microseconds(200))); }

void Device::wait(const Signal& s, uint64_t value, const std::string& what, std::chrono::milliseconds timeout) {
  if (s.value() >= value) return;
  using clock = std::chrono::steady_clock;
  // A caller's limit is capped where `now + limit` could leave the clock's range.
  auto limit = std::min<std::chrono::milliseconds>(timeout.count() > 0 ? timeout : timeout_, kMaxTimeout);
  // Spin for up to 50 us first: short work finishes without paying a sleep's wake-up latency.
  auto spin_until = clock::now() + std::chrono::microseconds(50);
  for (int spin = 0;; ++spin) {
    if (s.value() >= value) return;
    if (spin % 64 == 63 && clock::now() >= spin_until) break;
  }
  uint64_t seen = s.value();
  auto deadline = clock::now() + limit;
  while (s.value() < value) {
    if (failed()) throw DeviceError("device " + name_ + " failed while waiting for " + what + ": " + error());
    uint64_t now_v = s.value();
    if (now_v != seen) seen = now_v, deadline = clock::now() + limit;  // progress restarts the clock
    if (clock::now() >= deadline) {
      std::string msg = "device " + name_ + ": " + what + ": signal " + hex(s.address()) + " did not reach " + std::to_string(value) + " within " +
                        std::to_string(limit.count()) + " ms (it is at " + std::to_string(s.value()) + ") while running " + work_in_flight() +
                        "; the device is marked failed. A longer wait: UGPU_WAIT_TIMEOUT_MS";
      fail("timeout: " + what);
      throw Timeout(msg);
    }
    sleep_for_progress(std::chrono::duration_cast<std::chrono::microseconds>(deadline - clock::now()));
  }
}

void Device::wait_consumed(uint64_t position) {
  if (consumed(position)) return;
  auto deadline = std::chrono::steady_clock::now() + default_timeout();
  for (int spin = 0; !consumed(position); ++spin) {
    check_usable();
    if (spin < 256) continue;
    if (std::chrono::steady_clock::now() > deadline) {
      fail("timeout waiting for a submission to finish");
      throw Timeout(name_ + ": a submission did not finish within " + std::to_string(default_timeout().count()) + " ms (" + work_in_flight() +
                    "); the device is marked failed");
    }
    sleep_for_progress(std::chrono::milliseconds(1));
  }
}

void Device::synchronize() {
  check_usable();
  wait(*timeline_, next_ - 1, "synchronize");
  if (profiler_) collect_profile(true);
}

void Device::keep_until(uint64_t position, std::shared_ptr<void> what) {
  std::lock_guard lock(keep_mu_);
  std::erase_if(kept_, [&](const auto& k) { return consumed(k.first); });
  if (!consumed(position)) kept_.emplace_back(position, std::move(what));
}

bool Device::failed() const {
  std::lock_guard lock(err_mu_);
  return !error_.empty();
}
std::string Device::error() const {
  std::lock_guard lock(err_mu_);
  return error_;
}
void Device::fail(const std::string& why) {
  {
    std::lock_guard lock(err_mu_);
    if (!error_.empty()) return;
    error_ = why;
  }
  on_fail();
}
void Device::recover() {
  if (!failed()) return;
  std::string was = error();
  if (!recover_queues()) throw DeviceError("device " + name_ + " cannot be recovered in place after: " + was + " (open it again)");
  {
    std::lock_guard lock(keep_mu_);
    kept_.clear();  // nothing on the old rings will be read again
  }
  timeline_->set(next_ - 1);  // work that was in flight never finishes; what follows must not wait for it
  for (auto& st : staging_) st.done_at = 0;
  std::lock_guard lock(err_mu_);
  error_.clear();
}

void Device::check_usable() const {
  if (failed()) throw DeviceError("device " + name_ + " is in an error state (" + error() + ") and takes no more work");
}

namespace {
void check_range(const Buffer& b, size_t offset, size_t n, const char* what) {
  if (offset > b.size || n > b.size - offset)
    throw Error(std::string(what) + " of " + std::to_string(n) + " bytes at offset " + std::to_string(offset) + " is outside the " +
                std::to_string(b.size) + "-byte buffer");
}
}  // namespace

void Device::make_staging() {
  if (staging_.empty())
    for (int i = 0; i < staging_count_; ++i) staging_.push_back({alloc_staging(staging_size_), 0});
}

void Device::copy_in(const Buffer& dst, size_t offset, std::span<const uint8_t> src) {
  check_range(dst, offset, src.size(), "copy in");
  copy_in_at(dst.va + offset, src);
}

void Device::copy_out(std::span<uint8_t> dst, const Buffer& src, size_t offset) {
  check_range(src, offset, dst.size(), "copy out");
  copy_out_at(dst, src.va + offset);
}

void Device::copy_in_at(uint64_t va, std::span<const uint8_t> src) {
  make_staging();
  for (size_t done = 0; done < src.size();) {
    Staging& st = staging_[staging_next_++ % staging_.size()];
    wait(*timeline_, st.done_at, "staging buffer reuse");
    size_t n = std::min(staging_size_, src.size() - done);
    std::memcpy(st.buf.host, src.data() + done, n);
    uint64_t v = next_timeline();
    auto cq = copy_queue();
    cq->wait(*timeline_, v - 1).copy(va + done, st.buf.va, n).signal(*timeline_, v);
    cq->submit();
    st.done_at = v;
    done += n;
  }
}

void Device::copy_out_at(std::span<uint8_t> dst, uint64_t va) {
  make_staging();
  Staging& st = staging_[0];  // each chunk is read back before the next is copied into it
  for (size_t done = 0; done < dst.size();) {
    size_t n = std::min(staging_size_, dst.size() - done);
    uint64_t v = next_timeline();
    auto cq = copy_queue();
    cq->wait(*timeline_, v - 1).copy(st.buf.va, va + done, n).signal(*timeline_, v);
    cq->submit();
    wait(*timeline_, v, "copy out");
    std::memcpy(dst.data() + done, st.buf.host, n);
    st.done_at = v;
    done += n;
  }
}

void Device::clear(const Buffer& b) {
  static const std::vector<uint8_t> zeros(1 << 20);
  for (size_t done = 0; done < b.size; done += zeros.size()) copy_in(b, done, std::span(zeros).first(std::min(zeros.size(), b.size - done)));
}

Kernargs Device::alloc_kernargs(size_t bytes) {
  std::lock_guard lock(kernarg_mu_);
  if (!kernarg_ring_) {
    kernarg_mem_ = alloc_argument_memory(kernarg_ring_size_);
    KernargRing::Hooks h;
    h.consumed = [this](uint64_t p) { return consumed(p); };
    h.wait = [this](uint64_t p) { wait_consumed(p); };
    h.overflow = [this](size_t n) {
      Buffer b = alloc_argument_memory(n);
      return Kernargs{static_cast<uint64_t*>(b.host), b.va, n, b.owner};
    };
    kernarg_ring_ = std::make_unique<KernargRing>(static_cast<uint64_t*>(kernarg_mem_.host), kernarg_mem_.va, kernarg_ring_size_, h);
  }
  return kernarg_ring_->alloc(bytes);
}

void Device::release_kernargs(const Kernargs& k, uint64_t position) {
  if (k.overflow && position) keep_until(position, k.block);
  else if (kernarg_ring_) kernarg_ring_->release(k, position);
}

KernargStats Device::kernarg_stats() const { return kernarg_ring_ ? kernarg_ring_->stats() : KernargStats{}; }

void Device::set_profiler(std::shared_ptr<Profiler> p) {
  if (p && !calibrated_) host_time_ns(0);  // measure the clock offset now, not in the middle of work
  std::lock_guard lock(profile_mu_);
  profiler_ = std::move(p);
}

void Device::add_pending_profile(uint64_t position, const std::vector<TimedCommand>& timed) {
  std::lock_guard lock(profile_mu_);
  pending_profile_.push_back({position, timed});
}

void Device::collect_profile(bool wait_all) {
  std::lock_guard lock(profile_mu_);
  if (wait_all)
    for (const PendingProfile& p : pending_profile_) wait_consumed(p.position);
  std::erase_if(pending_profile_, [&](const PendingProfile& p) {
    if (!consumed(p.position)) return false;
    if (profiler_)
      for (const TimedCommand& t : p.timed)
        profiler_->add({name_, t.name, t.copy, host_time_ns(t.start->timestamp()), host_time_ns(t.end->timestamp())});
    return true;
  });
}

int64_t Device::host_time_ns(uint64_t ticks) {
  auto host_now = [] { return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count(); };
  auto to_ns = [&](uint64_t t) { return static_cast<int64_t>(static_cast<long double>(t) * 1e9L / static_cast<long double>(clock_hz())); };
  if (!calibrated_) {
    // The device timestamp lies between the host times around its submit and its completion;
    // the best of a few tries (the narrowest window) gives the offset.
    int64_t best_window = INT64_MAX;
    for (int i = 0; i < 5; ++i) {
      auto s = new_signal();
      auto q = compute_queue();
      q->timestamp(*s).signal(*s, 1);
      int64_t t0 = host_now();
      q->submit();
      wait(*s, 1, "clock calibration");
      int64_t t1 = host_now();
      if (t1 - t0 < best_window) best_window = t1 - t0, clock_offset_ns_ = t0 + (t1 - t0) / 2 - to_ns(s->timestamp());
    }
    calibrated_ = true;
  }
  return to_ns(ticks) + clock_offset_ns_;
}

}  // namespace ugpu::hcq
