// The pass pipeline (codegen/passes.h) and the facts a launcher needs about the result.
#include <algorithm>
#include <cctype>
#include <map>

#include "codegen/kernel.h"
#include "codegen/passes.h"
#include "common/error.h"
#include "ir/alu.h"
#include "ir/rewrite.h"
#include "ir/symbolic.h"
#include "ir/text.h"
#include "ir/verify.h"

namespace ugpu::codegen {
using namespace ir;
namespace {

void check_supported(const UOp& sink) {
  if (sink.op() != Op::SINK) throw Error("a kernel is a SINK over its stores, got " + to_inline(sink, 100));
  verify_or_throw(sink);
  // The TC action (codegen/opt/tc.cpp) is the one source of vectors in kernel input: a tensor core's
  // fragments (VECTORIZE), its WMMA, the REDUCE over it and the GEPs of the result.
  bool wmma = false;
  for (const UOp& u : sink.toposort()) wmma |= u.op() == Op::WMMA;
  for (const UOp& u : sink.toposort()) {
    if (wmma && (u.op() == Op::VECTORIZE || u.op() == Op::GEP || u.op() == Op::WMMA || u.op() == Op::REDUCE)) continue;
    if (is_tensor_op(u.op()))
      throw Error(std::string(op_name(u.op())) +
                  " is a tensor-level op; kernels index buffers with INDEX and reduce over RANGEs with REDUCE: " + to_inline(u, 100));
    if (u.op() == Op::VECTORIZE || u.op() == Op::GEP || u.dtype().count != 1)
      throw Error("kernels are written with scalar values (" + u.dtype().name() +
                  "); codegen makes vector accesses itself from UPCAST axes: " + to_inline(u, 100));
    if (u.op() == Op::IF || u.op() == Op::ENDIF) throw Error("IF/ENDIF are not part of kernel input: put the condition in the INDEX as a gate");
    ScalarType s = u.dtype().scalar;
    if (s == ScalarType::FP8E4M3 || s == ScalarType::FP8E5M2) throw Error("fp8 values are not supported by codegen yet: " + to_inline(u, 100));
  }
}

std::vector<Param> collect_params(const UOp& sink) {
  std::map<int64_t, Param> bufs;
  std::map<std::string, Param> vars;
  for (const UOp& u : sink.toposort()) {
    if (u.op() == Op::DEFINE_GLOBAL) {
      int64_t slot = u.arg_as<int64_t>();
      Param p;
      p.kind = Param::Kind::Buffer, p.slot = slot, p.dtype = u.dtype(), p.name = "data" + std::to_string(slot);
      auto [it, fresh] = bufs.try_emplace(slot, p);
      if (!fresh && it->second.dtype != u.dtype())
        throw Error("buffer slot " + std::to_string(slot) + " is declared twice, as " + it->second.dtype.name() + " and " + u.dtype().name());
      it->second.node = u;
    } else if (u.op() == Op::DEFINE_VAR) {
      const VarArg& v = u.arg_as<VarArg>();
      Param p;
      p.kind = Param::Kind::Var, p.dtype = u.dtype(), p.name = v.name, p.min = v.min, p.max = v.max;
      auto [it, fresh] = vars.try_emplace(v.name, p);
      if (!fresh && (it->second.min != v.min || it->second.max != v.max || it->second.dtype != u.dtype()))
        throw Error("variable '" + v.name + "' is declared twice with different bounds or dtypes");
      it->second.node = u;
    }
  }
  // Which buffers are read and written: follow each LOAD/STORE's pointer back to its DEFINE_GLOBAL.
  for (const UOp& u : sink.toposort()) {
    if (u.op() != Op::LOAD && u.op() != Op::STORE) continue;
    UOp b = buffer_of(u.src(0));
    if (b.op() != Op::DEFINE_GLOBAL) continue;
    Param& p = bufs.at(b.arg_as<int64_t>());
    (u.op() == Op::LOAD ? p.read : p.written) = true;
  }
  std::vector<Param> out;
  for (auto& [_, p] : bufs) out.push_back(p);
  for (auto& [_, p] : vars) out.push_back(p);
  return out;
}

}  // namespace

std::string sanitize_kernel_name(const std::string& name) {
  std::string s;
  for (char c : name) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "k_" + s;
  return s;
}

LoweredKernel lower(const UOp& kernel, const Target& t, const std::string& name, bool fuse_multiply_add) {
  check_supported(kernel);
  LoweredKernel k;
  k.name = sanitize_kernel_name(name);
  UOp s = lower_group_reduce(kernel);
  s = move_gates(s);
  s = expand(s);
  s = add_gpudims(s, t, k.global_size, k.local_size);
  s = graph_rewrite(s, symbolic());
  s = vectorize_memory(s, t);
  s = lower_reduce(s, fuse_multiply_add);
  s = decompose(s, t);
  s = lower_index_dtype(s);
  s = lower_divmod(s);
  k.sink = s;
  k.linear = linearize(s);
  k.params = collect_params(s);
  for (const UOp& u : s.toposort())
    if (u.op() == Op::DEFINE_LOCAL) {
      int64_t bytes = u.arg_as<Ints>()[1] * u.dtype().itemsize();
      k.shared_bytes += (bytes + 15) / 16 * 16;
    }
  if (t.gpu() && k.shared_bytes > t.max_shared_bytes)
    throw Error("the kernel needs " + std::to_string(k.shared_bytes) + " bytes of workgroup memory; " + std::string(t.name) + " has " +
                std::to_string(t.max_shared_bytes));
  return k;
}

LaunchDims launch_dims(const LoweredKernel& k, const std::vector<int64_t>& var_values) {
  std::unordered_map<std::string, int64_t> by_name;
  size_t vi = 0;
  for (const Param& p : k.params)
    if (p.kind == Param::Kind::Var) {
      if (vi >= var_values.size()) throw Error("kernel " + k.name + " needs a value for variable '" + p.name + "'");
      int64_t v = var_values[vi++];
      if (v < p.min || v > p.max)
        throw Error("variable '" + p.name + "' = " + std::to_string(v) + " is outside its declared bounds [" + std::to_string(p.min) + ", " +
                    std::to_string(p.max) + "]");
      by_name[p.name] = v;
    }
  LaunchDims d;
  for (int i = 0; i < 3; ++i)
    for (auto [expr, out] : {std::pair{k.global_size[i], &d.global[i]}, std::pair{k.local_size[i], &d.local[i]}}) {
      std::unordered_map<UOp, Scalar, UOpHash> env;
      for (const UOp& u : expr.toposort())
        if (u.op() == Op::DEFINE_VAR) env[u] = by_name.at(u.arg_as<VarArg>().name);
      auto v = evaluate(expr, env);
      if (!v) throw Error("internal: launch size of kernel " + k.name + " cannot be evaluated");
      *out = std::get<int64_t>(*v);
    }
  return d;
}

}  // namespace ugpu::codegen

namespace ugpu::codegen {

std::string format_linear(const LoweredKernel& k) {
  std::unordered_map<const void*, size_t> at;
  std::string out;
  int depth = 0;
  for (size_t i = 0; i < k.linear.size(); ++i) {
    const UOp& u = k.linear[i];
    at[u.get()] = i;
    if (u.op() == Op::END) --depth;
    std::string line = std::to_string(i);
    line.insert(0, 5 - std::min<size_t>(line.size(), 5), ' ');
    line += ": " + std::string(2 * std::max(depth, 0), ' ') + std::string(op_name(u.op()));
    if (!u.dtype().is_void()) line += ":" + u.dtype().name();
    if (!u.src().empty()) {
      line += "(";
      for (size_t j = 0; j < u.src().size(); ++j) {
        const UOp& s = u.src(j);
        auto it = at.find(s.get());
        line += (j ? ", " : "") + (it != at.end() ? "%" + std::to_string(it->second) : to_inline(s, 60));
      }
      line += ")";
    }
    if (!std::holds_alternative<std::monostate>(u.arg()) && !u.is_const()) line += " {" + arg_text(u.arg()) + "}";
    if (u.is_const()) line += " " + to_inline(u, 40);
    out += line + "\n";
    if (u.op() == Op::RANGE) ++depth;
  }
  return out;
}

}  // namespace ugpu::codegen
