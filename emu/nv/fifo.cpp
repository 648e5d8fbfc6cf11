#include "emu/nv/fifo.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "common/hex.h"
#include "hw/nv/qmd_launch.h"

namespace ugpu::emu::nv {
namespace hwnv = hw::nv;
using hwnv::MethodWrite;

namespace {

// Robust-channel error codes RM reports in the error notifier's info32 (nverror.h).
constexpr uint32_t kRcGrException = 13, kRcMmuFault = 31, kRcPbdmaError = 32;
// NvNotification status of an error (the class headers' NOTIFICATION_STATUS_ERROR_PROTECTION_FAULT).
constexpr uint16_t kNotificationError = 0x4000;

constexpr size_t kMaxProgramBytes = 16u << 20;
// Where the GPU puts programs' .global/.const data: above the 1 TiB the driver allocates from and
// below the shared and local windows it sets (0x7293'0000'0000 and up), 2 MiB-aligned.
constexpr uint64_t kDataBase = 0x7200'0000'0000ull, kDataEnd = 0x7290'0000'0000ull, kDataAlign = 2u << 20;
constexpr int kMaxChain = 1 << 20;

}  // namespace

uint64_t FifoContext::timestamp_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

FifoContext::~FifoContext() {
  for (const auto& [program, d] : module_data) {
    memory.unmap_range(d.va, d.bytes);
    memory.release_vram(d.bytes);
  }
}

Channel::Channel(FifoContext& fifo, ChannelSetup s) : fifo_(fifo), s_(std::move(s)) {
  thread_ = std::thread([this] { loop(); });
}

Channel::~Channel() { stop(); }

void Channel::stop() {
  stop_ = true;
  {
    std::lock_guard lock(mu_);
    cv_.notify_all();
  }
  std::lock_guard join(join_mu_);
  if (thread_.joinable()) thread_.join();
}

void Channel::add_object(uint32_t cls) {
  std::lock_guard lock(mu_);
  objects_.push_back(cls);
}

void Channel::kick() {
  std::lock_guard lock(mu_);
  ++kicks_;
  cv_.notify_all();
}

void Channel::set_enabled(bool enabled) {
  enabled_ = enabled;
  kick();
}

void Channel::loop() {
  uint64_t seen = 0;
  auto* userd = reinterpret_cast<volatile hwnv::Userd*>(s_.userd);
  while (!stop_) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || kicks_ != seen; });
      seen = kicks_;
    }
    // Fetch entries up to GPPut; GPGet moves as each entry is fetched, before its commands run.
    while (!stop_ && enabled_ && !faulted_) {
      uint32_t put = __atomic_load_n(&userd->gp_put, __ATOMIC_ACQUIRE);
      if (put >= s_.entries) {
        fault("GPPut " + std::to_string(put) + " is outside the GPFIFO of " + std::to_string(s_.entries) + " entries");
        break;
      }
      if (put == gp_get_) break;
      uint64_t raw = 0;
      uint32_t index = gp_get_;
      if (!read_mem(s_.gpfifo_va + uint64_t{index} * hwnv::kGpEntryBytes, &raw, 8, "GPFIFO entry fetch")) break;
      gp_get_ = (gp_get_ + 1) % s_.entries;
      __atomic_store_n(&userd->gp_get, gp_get_, __ATOMIC_RELEASE);
      ++fifo_.gp_entries;
      if (!run_entry(raw, index)) break;
    }
  }
}

bool Channel::run_entry(uint64_t raw, uint32_t index) {
  hwnv::GpEntry e = hwnv::decode_gp_entry(raw);
  if (e.dwords == 0) return true;  // a control entry (NOP): nothing to fetch
  GpuMemory::Use use(fifo_.memory);
  auto span = fifo_.memory.translate(e.address, uint64_t{e.dwords} * 4, Access::Read);
  if (!span)
    return mmu_fault(e.address, Access::Read,
                     "the pushbuffer segment of GPFIFO entry " + std::to_string(index) + " (" + std::to_string(e.dwords) + " dwords)");
  const uint32_t* words = reinterpret_cast<const uint32_t*>(span->host + (e.address - span->device));
  hwnv::PushbufferReader r(std::span<const uint32_t>(words, e.dwords));
  MethodWrite w;
  while (r.next(w)) {
    ++fifo_.methods;
    at_ = {index, e.address, w.dword, 0};
    if (!method(w, e.address)) return false;
    if (stop_) return false;
  }
  if (!r.error().empty()) return fault("pushbuffer of GPFIFO entry " + std::to_string(index) + " at " + hex(e.address) + ": " + r.error());
  return true;
}

bool Channel::method(const MethodWrite& w, uint64_t) {
  if (w.method < hwnv::kHostMethodEnd) return host_method(w);
  Subchannel& sc = sub_[w.subchannel];
  switch (sc.engine) {
    case hwnv::Engine::Compute: return compute_method(w);
    case hwnv::Engine::Copy: return copy_method(w);
    default: return fault("method " + hex(w.method) + " on subchannel " + std::to_string(w.subchannel) + ", which no SET_OBJECT has bound");
  }
}

bool Channel::host_method(const MethodWrite& w) {
  host_[w.method] = w.value;
  switch (w.method) {
    case hwnv::host::SET_OBJECT: {
      uint32_t cls = w.value & 0xffff;
      bool ok;
      {
        std::lock_guard lock(mu_);
        ok = std::find(objects_.begin(), objects_.end(), cls) != objects_.end();
      }
      if (!ok) return fault("SET_OBJECT of class " + hex(cls) + ", which was not allocated on this channel");
      sub_[w.subchannel] = {cls, hwnv::engine_of_class(cls)};
      return true;
    }
    case hwnv::host::NOP:
    case hwnv::host::WFI:  // commands run to completion in order: the channel is always idle here
    case hwnv::host::NON_STALL_INTERRUPT:
    case hwnv::host::SEM_ADDR_LO:
    case hwnv::host::SEM_ADDR_HI:
    case hwnv::host::SEM_PAYLOAD_LO:
    case hwnv::host::SEM_PAYLOAD_HI: return true;
    case hwnv::host::SEM_EXECUTE: {
      uint64_t addr = uint64_t{host_[hwnv::host::SEM_ADDR_HI] & 0xff} << 32 | (host_[hwnv::host::SEM_ADDR_LO] & ~3u);
      uint64_t payload = uint64_t{host_[hwnv::host::SEM_PAYLOAD_HI]} << 32 | host_[hwnv::host::SEM_PAYLOAD_LO];
      return semaphore(addr, payload, w.value);
    }
    default: return fault("host method " + hex(w.method) + " = " + hex(w.value) + " is not modelled");
  }
}

bool Channel::semaphore(uint64_t addr, uint64_t payload, uint32_t execute) {
  namespace sem = hwnv::host::sem;
  const bool wide = execute & sem::kPayload64;
  const uint32_t op = execute & sem::kOperationMask;
  if (addr % (wide ? 8 : 4)) return fault("SEM_EXECUTE on " + hex(addr) + ", which is not aligned to its " + (wide ? "8" : "4") + "-byte payload");
  if (execute & ~(sem::kOperationMask | sem::kReleaseWfi | sem::kPayload64 | sem::kReleaseTimestamp))
    return fault("SEM_EXECUTE " + hex(execute) + ": reductions and TSG switches are not modelled");
  if (op == sem::kRelease) {
    if (!write_mem(addr, &payload, wide ? 8 : 4, "semaphore release")) return false;
    if (execute & sem::kReleaseTimestamp) {
      uint64_t t = FifoContext::timestamp_ns();
      if (!write_mem(addr + 8, &t, 8, "semaphore timestamp")) return false;
    }
    return true;
  }
  if (op > sem::kAcqNor) return fault("SEM_EXECUTE operation " + std::to_string(op) + " is not modelled");
  GpuMemory::Use use(fifo_.memory);
  auto span = fifo_.memory.translate(addr, wide ? 8 : 4, Access::Read);
  if (!span) return mmu_fault(addr, Access::Read, "semaphore acquire");
  const uint8_t* p = span->host + (addr - span->device);
  return wait_until([&] {
    uint64_t v = wide ? __atomic_load_n(reinterpret_cast<const uint64_t*>(p), __ATOMIC_ACQUIRE)
                      : __atomic_load_n(reinterpret_cast<const uint32_t*>(p), __ATOMIC_ACQUIRE);
    uint64_t want = wide ? payload : (payload & 0xffffffffu);
    switch (op) {
      case sem::kAcquire: return v == want;
      case sem::kAcqStrictGeq: return v >= want;
      case sem::kAcqCircGeq: return wide ? static_cast<int64_t>(v - want) >= 0 : static_cast<int32_t>(static_cast<uint32_t>(v - want)) >= 0;
      case sem::kAcqAnd: return (v & want) != 0;
      default: return (~(v | want) & (wide ? ~uint64_t{0} : 0xffffffffu)) != 0;  // ACQ_NOR
    }
  });
}

bool Channel::compute_method(const MethodWrite& w) {
  namespace c = hwnv::compute;
  compute_[w.method] = w.value;
  switch (w.method) {
    case c::SET_SHADER_SHARED_MEMORY_WINDOW_A:
    case c::SET_SHADER_SHARED_MEMORY_WINDOW_B:
    case c::SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A:
    case c::SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_B:
    case c::SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_C:
    case c::SET_SHADER_LOCAL_MEMORY_A:
    case c::SET_SHADER_LOCAL_MEMORY_B:
    case c::SET_SHADER_LOCAL_MEMORY_WINDOW_A:
    case c::SET_SHADER_LOCAL_MEMORY_WINDOW_B:
    case c::SEND_PCAS_A: return true;
    case c::INVALIDATE_SHADER_CACHES_NO_WFI:
      if (w.value & c::kInvalidateInstruction) programs_.clear();
      return true;
    case c::SEND_SIGNALING_PCAS2_B: {
      uint32_t action = w.value & 0xf;
      if (action != c::kPcasPrefetchSchedule && action != c::kPcasSchedule)
        return fault("SEND_SIGNALING_PCAS2_B action " + std::to_string(action) + " is not modelled (only SCHEDULE and PREFETCH_SCHEDULE)");
      return launch(uint64_t{compute_[c::SEND_PCAS_A]} << 8);
    }
    default: return fault(hwnv::describe_method(hwnv::Engine::Compute, w.method, w.value) + ": a compute method this GPU model does not implement");
  }
}

bool Channel::launch(uint64_t qmd_address) {
  uint64_t next = qmd_address;
  for (int n = 0; next; ++n) {
    if (n == kMaxChain) return fault("more than 2^20 chained QMDs");
    uint64_t at = next;
    next = 0;
    if (!run_qmd(at, next)) return false;
  }
  return true;
}

bool Channel::run_qmd(uint64_t qmd_address, uint64_t& next) {
  // HOPPER_COMPUTE_A runs V04_00 QMDs (384 bytes, 256-byte aligned). clcbc0qmd.h also defines V03_00,
  // but a real H100 (driver 580) computed wrong results from V03 launches without reporting an error
  // (docs/hardware-results.md), so the emulated one refuses them by their version fields.
  uint32_t words[hwnv::kQmdMaxDwords] = {};
  if (qmd_address % 256) return fault("QMD address " + hex(qmd_address) + " is not 256-byte aligned");
  if (!read_mem(qmd_address, words, hwnv::kQmdV04_00.bytes, "QMD fetch")) return false;
  static const hwnv::QmdLayout* const kV04[] = {&hwnv::kQmdV04_00};
  static const hwnv::QmdLayout* const kV03[] = {&hwnv::kQmdV03_00};
  const hwnv::QmdLayout* layout = hwnv::qmd_layout_of(std::span<const uint32_t>(words, hwnv::kQmdV04_00.bytes / 4), kV04);
  if (!layout) {
    bool v03 = hwnv::qmd_layout_of(std::span<const uint32_t>(words, hwnv::kQmdV03_00.bytes / 4), kV03) != nullptr;
    return fault("the QMD at " + hex(qmd_address) +
                 (v03 ? " is V03_00: HOPPER_COMPUTE_A runs V04_00 QMDs (a real H100 computes wrong results from V03)"
                      : " is not a V04_00 QMD (its version fields)"));
  }
  hwnv::QmdLaunch l;
  try {
    l = hwnv::decode_qmd(*layout, std::span<const uint32_t>(words, layout->bytes / 4));
  } catch (const Error& e) { return fault("QMD at " + hex(qmd_address) + ": " + e.what()); }
  at_.qmd = qmd_address;
  // The program image: PTX text at program_address (the emulated GPU's stand-in for SASS).
  auto it = programs_.find(l.program_address);
  std::shared_ptr<const PtxModule> module;
  uint64_t data_address = 0;
  if (it != programs_.end()) {
    module = it->second.module;
    data_address = it->second.data_address;
  } else {
    GpuMemory::Use use(fifo_.memory);
    auto span = fifo_.memory.translate(l.program_address, 1, Access::Execute);
    if (!span) return mmu_fault(l.program_address, Access::Execute, "instruction fetch of the QMD's program");
    const char* text = reinterpret_cast<const char*>(span->host + (l.program_address - span->device));
    size_t avail = std::min<uint64_t>(span->size - (l.program_address - span->device), kMaxProgramBytes);
    size_t len = strnlen(text, avail);
    if (len == avail)
      return fault("the program at " + hex(l.program_address) + " is not NUL-terminated PTX text within " + std::to_string(avail) + " bytes");
    try {
      module = parse_ptx(std::string_view(text, len));
    } catch (const Error& e) {
      return fault(std::string("the program at ") + hex(l.program_address) + " is not PTX this GPU model runs: " + e.what());
    }
    if (data(*module).bytes && !load_data(l.program_address, std::string_view(text, len), *module, data_address)) return false;
    programs_[l.program_address] = Program{module, data_address};
  }
  if (!l.cbanks[0].valid) return fault("the QMD has no valid constant buffer 0 (where the kernel parameters are)");
  const PtxEntry* entry = entries(*module).empty() ? nullptr : &entries(*module)[0];
  if (!entry) return fault("the program at " + hex(l.program_address) + " has no .entry");
  if (entry->local_bytes) {
    namespace c = hwnv::compute;
    uint64_t base = uint64_t{compute_[c::SET_SHADER_LOCAL_MEMORY_A]} << 32 | compute_[c::SET_SHADER_LOCAL_MEMORY_B];
    if (!base) return fault("kernel " + entry->name + " needs local memory but SET_SHADER_LOCAL_MEMORY_A/B never set it up");
    if (l.local_low_bytes + l.local_high_bytes < entry->local_bytes)
      return fault("kernel " + entry->name + " needs " + std::to_string(entry->local_bytes) + " bytes of local memory per thread, the QMD gives " +
                   std::to_string(l.local_low_bytes + l.local_high_bytes));
  }
  PtxLaunch pl;
  pl.module = module.get();
  pl.grid = l.grid, pl.block = l.block;
  pl.cbank0_address = l.cbanks[0].address, pl.cbank0_size = l.cbanks[0].size;
  pl.param_base = fifo_.param_base;
  pl.shared_bytes = l.shared_bytes;
  pl.local_bytes_per_thread = l.local_low_bytes + l.local_high_bytes;
  pl.data_address = data_address;
  {
    namespace c = hwnv::compute;
    uint64_t shared = uint64_t{compute_[c::SET_SHADER_SHARED_MEMORY_WINDOW_A]} << 32 | compute_[c::SET_SHADER_SHARED_MEMORY_WINDOW_B];
    uint64_t local = uint64_t{compute_[c::SET_SHADER_LOCAL_MEMORY_WINDOW_A]} << 32 | compute_[c::SET_SHADER_LOCAL_MEMORY_WINDOW_B];
    if (shared) pl.shared_window = shared;
    if (local) pl.local_window = local;
  }
  pl.memory = &fifo_.memory;
  PtxRunOptions o;
  o.threads = fifo_.ptx_threads;
  o.interrupt = &stop_;
  PtxRunResult r;
  try {
    GpuMemory::Use use(fifo_.memory);
    r = run_ptx(pl, o);
  } catch (const Error& e) { return fault("launch of kernel " + entry->name + ": " + e.what()); }
  ++fifo_.launches;
  fifo_.ptx_instructions += r.instructions;
  if (r.fault) {
    if (r.fault->kind == PtxFault::Kind::Interrupted) return false;
    // An unmapped global (or constant-bank) address is an MMU fault; a misaligned access or one past
    // the block's shared or the thread's local memory is an SM exception, as on hardware.
    const PtxFault& f = *r.fault;
    if (f.kind == PtxFault::Kind::Memory && (f.space == "global" || f.space == "param") && f.message.find("misaligned") == std::string::npos)
      return mmu_fault(f.address, f.access, "kernel " + entry->name + ": " + f.message);
    faulted_ = true;
    if (fifo_.on_channel_error) fifo_.on_channel_error(s_.name, "graphics exception in kernel " + entry->name + ": " + r.fault->message + where());
    notify_error(kRcGrException);
    return false;
  }
  for (const auto& rel : l.releases) {
    if (!rel.enable) continue;
    if (!write_mem(rel.address, &rel.payload, rel.payload64 ? 8 : 4, "QMD release")) return false;
    if (rel.timestamp) {
      uint64_t t = FifoContext::timestamp_ns();
      if (!write_mem(rel.address + 8, &t, 8, "QMD release timestamp")) return false;
    }
  }
  if (l.dependent.enable) next = l.dependent.qmd_address;
  return true;
}

// A program's .global/.const data, placed as a driver places a module's when it loads it: VRAM,
// mapped at an address of the GPU's choosing (the .const part read-only), the initial values written.
bool Channel::load_data(uint64_t program, std::string_view text, const PtxModule& module, uint64_t& address) {
  const PtxData& d = data(module);
  std::lock_guard lock(fifo_.data_mu);
  auto it = fifo_.module_data.find(program);
  if (it != fifo_.module_data.end()) {
    if (it->second.text == text) {
      address = it->second.va;
      return true;
    }
    fifo_.memory.unmap_range(it->second.va, it->second.bytes);  // another program took the address: its data goes
    fifo_.memory.release_vram(it->second.bytes);
    fifo_.module_data.erase(it);
  }
  const std::string what = "the " + std::to_string(d.bytes) + " bytes of .global/.const variables of the program at " + hex(program);
  const uint64_t bytes = (d.bytes + 0xffff) / 0x10000 * 0x10000;
  if (!fifo_.memory.reserve_vram(bytes)) return fault("no VRAM left for " + what);
  std::shared_ptr<Pages> pages = Pages::create(bytes, "ugpu-nv-module-data");
  if (!pages) {
    fifo_.memory.release_vram(bytes);
    return fault("could not allocate " + what);
  }
  if (!fifo_.next_data_va) fifo_.next_data_va = kDataBase;
  for (;;) {
    const uint64_t va = fifo_.next_data_va;
    if (va > kDataEnd || bytes > kDataEnd - va) {
      fifo_.memory.release_vram(bytes);
      return fault("no GPU address range left for " + what);
    }
    fifo_.next_data_va = (va + bytes + kDataAlign - 1) / kDataAlign * kDataAlign;
    const bool ro = d.const_bytes != 0, rw = d.const_bytes < bytes;
    if (ro && !fifo_.memory.map({va, d.const_bytes, 0, pages, false, false})) continue;  // taken: try the next range
    if (rw && !fifo_.memory.map({va + d.const_bytes, bytes - d.const_bytes, d.const_bytes, pages, true, false})) {
      if (ro) fifo_.memory.unmap(va);
      continue;
    }
    write_ptx_data(module, va, pages->host);
    fifo_.module_data[program] = FifoContext::ModuleData{std::string(text), va, bytes};
    address = va;
    return true;
  }
}

bool Channel::copy_method(const MethodWrite& w) {
  namespace c = hwnv::copy;
  namespace ld = hwnv::copy::launch;
  copy_[w.method] = w.value;
  if (w.method != c::LAUNCH_DMA) {
    switch (w.method) {
      case c::SET_SEMAPHORE_A:
      case c::SET_SEMAPHORE_B:
      case c::SET_SEMAPHORE_PAYLOAD:
      case c::SET_SEMAPHORE_PAYLOAD_UPPER:
      case c::OFFSET_IN_UPPER:
      case c::OFFSET_IN_LOWER:
      case c::OFFSET_OUT_UPPER:
      case c::OFFSET_OUT_LOWER:
      case c::PITCH_IN:
      case c::PITCH_OUT:
      case c::LINE_LENGTH_IN:
      case c::LINE_COUNT: return true;
      default:
        return fault(hwnv::describe_method(hwnv::Engine::Copy, w.method, w.value) + ": a copy-engine method this GPU model does not implement");
    }
  }
  uint32_t v = w.value;
  uint32_t transfer = v & ld::kTransferMask;
  uint32_t known = ld::kTransferMask | ld::kFlush | ld::kSemaphoreMask | ld::kSrcPitch | ld::kDstPitch | ld::kPayload64;
  if (v & ~known)
    return fault(hwnv::describe_method(hwnv::Engine::Copy, w.method, v) + ": only pitch-linear virtual copies and semaphores are modelled");
  if (transfer) {
    if (transfer == 3) return fault("LAUNCH_DMA data transfer type 3 is reserved");
    if (!(v & ld::kSrcPitch) || !(v & ld::kDstPitch)) return fault("LAUNCH_DMA " + hex(v) + ": block-linear layouts are not modelled");
    uint64_t src = uint64_t{copy_[c::OFFSET_IN_UPPER] & 0x1ffffff} << 32 | copy_[c::OFFSET_IN_LOWER];
    uint64_t dst = uint64_t{copy_[c::OFFSET_OUT_UPPER] & 0x1ffffff} << 32 | copy_[c::OFFSET_OUT_LOWER];
    if (!copy(dst, src, copy_[c::LINE_LENGTH_IN])) return false;
  }
  uint32_t sem_type = (v & ld::kSemaphoreMask) >> ld::kSemaphoreShift;
  if (sem_type) {
    if (sem_type == 3) return fault("LAUNCH_DMA conditional-interrupt semaphores are not modelled");
    uint64_t addr = uint64_t{copy_[c::SET_SEMAPHORE_A] & 0x1ffffff} << 32 | copy_[c::SET_SEMAPHORE_B];
    bool wide = v & ld::kPayload64;
    uint64_t payload = uint64_t{wide ? copy_[c::SET_SEMAPHORE_PAYLOAD_UPPER] : 0} << 32 | copy_[c::SET_SEMAPHORE_PAYLOAD];
    if (addr % (wide ? 8 : 4)) return fault("copy-engine semaphore at " + hex(addr) + " is not aligned to its payload");
    if (!write_mem(addr, &payload, wide ? 8 : 4, "copy-engine semaphore release")) return false;
    if (sem_type == ld::kSemaphoreFourWord) {
      uint64_t t = FifoContext::timestamp_ns();
      if (!write_mem(addr + 8, &t, 8, "copy-engine semaphore timestamp")) return false;
    }
  }
  return true;
}

bool Channel::copy(uint64_t dst, uint64_t src, uint64_t bytes) {
  GpuMemory::Use use(fifo_.memory);
  ++fifo_.copies;
  fifo_.copy_bytes += bytes;
  while (bytes) {
    auto s = fifo_.memory.translate(src, 1, Access::Read);
    if (!s) return mmu_fault(src, Access::Read, "copy-engine read");
    auto d = fifo_.memory.translate(dst, 1, Access::Write);
    if (!d) return mmu_fault(dst, Access::Write, "copy-engine write");
    uint64_t n = std::min({bytes, s->size - (src - s->device), d->size - (dst - d->device)});
    std::memmove(d->host + (dst - d->device), s->host + (src - s->device), n);
    src += n, dst += n, bytes -= n;
  }
  return true;
}

bool Channel::write_mem(uint64_t address, const void* data, size_t bytes, const char* what) {
  GpuMemory::Use use(fifo_.memory);
  uint8_t* p = fifo_.memory.host(address, bytes, Access::Write);
  if (!p) return mmu_fault(address, Access::Write, what);
  if (bytes == 8 && address % 8 == 0) __atomic_store_n(reinterpret_cast<uint64_t*>(p), *static_cast<const uint64_t*>(data), __ATOMIC_RELEASE);
  else if (bytes == 4 && address % 4 == 0) __atomic_store_n(reinterpret_cast<uint32_t*>(p), *static_cast<const uint32_t*>(data), __ATOMIC_RELEASE);
  else std::memcpy(p, data, bytes);
  return true;
}

bool Channel::read_mem(uint64_t address, void* data, size_t bytes, const char* what) {
  GpuMemory::Use use(fifo_.memory);
  const uint8_t* p = fifo_.memory.host(address, bytes, Access::Read);
  if (!p) return mmu_fault(address, Access::Read, what);
  std::memcpy(data, p, bytes);
  return true;
}

bool Channel::wait_until(const std::function<bool()>& ready) {
  for (int spins = 0; !ready(); ++spins) {
    if (stop_ || !enabled_) return false;
    if (spins < 64) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(spins < 1000 ? 20 : 200));
  }
  return true;
}

void Channel::notify_error(uint32_t rc_error) {
  if (!s_.error_notifier || s_.error_notifier_bytes < 16) return;
  uint64_t t = FifoContext::timestamp_ns();
  uint8_t* n = s_.error_notifier;  // NvNotification slot 0 (NOTIFIERS_RC): time, info32, info16, status
  std::memcpy(n, &t, 8);
  std::memcpy(n + 8, &rc_error, 4);
  uint16_t info16 = 0;
  std::memcpy(n + 12, &info16, 2);
  __atomic_store_n(reinterpret_cast<uint16_t*>(n + 14), kNotificationError, __ATOMIC_RELEASE);
}

std::string Channel::where() const {
  if (!at_.segment) return "";
  return " (GPFIFO entry " + std::to_string(at_.entry) + ", pushbuffer " + hex(at_.segment) + " dword " + std::to_string(at_.dword) +
         (at_.qmd ? ", QMD at " + hex(at_.qmd) : std::string()) + ")";
}

// The report is recorded (the fault info the debugger object reads) before the error notifier is
// written: a driver that sees the notifier finds the fault's details.
bool Channel::fault(const std::string& message) {
  faulted_ = true;
  if (fifo_.on_channel_error) fifo_.on_channel_error(s_.name, message + where());
  notify_error(kRcPbdmaError);
  return false;
}

bool Channel::mmu_fault(uint64_t address, Access access, const std::string& what) {
  faulted_ = true;
  if (fifo_.on_mmu_fault)
    fifo_.on_mmu_fault(s_.name, address, access,
                       "MMU fault: " + std::string(name(access)) + " at " + hex(address) + " (not mapped) by " + what + where());
  notify_error(kRcMmuFault);
  return false;
}

}  // namespace ugpu::emu::nv
