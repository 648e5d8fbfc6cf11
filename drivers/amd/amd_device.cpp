// The AMD device over any way in: rings with back-pressure, signals, scratch, program loading and
// fault handling. The way in (drivers/amd/interface.h) gives it memory, hardware queues and waits.
#include <algorithm>
#include <cstring>
#include <thread>

#include "drivers/amd/internal.h"
#include "sys/usb.h"

namespace ugpu::amd {
using Kind = AmdInterface::MemoryKind;

uint64_t Ring::read() const {
  // The engine writes back its read pointer; hardware may keep only the offset in the ring, so the
  // count is rebuilt from the write pointer (the ring never fills completely).
  uint64_t r = base + *rptr / (sdma ? 4 : 1);
  return written - ((written - r) & (dwords - 1));
}
uint64_t Ring::done() const {
  uint32_t lo = static_cast<uint32_t>(retired->value());
  return written - static_cast<uint32_t>(static_cast<uint32_t>(written) - lo);
}

AmdDevice::AmdDevice(std::unique_ptr<AmdInterface> way_in, const AmdOptions& o) : hcq::Device(o.name), way_in_(std::move(way_in)) {
  const AmdInterface::Facts& f = way_in_->facts();
  try {
    regs_ = &hw::amd::compute_registers(f.gfx_target_version);
  } catch (const Error& e) { throw Error(o.name + ": " + f.arch + ": " + e.what()); }
  interrupt_ = way_in_->interrupt();
  use_signal_memory([this](size_t n) { return buffer(n, Kind::Signals); }, [this](const void* p, size_t n) { host_wrote(p, n); });
  compute_ = create_ring(false, o.compute_ring_bytes);
  sdma_ = create_ring(true, o.sdma_ring_bytes);
  info_.kind = o.kind;
  info_.arch = f.arch + " (" + std::to_string(f.cu_count) + " CUs, " + f.chip + ")";
  info_.interface = f.interface;
  info_.memory = f.vram_bytes;
}

hcq::Buffer AmdDevice::buffer(uint64_t bytes, Kind kind) {
  std::shared_ptr<AmdInterface::Memory> m;
  try {
    m = way_in_->alloc(bytes, kind);
  } catch (const sys::UsbError& e) {  // the bridge is gone (other errors, as running out of memory, are the caller's)
    lost(e);
  }
  hcq::Buffer b;
  b.va = m->va, b.size = bytes, b.host = m->host, b.owner = m;
  return b;
}

void AmdDevice::lost(const Error& e) {
  fail(e.what());
  throw hcq::DeviceError(name() + ": " + e.what());
}

void AmdDevice::host_wrote(const void* host, size_t bytes) {
  try {
    way_in_->flush(host, bytes);
  } catch (const sys::UsbError& e) { lost(e); }
}

std::unique_ptr<Ring> AmdDevice::create_ring(bool sdma, size_t bytes) {
  auto r = std::make_unique<Ring>();
  r->sdma = sdma;
  r->ring = way_in_->alloc(bytes, Kind::Uncached);
  r->gart = way_in_->alloc(4096, Kind::Signals);
  r->words = static_cast<uint32_t*>(r->ring->host);
  r->dwords = bytes / 4;
  r->wptr = reinterpret_cast<uint64_t*>(static_cast<uint8_t*>(r->gart->host) + 56);
  r->rptr = reinterpret_cast<uint64_t*>(static_cast<uint8_t*>(r->gart->host) + 128);
  r->retired = new_signal(0);
  start_queue(*r);
  return r;
}

void AmdDevice::start_queue(Ring& r) {
  r.base = r.written;
  *r.wptr = 0;
  *r.rptr = 0;
  way_in_->flush(r.gart->host, r.gart->size);
  AmdInterface::Queue q = way_in_->create_queue({r.sdma, r.ring.get(), r.gart->va + 56, r.gart->va + 128});
  r.queue_id = q.id;
  r.doorbell = std::move(q.doorbell);
}

bool AmdDevice::recover_queues() {
  if (!way_in_->can_recover()) return false;
  way_in_->recover();  // the engines reset; the queues were stopped when the device failed
  for (Ring* r : {compute_.get(), sdma_.get()}) {
    std::lock_guard lock(r->mu);
    r->retired->set(static_cast<uint32_t>(r->written));  // what was on the ring is gone: count it as done
    r->kernels = {};
    start_queue(*r);
  }
  queues_live_ = true;
  return true;
}

AmdDevice::~AmdDevice() {
  on_fail();  // stops the queues: nothing runs on them past this point
}

hcq::Buffer AmdDevice::alloc_memory(size_t bytes) { return buffer(bytes, Kind::Vram); }
hcq::Buffer AmdDevice::alloc_staging(size_t bytes) { return buffer(bytes, Kind::Userptr); }
// Device memory where the host maps it; where it cannot (USB), uncached memory, whose host copy is
// flushed (AmdInterface::Memory).
hcq::Buffer AmdDevice::host_written(uint64_t bytes) { return way_in_->facts().host_copies ? buffer(bytes, Kind::Uncached) : alloc(bytes); }
hcq::Buffer AmdDevice::alloc_argument_memory(size_t bytes) { return host_written(bytes); }

std::shared_ptr<uint32_t[]> AmdDevice::command_memory(size_t dwords) {
  hcq::Buffer b = host_written(std::max<size_t>(dwords, 1) * 4);
  if (b.va != reinterpret_cast<uint64_t>(b.host))
    throw Error(name() + ": bound queues need commands at the same address for host and GPU, which " + facts().interface + " does not give");
  return std::shared_ptr<uint32_t[]>(b.owner, static_cast<uint32_t*>(b.host));
}

uint64_t AmdDevice::submit_commands(hcq::HWQueue& hq) {
  check_usable();
  auto& q = static_cast<AmdQueue&>(hq);
  Ring& r = ring(q.sdma);
  std::span<const uint32_t> cmds = q.commands();
  std::vector<uint32_t> tail;  // what follows the commands: the indirect packet of a bound queue, the retire record
  if (q.bound()) {
    q.indirect(tail, reinterpret_cast<uint64_t>(cmds.data()), cmds.size());
    cmds = {};
  }
  const size_t head = tail.size();
  q.retire(tail, 0, 0);  // sized now; written once the position is known
  const size_t n = cmds.size() + tail.size();
  if (n > r.dwords / 2)
    throw Error(name() + ": a queue of " + std::to_string(n) + " dwords does not fit the " + std::to_string(r.dwords) +
                "-dword ring; bind() it so a submit is one indirect packet");
  auto deadline = std::chrono::steady_clock::now() + default_timeout();
  uint64_t seen = r.read();
  std::string lost_why;
  for (bool waited = false;; waited = true) {
    {
      std::lock_guard lock(r.mu);
      uint64_t written = r.written, pos = r.offset(written);
      size_t pad = r.sdma && pos + n > r.dwords ? r.dwords - pos : 0;  // SDMA packets never straddle the ring's end
      uint64_t end = written + pad + n;
      if (end - r.read() <= r.dwords - 1) {
        tail.resize(head);
        q.retire(tail, r.retired->address(), static_cast<uint32_t>(end));
        auto put = [&](std::span<const uint32_t> w) {
          for (size_t i = 0; i < w.size();) {
            uint64_t at = r.offset(written), k = std::min<uint64_t>(w.size() - i, r.dwords - at);
            std::memcpy(r.words + at, w.data() + i, k * 4);
            written += k, i += k;
          }
        };
        if (pad) {
          std::vector<uint32_t> nop;
          append_nop(nop, true, pad);
          put(nop);
        }
        r.last_at = written, r.last_len = n;
        put(cmds);
        put(tail);
        const uint64_t from = r.written;
        r.written = written;
        if (q.kernels) r.kernels.add(end, q.kernels, r.done());
        uint64_t wptr = (written - r.base) * (r.sdma ? 4 : 1);  // the hardware counts from its start
        __atomic_store_n(r.wptr, wptr, __ATOMIC_RELEASE);
        try {
          for (uint64_t at = from; at < written;) {  // a no-op where the host writes the ring itself
            uint64_t k = std::min<uint64_t>(written - at, r.dwords - r.offset(at));
            way_in_->flush(r.words + r.offset(at), k * 4);
            at += k;
          }
          way_in_->flush(r.wptr, sizeof *r.wptr);
          r.doorbell->ring(wptr);
          return (r.sdma ? uint64_t{1} << 56 : 0) | end;
        } catch (const Error& e) {  // the way in failed (the USB bridge gone): nothing more can run
          lost_why = e.what();
        }
      }
      if (!lost_why.empty()) lost(Error(lost_why));
      if (!waited) ++r.waits;
    }
    // Back-pressure: the ring is full; wait (without the lock) for the engine to read further.
    check_exceptions();
    check_usable();
    if (r.read() != seen) seen = r.read(), deadline = std::chrono::steady_clock::now() + default_timeout();
    if (std::chrono::steady_clock::now() > deadline) {
      fail("ring full");
      throw hcq::Timeout(name() + ": waiting for space on the " + (r.sdma ? "SDMA" : "compute") + " ring: the GPU read nothing for " +
                         std::to_string(default_timeout().count()) + " ms; the device is marked failed");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

bool AmdDevice::consumed(uint64_t position) const {
  const Ring& r = position >> 56 ? *sdma_ : *compute_;
  return r.done() >= (position & ((uint64_t{1} << 56) - 1));
}

void AmdDevice::sleep_for_progress(std::chrono::microseconds max) {
  if (!queues_live_) return Device::sleep_for_progress(max);
  std::optional<AmdInterface::Fault> fault;
  try {
    fault = way_in_->wait_for_progress(max);
  } catch (const Error& e) {  // the way in failed (the USB bridge gone): a waiter learns it from the error state
    fault = AmdInterface::Fault{e.what(), ""};
  }
  if (fault) fail(fault->what + " while running " + work_in_flight() + (fault->hint.empty() ? "" : "; " + fault->hint));
}

void AmdDevice::check_exceptions() { sleep_for_progress(std::chrono::microseconds(0)); }

std::string AmdDevice::work_in_flight() {
  std::lock_guard lock(compute_->mu);
  return compute_->kernels.describe(compute_->done());
}

uint64_t AmdDevice::ring_waits() const {
  uint64_t n = 0;
  for (Ring* r : {compute_.get(), sdma_.get()}) {
    std::lock_guard lock(r->mu);
    n += r->waits;
  }
  return n;
}

void AmdDevice::on_fail() {
  if (!queues_live_.exchange(false)) return;
  if (failed()) way_in_->failed();
  way_in_->stop_queues();
}

AmdDevice::Scratch AmdDevice::scratch_for(const AmdProgram& p) {
  if (!p.scratch_per_lane) return {};
  std::lock_guard lock(scratch_mu_);
  uint32_t wave_bytes = static_cast<uint32_t>((uint64_t{p.scratch_per_lane} * 64 + 255) / 256 * 256);
  uint32_t waves = way_in_->facts().scratch_slots * way_in_->facts().cu_count;
  if (wave_bytes > scratch_wave_bytes_) {
    if (scratch_.owner) old_scratch_.push_back(scratch_);  // queues recorded earlier may still use it
    scratch_ = alloc(uint64_t{waves} * wave_bytes);
    scratch_wave_bytes_ = wave_bytes;
  }
  return {scratch_.va, regs_->tmpring_wavesize.set(regs_->tmpring_waves.set(0, waves), scratch_wave_bytes_ / 256)};
}

void AmdDevice::invalidate_code() {
  uint64_t v = next_timeline();
  auto q = make_pm4_queue(*this);
  q->wait(timeline(), v - 1).memory_barrier();
  q->invalidate_instruction_cache();
  q->signal(timeline(), v);
  q->submit();
  wait(timeline(), v, "loading a program");
}

std::shared_ptr<hcq::Program> AmdDevice::load(std::shared_ptr<const codegen::CompiledKernel> kernel) {
  if (!kernel || kernel->target->name != target())
    throw Error(name() + ": load needs a kernel compiled for " + target() + ", not " +
                (kernel ? std::string(kernel->target->name) : std::string("nothing")));
  return std::make_shared<AmdProgram>(*this, std::move(kernel));
}

std::unique_ptr<hcq::Device> open_amd(std::unique_ptr<AmdInterface> way_in, const AmdOptions& o) {
  return std::make_unique<AmdDevice>(std::move(way_in), o);
}

RingSnapshot last_submission(hcq::Device& dev, bool sdma) {
  auto* k = dynamic_cast<AmdDevice*>(&dev);
  if (!k) throw Error(dev.name() + " is not an AMD device");
  Ring& r = k->ring(sdma);
  std::lock_guard lock(r.mu);
  RingSnapshot s;
  s.sdma = sdma;
  for (uint64_t i = 0; i < r.last_len; ++i) s.words.push_back(r.words[r.offset(r.last_at + i)]);
  return s;
}

}  // namespace ugpu::amd
