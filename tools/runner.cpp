#include "tools/runner.h"

#include <algorithm>
#include <cstring>
#include <random>

#include "codegen/compiler.h"
#include "drivers/devices.h"
#include "ir/text.h"

namespace ugpu::tools {

namespace {
constexpr int64_t kMaxElements = int64_t{1} << 28;  // per buffer: 2^28 scalars (1 GiB of float)
}  // namespace

std::vector<HostBuffer> make_buffers(const ir::UOp& kernel, uint64_t seed, const std::map<int64_t, int64_t>& sizes) {
  std::map<int64_t, HostBuffer> bufs;
  std::map<int64_t, int64_t> extent;         // elements of the buffer's own type (a vector counts once)
  std::map<int64_t, int64_t> lanes;          // scalars per element
  std::map<int64_t, std::string> unbounded;  // an index whose bounds do not size the buffer
  for (const ir::UOp& u : kernel.toposort()) {
    if (u.op() == ir::Op::DEFINE_GLOBAL) {
      const int64_t slot = u.arg_as<int64_t>();
      const ir::DType base = u.dtype().base();
      if (base.is_void() || base.itemsize() == 0)
        throw Error("buffer " + std::to_string(slot) + " is " + u.dtype().name() + ": ugpu run fills buffers of a value type only");
      HostBuffer& b = bufs[slot];
      b.slot = slot, b.dtype = base.element();
      lanes[slot] = base.count;
      extent.try_emplace(slot, 1);
    }
    if (u.op() == ir::Op::INDEX && u.src(0).op() == ir::Op::DEFINE_GLOBAL) {
      const int64_t slot = u.src(0).arg_as<int64_t>();
      ir::UOp idx = u.src(1);
      // A gated index (WHERE(gate, i, INVALID)) is accessed only where its gate holds, which its
      // bounds do not see: it is trusted there, and its largest value still sizes the buffer.
      const bool gated = idx.op() == ir::Op::WHERE && idx.src(2).op() == ir::Op::INVALID;
      if (gated) idx = idx.src(1);
      if (!gated && idx.vmin() < 0)
        throw Error("buffer " + std::to_string(slot) + ": the index " + ir::to_inline(idx, 120) + " can be negative (down to " +
                    std::to_string(idx.vmin()) + "), so the kernel could access memory before the buffer; ugpu run refuses it");
      int64_t& e = extent[slot];
      if (idx.vmax() >= kMaxElements) unbounded.try_emplace(slot, ir::to_inline(idx, 120) + " (up to " + std::to_string(idx.vmax()) + ")");
      else e = std::max(e, idx.vmax() + 1);
    }
    if (u.op() == ir::Op::STORE && u.src(0).op() == ir::Op::INDEX && u.src(0).src(0).op() == ir::Op::DEFINE_GLOBAL)
      bufs[u.src(0).src(0).arg_as<int64_t>()].written = true;
  }
  for (const auto& [slot, n] : sizes)
    if (!bufs.count(slot)) {
      std::string have;
      for (const auto& [s, b] : bufs) have += (have.empty() ? "" : ", ") + std::to_string(s);
      throw Error("--size " + std::to_string(slot) + "=" + std::to_string(n) + ": the kernel has no buffer " + std::to_string(slot) +
                  " (its buffers: " + (have.empty() ? "none" : have) + ")");
    }
  std::vector<HostBuffer> out;
  std::mt19937_64 rng(seed);
  for (auto& [slot, b] : bufs) {
    auto given = sizes.find(slot);
    if (given == sizes.end() && unbounded.count(slot))
      throw Error("buffer " + std::to_string(slot) + " cannot be sized from its index " + unbounded[slot] + ": give its element count with --size " +
                  std::to_string(slot) + "=ELEMENTS (and variables that keep the index inside it)");
    const int64_t n = given != sizes.end() ? given->second : extent[slot];
    if (n < 1 || n > kMaxElements / lanes[slot])
      throw Error("buffer " + std::to_string(slot) + " would need " + std::to_string(n) + " elements; ugpu run fills at most " +
                  std::to_string(kMaxElements / lanes[slot]) + " (give a smaller size with --size " + std::to_string(slot) + "=ELEMENTS)");
    const size_t item = static_cast<size_t>(b.dtype.itemsize()), scalars = static_cast<size_t>(n * lanes[slot]);
    b.bytes.assign(scalars * item, 0);
    for (size_t i = 0; i < scalars; ++i) {
      uint8_t* p = b.bytes.data() + i * item;
      if (b.dtype.is_float()) {
        double v = static_cast<double>(rng() % 2000001) / 1e6 - 1.0;
        if (item == 8) std::memcpy(p, &v, 8);
        else {
          uint32_t bits = ir::float_to_bits(v, b.dtype);
          std::memcpy(p, &bits, item);
        }
      } else {
        uint64_t v = b.dtype.is_bool() ? rng() % 2 : rng() % 100;  // a bool is stored as 0 or 1
        std::memcpy(p, &v, item);                                  // little-endian: the low bytes
      }
    }
    out.push_back(std::move(b));
  }
  return out;
}

double run_kernel(hcq::Device& dev, const ir::UOp& kernel, const std::string& name, std::vector<HostBuffer>& bufs,
                  const std::map<std::string, int64_t>& vars, const codegen::CompileOptions& opts) {
  codegen::CompileOptions o = opts;
  o.name = name;
  auto ck = codegen::compile(kernel, codegen::find_target(dev.target()), o);
  std::string have;  // the kernel's variables, for the message
  for (const codegen::Param& p : ck->kernel.params)
    if (p.kind == codegen::Param::Kind::Var) have += (have.empty() ? "" : ", ") + p.name;
  for (const auto& [var, value] : vars) {
    bool found = std::any_of(ck->kernel.params.begin(), ck->kernel.params.end(),
                             [&](const codegen::Param& p) { return p.kind == codegen::Param::Kind::Var && p.name == var; });
    if (!found)
      throw Error("--var " + var + "=" + std::to_string(value) + ": the kernel has no variable '" + var +
                  "' (its variables: " + (have.empty() ? "none" : have) + ")");
  }
  auto prog = dev.load(ck);
  std::vector<hcq::Buffer> dbufs;
  std::vector<hcq::Val> args;
  for (const codegen::Param& p : ck->kernel.params) {
    if (p.kind == codegen::Param::Kind::Buffer) {
      auto it = std::find_if(bufs.begin(), bufs.end(), [&](const HostBuffer& b) { return b.slot == p.slot; });
      if (it == bufs.end()) throw Error("kernel " + name + ": no host buffer for slot " + std::to_string(p.slot));
      hcq::Buffer& d = dbufs.emplace_back(dev.alloc(it->bytes.size()));
      dev.copy_in(d, 0, it->bytes);
      args.push_back(d.va);
    } else {
      auto v = vars.find(p.name);
      int64_t value = v == vars.end() ? p.min : v->second;
      if (value < p.min || value > p.max)
        throw Error("variable " + p.name + " = " + std::to_string(value) + " is outside its bounds [" + std::to_string(p.min) + ", " +
                    std::to_string(p.max) + "]");
      args.push_back(static_cast<uint64_t>(value));
    }
  }
  auto t0 = dev.new_signal(), t1 = dev.new_signal();
  uint64_t v = dev.next_timeline();
  auto q = dev.compute_queue();
  q->wait(dev.timeline(), v - 1).timestamp(*t0).exec(*prog, args).memory_barrier().timestamp(*t1).signal(dev.timeline(), v);
  q->submit();
  dev.synchronize();
  size_t bi = 0;
  for (const codegen::Param& p : ck->kernel.params)
    if (p.kind == codegen::Param::Kind::Buffer) {
      auto it = std::find_if(bufs.begin(), bufs.end(), [&](const HostBuffer& b) { return b.slot == p.slot; });
      dev.copy_out(it->bytes, dbufs[bi++], 0);
    }
  return static_cast<double>(dev.host_time_ns(t1->timestamp()) - dev.host_time_ns(t0->timestamp())) / 1e6;
}

uint64_t fnv1a(const std::vector<uint8_t>& bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint8_t b : bytes) h = (h ^ b) * 0x100000001b3ull;
  return h;
}

}  // namespace ugpu::tools
