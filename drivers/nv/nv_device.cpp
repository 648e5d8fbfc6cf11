// The NVIDIA device over any way in: QMD version and architecture facts, channels with their
// pushbuffer rings, submission with flow control on the GPFIFO ring and the pushbuffer ring, faults,
// shader local memory and program loading.
#include <fcntl.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "common/hex.h"
#include "drivers/nv/internal.h"
#include "hw/nv/rm_abi.h"
#include "ir/text.h"

namespace ugpu::nv {
namespace rm = hw::nv;
namespace m = hw::nv;

namespace {

constexpr uint64_t kSharedWindow = 0x7293'0000'0000ull, kLocalWindow = 0x7294'0000'0000ull;  // 4 GiB aligned, above every buffer

}  // namespace

const ArchFacts& arch_facts(const std::string& arch) {
  // Parameter offsets as ptxas 13.0 places them (the .nv.info PARAM_CBANK of its cubins); the largest SM
  // shared-memory configuration per architecture (A100 164 KiB, Ada 100 KiB, H100 228 KiB).
  static const ArchFacts kFacts[] = {
      {"sm_80", 0x160, 164, 12}, {"sm_86", 0x160, 100, 12},  {"sm_89", 0x160, 100, 12},
      {"sm_90", 0x210, 228, 12}, {"sm_100", 0x380, 228, 12}, {"sm_120", 0x380, 100, 12},
  };
  for (const ArchFacts& f : kFacts)
    if (arch == f.arch) return f;
  throw Error("NVIDIA architecture " + arch + " is not one ugpu launches kernels on (sm_80, sm_86, sm_89, sm_90, sm_100, sm_120)");
}

uint64_t Channel::gp_read() const {
  uint32_t get = __atomic_load_n(&userd->gp_get, __ATOMIC_ACQUIRE);
  return gp_written - ((gp_written - get) % entries);  // the ring never fills completely
}

NvDevice::NvDevice(std::unique_ptr<NvInterface> way_in, const NvOptions& o) : Device(o.name), way_in_(std::move(way_in)), opts_(o) {
  // A launch's argument block holds constant bank 0 (0x210 bytes of driver words on sm_90 before the
  // parameters) and its QMD: about 1 KiB, so the kernarg ring is 16 MiB, not the default 1 MiB.
  set_kernarg_ring_size(16u << 20);
  const NvInterface::Facts& f = way_in_->facts();
  facts_.driver_version = f.driver_version, facts_.abi_branch = f.abi_branch;
  facts_.compute_class = f.compute_class, facts_.copy_class = f.copy_class;
  facts_.gpfifo_class = f.gpfifo_class, facts_.usermode_class = f.usermode_class;
  facts_.sm_version = f.sm_version;
  // QMD version: V05 on Blackwell, V04 on Hopper, V03 on Ampere and Ada. An H100 (driver 580) ran V03
  // launches without an error but computed wrong results (docs/hardware-results.md); UGPU_NV_QMD=3
  // still builds V03 there, for experiments on hardware.
  const uint32_t cls = f.compute_class & 0xff00;
  unsigned qmd = cls >= 0xcd00 ? 5 : cls >= 0xcb00 ? 4 : 3;
  if (const char* e = std::getenv("UGPU_NV_QMD"); e && *e && f.compute_class == rm::HOPPER_COMPUTE_A) {
    std::string v = e;
    if (v != "3" && v != "4") throw Error(name() + ": UGPU_NV_QMD=" + v + ": a Hopper GPU takes QMD version 3 or 4");
    qmd = static_cast<unsigned>(v[0] - '0');
  }
  qmd_layout_ = &m::qmd_layout(qmd);
  facts_.qmd_major = qmd;
  arch_facts_ = &arch_facts(f.arch);
  sass_version_ = ((f.sm_version & 0xf00) >> 4) | (f.sm_version & 0xf);

  // Signals: host memory the GPU writes.
  use_signal_memory([this](size_t n) { return buffer(n, NvInterface::MemoryKind::Host); });
  compute_ = create_channel(false, f.compute_class);
  copy_ = create_channel(true, f.copy_class);
  way_in_->start_channels();

  shared_window_ = kSharedWindow, local_window_ = kLocalWindow;
  cbank0_prefix_.assign(arch_facts_->cbank0_prefix_words, 0);
  cbank0_prefix_[6] = static_cast<uint32_t>(shared_window_), cbank0_prefix_[7] = static_cast<uint32_t>(shared_window_ >> 32);
  cbank0_prefix_[8] = static_cast<uint32_t>(local_window_), cbank0_prefix_[9] = static_cast<uint32_t>(local_window_ >> 32);
  cbank0_prefix_[10] = 0xfffdc0;
  init_channels();

  facts_.gpu_name = std::string(o.kind == "gpu" ? "NVIDIA GPU" : "emulated NVIDIA GPU") + " " + hex(f.device_id);
  info_.kind = o.kind;
  info_.arch = f.arch + " (" + std::to_string(f.gpcs * f.tpcs_per_gpc * f.sms_per_tpc) + " SMs, device " + hex(f.device_id) + ")";
  info_.interface = f.interface;
  info_.memory = f.memory_bytes;
}

hcq::Buffer NvDevice::buffer(uint64_t bytes, NvInterface::MemoryKind kind) {
  auto mem = way_in_->alloc(bytes, kind);
  hcq::Buffer b;
  b.va = mem->va, b.size = bytes, b.host = mem->host, b.owner = mem;
  return b;
}

std::unique_ptr<Channel> NvDevice::create_channel(bool copy, uint32_t engine_class) {
  auto c = std::make_unique<Channel>();
  c->copy = copy;
  c->entries = opts_.gpfifo_entries;
  NvInterface::Channel h = way_in_->create_channel({copy, engine_class, c->entries});
  c->token = h.token, c->gpfifo = h.gpfifo, c->gpfifo_va = h.gpfifo_va, c->userd = h.userd, c->owner = h.owner;
  c->pushbuffer = way_in_->alloc(opts_.pushbuffer_bytes, NvInterface::MemoryKind::VidmemWc);
  c->pb = static_cast<uint32_t*>(c->pushbuffer->host), c->pb_va = c->pushbuffer->va, c->pb_dwords = c->pushbuffer->size / 4;
  c->retired = new_signal(0);
  return c;
}

void NvDevice::init_channels() {
  // Bind the engines to their subchannels; the compute engine learns the shared and local windows.
  for (bool copy : {false, true}) {
    auto q = copy ? make_copy_queue(*this) : make_compute_queue(*this);
    q->bind_engine(copy ? facts_.copy_class : facts_.compute_class, shared_window_, local_window_);
    uint64_t v = next_timeline();
    q->signal(timeline(), v);
    q->submit();
    wait(timeline(), v, copy ? "setting up the copy channel" : "setting up the compute channel");
  }
}

NvDevice::~NvDevice() { on_fail(); }

hcq::Buffer NvDevice::alloc_memory(size_t bytes) { return buffer(bytes, NvInterface::MemoryKind::Vidmem); }
hcq::Buffer NvDevice::alloc_staging(size_t bytes) { return buffer(bytes, NvInterface::MemoryKind::Host); }

std::shared_ptr<uint32_t[]> NvDevice::command_memory(size_t dwords) {
  hcq::Buffer b = alloc(std::max<size_t>(dwords, 1) * 4);
  // A bound queue knows its commands by their host address; the GPFIFO entry needs the GPU's.
  {
    std::lock_guard lock(command_va_->mu);
    command_va_->va[b.host] = b.va;
  }
  return std::shared_ptr<uint32_t[]>(static_cast<uint32_t*>(b.host), [owner = b.owner, map = command_va_](uint32_t* p) {
    std::lock_guard lock(map->mu);
    map->va.erase(p);
  });
}

uint64_t NvDevice::command_address(const uint32_t* host) const {
  std::lock_guard lock(command_va_->mu);
  auto it = command_va_->va.find(host);
  if (it == command_va_->va.end()) throw Error(name() + ": a bound queue's commands are not in this device's command memory");
  return it->second;
}

uint64_t NvDevice::submit_commands(hcq::HWQueue& hq) {
  check_usable();
  auto& q = static_cast<NvQueue&>(hq);
  Channel& c = channel(q.copy);
  std::span<const uint32_t> cmds = q.commands();
  const bool bound = q.bound();
  // What goes into the pushbuffer ring: the commands (unless bound, then they run where they are),
  // then the retire record. The GPFIFO gets one entry per segment.
  std::vector<uint32_t> tail;
  append_retire(tail, 0, 0);
  const size_t n = (bound ? 0 : cmds.size()) + tail.size();
  const uint32_t gp_needed = bound ? 2 : 1;
  if (n > c.pb_dwords / 2)
    throw Error(name() + ": a queue of " + std::to_string(n) + " dwords does not fit the " + std::to_string(c.pb_dwords) +
                "-dword pushbuffer ring; bind() it so a submit is one GPFIFO entry");
  auto deadline = std::chrono::steady_clock::now() + default_timeout();
  uint64_t seen_gp = ~uint64_t{0}, seen_done = ~uint64_t{0};  // progress seen while waiting for space
  for (bool waited = false;; waited = true) {
    {
      std::lock_guard lock(c.mu);
      // Pushbuffer space: segments are contiguous, so a segment that would cross the end starts at 0.
      uint64_t at = c.pb_written % c.pb_dwords;
      uint64_t pad = at + n > c.pb_dwords ? c.pb_dwords - at : 0;
      uint64_t end = c.pb_written + pad + n;
      // Retired pushbuffer: everything written before the last finished submission.
      uint64_t done = c.done(), freed = 0;
      while (!c.pb_marks.empty() && c.pb_marks.front().first <= done) freed = c.pb_marks.front().second, c.pb_marks.pop_front();
      if (freed) c.pb_freed = std::max(c.pb_freed, freed);
      bool pb_ok = end - c.pb_freed <= c.pb_dwords;
      // GPGet is in USERD, GPU memory behind the BAR (a slow read): read only when the last value seen
      // leaves no room.
      bool gp_ok = c.gp_written + gp_needed - c.gp_seen <= c.entries - 1;
      if (!gp_ok) c.gp_seen = c.gp_read(), gp_ok = c.gp_written + gp_needed - c.gp_seen <= c.entries - 1;
      if (pb_ok && gp_ok) {
        uint64_t position = ++c.submitted;
        uint32_t* seg = c.pb + (at + pad) % c.pb_dwords;
        uint64_t seg_va = c.pb_va + ((at + pad) % c.pb_dwords) * 4;
        size_t k = 0;
        if (!bound) {
          std::memcpy(seg, cmds.data(), cmds.size() * 4);
          k = cmds.size();
        }
        tail.clear();
        append_retire(tail, c.retired->address(), position);
        std::memcpy(seg + k, tail.data(), tail.size() * 4);
        c.pb_written = end;
        c.pb_marks.emplace_back(position, end);
        auto put_entry = [&](uint64_t va, size_t dwords) {
          c.gpfifo[c.gp_written % c.entries] = m::encode_gp_entry({va, static_cast<uint32_t>(dwords)});
          ++c.gp_written;
        };
        if (bound) put_entry(command_address(cmds.data()), cmds.size());
        put_entry(seg_va, n);
        // Where the last submission is, for tests and `ugpu decode --nv` (copied only when asked).
        c.last_words = bound ? cmds.data() : seg;
        c.last_dwords = cmds.size();
        c.last_qmds = q.qmds;
        if (q.kernels) c.kernels.add(position, q.kernels, done);
        // GPPut, then the doorbell (the ring and GPPut are write-combined: the doorbell's fence orders them).
        __atomic_store_n(&c.userd->gp_put, static_cast<uint32_t>(c.gp_written % c.entries), __ATOMIC_RELEASE);
        way_in_->doorbell().ring(c.token);
        return (q.copy ? uint64_t{1} << 56 : 0) | position;
      }
      if (!waited) ++c.waits;
    }
    // Back-pressure: wait (without the lock) for the channel to fetch entries or retire submissions.
    check_errors();
    check_usable();
    if (c.gp_read() != seen_gp || c.done() != seen_done)
      seen_gp = c.gp_read(), seen_done = c.done(), deadline = std::chrono::steady_clock::now() + default_timeout();
    if (std::chrono::steady_clock::now() > deadline) {
      fail("ring full");
      throw hcq::Timeout(name() + ": waiting for space on the " + (q.copy ? "copy" : "compute") + " channel: the GPU consumed nothing for " +
                         std::to_string(default_timeout().count()) + " ms; the device is marked failed");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

bool NvDevice::consumed(uint64_t position) const {
  const Channel& c = position >> 56 ? *copy_ : *compute_;
  return c.done() >= (position & ((uint64_t{1} << 56) - 1));
}

// No interrupt wakes a waiter yet (the non-stall interrupt is not wired to an OS event): short sleeps,
// so a wait ends within about 20 us of the signal.
void NvDevice::sleep_for_progress(std::chrono::microseconds max) {
  check_errors();
  if (max.count() > 0) std::this_thread::sleep_for(std::min<std::chrono::microseconds>(max, std::chrono::microseconds(20)));
}

void NvDevice::check_errors() {
  if (!channels_live_ || failed()) return;
  if (auto fault = way_in_->check_faults())
    fail(fault->what + " while running " + work_in_flight() + (fault->hint.empty() ? "" : "; " + fault->hint));
}

std::string NvDevice::work_in_flight() {
  std::lock_guard lock(compute_->mu);
  return compute_->kernels.describe(compute_->done());
}

void NvDevice::on_fail() {
  if (!channels_live_.exchange(false)) return;
  way_in_->stop_channels();
}

NvDevice::Local NvDevice::local_memory_for(const NvProgram& p) {
  std::lock_guard lock(local_mu_);
  if (p.local_bytes > local_per_thread_) {
    // Per TPC: bytes per thread for a warp, rounded, times every warp of its SMs (tinygrad's sizing).
    uint64_t per_warp = (uint64_t{p.local_bytes} * 32 + 0x1ff) / 0x200 * 0x200;
    const NvInterface::Facts& f = way_in_->facts();
    uint64_t per_tpc = (per_warp * f.max_warps_per_sm * f.sms_per_tpc + 0x7fff) / 0x8000 * 0x8000;
    uint64_t total = (per_tpc * f.tpcs_per_gpc * f.gpcs + (128u << 10) - 1) / (128u << 10) * (128u << 10);
    if (local_.owner) old_local_.push_back(local_);  // queues recorded earlier may still use it
    local_ = alloc(total);
    local_per_thread_ = p.local_bytes, local_per_tpc_ = per_tpc;
  }
  return {local_.va, local_per_tpc_};
}

const hcq::Program& NvDevice::copy_program() {
  std::lock_guard lock(copy_mu_);
  if (!copy_program_) copy_program_ = load(codegen::byte_copy_kernel(codegen::find_target(target())));
  return *copy_program_;
}

// The invalidation runs in order on the compute channel, before any launch submitted after it, so it
// neither waits for earlier work nor takes a timeline value: a program can be loaded while another
// queue is being recorded (the byte-copy kernel is loaded on the first compute-queue copy).
uint64_t NvDevice::ring_waits() const {
  uint64_t n = 0;
  for (Channel* c : {compute_.get(), copy_.get()}) {
    std::lock_guard lock(c->mu);
    n += c->waits;
  }
  return n;
}

void NvDevice::invalidate_code() {
  auto q = make_compute_queue(*this);
  q->invalidate_caches();
  q->submit();
}

std::shared_ptr<hcq::Program> NvDevice::load(std::shared_ptr<const codegen::CompiledKernel> kernel) {
  if (!kernel || kernel->target->name != target())
    throw Error(name() + ": load needs a kernel compiled for " + target() + ", not " +
                (kernel ? std::string(kernel->target->name) : std::string("nothing")));
  return std::make_shared<NvProgram>(*this, std::move(kernel));
}

std::unique_ptr<hcq::Device> open_nv(std::unique_ptr<NvInterface> way_in, const NvOptions& o) {
  return std::make_unique<NvDevice>(std::move(way_in), o);
}

PushSnapshot last_submission(hcq::Device& dev, bool copy) {
  auto* d = dynamic_cast<NvDevice*>(&dev);
  if (!d) throw Error(dev.name() + " is not an NVIDIA device");
  Channel& c = d->channel(copy);
  std::lock_guard lock(c.mu);
  PushSnapshot s;
  s.copy = copy;
  s.qmd_major = d->facts().qmd_major;
  if (c.last_words) s.words.assign(c.last_words, c.last_words + c.last_dwords);
  for (const uint32_t* qmd : c.last_qmds) s.qmds.emplace_back(qmd, qmd + d->qmd_layout().bytes / 4);
  return s;
}

NvFacts facts(hcq::Device& dev) {
  auto* d = dynamic_cast<NvDevice*>(&dev);
  if (!d) throw Error(dev.name() + " is not an NVIDIA device");
  NvFacts f = d->facts();
  f.ring_waits = d->ring_waits();
  return f;
}

}  // namespace ugpu::nv
