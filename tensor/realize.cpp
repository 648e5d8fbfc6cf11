// Running tensor graphs: devices, buffers, realize (schedule -> compile -> one HCQ submission), and
// moving values between the host and devices (docs/tensor.md).
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <ostream>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

#include "codegen/compiler.h"
#include "common/error.h"
#include "drivers/devices.h"
#include "hcq/profiler.h"
#include "ir/text.h"
#include "schedule/schedule.h"
#include "tensor/beam.h"
#include "tensor/lazy.h"

namespace ugpu::tensor {
using ir::UOp;

// ---- devices and buffers -------------------------------------------------------------------------

namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<hcq::Device>> devices;
  std::string default_name;
  std::unordered_map<int64_t, std::weak_ptr<BufferState>> buffers;
  std::map<std::pair<hcq::Device*, const codegen::CompiledKernel*>,
           std::pair<std::shared_ptr<const codegen::CompiledKernel>, std::shared_ptr<hcq::Program>>>
      programs;
  int64_t next_id = 1;
  RealizeStats last;
  size_t kernels_run = 0;
  std::atomic<int> debug{-1};
};

// Never destroyed: tensors in static storage may release buffers at any point of the exit.
Registry& reg() {
  static Registry* r = new Registry();
  return *r;
}

// At exit the devices are closed (their threads stopped) before the statics they use are destroyed:
// registered after a device opened, this runs before the destructors of what opening it created.
void close_devices() {
  Registry& r = reg();
  std::map<std::string, std::unique_ptr<hcq::Device>> devices;
  {
    std::lock_guard lock(r.mu);
    r.programs.clear();
    devices.swap(r.devices);
  }
  devices.clear();
}

}  // namespace

std::string default_device() {
  Registry& r = reg();
  std::lock_guard lock(r.mu);
  if (r.default_name.empty()) r.default_name = drivers::default_device().name;
  return r.default_name;
}

hcq::Device& device(const std::string& name) {
  std::string n = name.empty() ? default_device() : name;
  Registry& r = reg();
  std::lock_guard lock(r.mu);
  auto it = r.devices.find(n);
  if (it == r.devices.end()) {
    it = r.devices.emplace(n, drivers::open_device(n)).first;
    std::atexit(close_devices);
  }
  return *it->second;
}

int64_t next_buffer_id() {
  Registry& r = reg();
  std::lock_guard lock(r.mu);
  return r.next_id++;
}

std::shared_ptr<BufferState> new_buffer(const std::string& device, DType dtype, int64_t count, hcq::Buffer buf, int64_t id) {
  auto s = std::make_shared<BufferState>();
  s->id = id < 0 ? next_buffer_id() : id;
  s->device = device;
  s->buf = std::move(buf);
  s->dtype = dtype;
  s->count = count;
  Registry& r = reg();
  std::lock_guard lock(r.mu);
  r.buffers[s->id] = s;
  return s;
}

BufferState::~BufferState() {
  Registry& r = reg();
  std::lock_guard lock(r.mu);
  r.buffers.erase(id);
}

std::shared_ptr<BufferState> find_buffer(int64_t id) {
  Registry& r = reg();
  std::lock_guard lock(r.mu);
  auto it = r.buffers.find(id);
  return it == r.buffers.end() ? nullptr : it->second.lock();
}

void set_debug(int level) { reg().debug = level; }
int debug_level() {
  Registry& r = reg();
  if (r.debug < 0) {
    const char* e = std::getenv("UGPU_DEBUG");
    r.debug = e ? std::atoi(e) : 0;
  }
  return r.debug.load();
}
namespace {
std::atomic<int> g_optimize{-1};
}
bool optimize_kernels() {
  if (g_optimize < 0) {
    const char* e = std::getenv("UGPU_OPT");
    std::string_view v = e ? e : "";
    if (!v.empty() && v != "0" && v != "1")
      throw Error("UGPU_OPT takes 0 (kernels as written) or 1 (optimized, the default), not '" + std::string(v) + "'");
    g_optimize = v == "0" ? 0 : 1;
  }
  return g_optimize == 1;
}
void set_optimize_kernels(bool on) { g_optimize = on ? 1 : 0; }
void reread_optimize_kernels() { g_optimize = -1; }
const RealizeStats& last_realize() { return reg().last; }
size_t kernels_run() { return reg().kernels_run; }

namespace {

hcq::Buffer alloc_or_explain(hcq::Device& dev, size_t bytes, const std::string& what) {
  try {
    return dev.alloc(std::max<size_t>(bytes, 1));
  } catch (const Error& e) {
    hcq::MemoryStats m = dev.memory_stats();
    throw Error("out of device memory on " + dev.name() + ": " + what + " needs " + std::to_string(bytes) + " bytes; " + std::to_string(m.heap_used) +
                " bytes of heap blocks and " + std::to_string(m.chunk_bytes) + " bytes of driver mappings are in use (" + e.what() + ")");
  }
}

codegen::CompileOptions compile_options(const schedule::ScheduledKernel& k) {
  codegen::CompileOptions o;
  o.name = k.name;
  o.heuristic = optimize_kernels();
  return o;
}

// The kernels of a schedule that are not compiled yet compile on several threads at once (LLVM takes
// milliseconds per kernel); program_for() then finds them in the compile cache, in order. A kernel
// that fails here fails again there, with its error.
void compile_ahead(hcq::Device& dev, const std::vector<schedule::ScheduledKernel>& ks) {
  const codegen::Target& t = codegen::find_target(dev.target());
  std::vector<std::pair<ir::UOp, codegen::CompileOptions>> todo;
  for (const schedule::ScheduledKernel& k : ks)
    if (codegen::CompileOptions o = compile_options(k); !codegen::in_memory_cache(k.ast, t, o)) todo.emplace_back(k.ast, o);
  if (todo.size() >= 2) codegen::compile_in_parallel(t, todo);
}

std::shared_ptr<hcq::Program> program_for(hcq::Device& dev, const schedule::ScheduledKernel& k, const codegen::CompileOptions& o,
                                          std::shared_ptr<const codegen::CompiledKernel>* compiled) {
  auto ck = codegen::compile(k.ast, codegen::find_target(dev.target()), o);
  *compiled = ck;
  Registry& r = reg();
  {
    std::lock_guard lock(r.mu);
    auto it = r.programs.find({&dev, ck.get()});
    if (it != r.programs.end()) return it->second.second;
  }
  auto p = dev.load(ck);
  std::lock_guard lock(r.mu);
  r.programs[{&dev, ck.get()}] = {ck, p};
  return p;
}

thread_local Capture* t_capture = nullptr;

// Variables bound in the graphs of `ts` (name -> value); two values for one name is an error.
std::map<std::string, int64_t> bindings(const std::vector<const LazyNode*>& roots) {
  std::map<std::string, int64_t> out;
  std::vector<const LazyNode*> stack(roots.begin(), roots.end());
  std::unordered_set<const LazyNode*> seen;
  while (!stack.empty()) {
    const LazyNode* n = stack.back();
    stack.pop_back();
    if (!seen.insert(n).second) continue;
    if (!n->var.empty()) {
      auto [it, fresh] = out.try_emplace(n->var, n->value);
      if (!fresh && it->second != n->value)
        throw Error("variable '" + n->var + "' is bound to both " + std::to_string(it->second) + " and " + std::to_string(n->value) +
                    " in one realize");
    }
    for (const auto& s : n->srcs) stack.push_back(s.get());
  }
  return out;
}

hcq::Buffer view(const hcq::Buffer& b, int64_t offset, int64_t bytes) {
  hcq::Buffer v = b;
  v.va += static_cast<uint64_t>(offset);
  v.size = static_cast<size_t>(bytes);
  if (v.host) v.host = static_cast<uint8_t*>(v.host) + offset;
  return v;
}

}  // namespace

void set_capture(Capture* c) { t_capture = c; }

struct Realizer {
  static void run(std::span<Tensor> ts) {
    // One schedule per device (a graph never mixes devices: operations refuse to).
    std::map<std::string, std::vector<Tensor*>> by_device;
    for (Tensor& t : ts)
      if (!t.realized()) by_device[t.device()].push_back(&t);
    for (auto& [name, list] : by_device) run_on(name, list);
  }

  static void run_on(const std::string& dev_name, const std::vector<Tensor*>& ts) {
    hcq::Device& dev = device(dev_name);
    std::vector<UOp> roots;
    std::vector<const LazyNode*> nodes;
    for (Tensor* t : ts) roots.push_back(t->uop()), nodes.push_back(t->h_->node.get());
    std::map<std::string, int64_t> vars = bindings(nodes);
    auto t0 = std::chrono::steady_clock::now();
    schedule::Schedule s = schedule::make_schedule(roots, next_buffer_id);
    double schedule_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();

    // Memory: outputs get their own buffers, intermediates share one arena.
    std::unordered_map<int64_t, hcq::Buffer> mem;
    std::unordered_map<int64_t, std::shared_ptr<BufferState>> outputs;
    hcq::Buffer arena;
    if (s.arena_bytes > 0) arena = alloc_or_explain(dev, static_cast<size_t>(s.arena_bytes), "the intermediates of this realize");
    for (const schedule::NewBuffer& b : s.buffers) {
      int64_t bytes = b.count * b.dtype.itemsize();
      if (b.output) {
        auto st = new_buffer(
            dev_name, b.dtype, b.count,
            alloc_or_explain(dev, static_cast<size_t>(bytes), "a " + b.dtype.name() + " tensor of " + std::to_string(b.count) + " elements"), b.id);
        mem[b.id] = st->buf;
        outputs[b.id] = st;
      } else if (b.arena_offset >= 0) {
        mem[b.id] = view(arena, b.arena_offset, bytes);
        if (debug_level() >= 3) std::fprintf(stderr, "buffer %ld: arena +%ld, %ld bytes\n", long(b.id), long(b.arena_offset), long(bytes));
      }
    }
    std::vector<std::shared_ptr<BufferState>> inputs;  // kept until the work is submitted
    auto buffer_of = [&](int64_t id) -> const hcq::Buffer& {
      if (auto it = mem.find(id); it != mem.end()) return it->second;
      auto st = find_buffer(id);
      if (!st) throw Error("internal: buffer " + std::to_string(id) + " of a tensor graph is gone");
      if (st->device != dev_name) throw Error("a buffer on " + st->device + " was read by a kernel on " + dev_name);
      inputs.push_back(st);
      return mem[id] = st->buf;
    };

    int debug = debug_level();
    std::shared_ptr<hcq::Profiler> prof;
    if (debug >= 1 && !dev.profiler()) {
      prof = std::make_shared<hcq::Profiler>();
      dev.set_profiler(prof);
    }
    std::vector<std::string> names;
    std::vector<size_t> uops;
    std::vector<std::string> opt_texts;
    std::vector<std::shared_ptr<const codegen::CompiledKernel>> compiled;
    if (!s.kernels.empty()) {
      // Programs first: loading one may itself submit work (code uploads) on the timeline.
      std::vector<std::pair<std::shared_ptr<hcq::Program>, std::vector<hcq::Val>>> runs;
      auto submit_runs = [&] {
        if (runs.empty()) return;
        auto q = dev.compute_queue();
        uint64_t t = dev.next_timeline();
        q->wait(dev.timeline(), t - 1);
        for (auto& [prog, args] : runs) q->memory_barrier().exec(*prog, args);
        q->memory_barrier().signal(dev.timeline(), t);
        q->submit();
        runs.clear();
      };
      const bool beam = beam_width() > 0;
      if (!beam) compile_ahead(dev, s.kernels);
      for (const schedule::ScheduledKernel& k : s.kernels) {
        if (debug >= 2) std::fprintf(stderr, "kernel %s:\n%s", k.name.c_str(), ir::print(k.ast).c_str());
        codegen::CompileOptions o = compile_options(k);
        if (beam && !codegen::opt::hand_optimized(k.ast)) {
          std::optional<std::vector<codegen::opt::Opt>> found = cached_beam_opts(dev, k.ast);
          if (!found) {
            // The search runs the kernel on its real inputs: the kernels before it run first.
            submit_runs();
            dev.synchronize();
            codegen::CompileOptions plain;
            plain.name = k.name;
            auto pk = codegen::compile(k.ast, codegen::find_target(dev.target()), plain);
            std::vector<KernelArg> bargs;
            for (const codegen::Param& p : pk->kernel.params) {
              KernelArg a;
              a.param = p.name;
              if (p.kind == codegen::Param::Kind::Buffer) {
                a.buffer = &buffer_of(k.slots.at(static_cast<size_t>(p.slot)));
                a.written = p.written;
                a.dtype = p.dtype.element();
              } else if (auto v = vars.find(p.name); v != vars.end()) {
                a.value = static_cast<uint64_t>(v->second);
              }
              bargs.push_back(a);
            }
            found = search_beam_opts(dev, k.ast, k.name, bargs);
          }
          o.opts = *found;
          o.heuristic = false;  // none found faster: the kernel as written
        }
        std::shared_ptr<const codegen::CompiledKernel> ck;
        auto prog = program_for(dev, k, o, &ck);
        std::vector<hcq::Val> args;
        Capture::Kernel rec{&dev, prog, {}};
        for (const codegen::Param& p : ck->kernel.params) {
          if (p.kind == codegen::Param::Kind::Buffer) {
            int64_t id = k.slots.at(static_cast<size_t>(p.slot));
            args.push_back(buffer_of(id).va);
            rec.args.push_back({id, {}, 0, 0});
            if (t_capture) t_capture->buffers[id] = buffer_of(id);
            continue;
          }
          auto v = vars.find(p.name);
          if (v == vars.end()) throw Error("kernel " + k.name + " uses variable '" + p.name + "', which no tensor of this realize binds");
          if (v->second < p.min || v->second > p.max)
            throw Error("variable '" + p.name + "' = " + std::to_string(v->second) + " is outside its bounds [" + std::to_string(p.min) + ", " +
                        std::to_string(p.max) + "]");
          args.push_back(static_cast<uint64_t>(v->second));
          rec.args.push_back({-1, p.name, p.min, p.max});
        }
        if (t_capture) t_capture->kernels.push_back(rec);
        runs.emplace_back(std::move(prog), std::move(args));
        names.push_back(k.name);
        uops.push_back(k.uops);
        opt_texts.push_back(codegen::opt::opts_text(ck->opts));
        compiled.push_back(ck);
      }
      submit_runs();
    }
    if (prof) {
      dev.synchronize();
      dev.set_profiler(nullptr);
      // The kernels' events, in submission order: copies the realize timed are not kernels.
      auto ev = prof->events();
      std::erase_if(ev, [](const hcq::ProfileEvent& e) { return e.copy; });
      for (size_t i = 0; i < names.size(); ++i) {
        double us = i < ev.size() ? static_cast<double>(ev[i].end_ns - ev[i].start_ns) / 1000.0 : 0;
        std::fprintf(stderr, "%-6s %-28s %6zu uops %10.1f us   %s\n", dev_name.c_str(), names[i].c_str(), uops[i], us, opt_texts[i].c_str());
      }
    }

    Registry& r = reg();
    {
      std::lock_guard lock(r.mu);
      r.kernels_run += s.kernels.size();
      r.last = RealizeStats{s.kernels.size(), schedule_us, s.arena_bytes, s.unshared_bytes, s.output_bytes, names, compiled};
    }
    for (size_t i = 0; i < ts.size(); ++i) {
      auto n = std::make_shared<LazyNode>();
      n->uop = s.results[i];
      n->device = dev_name;
      int64_t id = schedule::view_buffer_id(s.results[i]);
      auto out = outputs.find(id);
      n->buffer = out != outputs.end() ? out->second : find_buffer(id);  // a root that was a buffer's view already
      if (!n->buffer) throw Error("internal: the buffer of a realized tensor is gone");
      const LazyNode& was = *ts[i]->h_->node;
      if (any_requires_grad() && !was.is_gradient && roots[i].op() != ir::Op::ASSIGN && reads_requires_grad(roots[i])) n->graph = ts[i]->h_->node;
      ts[i]->h_->node = std::move(n);
    }
  }
};

Tensor& Tensor::realize() {
  Realizer::run(std::span<Tensor>(this, 1));
  return *this;
}
void Tensor::realize(std::span<Tensor> tensors) { Realizer::run(tensors); }

// ---- host data ---------------------------------------------------------------------------------------

Tensor Tensor::from_bytes(std::span<const uint8_t> bytes, DType dtype, Shape shape, const std::string& device_name) {
  int64_t n = checked_numel(shape, "from");
  if (static_cast<int64_t>(bytes.size()) != n * dtype.itemsize())
    throw Error("from: " + std::to_string(bytes.size()) + " bytes of data for " + std::to_string(n) + " " + dtype.name() + " elements (" +
                std::to_string(n * dtype.itemsize()) + " bytes)");
  std::string dn = device_name.empty() ? default_device() : device_name;
  hcq::Device& dev = tensor::device(dn);
  auto st = new_buffer(dn, dtype, n, alloc_or_explain(dev, bytes.size(), "a " + dtype.name() + " tensor of " + std::to_string(n) + " elements"));
  if (!bytes.empty()) dev.copy_in(st->buf, 0, bytes);
  auto node = std::make_shared<LazyNode>();
  node->uop = schedule::buffer_view(st->id, dtype, shape);
  node->device = dn;
  node->buffer = st;
  return wrap(std::move(node));
}

namespace {
template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, bool>) return dtypes::bool_;
  else if constexpr (std::is_same_v<T, float>) return dtypes::float32;
  else if constexpr (std::is_same_v<T, double>) return dtypes::float64;
  else if constexpr (std::is_same_v<T, int8_t>) return dtypes::int8;
  else if constexpr (std::is_same_v<T, int16_t>) return dtypes::int16;
  else if constexpr (std::is_same_v<T, int32_t>) return dtypes::int32;
  else if constexpr (std::is_same_v<T, int64_t>) return dtypes::int64;
  else if constexpr (std::is_same_v<T, uint8_t>) return dtypes::uint8;
  else if constexpr (std::is_same_v<T, uint16_t>) return dtypes::uint16;
  else if constexpr (std::is_same_v<T, uint32_t>) return dtypes::uint32;
  else if constexpr (std::is_same_v<T, uint64_t>) return dtypes::uint64;
}
}  // namespace

template <class T>
Tensor Tensor::from(std::span<const T> data, Shape shape, const std::string& device) {
  return from_bytes(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(data.data()), data.size_bytes()), dtype_of<T>(), std::move(shape),
                    device);
}

std::vector<uint8_t> Tensor::to_bytes() const {
  Tensor t = *this;
  t.realize();
  const LazyNode& n = t.node();
  std::vector<uint8_t> out(static_cast<size_t>(t.numel() * t.dtype().itemsize()));
  if (out.empty()) return out;
  hcq::Device& dev = tensor::device(n.device);
  dev.synchronize();
  dev.copy_out(out, n.buffer->buf, 0);
  return out;
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  DType want = dtype_of<T>();
  if (want.itemsize() != dtype().itemsize() || (want.is_float() != dtype().is_float() && !dtype().is_bool()))
    throw Error("to_vector: the tensor holds " + dtype().name() + ", not " + want.name());
  std::vector<uint8_t> b = to_bytes();
  std::vector<T> out(b.size() / sizeof(T));
  if (!b.empty()) std::memcpy(out.data(), b.data(), b.size());
  return out;
}

#define UGPU_TENSOR_HOST_TYPE(T)                                                  \
  template Tensor Tensor::from<T>(std::span<const T>, Shape, const std::string&); \
  template std::vector<T> Tensor::to_vector<T>() const;
UGPU_TENSOR_HOST_TYPE(float)
UGPU_TENSOR_HOST_TYPE(double)
UGPU_TENSOR_HOST_TYPE(int8_t)
UGPU_TENSOR_HOST_TYPE(int16_t)
UGPU_TENSOR_HOST_TYPE(int32_t)
UGPU_TENSOR_HOST_TYPE(int64_t)
UGPU_TENSOR_HOST_TYPE(uint8_t)
UGPU_TENSOR_HOST_TYPE(uint16_t)
UGPU_TENSOR_HOST_TYPE(uint32_t)
UGPU_TENSOR_HOST_TYPE(uint64_t)
#undef UGPU_TENSOR_HOST_TYPE

Tensor Tensor::to(const std::string& target) const {
  std::string t = target.empty() ? default_device() : target;
  if (t == device()) return *this;
  return from_bytes(to_bytes(), dtype(), shape(), t);
}

double Tensor::item() const {
  if (numel() != 1) throw Error("item: the tensor has " + std::to_string(numel()) + " elements, not one");
  Tensor h = to("cpu");  // widened on the host: not every device has 64-bit types (an Adreno has none)
  Tensor f = dtype().is_float() ? h.cast(dtypes::float64) : h.cast(dtypes::int64);
  std::vector<uint8_t> b = f.to_bytes();
  if (f.dtype().is_float()) {
    double v;
    std::memcpy(&v, b.data(), 8);
    return v;
  }
  int64_t v;
  std::memcpy(&v, b.data(), 8);
  return static_cast<double>(v);
}

std::string Tensor::to_string(int64_t edge) const {
  std::vector<double> v;
  Tensor h = to("cpu");  // widened on the host: not every device has 64-bit types
  if (dtype().is_float()) {
    v = h.cast(dtypes::float64).to_vector<double>();
  } else if (dtype() == dtypes::uint64) {
    for (uint64_t x : h.to_vector<uint64_t>()) v.push_back(static_cast<double>(x));
  } else {
    for (int64_t x : h.cast(dtypes::int64).to_vector<int64_t>()) v.push_back(static_cast<double>(x));
  }
  const Shape& s = shape();
  std::string out = "Tensor(";
  // Prints the block at `offset` spanning axes [axis, rank).
  auto rec = [&](auto&& self, size_t axis, int64_t offset, int64_t stride) -> void {
    if (axis == s.size()) {
      char buf[40];
      double x = v[static_cast<size_t>(offset)];
      if (dtype().is_bool()) std::snprintf(buf, sizeof buf, "%s", x != 0 ? "true" : "false");
      else if (dtype().is_float()) std::snprintf(buf, sizeof buf, "%.6g", x);
      else std::snprintf(buf, sizeof buf, "%.0f", x);
      out += buf;
      return;
    }
    int64_t n = s[axis], inner = stride / std::max<int64_t>(n, 1);
    out += "[";
    for (int64_t i = 0; i < n; ++i) {
      if (n > 2 * edge && i == edge) {
        out += "..., ";
        i = n - edge;
      }
      self(self, axis + 1, offset + i * inner, inner);
      if (i + 1 < n) out += axis + 1 == s.size() ? ", " : ",\n" + std::string(8 + axis, ' ');
    }
    out += "]";
  };
  if (numel() == 0) out += "[]";
  else rec(rec, 0, 0, numel());
  std::string shape_s;
  for (size_t i = 0; i < s.size(); ++i) shape_s += (i ? ", " : "") + std::to_string(s[i]);
  return out + ", " + dtype().name() + ", shape [" + shape_s + "], on " + device() + ")";
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

}  // namespace ugpu::tensor
