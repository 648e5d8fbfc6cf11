#include "drivers/cpu/cpu_device.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <csetjmp>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "common/hex.h"

namespace ugpu::cpu {
using hcq::Val;

namespace {

uint32_t header(Cmd c, size_t dwords) { return static_cast<uint32_t>(c) | static_cast<uint32_t>(dwords) << 8; }
uint64_t get64(const uint32_t* p) { return p[0] | static_cast<uint64_t>(p[1]) << 32; }
uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

// Interrupting kernels: a thread about to run kernel code records where to escape to; the signal
// handler jumps there only while the thread is inside the kernel (JIT code that holds no locks and
// owns nothing), never while it runs our own code.
thread_local sigjmp_buf* t_escape = nullptr;
thread_local volatile sig_atomic_t t_in_kernel = 0;
thread_local void* volatile t_fault_address = nullptr;  // set when the escape was a memory fault
thread_local volatile int t_fault_code = 0;             // its si_code: SEGV_MAPERR, SEGV_ACCERR, BUS_*
void on_interrupt(int) {
  if (t_in_kernel && t_escape) {
    t_in_kernel = 0;
    siglongjmp(*t_escape, 1);
  }
}
int interrupt_signal() {
  static const int sig = [] {
    int s = SIGRTMIN + 4;
    struct sigaction sa{};
    sa.sa_handler = on_interrupt;
    sa.sa_flags = SA_NODEFER;  // the escape skips the handler's return, so nothing would unblock it
    sigemptyset(&sa.sa_mask);
    sigaction(s, &sa, nullptr);
    return s;
  }();
  return sig;
}

// Memory faults: a SIGSEGV or SIGBUS on a thread inside kernel code is the kernel's fault, turned into
// the device's fault error (the thread leaves the kernel as on an interrupt). Any other is not ours:
// it goes to the handler that was there before (a sanitizer's, or the default, which ends the process).
struct sigaction g_previous_segv{}, g_previous_bus{};
void on_memory_fault(int sig, siginfo_t* info, void* context) {
  if (t_in_kernel && t_escape) {
    t_in_kernel = 0;
    t_fault_address = info->si_addr;
    t_fault_code = info->si_code;
    siglongjmp(*t_escape, 2);
  }
  const struct sigaction& prev = sig == SIGSEGV ? g_previous_segv : g_previous_bus;
  if (prev.sa_flags & SA_SIGINFO) return prev.sa_sigaction(sig, info, context);
  if (prev.sa_handler != SIG_IGN && prev.sa_handler != SIG_DFL) return prev.sa_handler(sig);
  signal(sig, SIG_DFL);  // returning re-runs the access, which now ends the process as it would have
}
// Installed again whenever another handler has replaced it since (a test framework's, a runtime's),
// which it then chains to; checked when the device opens and at every program load (two sigaction
// calls, 0.3 us: too much for every launch).
void install_fault_handler() {
  for (auto [sig, previous] : {std::pair{SIGSEGV, &g_previous_segv}, std::pair{SIGBUS, &g_previous_bus}}) {
    struct sigaction now{};
    if (sigaction(sig, nullptr, &now) == 0 && (now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_memory_fault) continue;
    struct sigaction sa{};
    sa.sa_sigaction = on_memory_fault;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, previous);
  }
}

constexpr size_t kPage = 4096;

class CpuQueue : public hcq::HWQueue {
 public:
  CpuQueue(hcq::Device& dev, size_t engine) : HWQueue(dev), engine(engine) {}
  const size_t engine;  // the ring it is submitted to

 protected:
  void emit_wait(Val s, Val v) override { put32(header(Cmd::Wait, 5)), put64(s), put64(v); }
  void emit_signal(Val s, Val v) override { put32(header(Cmd::Signal, 5)), put64(s), put64(v); }
  void emit_timestamp(Val s) override { put32(header(Cmd::Timestamp, 3)), put64(s); }
  void emit_memory_barrier() override { put32(header(Cmd::Barrier, 1)); }
  void emit_exec(const hcq::Program& p, const hcq::Kernargs& k) override {
    if (engine) throw Error("cpu: the copy engine runs no kernels; exec " + p.name + " on a compute queue");
    put32(header(Cmd::Exec, 5)), put64(reinterpret_cast<uint64_t>(&p)), put64(k.va);
  }
  void emit_copy(Val dst, Val src, uint64_t bytes) override { put32(header(Cmd::Copy, 7)), put64(dst), put64(src), put64(bytes); }
};

}  // namespace

CpuProgram::CpuProgram(std::shared_ptr<const codegen::CompiledKernel> k) : ck_(std::move(k)) {
  fn_ = codegen::HostFunction::load(ck_->binary, ck_->kernel.name);
  name = ck_->kernel.name;
  for (const codegen::Param& p : ck_->kernel.params) (p.kind == codegen::Param::Kind::Buffer ? buffers : vars) += 1;
  const ir::UOp& g = ck_->kernel.global_size[0];
  split_ = g.is_const() ? std::max<int64_t>(g.const_int(), 1) : 1;
}

CpuDevice::CpuDevice(int workers, size_t ring_dwords, bool copy_engine) : hcq::Device("cpu") {
  if (ring_dwords < 64) throw Error("the CPU device's ring needs at least 64 dwords");
  for (int e = 0; e < (copy_engine ? 2 : 1); ++e) engines_.push_back(std::make_unique<Engine>(ring_dwords));
  interrupt_signal();
  install_fault_handler();
  int n = workers > 0 ? workers : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  for (int i = 1; i < n; ++i) workers_.emplace_back([this] { worker_loop(); });
  for (auto& e : engines_) e->cp = std::thread([this, &e = *e] { processor(e); });
}

CpuDevice::~CpuDevice() {
  stop_ = true;
  doorbell_.notify_all();
  {
    std::lock_guard lock(job_mu_);
    ++job_gen_;
  }
  job_cv_.notify_all();
  interrupt_kernels();  // a kernel that never ends is stopped, as a GPU's queue would be reset
  for (auto& e : engines_) e->cp.join();
  for (std::thread& t : workers_) t.join();
}

void CpuDevice::interrupt_kernels() {
  abort_ = true;
  progress_.notify_all();
  // A thread between registering and entering the kernel ignores the signal; it sees abort_ before
  // it calls the kernel, or gets the next signal.
  for (int tries = 0;; ++tries) {
    {
      std::lock_guard lock(running_mu_);
      if (running_.empty()) return;
      for (pthread_t t : running_) pthread_kill(t, interrupt_signal());
    }
    std::this_thread::sleep_for(std::chrono::microseconds(tries < 10 ? 100 : 2000));
  }
}

bool CpuDevice::call_kernel(const CpuProgram& p, const uint64_t* args, int64_t part, int64_t parts, Fault& fault) {
  {
    std::lock_guard lock(running_mu_);
    running_.push_back(pthread_self());
  }
  sigjmp_buf escape;
  volatile bool finished = false;
  int how = sigsetjmp(escape, 0);
  if (how == 0) {
    t_escape = &escape;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    t_in_kernel = 1;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (!abort_.load()) p.function()(args, part, parts);
    t_in_kernel = 0;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    finished = !abort_.load();
  } else if (how == 2) {
    std::lock_guard lock(fault.mu);
    if (!fault.happened) fault.happened = true, fault.address = reinterpret_cast<uint64_t>(t_fault_address), fault.code = t_fault_code;
  }
  t_escape = nullptr;
  std::lock_guard lock(running_mu_);
  running_.erase(std::find(running_.begin(), running_.end(), pthread_self()));
  return finished;
}

// Which mapping an address is near: inside one's guard pages (just before or after it) or not near any.
std::string CpuDevice::describe_address(uint64_t a) const {
  std::lock_guard lock(mappings_->mu);
  const auto& m = mappings_->by_start;
  auto it = m.upper_bound(a);  // the first mapping starting above a
  if (it != m.end() && it->first - a <= kPage)
    return std::to_string(it->first - a) + " bytes before device memory at " + hex(it->first) + " (in its guard page)";
  if (it != m.begin()) {
    --it;
    uint64_t end = it->first + it->second;
    if (a >= it->first && a < end) return "inside device memory at " + hex(it->first) + " (" + std::to_string(it->second) + " bytes)";
    if (a >= end && a - end < kPage)
      return std::to_string(a - end) + " bytes past the end of device memory at " + hex(it->first) + " (" + std::to_string(it->second) +
             " bytes; in its guard page)";
  }
  return "an address outside all of this device's memory";
}

std::unique_ptr<hcq::HWQueue> CpuDevice::compute_queue() { return std::make_unique<CpuQueue>(*this, 0); }
std::unique_ptr<hcq::HWQueue> CpuDevice::copy_queue() { return std::make_unique<CpuQueue>(*this, engines_.size() - 1); }

bool CpuDevice::consumed(uint64_t position) const {
  const Engine& e = *engines_.at(position >> kEngineShift);
  return e.rptr.load(std::memory_order_acquire) >= (position & ((uint64_t{1} << kEngineShift) - 1));
}

uint64_t CpuDevice::ring_waits() const {
  uint64_t n = 0;
  for (const auto& e : engines_) n += e->waits;
  return n;
}

hcq::DeviceInfo CpuDevice::info() const {
  hcq::DeviceInfo i;
  i.kind = "cpu", i.interface = std::to_string(workers()) + " host threads";
  i.arch = "x86_64";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);)
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      i.arch += " (" + line.substr(line.find(':') + 2) + ")";
      break;
    }
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  i.memory = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
  return i;
}

std::shared_ptr<hcq::Program> CpuDevice::load(std::shared_ptr<const codegen::CompiledKernel> kernel) {
  if (!kernel || kernel->target->name != "x86")
    throw Error("cpu: load needs a kernel compiled for x86, not " + (kernel ? std::string(kernel->target->name) : std::string("nothing")));
  install_fault_handler();
  return std::make_shared<CpuProgram>(std::move(kernel));
}

// Each mapping has an inaccessible guard page on either side, so a kernel running off either end of
// it faults (on_memory_fault) instead of reading or overwriting the host's memory.
hcq::Buffer CpuDevice::alloc_memory(size_t bytes) {
  size_t n = (std::max<size_t>(bytes, 1) + kPage - 1) / kPage * kPage;
  if (n > SIZE_MAX - 2 * kPage) throw Error("cpu: cannot allocate " + std::to_string(bytes) + " bytes");
  void* base = ::mmap(nullptr, n + 2 * kPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) throw Error("cpu: cannot allocate " + std::to_string(bytes) + " bytes of device memory: " + std::strerror(errno));
  uint8_t* p = static_cast<uint8_t*>(base) + kPage;
  if (::mprotect(p, n, PROT_READ | PROT_WRITE) != 0) {
    int e = errno;
    ::munmap(base, n + 2 * kPage);
    throw Error("cpu: cannot allocate " + std::to_string(bytes) + " bytes of device memory: " + std::strerror(e));
  }
  {
    std::lock_guard lock(mappings_->mu);
    mappings_->by_start[reinterpret_cast<uint64_t>(p)] = n;
  }
  hcq::Buffer b;
  b.va = reinterpret_cast<uint64_t>(p), b.size = bytes, b.host = p;
  b.owner = std::shared_ptr<void>(p, [base, n, m = mappings_](void* q) {
    {
      std::lock_guard lock(m->mu);
      m->by_start.erase(reinterpret_cast<uint64_t>(q));
    }
    ::munmap(base, n + 2 * kPage);
  });
  return b;
}

std::shared_ptr<uint32_t[]> CpuDevice::command_memory(size_t dwords) { return std::make_shared<uint32_t[]>(std::max<size_t>(dwords, 1)); }

void CpuDevice::sleep_for_progress(std::chrono::microseconds max) {
  std::unique_lock lock(mu_);
  progress_.wait_for(lock, std::min(max, std::chrono::microseconds(1000)));
}

void CpuDevice::wait_read(uint64_t position, const std::string& why) {
  const Engine& e = *engines_.at(position >> kEngineShift);
  uint64_t at = position & ((uint64_t{1} << kEngineShift) - 1);
  auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);  // as Device::wait
  for (int spin = 0; e.rptr.load(std::memory_order_acquire) < at; ++spin)
    if (spin % 64 == 63 && std::chrono::steady_clock::now() >= spin_until) break;
  auto deadline = std::chrono::steady_clock::now() + default_timeout();
  uint64_t seen = e.rptr.load();
  while (e.rptr.load(std::memory_order_acquire) < at) {
    check_usable();
    if (e.rptr.load() != seen) seen = e.rptr.load(), deadline = std::chrono::steady_clock::now() + default_timeout();  // progress
    if (std::chrono::steady_clock::now() > deadline) {
      fail(why);
      throw hcq::Timeout("device cpu: " + why + ": the command processor made no progress for " + std::to_string(default_timeout().count()) +
                         " ms (stuck on a wait or a kernel); the device is marked failed");
    }
    sleep_for_progress(std::chrono::microseconds(1000));
  }
}

void CpuDevice::wait_consumed(uint64_t position) { wait_read(position, "waiting for a queue's previous submission before patching it"); }

uint64_t CpuDevice::submit_commands(hcq::HWQueue& q) {
  size_t engine = static_cast<CpuQueue&>(q).engine;
  if (q.bound()) {
    uint64_t addr = reinterpret_cast<uint64_t>(q.commands().data());
    uint32_t ib[4] = {header(Cmd::Indirect, 4), static_cast<uint32_t>(addr), static_cast<uint32_t>(addr >> 32),
                      static_cast<uint32_t>(q.commands().size())};
    return push(engine, ib);
  }
  return push(engine, q.commands());
}

uint64_t CpuDevice::push(size_t engine, std::span<const uint32_t> cmds) {
  Engine& e = *engines_[engine];
  size_t cap = e.ring.size();
  if (cmds.size() > cap / 2)
    throw Error("cpu: a queue of " + std::to_string(cmds.size()) + " dwords does not fit the " + std::to_string(cap) +
                "-dword ring; bind() it so a submit is one indirect command");
  std::lock_guard submit_lock(e.submit_mu);
  uint64_t w = e.wptr.load(std::memory_order_relaxed), tag = uint64_t{engine} << kEngineShift;
  size_t pos = w % cap, pad = pos + cmds.size() > cap ? cap - pos : 0;
  // Back-pressure: wait until the processor has consumed enough of the ring.
  if (w + pad + cmds.size() - e.rptr.load(std::memory_order_acquire) > cap) {
    ++e.waits;
    wait_read(tag | (w + pad + cmds.size() - cap), "waiting for space on the command ring");
  }
  if (pad) e.ring[pos] = header(Cmd::Wrap, pad), w += pad, pos = 0;
  std::memcpy(&e.ring[pos], cmds.data(), cmds.size() * 4);
  e.wptr.store(w + cmds.size(), std::memory_order_release);
  {
    std::lock_guard lock(mu_);  // orders the store before a waiter's predicate check: no lost doorbell
  }
  doorbell_.notify_all();
  return tag | (w + cmds.size());
}

void CpuDevice::processor(Engine& e) {
  size_t cap = e.ring.size();
  while (!stop_ && !abort_) {
    uint64_t r = e.rptr.load(std::memory_order_relaxed);
    if (r == e.wptr.load(std::memory_order_acquire)) {
      // Poll a little before sleeping, as a GPU's command processor does: a submit that follows
      // soon after is picked up without a wake-up's latency.
      auto poll_until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
      bool more = false;
      for (int i = 0; !more && !stop_; ++i) {
        more = r != e.wptr.load(std::memory_order_acquire);
        if (i % 64 == 63 && std::chrono::steady_clock::now() >= poll_until) break;
      }
      if (more) continue;
      std::unique_lock lock(mu_);
      doorbell_.wait_for(lock, std::chrono::milliseconds(5), [&] { return stop_ || r != e.wptr.load(std::memory_order_acquire); });
      continue;
    }
    const uint32_t* c = &e.ring[r % cap];
    uint32_t len = c[0] >> 8;
    try {
      execute(c, true);
    } catch (const std::exception& ex) {
      fail(std::string("command processor: ") + ex.what());
      return;
    }
    e.rptr.store(r + len, std::memory_order_release);
    {
      std::lock_guard lock(mu_);  // as in push(): a sleeping submitter sees the new read pointer
    }
    progress_.notify_all();
  }
}

void CpuDevice::execute(const uint32_t* c, bool in_ring) {
  auto op = static_cast<Cmd>(c[0] & 0xff);
  uint32_t len = c[0] >> 8;
  auto slot = [&](int at) { return reinterpret_cast<hcq::SignalSlot*>(get64(c + at)); };
  switch (op) {
    case Cmd::Wait: {
      hcq::SignalSlot* s = slot(1);
      uint64_t v = get64(c + 3);
      for (int spin = 0; s->value.load(std::memory_order_acquire) < v; ++spin) {
        if (stop_ || abort_) return;
        if (spin > 1000) std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
      return;
    }
    case Cmd::Signal:
      slot(1)->value.store(get64(c + 3), std::memory_order_release);
      progress_.notify_all();
      return;
    case Cmd::Timestamp: slot(1)->timestamp.store(now_ns(), std::memory_order_release); return;
    case Cmd::Barrier: std::atomic_thread_fence(std::memory_order_seq_cst); return;
    case Cmd::Exec: run_exec(*reinterpret_cast<const CpuProgram*>(get64(c + 1)), reinterpret_cast<const uint64_t*>(get64(c + 3))); return;
    case Cmd::Copy: std::memcpy(reinterpret_cast<void*>(get64(c + 1)), reinterpret_cast<const void*>(get64(c + 3)), get64(c + 5)); return;
    case Cmd::Indirect: {
      if (!in_ring) throw Error("an indirect command inside an indirect buffer");
      const uint32_t* ib = reinterpret_cast<const uint32_t*>(get64(c + 1));
      for (uint32_t at = 0, n = c[3]; at < n && !stop_ && !abort_;) {
        uint32_t l = ib[at] >> 8;
        if (l == 0 || at + l > n) throw Error("malformed command at dword " + std::to_string(at) + " of an indirect buffer");
        execute(ib + at, false);
        at += l;
      }
      return;
    }
    case Cmd::Wrap: return;
    default: throw Error("unknown command " + std::to_string(c[0] & 0xff) + " (" + std::to_string(len) + " dwords)");
  }
}

bool CpuDevice::run_parts(Job& j) {
  bool last = false;
  for (int64_t part; (part = j.next.fetch_add(1)) < j.parts;) {
    call_kernel(*j.program, j.args, part, j.parts, j.fault);  // an interrupted or faulted part still counts as done
    last = j.left.fetch_sub(1) == 1;
  }
  return last;
}

void CpuDevice::run_exec(const CpuProgram& p, const uint64_t* args) {
  int64_t parts = std::min<int64_t>(p.split(), workers());
  Fault alone;  // a launch this thread runs by itself needs no Job
  std::shared_ptr<Job> job;
  if (parts <= 1) {
    call_kernel(p, args, 0, 1, alone);
  } else {
    job = std::make_shared<Job>();
    job->program = &p, job->args = args, job->parts = parts, job->left = parts;
    {
      std::lock_guard lock(job_mu_);
      job_ = job;
      ++job_gen_;
    }
    job_cv_.notify_all();
    run_parts(*job);
    std::unique_lock lock(job_mu_);
    job_done_.wait(lock, [&] { return job->left.load() == 0; });
    job_.reset();
  }
  if (const Fault& f = job ? job->fault : alone; f.happened) {
    const char* why = f.code == SEGV_ACCERR ? "an inaccessible page" : f.code == SEGV_MAPERR ? "an unmapped address" : "a bus error";
    throw Error("page fault at " + hex(f.address) + " in kernel " + p.name + ": a read or write of " + why + ", " + describe_address(f.address) +
                " (the cpu device catches accesses that leave all device memory or touch the guard page around each mapping; docs/design.md §5)");
  }
}

void CpuDevice::worker_loop() {
  uint64_t seen = 0;
  while (true) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock lock(job_mu_);
      job_cv_.wait(lock, [&] { return stop_ || (job_gen_ != seen && job_); });
      if (stop_) return;
      seen = job_gen_, job = job_;
    }
    if (run_parts(*job)) {
      std::lock_guard lock(job_mu_);
      job_done_.notify_all();
    }
  }
}

}  // namespace ugpu::cpu
