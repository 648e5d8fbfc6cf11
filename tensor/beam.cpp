// BEAM search on the device (UGPU_BEAM=N, set_beam_width): a kernel's candidates are timed with the
// realize's own inputs, written into scratch copies of its outputs, checked against the kernel as
// written, and the winner is stored in the compile cache under the kernel, the target and the
// device (its kind, arch and interface, which carries the driver's version), so a later realize —
// in this process or the next — pays nothing.
#include "tensor/beam.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "codegen/builtin_kernels.h"
#include "codegen/cache.h"
#include "codegen/compiler.h"
#include "hcq/profiler.h"
#include "ir/sha256.h"
#include "ir/text.h"

namespace ugpu::tensor {
namespace {

std::atomic<int> g_width{-1};
std::mutex g_mu;
std::map<std::string, std::vector<codegen::opt::Opt>> g_found;  // this process's results, by cache key
BeamStats g_stats;

std::string hex_key(const std::string& text) {
  ir::Sha256 h;
  h.update(text);
  return ir::hex(h.finish());
}

// Floats within a relative 1e-3 (reassociated sums), NaN equal to NaN; everything else bit for bit.
bool close_enough(const std::vector<uint8_t>& want, const std::vector<uint8_t>& got, ir::DType t) {
  if (want.size() != got.size()) return false;
  if (!t.is_float() || t.itemsize() == 1) return want == got;
  const codegen::HostData w{.dtype = t, .bytes = want}, g{.dtype = t, .bytes = got};
  for (size_t i = 0; i < w.count(); ++i) {
    if (w.is_nan(i) || g.is_nan(i)) {
      if (w.is_nan(i) != g.is_nan(i)) return false;
      continue;
    }
    double a = w.value(i), b = g.value(i);
    if (a == b) continue;
    if (std::fabs(a - b) > 1e-3 * std::max(1.0, std::fabs(a)) + (t.itemsize() == 2 ? 1e-2 * std::fabs(a) : 0)) return false;
  }
  return true;
}

// Where a kernel's result is kept: the kernel, the target, the device and its driver, the width.
std::string beam_key(hcq::Device& dev, const ir::UOp& ast) {
  hcq::DeviceInfo info = dev.info();
  return hex_key("ugpu-beam-1|" + ast.key_hex() + "|" + dev.target() + "|" + info.kind + "|" + info.arch + "|" + info.interface + "|" +
                 std::to_string(beam_width()));
}

}  // namespace

int beam_width() {
  if (g_width < 0) {
    const char* e = std::getenv("UGPU_BEAM");
    int w = 0;
    if (e && *e) {
      auto [end, ec] = std::from_chars(e, e + std::strlen(e), w);
      if (ec != std::errc() || *end || w < 0 || w > 1000)
        throw Error("UGPU_BEAM takes a beam width (a whole number from 0, off, to 1000), not '" + std::string(e) + "'");
    }
    g_width = w;
  }
  return g_width;
}
void set_beam_width(int width) { g_width = width < 0 ? -1 : width; }
BeamStats beam_stats() {
  std::lock_guard lock(g_mu);
  return g_stats;
}
void forget_beam_results() {
  std::lock_guard lock(g_mu);
  g_found.clear();
}

std::optional<std::vector<codegen::opt::Opt>> cached_beam_opts(hcq::Device& dev, const ir::UOp& ast) {
  std::string key = beam_key(dev, ast);
  std::lock_guard lock(g_mu);
  if (auto it = g_found.find(key); it != g_found.end()) return it->second;
  codegen::DiskCache disk(codegen::cache_dir_from_env());
  if (auto e = disk.get(key)) {
    try {
      auto opts = codegen::opt::parse_opts((*e)["opts"]);
      ++g_stats.cache_hits;
      return g_found[key] = opts;
    } catch (const Error&) {
      // an unreadable entry: search again and replace it
    }
  }
  return std::nullopt;
}

std::vector<codegen::opt::Opt> search_beam_opts(hcq::Device& dev, const ir::UOp& ast, const std::string& name, const std::vector<KernelArg>& args) {
  const codegen::Target& t = codegen::find_target(dev.target());
  // Scratch copies of the buffers the kernel writes, reset from the real ones before every run.
  struct Written {
    size_t arg;
    hcq::Buffer scratch;
    std::vector<uint8_t> initial;
    ir::DType dtype;
  };
  std::vector<Written> written;
  std::vector<hcq::Val> vals;
  for (size_t i = 0; i < args.size(); ++i) {
    const KernelArg& a = args[i];
    if (!a.buffer) {
      vals.push_back(a.value);
      continue;
    }
    if (a.written) {
      Written w{i, dev.alloc(std::max<size_t>(a.buffer->size, 1)), std::vector<uint8_t>(a.buffer->size), a.dtype};
      dev.copy_out(w.initial, *a.buffer, 0);
      vals.push_back(w.scratch.va);
      written.push_back(std::move(w));
    } else {
      vals.push_back(a.buffer->va);
    }
  }
  std::vector<std::vector<uint8_t>> want;
  auto run = [&](const std::vector<codegen::opt::Opt>& opts, int reps, double give_up,
                 std::vector<std::vector<uint8_t>>* out) -> std::optional<double> {
    codegen::CompileOptions co;
    co.name = name;
    co.opts = opts;
    std::shared_ptr<hcq::Program> prog;
    try {
      auto ck = codegen::compile(ast, t, co);
      if (ck->kernel.params.size() != args.size()) return std::nullopt;
      for (size_t i = 0; i < args.size(); ++i)
        if (ck->kernel.params[i].name != args[i].param) return std::nullopt;  // the arguments must bind the same way
      prog = dev.load(ck);
    } catch (const std::exception&) { return std::nullopt; }
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
      for (Written& w : written) dev.copy_in(w.scratch, 0, w.initial);
      // The device's own timestamps around the kernel, where no profiler of the caller's is attached;
      // else the host's clock around the submission.
      auto prof = dev.profiler() ? nullptr : std::make_shared<hcq::Profiler>();
      if (prof) dev.set_profiler(prof);
      auto q = dev.compute_queue();
      uint64_t tl = dev.next_timeline();
      auto t0 = std::chrono::steady_clock::now();
      q->wait(dev.timeline(), tl - 1).memory_barrier().exec(*prog, vals).memory_barrier().signal(dev.timeline(), tl);
      q->submit();
      dev.synchronize();
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (prof) {
        dev.set_profiler(nullptr);
        auto ev = prof->events();
        if (!ev.empty() && ev.back().end_ns > ev.back().start_ns) s = static_cast<double>(ev.back().end_ns - ev.back().start_ns) * 1e-9;
      }
      best = std::min(best, s);
      if (best > give_up) break;  // a slow outlier: no more runs
    }
    if (out) {
      out->clear();
      for (Written& w : written) {
        out->emplace_back(w.initial.size());
        dev.copy_out(out->back(), w.scratch, 0);
      }
    }
    return best;
  };
  double best_seen = 1e30;
  codegen::opt::BeamOptions bo;
  bo.width = beam_width();
  bo.name = name;
  bo.progress = [&](int round, size_t timed, const std::vector<codegen::opt::Opt>& opts, double s) {
    std::fprintf(stderr, "beam %s on %s: round %d, %zu candidates, round's best %.1f us with %s\n", name.c_str(), dev.name().c_str(), round, timed,
                 s * 1e6, codegen::opt::opts_text(opts).c_str());
  };
  auto measure = [&](const std::vector<codegen::opt::Opt>& opts) -> std::optional<double> {
    if (opts.empty()) {
      auto s = run(opts, 3, 1e30, &want);
      if (s) best_seen = *s;
      return s;
    }
    std::vector<std::vector<uint8_t>> got;
    auto s = run(opts, 3, 3 * best_seen, &got);
    if (!s) return s;
    for (size_t i = 0; i < written.size(); ++i)
      if (!close_enough(want[i], got[i], written[i].dtype)) return std::nullopt;  // a wrong result
    best_seen = std::min(best_seen, *s);
    return s;
  };
  std::map<std::string, double> times;  // by actions
  auto counted = [&](const std::vector<codegen::opt::Opt>& o) {
    auto s = measure(o);
    if (s) times[codegen::opt::opts_text(o)] = *s;
    return s;
  };
  std::vector<codegen::opt::Opt> opts = codegen::opt::beam_search(ast, t, bo, counted);
  std::fprintf(stderr, "beam %s on %s: %s, %.1f us (as written %.1f us), %zu candidates timed\n", name.c_str(), dev.name().c_str(),
               codegen::opt::opts_text(opts).c_str(), times[codegen::opt::opts_text(opts)] * 1e6, times["none"] * 1e6, times.size() - 1);

  std::string key = beam_key(dev, ast);
  std::lock_guard lock(g_mu);
  ++g_stats.searches;
  g_found[key] = opts;
  codegen::DiskCache(codegen::cache_dir_from_env()).put(key, {{"opts", codegen::opt::opts_text(opts)}, {"kernel", ir::print(ast)}});
  return opts;
}

}  // namespace ugpu::tensor
