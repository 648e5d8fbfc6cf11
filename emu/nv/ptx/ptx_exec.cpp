// The PTX executor's scheduler: blocks spread over host threads, the warps of a block run in turn
// (switching at barriers and exits), the lanes of a warp together while they agree on the program
// counter, and the faults that end a launch.
#include "emu/nv/ptx/ptx_exec.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "common/error.h"
#include "common/hex.h"

namespace ugpu::emu::nv::detail {
namespace {

std::string triple(const std::array<uint32_t, 3>& v) {
  return "(" + std::to_string(v[0]) + "," + std::to_string(v[1]) + "," + std::to_string(v[2]) + ")";
}

std::array<uint32_t, 3> thread_of(const Block& b, uint32_t linear) {
  const auto& n = b.run->launch->block;
  return {linear % n[0], linear / n[0] % n[1], linear / (n[0] * n[1])};
}

std::string where(const PtxFault& f) {
  return " by block " + triple(f.block) + " thread " + triple(f.thread) + " at PTX line " + std::to_string(f.line) + ": " + f.instruction;
}

}  // namespace

PtxFault make_fault(Warp& w, const Inst& in, int lane, PtxFault::Kind kind) {
  const Block& b = *w.block;
  PtxFault f;
  f.kind = kind;
  f.block = b.id;
  if (lane < 0) lane = w.group ? __builtin_ctz(w.group) : 0;
  f.thread = thread_of(b, w.index * 32 + static_cast<uint32_t>(lane));
  const size_t i = static_cast<size_t>(&in - b.code->insts.data());
  f.line = in.line;
  f.instruction = i < b.code->text.size() ? b.code->text[i] : std::string();
  return f;
}

void memory_fault(Warp& w, const Inst& in, int lane, uint64_t address, unsigned bytes, Access access, Space space, const std::string& why) {
  PtxFault f = make_fault(w, in, lane, PtxFault::Kind::Memory);
  f.address = address;
  f.access = access;
  f.space = name(space);
  f.message = "GPU memory fault: " + f.space + " " + name(access) + " of " + std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes") + " at " +
              hex(address) + " (" + why + ")" + where(f);
  throw FaultThrow{std::move(f)};
}

void illegal(Warp& w, const Inst& in, int lane, const std::string& what) {
  PtxFault f = make_fault(w, in, lane, PtxFault::Kind::Illegal);
  f.message = "GPU illegal instruction: " + what + where(f);
  throw FaultThrow{std::move(f)};
}

namespace {

// ---- lanes of a warp --------------------------------------------------------------------------

// Makes the lanes at the lowest waiting pc the running group.
bool pick(Warp& w) {
  const uint32_t r = w.runnable;
  w.group = 0, w.min_other = kNone;
  if (!r) return false;
  uint32_t best = kNone;
  for_lanes(r, [&](int l) { best = std::min(best, w.lane_pc[static_cast<size_t>(l)]); });
  for_lanes(r, [&](int l) {
    const uint32_t pc = w.lane_pc[static_cast<size_t>(l)];
    if (pc == best) w.group |= 1u << l;
    else w.min_other = std::min(w.min_other, pc);
  });
  w.pc = best;
  return true;
}

// The group has reached or passed a waiting lane's pc: merge or switch.
void regroup(Warp& w) {
  for_lanes(w.group, [&](int l) { w.lane_pc[static_cast<size_t>(l)] = w.pc; });
  pick(w);
}

void split(Warp& w, uint32_t taken, uint32_t target, uint32_t fall, uint32_t next) {
  // The lower pc goes on now; the other waits. (Lanes later meet at a join point, where their pcs
  // become equal, because the lowest pc always runs first.)
  const bool go_taken = target < next;
  const uint32_t park = go_taken ? fall : taken, park_pc = go_taken ? next : target;
  for_lanes(park, [&](int l) { w.lane_pc[static_cast<size_t>(l)] = park_pc; });
  w.min_other = std::min(w.min_other, park_pc);
  w.group = go_taken ? taken : fall;
  w.pc = go_taken ? target : next;
}

// ---- barriers ---------------------------------------------------------------------------------

void release(Block& b, uint32_t id) {
  b.arrived[id] = 0;
  b.expected[id] = 0;
  for (Warp& w : b.warps) {
    const uint32_t m = w.bar_wait[id];
    if (!m) continue;
    w.bar_wait[id] = 0;
    w.runnable |= m;
    if (w.group) for_lanes(m, [&](int l) { w.min_other = std::min(w.min_other, w.lane_pc[static_cast<size_t>(l)]); });
  }
}

void try_release(Block& b, uint32_t id) {
  if (!b.arrived[id]) return;
  const uint32_t need = b.expected[id] ? b.expected[id] : b.nthreads - b.exited_threads;
  if (b.arrived[id] >= need) release(b, id);
}

// bar.sync a{, b} / bar.arrive a, b: every thread counts (hardware counts warps; the kernels we run
// use whole warps). Threads that have exited count as arrived at a whole-block barrier.
void barrier(Block& b, Warp& w, const Inst& in, uint32_t m, bool wait) {
  if (!m) return;
  const int first = __builtin_ctz(m);
  const uint64_t id = slot(w, in.s[0])[first];
  if (id > 15) illegal(w, in, first, "barrier " + std::to_string(id) + " does not exist (0-15)");
  uint32_t count = 0;
  if (in.s[1] != kNone) {
    const uint64_t c = slot(w, in.s[1])[first] & 0xffffffff;
    if (c == 0 || c % 32 || c > 1024) illegal(w, in, first, "barrier thread count " + std::to_string(c) + " is not a multiple of 32 in 32..1024");
    count = static_cast<uint32_t>(c);
  }
  const uint32_t bid = static_cast<uint32_t>(id);
  if (b.arrived[bid] && b.expected[bid] != count)
    illegal(w, in, first, "barrier " + std::to_string(bid) + " used with different thread counts at once");
  b.expected[bid] = count;
  b.arrived[bid] += static_cast<uint32_t>(std::popcount(m));
  if (wait) {
    w.group &= ~m;
    w.runnable &= ~m;
    w.bar_wait[bid] |= m;
    for_lanes(m, [&](int l) { w.lane_pc[static_cast<size_t>(l)] = w.pc + 1; });
  }
  try_release(b, bid);
}

void exit_lanes(Block& b, Warp& w, uint32_t m) {
  if (!m) return;
  w.exited |= m;
  w.runnable &= ~m;
  w.group &= ~m;
  b.exited_threads += static_cast<uint32_t>(std::popcount(m));
  for (uint32_t id = 0; id < 16; ++id)
    if (!b.expected[id]) try_release(b, id);
}

[[noreturn]] void stopped(Block& b, Warp& w) {
  const Run& run = *b.run;
  if (run.interrupt && run.interrupt->load(std::memory_order_relaxed)) {
    const Inst& in = b.code->insts[w.pc];
    PtxFault f = make_fault(w, in, -1, PtxFault::Kind::Interrupted);
    f.message = "interrupted" + where(f) + " (after " + std::to_string(w.executed) + " instructions of this warp)";
    throw FaultThrow{std::move(f)};
  }
  throw StopThrow{};
}

// Runs warp w until none of its lanes can go on: all exited or waiting at a barrier.
void run_warp(Block& b, Warp& w) {
  const Inst* code = b.code->insts.data();
  const Run& run = *b.run;
  for (;;) {
    if (!w.group && !pick(w)) return;
    const Inst& in = code[w.pc];
    uint32_t m = w.group;
    if (in.guard != kNone) m &= in.guard_neg ? ~w.p[in.guard] : w.p[in.guard];
    if ((++w.executed & 4095) == 0 && (run.stop.load(std::memory_order_relaxed) || (run.interrupt && run.interrupt->load(std::memory_order_relaxed))))
      stopped(b, w);
    switch (in.flow) {
      case Flow::Alu:
        if (m) in.fn(w, in, m);
        ++w.pc;
        break;
      case Flow::Branch: {
        const uint32_t fall = w.group & ~m;
        if (!fall) w.pc = in.target;
        else if (!m) ++w.pc;
        else split(w, m, in.target, fall, w.pc + 1);
        break;
      }
      case Flow::Exit:
        exit_lanes(b, w, m);
        ++w.pc;
        break;
      case Flow::Barrier:
      case Flow::Arrive:
        barrier(b, w, in, m, in.flow == Flow::Barrier);
        ++w.pc;
        break;
      case Flow::Trap:
        if (m) {
          PtxFault f = make_fault(w, in, __builtin_ctz(m), PtxFault::Kind::Illegal);
          f.message = "GPU trap: the kernel executed `" + f.instruction + "`" + where(f);
          throw FaultThrow{std::move(f)};
        }
        ++w.pc;
        break;
    }
    if (w.pc >= w.min_other) regroup(w);
  }
}

// ---- blocks -----------------------------------------------------------------------------------

uint32_t special_value(const Block& b, const Warp& w, Sreg s, uint32_t lane) {
  const PtxLaunch& L = *b.run->launch;
  const std::array<uint32_t, 3> t = thread_of(b, w.index * 32 + lane);
  switch (s) {
    case Sreg::TidX: return t[0];
    case Sreg::TidY: return t[1];
    case Sreg::TidZ: return t[2];
    case Sreg::NtidX: return L.block[0];
    case Sreg::NtidY: return L.block[1];
    case Sreg::NtidZ: return L.block[2];
    case Sreg::CtaidX: return b.id[0];
    case Sreg::CtaidY: return b.id[1];
    case Sreg::CtaidZ: return b.id[2];
    case Sreg::NctaidX: return L.grid[0];
    case Sreg::NctaidY: return L.grid[1];
    case Sreg::NctaidZ: return L.grid[2];
    case Sreg::Laneid: return lane;
    case Sreg::Warpid: return w.index;
    case Sreg::Nwarpid: return b.run->nwarps;
    case Sreg::Smid:
    case Sreg::Gridid: return 0;
    case Sreg::Nsmid: return 1;
    case Sreg::LanemaskEq: return 1u << lane;
    case Sreg::LanemaskLe: return lane == 31 ? ~0u : (2u << lane) - 1;
    case Sreg::LanemaskLt: return (1u << lane) - 1;
    case Sreg::LanemaskGe: return ~((1u << lane) - 1);
    case Sreg::LanemaskGt: return lane == 31 ? 0 : ~((2u << lane) - 1);
    case Sreg::TotalSmem: return L.shared_bytes;
    case Sreg::DynamicSmem: return L.shared_bytes - b.run->entry->static_shared_bytes;
    case Sreg::ClusterCtaidX:
    case Sreg::ClusterCtaidY:
    case Sreg::ClusterCtaidZ: return 0;  // clusters of one block
    case Sreg::ClusterNctaidX:
    case Sreg::ClusterNctaidY:
    case Sreg::ClusterNctaidZ: return 1;
    case Sreg::ClusteridX: return b.id[0];
    case Sreg::ClusteridY: return b.id[1];
    case Sreg::ClusteridZ: return b.id[2];
    case Sreg::NclusteridX: return L.grid[0];
    case Sreg::NclusteridY: return L.grid[1];
    case Sreg::NclusteridZ: return L.grid[2];
    case Sreg::ClusterCtarank: return 0;
    case Sreg::ClusterNctarank: return 1;
  }
  return 0;
}

// A host thread's block state, reused from block to block.
void setup(Block& b, Run& run) {
  const Code& c = *run.code;
  b.run = &run;
  b.code = &c;
  b.nthreads = run.nthreads;
  b.regs.assign(static_cast<size_t>(run.nwarps) * c.slots * 32, 0);
  b.preds.assign(static_cast<size_t>(run.nwarps) * c.preds, 0);
  b.warps.assign(run.nwarps, Warp{});
  b.shared.assign(run.launch->shared_bytes, 0);
  b.local_bytes = run.launch->local_bytes_per_thread;
  b.local.assign(static_cast<size_t>(run.nwarps) * 32 * b.local_bytes, 0);
  for (uint32_t i = 0; i < run.nwarps; ++i) {
    Warp& w = b.warps[i];
    w.r = b.regs.data() + static_cast<size_t>(i) * c.slots * 32;
    w.p = b.preds.data() + static_cast<size_t>(i) * c.preds;
    w.block = &b;
    w.index = i;
    for (const auto& [s, v] : c.constants) std::fill_n(slot(w, s), 32, v);
    for (const auto& [s, off] : c.data_constants) std::fill_n(slot(w, s), 32, run.launch->data_address + off);
  }
}

void run_block(Block& b, uint64_t linear) {
  Run& run = *b.run;
  const PtxLaunch& L = *run.launch;
  const Code& c = *b.code;
  b.id = {static_cast<uint32_t>(linear % L.grid[0]), static_cast<uint32_t>(linear / L.grid[0] % L.grid[1]),
          static_cast<uint32_t>(linear / (static_cast<uint64_t>(L.grid[0]) * L.grid[1]))};
  b.arrived = {};
  b.expected = {};
  b.exited_threads = 0;
  std::fill(b.shared.begin(), b.shared.end(), 0);
  std::fill(b.local.begin(), b.local.end(), 0);
  for (Warp& w : b.warps) {
    std::fill_n(w.r, static_cast<size_t>(c.reg_slots) * 32, 0);
    std::fill_n(w.p, c.preds, 0);
    for (const auto& [p, v] : c.const_preds) w.p[p] = v ? ~0u : 0;
    for (const auto& [s, r] : c.specials) {
      uint64_t* d = slot(w, s);
      for (uint32_t l = 0; l < 32; ++l) d[l] = special_value(b, w, r, l);
    }
    const uint32_t first = w.index * 32, live = std::min<uint32_t>(32, b.nthreads - first);
    w.runnable = live == 32 ? ~0u : (1u << live) - 1;
    w.exited = ~w.runnable;
    w.group = 0, w.pc = 0, w.min_other = kNone, w.executed = 0;
    w.bar_wait = {};
    w.lane_pc = {};
  }
  for (;;) {
    bool ran = false, live = false;
    for (Warp& w : b.warps) {
      if (w.runnable) {
        run_warp(b, w);
        ran = true;
      }
      live |= w.exited != ~0u;
    }
    if (!live) break;
    if (!ran) {  // threads wait at barriers the others never reach
      for (Warp& w : b.warps)
        for (uint32_t id = 0; id < 16; ++id)
          if (w.bar_wait[id]) {
            const int lane = __builtin_ctz(w.bar_wait[id]);
            const uint32_t pc = w.lane_pc[static_cast<size_t>(lane)] - 1;
            const Inst& in = c.insts[pc];
            w.group = 0;
            PtxFault f = make_fault(w, in, lane, PtxFault::Kind::Illegal);
            f.message = "GPU hang: " + std::to_string(b.arrived[id]) + " of the block's threads wait at barrier " + std::to_string(id) +
                        " that the other " + std::to_string(b.nthreads - b.exited_threads - b.arrived[id]) +
                        " live threads never reach (a barrier in divergent code?)" + where(f);
            throw FaultThrow{std::move(f)};
          }
      break;
    }
  }
}

void worker(Run& run) {
  Block b;
  try {
    setup(b, run);
  } catch (const std::bad_alloc&) {
    std::lock_guard lock(run.mu);
    if (!run.fault) {
      PtxFault f;
      f.kind = PtxFault::Kind::Illegal;
      f.message = "the emulator could not allocate a block's registers, shared and local memory";
      run.fault = f;
    }
    run.stop = true;
    return;
  }
  for (;;) {
    if (run.stop.load(std::memory_order_relaxed)) return;
    if (run.interrupt && run.interrupt->load(std::memory_order_relaxed)) {
      std::lock_guard lock(run.mu);
      if (!run.fault) {
        PtxFault f;
        f.kind = PtxFault::Kind::Interrupted;
        f.line = 0;
        f.message = "interrupted between blocks";
        run.fault = f;
      }
      run.stop = true;
      return;
    }
    const uint64_t i = run.next_block.fetch_add(1);
    if (i >= run.blocks) return;
    try {
      run_block(b, i);
    } catch (FaultThrow& f) {
      std::lock_guard lock(run.mu);
      if (!run.fault) run.fault = std::move(f.fault);
      run.stop = true;
    } catch (const StopThrow&) {}
    uint64_t n = 0;
    for (const Warp& w : b.warps) n += w.executed;
    run.instructions += n;
    if (!run.stop.load(std::memory_order_relaxed)) run.blocks_run += 1;
  }
}

}  // namespace
}  // namespace ugpu::emu::nv::detail

namespace ugpu::emu::nv {

PtxRunResult run_ptx(const PtxLaunch& launch, const PtxRunOptions& options) {
  using namespace detail;
  if (!launch.module) throw Error("PTX launch: no module");
  if (!launch.memory) throw Error("PTX launch: no memory to run against");
  const PtxModule& mod = *launch.module;
  size_t index = mod.entries.size();
  if (launch.entry.empty()) {
    if (mod.entries.size() != 1) throw Error("PTX launch: the module has " + std::to_string(mod.entries.size()) + " entries; name the one to run");
    index = 0;
  } else {
    for (size_t i = 0; i < mod.entries.size(); ++i)
      if (mod.entries[i].name == launch.entry) index = i;
    if (index == mod.entries.size()) throw Error("PTX launch: the module has no entry '" + launch.entry + "'");
  }
  const PtxEntry& entry = mod.entries[index];
  const auto& bl = launch.block;
  const auto& gr = launch.grid;
  const std::string dims = "block " + std::to_string(bl[0]) + "x" + std::to_string(bl[1]) + "x" + std::to_string(bl[2]);
  if (!bl[0] || !bl[1] || !bl[2] || bl[0] > 1024 || bl[1] > 1024 || bl[2] > 64 || static_cast<uint64_t>(bl[0]) * bl[1] * bl[2] > 1024)
    throw Error("PTX launch of " + entry.name + ": " + dims + " is not a valid thread block (at most 1024 threads; x, y <= 1024, z <= 64)");
  if (!gr[0] || !gr[1] || !gr[2] || gr[0] > 0x7fffffffu || gr[1] > 65535 || gr[2] > 65535)
    throw Error("PTX launch of " + entry.name + ": grid " + std::to_string(gr[0]) + "x" + std::to_string(gr[1]) + "x" + std::to_string(gr[2]) +
                " is not valid (x < 2^31, y and z < 65536, none 0)");
  if (launch.shared_bytes < entry.static_shared_bytes)
    throw Error("PTX launch of " + entry.name + ": " + std::to_string(launch.shared_bytes) + " bytes of shared memory, but the entry declares " +
                std::to_string(entry.static_shared_bytes));
  if (launch.local_bytes_per_thread < entry.local_bytes)
    throw Error("PTX launch of " + entry.name + ": " + std::to_string(launch.local_bytes_per_thread) +
                " bytes of local memory per thread, but the entry declares " + std::to_string(entry.local_bytes));
  if (launch.shared_bytes > 227 * 1024)
    throw Error("PTX launch of " + entry.name + ": " + std::to_string(launch.shared_bytes) +
                " bytes of shared memory per block; sm_90 has at most 227 KiB");
  if (launch.local_bytes_per_thread > 512 * 1024)
    throw Error("PTX launch of " + entry.name + ": " + std::to_string(launch.local_bytes_per_thread) +
                " bytes of local memory per thread; the limit is 512 KiB");
  const PtxData& data = mod.data;
  if (!mod.code[index].data_constants.empty()) {
    if (!launch.data_address)
      throw Error("PTX launch of " + entry.name + ": the entry uses the module's .global/.const variables (" + std::to_string(data.bytes) +
                  " bytes), but the launch places them nowhere (PtxLaunch::data_address is 0)");
    if (launch.data_address % data.align)
      throw Error("PTX launch of " + entry.name + ": the module's data at " + hex(launch.data_address) + " is not aligned to " +
                  std::to_string(data.align) + " bytes");
  }
  const uint64_t gap =
      launch.shared_window > launch.local_window ? launch.shared_window - launch.local_window : launch.local_window - launch.shared_window;
  if (gap < (uint64_t{1} << 32)) throw Error("PTX launch: the shared and local windows overlap (each spans 4 GiB)");

  Run run;
  run.launch = &launch;
  run.code = &mod.code[index];
  run.entry = &entry;
  run.nthreads = bl[0] * bl[1] * bl[2];
  run.nwarps = (run.nthreads + 31) / 32;
  run.blocks = static_cast<uint64_t>(gr[0]) * gr[1] * gr[2];
  run.interrupt = options.interrupt;
  unsigned threads = options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<uint64_t>(threads, run.blocks));
  if (threads <= 1) {
    worker(run);
  } else {
    std::vector<std::thread> pool;
    pool.reserve(threads);
    for (unsigned i = 0; i < threads; ++i) pool.emplace_back([&run] { worker(run); });
    for (std::thread& t : pool) t.join();
  }
  PtxRunResult r;
  r.fault = std::move(run.fault);
  r.instructions = run.instructions.load();
  r.blocks_run = run.blocks_run.load();
  return r;
}

}  // namespace ugpu::emu::nv
