#include "codegen/compiler.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "codegen/backend.h"
#include "codegen/builtin_kernels.h"
#include "codegen/cache.h"
#include "common/error.h"
#include "ir/sha256.h"
#include "ir/text.h"

namespace ugpu::codegen {
namespace {

// Bump when the meaning of cached artifacts changes without the IR text changing.
constexpr const char* kCacheFormat = "ugpu-codegen-2";

std::mutex g_mu;
std::unordered_map<std::string, std::shared_ptr<const CompiledKernel>> g_memory;
CacheStats g_stats;

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::string memory_key(const ir::UOp& kernel, const Target& t, const CompileOptions& o) {
  return kernel.key_hex() + "|" + std::string(t.name) + "|" + o.name + "|" + std::to_string(o.opt_level) + "|" + (o.cubin ? "1" : "0") + "|" +
         (o.heuristic ? "h" : "-") + "|" + opt::opts_text(o.opts);
}

}  // namespace

void compile_in_parallel(const Target& t, const std::vector<std::pair<ir::UOp, CompileOptions>>& jobs) {
  size_t workers = std::min<size_t>(jobs.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (size_t w = 0; w < workers; ++w)
    pool.emplace_back([&] {
      for (size_t i; (i = next++) < jobs.size();) try {
          compile(jobs[i].first, t, jobs[i].second);
        } catch (const std::exception&) {}
    });
  for (std::thread& th : pool) th.join();
}

bool in_memory_cache(const ir::UOp& kernel, const Target& t, const CompileOptions& o) {
  if (!o.cache) return false;
  std::string mkey = memory_key(kernel, t, o);
  std::lock_guard<std::mutex> lock(g_mu);
  return g_memory.count(mkey) > 0;
}

std::shared_ptr<const CompiledKernel> compile(const ir::UOp& kernel, const Target& t, const CompileOptions& o) {
  std::string mkey = memory_key(kernel, t, o);
  if (o.cache) {
    std::lock_guard<std::mutex> lock(g_mu);
    if (auto it = g_memory.find(mkey); it != g_memory.end()) {
      ++g_stats.memory_hits;
      return it->second;
    }
  }
  auto ck = std::make_shared<CompiledKernel>();
  ck->target = &t;
  auto t0 = std::chrono::steady_clock::now();
  ck->opts = !o.opts.empty() ? o.opts : o.heuristic ? opt::heuristic_opts(kernel, t) : std::vector<opt::Opt>{};
  ir::UOp shaped = opt::apply_opts(kernel, ck->opts, t);
  ck->opt_ms = ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  ck->kernel = lower(shaped, t, o.name, !ck->opts.empty());
  ck->lower_ms = ms_since(t0);
  const Backend& backend = backend_for(t);
  t0 = std::chrono::steady_clock::now();
  ck->source = backend.render(ck->kernel, t);
  ck->render_ms = ms_since(t0);

  ir::Sha256 h;
  for (const std::string& part :
       {std::string(kCacheFormat), std::string(backend.name()), ck->source, std::string(t.name), backend.toolchain_key(t, o)}) {
    h.update(part);
    h.update(std::string_view("\0", 1));
  }
  std::string dkey = ir::hex(h.finish());
  const DiskCache& disk = DiskCache::global();
  std::optional<CacheEntry> hit = o.cache ? disk.get(dkey) : std::nullopt;
  if (hit) {
    ck->ptx = (*hit)["ptx"];
    ck->binary.assign((*hit)["binary"].begin(), (*hit)["binary"].end());
    ck->note = (*hit)["note"];
    ck->disk_hit = true;
  } else {
    t0 = std::chrono::steady_clock::now();
    Backend::Output out = backend.compile(ck->source, t, o);
    ck->binary = std::move(out.binary), ck->ptx = std::move(out.ptx), ck->note = std::move(out.note);
    ck->backend_ms = ms_since(t0);
    if (o.cache) disk.put(dkey, {{"ptx", ck->ptx}, {"binary", std::string(ck->binary.begin(), ck->binary.end())}, {"note", ck->note}});
  }
  if (t.arch == Arch::AMDGPU) {
    ElfImage img = link_elf(ck->binary, ElfMachine::AMDGPU, 0, "AMDGPU code object");
    ck->amd = read_amd_kernel(img, ck->kernel.name);
  } else if (t.arch == Arch::NVPTX && !ck->binary.empty()) {
    ck->cubin = read_cubin(ck->binary, ck->kernel.name);
  } else if (t.arch == Arch::IR3) {
    ck->ir3 = read_ir3_object(ck->binary);
  }
  std::lock_guard<std::mutex> lock(g_mu);
  ++(ck->disk_hit ? g_stats.disk_hits : g_stats.compiles);
  if (o.cache) g_memory[mkey] = ck;
  return ck;
}

std::shared_ptr<const CompiledKernel> byte_copy_kernel(const Target& target) {
  CompileOptions o;
  o.name = "ugpu_copy";
  return compile(ir::parse(kByteCopyKernel), target, o);
}

std::string disassembly(const CompiledKernel& k) { return backend_for(*k.target).disassemble(*k.target, k.binary, k.ptx); }

CacheStats cache_stats() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_stats;
}

void clear_memory_cache() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_memory.clear();
}

}  // namespace ugpu::codegen
