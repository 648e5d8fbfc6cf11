#include "tools/runner.h"

#include <algorithm>
#include <cstring>
#include <random>

#include "codegen/compiler.h"
#include "drivers/devices.h"

namespace ugpu::tools {

std::vector<HostBuffer> make_buffers(const ir::UOp& kernel, uint64_t seed, const std::map<int64_t, int64_t>& sizes) {
  std::map<int64_t, HostBuffer> bufs;
  std::map<int64_t, int64_t> extent;  // elements
  for (const ir::UOp& u : kernel.toposort()) {
    if (u.op() == ir::Op::DEFINE_GLOBAL) {
      HostBuffer& b = bufs[u.arg_as<int64_t>()];
      b.slot = u.arg_as<int64_t>(), b.dtype = u.dtype().base();
      extent.try_emplace(b.slot, 1);
    }
    if (u.op() == ir::Op::INDEX && u.src(0).op() == ir::Op::DEFINE_GLOBAL) {
      ir::UOp idx = u.src(1);
      if (idx.op() == ir::Op::WHERE && idx.src(2).op() == ir::Op::INVALID) idx = idx.src(1);
      int64_t& e = extent[u.src(0).arg_as<int64_t>()];
      e = std::max(e, idx.vmax() + 1);
    }
    if (u.op() == ir::Op::STORE && u.src(0).op() == ir::Op::INDEX && u.src(0).src(0).op() == ir::Op::DEFINE_GLOBAL)
      bufs[u.src(0).src(0).arg_as<int64_t>()].written = true;
  }
  std::vector<HostBuffer> out;
  std::mt19937_64 rng(seed);
  for (auto& [slot, b] : bufs) {
    auto given = sizes.find(slot);
    int64_t n = given != sizes.end() ? given->second : extent[slot];
    if (n > (int64_t{1} << 28) || n < 1)
      throw Error("buffer " + std::to_string(slot) + " would need " + std::to_string(n) + " elements (from the bounds of its index" +
                  " expressions, which a gate on loaded values does not narrow); give its size with --size " + std::to_string(slot) + "=ELEMENTS");
    size_t item = static_cast<size_t>(b.dtype.itemsize());
    b.bytes.assign(static_cast<size_t>(n) * item, 0);
    for (int64_t i = 0; i < n; ++i) {
      uint8_t* p = b.bytes.data() + i * item;
      if (b.dtype.is_float()) {
        double v = static_cast<double>(rng() % 2000001) / 1e6 - 1.0;
        if (item == 8) std::memcpy(p, &v, 8);
        else {
          uint32_t bits = ir::float_to_bits(v, b.dtype);
          std::memcpy(p, &bits, item);
        }
      } else {
        uint64_t v = rng() % 100;
        std::memcpy(p, &v, item);  // little-endian: the low bytes
      }
    }
    out.push_back(std::move(b));
  }
  return out;
}

double run_kernel(hcq::Device& dev, const ir::UOp& kernel, const std::string& name, std::vector<HostBuffer>& bufs,
                  const std::map<std::string, int64_t>& vars) {
  codegen::CompileOptions o;
  o.name = name;
  auto ck = codegen::compile(kernel, codegen::find_target(dev.target()), o);
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
