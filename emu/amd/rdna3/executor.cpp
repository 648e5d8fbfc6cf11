// Dispatch: workgroups spread over host threads, the waves of a workgroup interleaved at barriers, each
// wave running pre-decoded instructions from a per-page cache until s_endpgm or a fault.
#include "emu/amd/rdna3/executor.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>
#include <thread>
#include <unordered_map>

#include "common/error.h"
#include "common/hex.h"
#include "emu/amd/rdna3/inst.h"
#include "emu/amd/rdna3/ops.h"
#include "emu/amd/rdna3/wave.h"

namespace ugpu::emu::amd {

// --- decode cache --------------------------------------------------------------------------------

namespace {
constexpr uint64_t kPage = 4096;
}

struct DecodeCache {
  struct Page {
    std::atomic<const Inst*> slot[kPage / 4] = {};
    std::mutex mu;
    std::deque<Inst> storage;
  };
  std::mutex mu;
  std::unordered_map<uint64_t, std::unique_ptr<Page>> pages;
  std::vector<std::unique_ptr<Page>> retired;  // invalidated pages stay alive: a running wave may hold one

  Page* page(uint64_t base) {
    std::lock_guard lock(mu);
    auto& p = pages[base];
    if (!p) p = std::make_unique<Page>();
    return p.get();
  }
  // Fetches the instruction at `pc` through the memory (as an instruction fetch) and decodes it once.
  const Inst* decode(Page* page, uint64_t pc, Wave& w) {
    uint32_t words[3] = {};
    int count = 0;
    for (; count < 3; ++count) {
      auto span = w.memory ? w.memory->translate(pc + 4 * count, 4, Access::Execute) : std::nullopt;
      if (!span) break;
      std::memcpy(&words[count], span->host + (pc + 4 * count - span->device), 4);
    }
    if (count == 0) throw WaveFault{Fault::Kind::Memory, "", pc, Access::Execute, "instruction fetch"};
    std::lock_guard lock(page->mu);
    auto& slot = page->slot[(pc % kPage) / 4];
    if (const Inst* done = slot.load(std::memory_order_acquire)) return done;
    Inst& x = page->storage.emplace_back();
    Inst& y = page->storage.emplace_back();
    amd::decode(words, count, x, y);
    slot.store(&x, std::memory_order_release);
    return &x;
  }
};

Executor::Executor() : cache_(std::make_unique<DecodeCache>()) {}
Executor::~Executor() = default;

void Executor::invalidate_code() {
  std::lock_guard lock(cache_->mu);
  for (auto& [base, page] : cache_->pages) cache_->retired.push_back(std::move(page));
  cache_->pages.clear();
}

namespace {

// One dispatch's shared state.
struct Run {
  Run(const Dispatch& dispatch, const RunOptions& options, DecodeCache& c) : d(dispatch), o(options), cache(c) {}
  const Dispatch& d;
  const RunOptions& o;
  DecodeCache& cache;
  uint32_t waves_per_group = 0, lanes_per_group = 0, lds_bytes = 0, scratch_per_lane = 0, vgprs = 0;
  uint64_t total_groups = 0;
  std::atomic<uint64_t> next_group{0};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> instructions{0}, groups_done{0};
  std::mutex fault_mu;
  std::optional<Fault> fault;

  void record(Fault f) {
    std::lock_guard lock(fault_mu);
    if (!fault) fault = std::move(f);
    stop = true;
  }
};

// Per-thread storage reused across workgroups.
// Contents start undefined, as on hardware; init_wave clears the VGPRs a kernel declares.
struct Worker {
  std::vector<Wave> waves;
  std::unique_ptr<uint32_t[]> vgprs;  // waves x (256 + 8) x 32
  std::unique_ptr<uint8_t[]> lds, scratch;
};

constexpr uint32_t kVgprRows = 256 + 8;  // room past v255 for wide operands at the top of the file

Fault make_fault(const WaveFault& f, const Wave& w, uint64_t pc, const Inst* in) {
  Fault out;
  out.kind = f.kind;
  out.wave = WaveId{w.wg->id, w.id};
  out.pc = pc;
  out.instruction = in ? format(*in) : "";
  out.address = f.address;
  out.access = f.access;
  out.space = f.space;
  const std::string where = " at pc " + hex(pc) + " (workgroup " + std::to_string(w.wg->id[0]) + "," + std::to_string(w.wg->id[1]) + "," +
                            std::to_string(w.wg->id[2]) + ", wave " + std::to_string(w.id) + ")";
  switch (f.kind) {
    case Fault::Kind::Memory:
      out.message = "GPU memory fault: " + std::string(name(f.access)) + " of " + f.space + " address " + hex(f.address) +
                    (f.message.empty() ? (f.space == "LDS" || f.space == "scratch" ? " past the end of the allocation" : " that is not mapped for it")
                                       : " (" + f.message + ")") +
                    (in ? " by `" + out.instruction + "`" : "") + where;
      break;
    case Fault::Kind::Unimplemented:
      out.message = "the emulator cannot execute `" + out.instruction + "`" + (in && !in->problem.empty() ? " (" + in->problem + ")" : "") + where;
      break;
    case Fault::Kind::Illegal: out.message = f.message + (in ? " (`" + out.instruction + "`)" : "") + where; break;
    case Fault::Kind::Interrupted:
      out.message = "interrupted" + where + " after " + std::to_string(w.instructions) + " instructions of this wave";
      break;
  }
  return out;
}

// Runs one wave until it ends, waits at a barrier, or faults (thrown as WaveFault).
void run_wave(Wave& w, Run& run, uint64_t& pc, const Inst*& current) {
  DecodeCache::Page* page = nullptr;
  uint64_t page_base = ~uint64_t{0};
  const std::atomic<bool>* interrupt = run.o.interrupt;
  while (w.state == Wave::State::Running) {
    pc = w.pc;
    current = nullptr;
    if (pc & 3) throw WaveFault{Fault::Kind::Illegal, "the program counter is not 4-byte aligned", 0, Access::Execute, ""};
    if ((pc & ~(kPage - 1)) != page_base) page_base = pc & ~(kPage - 1), page = run.cache.page(page_base);
    const Inst* in = page->slot[(pc % kPage) / 4].load(std::memory_order_acquire);
    if (!in) in = run.cache.decode(page, pc, w);
    current = in;
    w.pc = pc + in->size;
    in->run(w, *in);
    if ((++w.instructions & 1023) == 0 && ((interrupt && interrupt->load(std::memory_order_relaxed)) || run.stop.load(std::memory_order_relaxed))) {
      if (run.stop.load(std::memory_order_relaxed) && !(interrupt && interrupt->load(std::memory_order_relaxed))) return;  // another wave faulted
      throw WaveFault{Fault::Kind::Interrupted, "", 0, Access::Read, ""};
    }
  }
}

void init_wave(Wave& w, Run& run, Workgroup& wg, uint32_t index, uint32_t (*vgprs)[kLanes], uint8_t* scratch) {
  namespace r2 = hw::amd::rsrc2;
  const Dispatch& d = run.d;
  const uint32_t rsrc2 = d.descriptor.compute_pgm_rsrc2;
  w = Wave{};
  w.v = vgprs;
  w.vgpr_count = run.vgprs;
  std::memset(vgprs, 0, sizeof(uint32_t) * kLanes * run.vgprs);
  w.wg = &wg;
  w.id = index;
  w.memory = d.memory;
  w.pc = d.entry;
  w.scratch = scratch;
  w.scratch_per_lane = run.scratch_per_lane;
  init_mode(w, d.descriptor.compute_pgm_rsrc1);
  uint32_t n = r2::kUserSgprCount.get(rsrc2);
  for (uint32_t i = 0; i < n && i < d.user_sgprs.size(); ++i) w.s[i] = d.user_sgprs[i];
  if (r2::kWorkgroupIdX.get(rsrc2)) w.s[n++] = wg.id[0];
  if (r2::kWorkgroupIdY.get(rsrc2)) w.s[n++] = wg.id[1];
  if (r2::kWorkgroupIdZ.get(rsrc2)) w.s[n++] = wg.id[2];
  if (r2::kWorkgroupInfo.get(rsrc2)) w.s[n++] = run.waves_per_group;
  if (r2::kPrivateSegment.get(rsrc2)) w.s[n++] = 0;  // scratch wave offset: each wave's scratch is private here
  const uint32_t first = index * kLanes, sx = d.workgroup_size[0], sy = d.workgroup_size[1];
  uint32_t exec = 0;
  for (uint32_t l = 0; l < kLanes && first + l < run.lanes_per_group; ++l) {
    uint32_t t = first + l;
    vgprs[0][l] = (t % sx) | ((t / sx) % sy) << 10 | (t / (sx * sy)) << 20;  // packed work-item ids (gfx11)
    exec |= 1u << l;
  }
  w.s[kExec] = exec;
}

void run_group(Run& run, Worker& wk, uint64_t index) {
  const Dispatch& d = run.d;
  Workgroup wg;
  wg.id = {static_cast<uint32_t>(index % d.workgroups[0]), static_cast<uint32_t>(index / d.workgroups[0] % d.workgroups[1]),
           static_cast<uint32_t>(index / (uint64_t{d.workgroups[0]} * d.workgroups[1]))};
  wg.lds = wk.lds.get();
  wg.lds_bytes = run.lds_bytes;
  for (uint32_t i = 0; i < run.waves_per_group; ++i)
    init_wave(wk.waves[i], run, wg, i, reinterpret_cast<uint32_t (*)[kLanes]>(wk.vgprs.get() + size_t{i} * kVgprRows * kLanes),
              wk.scratch.get() + size_t{i} * kLanes * run.scratch_per_lane);
  for (;;) {
    bool any_barrier = false, all_ended = true;
    for (uint32_t i = 0; i < run.waves_per_group; ++i) {
      Wave& w = wk.waves[i];
      if (w.state == Wave::State::Running) {
        uint64_t pc = w.pc;
        const Inst* current = nullptr;
        try {
          run_wave(w, run, pc, current);
        } catch (const WaveFault& f) {
          run.instructions += w.instructions;
          run.record(make_fault(f, w, pc, current));
          return;
        }
        if (run.stop.load(std::memory_order_relaxed) && w.state == Wave::State::Running) return;
      }
      any_barrier |= w.state == Wave::State::Barrier;
      all_ended &= w.state == Wave::State::Ended;
    }
    if (all_ended || !any_barrier) break;
    // Every wave that has not ended waits at the barrier: release them together.
    for (uint32_t i = 0; i < run.waves_per_group; ++i)
      if (wk.waves[i].state == Wave::State::Barrier) wk.waves[i].state = Wave::State::Running;
  }
  uint64_t n = 0;
  for (uint32_t i = 0; i < run.waves_per_group; ++i) n += wk.waves[i].instructions;
  run.instructions += n;
  run.groups_done += 1;
}

}  // namespace

std::array<uint32_t, 32> user_sgprs_for(const hw::amd::KernelDescriptor& kd, const DispatchPointers& p) {
  namespace cp = hw::amd::code_props;
  std::array<uint32_t, 32> s{};
  size_t n = 0;
  auto put64 = [&](uint64_t v) { s[n++] = static_cast<uint32_t>(v), s[n++] = static_cast<uint32_t>(v >> 32); };
  const uint32_t props = kd.kernel_code_properties;
  if (cp::kPrivateSegmentBuffer.get(props))
    for (uint32_t v : p.private_segment_buffer) s[n++] = v;
  if (cp::kDispatchPtr.get(props)) put64(p.dispatch_packet);
  if (cp::kQueuePtr.get(props)) put64(p.queue);
  if (cp::kKernargSegmentPtr.get(props)) put64(p.kernarg);
  if (cp::kDispatchId.get(props)) put64(p.dispatch_id);
  if (cp::kFlatScratchInit.get(props)) put64(0);
  if (cp::kPrivateSegmentSize.get(props)) s[n++] = kd.private_segment_fixed_size;
  return s;
}

RunResult Executor::run(const Dispatch& d, const RunOptions& o) {
  if (!d.memory) throw Error("emulated dispatch: no memory to run against");
  if (!hw::amd::code_props::kWavefrontSize32.get(d.descriptor.kernel_code_properties))
    throw Error("emulated dispatch: the kernel is compiled for wave64; this executor runs wave32 (RDNA) kernels");
  Run run(d, o, *cache_);
  for (uint32_t n : d.workgroup_size)
    if (n == 0) throw Error("emulated dispatch: a workgroup dimension is 0");
  const uint64_t lanes = uint64_t{d.workgroup_size[0]} * d.workgroup_size[1] * d.workgroup_size[2];
  if (lanes > 1024) throw Error("emulated dispatch: " + std::to_string(lanes) + " work-items per workgroup (at most 1024)");
  run.lanes_per_group = static_cast<uint32_t>(lanes);
  run.waves_per_group = (run.lanes_per_group + kLanes - 1) / kLanes;
  run.lds_bytes = std::max(d.lds_bytes, d.descriptor.group_segment_fixed_size);
  if (run.lds_bytes > 64 * 1024) throw Error("emulated dispatch: " + std::to_string(run.lds_bytes) + " bytes of LDS per workgroup (at most 65536)");
  run.scratch_per_lane = std::max(d.scratch_bytes_per_lane, d.descriptor.private_segment_fixed_size);
  run.vgprs = std::min<uint32_t>(256, (hw::amd::rsrc1::kVgprGranules.get(d.descriptor.compute_pgm_rsrc1) + 1) * 8);
  // Three 32-bit counts can multiply past 2^64: refused, never wrapped into a grid that runs nothing.
  if (__builtin_mul_overflow(uint64_t{d.workgroups[0]} * d.workgroups[1], uint64_t{d.workgroups[2]}, &run.total_groups))
    throw Error("emulated dispatch: a grid of " + std::to_string(d.workgroups[0]) + " x " + std::to_string(d.workgroups[1]) + " x " +
                std::to_string(d.workgroups[2]) + " workgroups has more than 2^64 of them");
  RunResult result;
  if (run.total_groups == 0) return result;
  unsigned threads = o.threads ? o.threads : std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<uint64_t>(threads, run.total_groups));
  auto work = [&run] {
    Worker wk;
    wk.waves.resize(run.waves_per_group);
    wk.vgprs = std::make_unique_for_overwrite<uint32_t[]>(size_t{run.waves_per_group} * kVgprRows * kLanes);
    wk.lds = std::make_unique_for_overwrite<uint8_t[]>(run.lds_bytes);
    wk.scratch = std::make_unique_for_overwrite<uint8_t[]>(size_t{run.waves_per_group} * kLanes * run.scratch_per_lane);
    for (;;) {
      if (run.stop.load(std::memory_order_relaxed)) return;
      uint64_t i = run.next_group.fetch_add(1);
      if (i >= run.total_groups) return;
      run_group(run, wk, i);
    }
  };
  if (threads <= 1) {
    work();
  } else {
    std::vector<std::jthread> pool;
    for (unsigned t = 0; t < threads; ++t) pool.emplace_back(work);
  }
  result.fault = std::move(run.fault);
  result.wave_instructions = run.instructions;
  result.workgroups_run = run.groups_done;
  return result;
}

}  // namespace ugpu::emu::amd
