#include "codegen/llvm/render.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <set>
#include <sstream>
#include <unordered_map>

#include "codegen/llvm/llvm.h"
#include "codegen/tensor_core.h"
#include "common/error.h"
#include "ir/text.h"

namespace ugpu::codegen {
using namespace ir;
namespace {

std::string hex64(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%016" PRIX64, v);
  return b;
}

std::string scalar_type(DType t) {
  switch (t.scalar) {
    case ScalarType::Bool: return "i1";
    case ScalarType::Int8:
    case ScalarType::UInt8: return "i8";
    case ScalarType::Int16:
    case ScalarType::UInt16: return "i16";
    case ScalarType::Int32:
    case ScalarType::UInt32: return "i32";
    case ScalarType::Int64:
    case ScalarType::UInt64: return "i64";
    case ScalarType::Half: return "half";
    case ScalarType::BFloat16: return "i16";  // see Renderer::bf16_to_float
    case ScalarType::Float: return "float";
    case ScalarType::Double: return "double";
    default: throw Error("internal: no LLVM type for " + t.name());
  }
}

// Intrinsic name suffix: f32, f64, f16, bf16, i32 ..., v16f32 for vectors.
std::string suffix(DType t) {
  if (t.count > 1) return "v" + std::to_string(t.count) + suffix(t.element());
  switch (t.scalar) {
    case ScalarType::Half: return "f16";
    case ScalarType::BFloat16: return "bf16";
    case ScalarType::Float: return "f32";
    case ScalarType::Double: return "f64";
    default: return scalar_type(t);
  }
}

// The alignment a load or store may claim: its size, up to the buffers' own (kBufferAlignment) —
// codegen/vectorize.cpp proves the index a multiple of the lane count, and x86 vectors may be wider
// than what the base alignment covers.
int access_align(ir::DType t) { return std::min(t.itemsize(), kBufferAlignment); }

struct AluNames {
  const char *sint, *uint, *flt;
};
// LLVM instruction per op for signed ints, unsigned ints (and bool), floats; "" = not defined.
const std::unordered_map<Op, AluNames>& alu_table() {
  static const std::unordered_map<Op, AluNames> t = {
      {Op::ADD, {"add", "add", "fadd"}},
      {Op::SUB, {"sub", "sub", "fsub"}},
      {Op::MUL, {"mul", "mul", "fmul"}},
      {Op::FDIV, {"", "", "fdiv"}},
      {Op::CDIV, {"sdiv", "udiv", ""}},
      {Op::CMOD, {"srem", "urem", ""}},
      {Op::SHL, {"shl", "shl", ""}},
      {Op::SHR, {"ashr", "lshr", ""}},
      {Op::AND, {"and", "and", ""}},
      {Op::OR, {"or", "or", ""}},
      {Op::XOR, {"xor", "xor", ""}},
      {Op::CMPLT, {"icmp slt", "icmp ult", "fcmp olt"}},
      {Op::CMPNE, {"icmp ne", "icmp ne", "fcmp une"}},
      {Op::CMPEQ, {"icmp eq", "icmp eq", "fcmp oeq"}},
  };
  return t;
}

class Renderer {
 public:
  Renderer(const LoweredKernel& k, const Target& t) : k_(k), t_(t) {}

  std::string run() {
    signature();
    for (size_t i = 0; i < k_.linear.size(); ++i) inst(k_.linear[i], i);
    std::ostringstream out;
    out << "; ugpu kernel " << k_.name << " for " << t_.name << "\n";
    out << "target triple = \"" << target_triple(t_) << "\"\n\n" << globals_.str();
    out << "define " << cc_ << "void @" << k_.name << "(" << params_ << ") #0 {\nentry:\n" << entry_.str() << body_.str() << "  ret void\n}\n\n";
    for (const std::string& d : declares_) out << d << "\n";
    out << "\nattributes #0 = { nounwind \"no-builtins\" \"no-trapping-math\"=\"true\"" << attrs_ << " }\n";
    return out.str();
  }

 private:
  int addrspace(DType p) const {
    switch (p.addrspace) {
      case AddrSpace::Global: return t_.global_addrspace();
      case AddrSpace::Local: return t_.gpu() ? 3 : 0;
      case AddrSpace::Reg: return t_.arch == Arch::AMDGPU ? 5 : 0;
      default: return 0;
    }
  }
  std::string ptr_type(DType p) const {
    int as = addrspace(p);
    return as ? "ptr addrspace(" + std::to_string(as) + ")" : "ptr";
  }
  std::string type(DType t) const {
    if (t.is_ptr()) return ptr_type(t);
    return t.count == 1 ? scalar_type(t) : "<" + std::to_string(t.count) + " x " + scalar_type(t.element()) + ">";
  }

  // How a value of type t is held in memory: as t, except bool, which is a byte (i8, or <n x i8>).
  std::string mem_type(DType t) const {
    if (!t.is_bool()) return type(t);
    return t.count == 1 ? "i8" : "<" + std::to_string(t.count) + " x i8>";
  }

  std::string literal(const UOp& c) const {
    DType t = c.dtype();
    if (t.is_bool()) return c.const_int() ? "true" : "false";
    if (!t.is_float()) return std::to_string(c.const_int());
    double v = c.const_float();
    if (t.scalar == ScalarType::BFloat16) return std::to_string(static_cast<int16_t>(float_to_bits(v, t)));
    if (t.scalar == ScalarType::Half) {
      char b[16];
      std::snprintf(b, sizeof b, "0xH%04X", float_to_bits(v, t));
      return b;
    }
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    return hex64(bits);  // a float constant is written as the double of the same value
  }

  std::string val(const UOp& u) {
    if (u.is_const()) return literal(u);
    auto it = names_.find(u.get());
    if (it == names_.end()) throw Error("internal: LLVM renderer: a value is used before it is defined: " + to_inline(u, 100));
    return it->second;
  }
  std::string tv(const UOp& u) { return type(u.dtype()) + " " + val(u); }
  std::string fresh(const std::string& stem = "t") { return "%" + stem + std::to_string(tmp_++); }
  std::string label(const std::string& stem) { return stem + std::to_string(tmp_++); }
  void emit(const std::string& line) { body_ << "  " << line << "\n"; }
  void start_block(const std::string& l) {
    body_ << l << ":\n";
    block_ = l;
  }
  std::string declare(const std::string& ret, const std::string& name, const std::string& args) {
    declares_.insert("declare " + ret + " @" + name + "(" + args + ")");
    return "@" + name;
  }
  std::string call(const std::string& ret, const std::string& name, const std::vector<std::string>& args_typed, const std::string& arg_types,
                   std::string r = "") {
    if (r.empty()) r = fresh();
    std::string fn = declare(ret, name, arg_types), a;
    for (const std::string& s : args_typed) a += (a.empty() ? "" : ", ") + s;
    emit((ret == "void" ? "" : r + " = ") + "call " + ret + " " + fn + "(" + a + ")");
    return r;
  }

  void signature() {
    std::string sep;
    if (t_.gpu()) {
      cc_ = t_.arch == Arch::AMDGPU ? "amdgpu_kernel " : "ptx_kernel ";
      for (const Param& p : k_.params) {
        std::string n = p.kind == Param::Kind::Buffer ? "%data" + std::to_string(p.slot) : "%var_" + p.name;
        params_ += sep + type(p.dtype) + (p.kind == Param::Kind::Buffer ? " noundef align 16 " : " noundef ") + n;
        sep = ", ";
        names_[p.node.get()] = n;
      }
      if (t_.arch == Arch::AMDGPU) {
        int64_t local = 1;
        for (const UOp& l : k_.local_size) local *= l.is_const() ? l.const_int() : 1;
        attrs_ = " \"amdgpu-flat-work-group-size\"=\"1," + std::to_string(local) + "\" \"uniform-work-group-size\"=\"true\"";
      }
      return;
    }
    params_ = "ptr noundef %args, i64 noundef %part, i64 noundef %parts";
    for (size_t i = 0; i < k_.params.size(); ++i) {
      const Param& p = k_.params[i];
      std::string slot = "%arg" + std::to_string(i);
      entry_ << "  " << slot << " = getelementptr i64, ptr %args, i64 " << i << "\n";
      std::string n = p.kind == Param::Kind::Buffer ? "%data" + std::to_string(p.slot) : "%var_" + p.name;
      if (p.kind == Param::Kind::Buffer) {
        entry_ << "  " << n << " = load ptr, ptr " << slot << ", align 8\n";
      } else if (p.dtype.bitsize() == 64) {
        entry_ << "  " << n << " = load i64, ptr " << slot << ", align 8\n";
      } else {
        entry_ << "  " << n << ".raw = load i64, ptr " << slot << ", align 8\n";
        entry_ << "  " << n << " = trunc i64 " << n << ".raw to " << type(p.dtype) << "\n";
      }
      names_[p.node.get()] = n;
    }
  }

  void inst(const UOp& u, size_t i) {
    std::string r = "%v" + std::to_string(i);
    const auto src = u.src();
    DType dt = u.dtype();
    switch (u.op()) {
      case Op::CONST:
      case Op::DEFINE_GLOBAL:
      case Op::DEFINE_VAR: return;
      case Op::AFTER: names_[u.get()] = val(src[0]); return;
      case Op::DEFINE_REG:
      case Op::DEFINE_LOCAL: {
        const Ints& a = u.arg_as<Ints>();
        std::string arr = "[" + std::to_string(a[1]) + " x " + (dt.count > 1 ? type(dt.base()) : scalar_type(dt.base())) + "]";
        if (u.op() == Op::DEFINE_LOCAL && t_.gpu()) {
          std::string g = "@lds" + std::to_string(a[0]);
          globals_ << g << " = internal addrspace(3) global " << arr << " poison, align 16\n";
          names_[u.get()] = g;
        } else {
          int as = addrspace(dt);
          entry_ << "  " << r << " = alloca " << arr << ", align 16" << (as ? ", addrspace(" + std::to_string(as) + ")" : "") << "\n";
          names_[u.get()] = r;
        }
        return;
      }
      case Op::SPECIAL: {
        const std::string& name = u.arg_as<std::string>();
        if (!t_.gpu()) {  // "part" or "parts": the host function's arguments
          std::string a = "%" + name;
          if (dt.bitsize() == 64) names_[u.get()] = a;
          else emit(r + " = trunc i64 " + a + " to " + type(dt));
          if (dt.bitsize() == 64) return;
          break;
        }
        char dim = "xyz"[name.back() - '0'];
        bool group = name[0] == 'g';
        std::string fn = t_.arch == Arch::AMDGPU ? std::string("llvm.amdgcn.") + (group ? "workgroup.id." : "workitem.id.") + dim
                                                 : std::string("llvm.nvvm.read.ptx.sreg.") + (group ? "ctaid." : "tid.") + dim;
        if (dt.bitsize() == 64) emit(r + " = zext i32 " + call("i32", fn, {}, "") + " to i64");
        else call("i32", fn, {}, "", r);
        break;
      }
      case Op::RANGE: {
        std::string l = "L" + std::to_string(i), pre = block_;
        emit("br label %" + l);
        start_block(l);
        std::string ty = type(dt);
        emit(r + " = phi " + ty + " [0, %" + pre + "], [" + r + ".next, %" + l + ".latch]");
        emit(r + ".cond = icmp slt " + ty + " " + r + ", " + val(src[0]));
        emit("br i1 " + r + ".cond, label %" + l + ".body, label %" + l + ".exit");
        start_block(l + ".body");
        loops_[u.get()] = {l, r, ty};
        break;
      }
      case Op::END: {  // closes the loop of src[0]
        const auto& [l, v, ty] = loops_.at(src[0].get());
        emit("br label %" + l + ".latch");
        start_block(l + ".latch");
        emit(v + ".next = add " + ty + " " + v + ", 1");
        emit("br label %" + l);
        start_block(l + ".exit");
        return;
      }
      case Op::INDEX: {
        emit(r + " = getelementptr inbounds " + mem_type(dt.element()) + ", " + tv(src[0]) + ", " + tv(src[1]));
        if (src.size() == 3) gates_[u.get()] = val(src[2]);
        break;
      }
      case Op::LOAD: {
        // A bool is a byte in memory, and any byte other than 0 is true, on every backend: it is
        // loaded as i8 and compared (LLVM leaves an i1 load of a byte other than 0 or 1 undefined).
        std::string p = val(src[0]), align = std::to_string(access_align(dt));
        auto load = [&](const std::string& into) {
          std::string mem = dt.is_bool() ? fresh("m") : into;
          emit(mem + " = load " + mem_type(dt) + ", " + type(src[0].dtype()) + " " + p + ", align " + align);
          if (dt.is_bool()) emit(into + " = icmp ne " + mem_type(dt) + " " + mem + ", zeroinitializer");
        };
        auto g = gates_.find(src[0].get());
        if (g == gates_.end()) {
          load(r);
          break;
        }
        std::string yes = label("load"), join = label("loaded"), from = block_;
        emit("br i1 " + g->second + ", label %" + yes + ", label %" + join);
        start_block(yes);
        load(r + ".g");
        emit("br label %" + join);
        start_block(join);
        emit(r + " = phi " + type(dt) + " [" + r + ".g, %" + yes + "], [" + val(src[1]) + ", %" + from + "]");
        break;
      }
      case Op::STORE: {
        std::string v = tv(src[1]);
        if (src[1].dtype().is_bool()) {  // as a byte, 0 or 1 (see LOAD)
          std::string b = fresh("b");
          emit(b + " = zext " + v + " to " + mem_type(src[1].dtype()));
          v = mem_type(src[1].dtype()) + " " + b;
        }
        std::string s = "store " + v + ", " + tv(src[0]) + ", align " + std::to_string(access_align(src[1].dtype()));
        auto g = gates_.find(src[0].get());
        if (g == gates_.end()) {
          emit(s);
          return;
        }
        std::string yes = label("store"), join = label("stored");
        emit("br i1 " + g->second + ", label %" + yes + ", label %" + join);
        start_block(yes);
        emit(s);
        emit("br label %" + join);
        start_block(join);
        return;
      }
      case Op::BARRIER:
        if (!t_.gpu()) return;  // the host ran every work-item's part before it in an earlier loop (gpudims.cpp)
        if (t_.arch == Arch::AMDGPU) {
          emit("fence syncscope(\"workgroup\") release");
          call("void", "llvm.amdgcn.s.barrier", {}, "");
          emit("fence syncscope(\"workgroup\") acquire");
        } else {
          call("void", "llvm.nvvm.barrier.cta.sync.aligned.all", {"i32 0"}, "i32");
        }
        return;
      case Op::GEP: emit(r + " = extractelement " + tv(src[0]) + ", i32 " + std::to_string(u.arg_as<Ints>()[0])); break;
      case Op::VECTORIZE: {
        std::string v = "poison";
        for (size_t l = 0; l < src.size(); ++l) {
          std::string n = l + 1 == src.size() ? r : fresh();
          emit(n + " = insertelement " + type(dt) + " " + v + ", " + tv(src[l]) + ", i32 " + std::to_string(l));
          v = n;
        }
        break;
      }
      case Op::WMMA: wmma(u, r); break;
      case Op::WHERE: emit(r + " = select i1 " + val(src[0]) + ", " + tv(src[1]) + ", " + tv(src[2])); break;
      case Op::CAST: names_[u.get()] = cast(src[0], dt); return;
      case Op::BITCAST:
        if (src[0].dtype().bitsize() != dt.bitsize() || dt.is_bool()) throw Error("BITCAST between types of different sizes: " + to_inline(u, 100));
        emit(r + " = bitcast " + tv(src[0]) + " to " + type(dt));
        break;
      default: alu(u, r); break;
    }
    names_[u.get()] = r;
  }

  // A tensor core's instruction (codegen/tensor_core.h) through its LLVM intrinsic. bfloat16
  // fragments are i16 vectors already; NVIDIA's intrinsics take pairs of 16-bit elements (or one tf32)
  // per 32-bit register and return a struct of the four floats.
  void wmma(const UOp& u, const std::string& r) {
    const auto src = u.src();
    const std::string& name = u.arg_as<std::string>();
    const TensorCore* tc = find_tensor_core(name);
    if (!tc || !tc->on(t_)) throw Error("WMMA '" + name + "' is not a tensor core of " + std::string(t_.name) + ": " + to_inline(u, 100));
    const TcLayout* layouts[3] = {&tc->a, &tc->b, &tc->c};
    for (int i = 0; i < 3; ++i)
      if (src[i].dtype().count != layouts[i]->elems || src[i].dtype().scalar != (i < 2 ? tc->input : ScalarType::Float))
        throw Error("WMMA '" + name + "' takes A, B and C of " + std::to_string(tc->a.elems) + ", " + std::to_string(tc->b.elems) + " and " +
                    std::to_string(tc->c.elems) + " elements per lane, got " + src[0].dtype().name() + ", " + src[1].dtype().name() + ", " +
                    src[2].dtype().name() + ": " + to_inline(u, 100));
    bool bf16 = tc->input == ScalarType::BFloat16;
    std::string ta = type(src[0].dtype()), tb = type(src[1].dtype()), tc_ty = type(src[2].dtype());
    if (t_.arch == Arch::AMDGPU && tc->threads == 32) {
      std::string fn = bf16 ? "llvm.amdgcn.wmma.f32.16x16x16.bf16.v8f32.v16i16" : "llvm.amdgcn.wmma.f32.16x16x16.f16.v8f32.v16f16";
      call(tc_ty, fn, {tv(src[0]), tv(src[1]), tv(src[2])}, ta + ", " + tb + ", " + tc_ty, r);
      return;
    }
    if (t_.arch == Arch::AMDGPU) {
      std::string fn = bf16 ? "llvm.amdgcn.mfma.f32.16x16x16bf16.1k" : "llvm.amdgcn.mfma.f32.16x16x16f16";
      call(tc_ty, fn, {tv(src[0]), tv(src[1]), tv(src[2]), "i32 0", "i32 0", "i32 0"}, ta + ", " + tb + ", " + tc_ty + ", i32, i32, i32", r);
      return;
    }
    std::string pair = bf16 ? "i32" : "<2 x half>", el = scalar_type(src[0].dtype().element());
    std::vector<std::string> args;
    std::string types;
    bool tf32 = tc->input == ScalarType::Float;
    auto pairs = [&](const UOp& v) {
      // tf32: one element per register, rounded to 10 mantissa bits, to nearest with ties away from
      // zero (cvt.rna.tf32.f32's rounding, in integer operations); a NaN keeps its top bits.
      for (int i = 0; tf32 && i < v.dtype().count; ++i) {
        std::string e = fresh(), b = fresh(), up = fresh(), nan = fresh(), r = fresh(), m = fresh();
        emit(e + " = extractelement " + tv(v) + ", i32 " + std::to_string(i));
        emit(b + " = bitcast float " + e + " to i32");
        emit(up + " = add i32 " + b + ", 4096");
        emit(nan + " = fcmp uno float " + e + ", 0.0");
        emit(r + " = select i1 " + nan + ", i32 " + b + ", i32 " + up);
        emit(m + " = and i32 " + r + ", -8192");
        args.push_back("i32 " + m);
        types += (types.empty() ? "" : ", ") + std::string("i32");
      }
      for (int i = 0; !tf32 && i < v.dtype().count; i += 2) {
        std::string p = fresh();
        emit(p + " = shufflevector " + tv(v) + ", " + type(v.dtype()) + " poison, <2 x i32> <i32 " + std::to_string(i) + ", i32 " +
             std::to_string(i + 1) + ">");
        if (bf16) {
          std::string w = fresh();
          emit(w + " = bitcast <2 x " + el + "> " + p + " to i32");
          p = w;
        }
        args.push_back(pair + " " + p);
        types += (types.empty() ? "" : ", ") + pair;
      }
    };
    pairs(src[0]);
    pairs(src[1]);
    for (int i = 0; i < 4; ++i) {
      std::string c = fresh();
      emit(c + " = extractelement " + tv(src[2]) + ", i32 " + std::to_string(i));
      args.push_back("float " + c);
      types += ", float";
    }
    std::string st = "{float, float, float, float}";
    std::string d = call(st,
                         tf32   ? "llvm.nvvm.mma.m16n8k8.row.col.tf32"
                         : bf16 ? "llvm.nvvm.mma.m16n8k16.row.col.bf16"
                                : "llvm.nvvm.mma.m16n8k16.row.col.f32.f32",
                         args, types);
    std::string v = "poison";
    for (int i = 0; i < 4; ++i) {
      std::string e = fresh(), n = i == 3 ? r : fresh();
      emit(e + " = extractvalue " + st + " " + d + ", " + std::to_string(i));
      emit(n + " = insertelement <4 x float> " + v + ", float " + e + ", i32 " + std::to_string(i));
      v = n;
    }
  }

  // bfloat16 values live as i16 bit patterns: LLVM's own bfloat conversions differ between CPUs
  // (some flush subnormals), so ugpu converts with integer operations, rounding to nearest even.
  std::string bf16_to_float(const std::string& v) {
    std::string w = fresh(), s = fresh(), f = fresh();
    emit(w + " = zext i16 " + v + " to i32");
    emit(s + " = shl i32 " + w + ", 16");
    emit(f + " = bitcast i32 " + s + " to float");
    return f;
  }
  std::string float_to_bf16(const std::string& f) {
    std::string b = fresh(), lsb = fresh(), odd = fresh(), bias = fresh(), sum = fresh(), hi = fresh(), nan = fresh(), q = fresh(), out = fresh();
    emit(b + " = bitcast float " + f + " to i32");
    emit(lsb + " = lshr i32 " + b + ", 16");
    emit(odd + " = and i32 " + lsb + ", 1");
    emit(bias + " = add i32 " + odd + ", 32767");
    emit(sum + " = add i32 " + b + ", " + bias);
    emit(hi + " = lshr i32 " + sum + ", 16");
    emit(nan + " = fcmp uno float " + f + ", 0.0");
    emit(q + " = or i32 " + lsb + ", 64");  // a NaN stays a (quiet) NaN with its sign
    emit(out + " = select i1 " + nan + ", i32 " + q + ", i32 " + hi);
    std::string r = fresh();
    emit(r + " = trunc i32 " + out + " to i16");
    return r;
  }

  // Returns the name of the converted value.
  std::string cast(const UOp& x, DType to) {
    DType from = x.dtype();
    if (from == to) throw Error("internal: CAST to the same dtype reached the renderer");
    if (from.scalar == ScalarType::BFloat16) return convert(bf16_to_float(val(x)), dtypes::float32, to);
    return convert(val(x), from, to);
  }

  std::string convert(const std::string& v0, DType from, DType to) {
    if (from == to) return v0;
    if (to.scalar == ScalarType::BFloat16) return float_to_bf16(convert(v0, from, dtypes::float32));
    std::string r = fresh(), v = type(from) + " " + v0, tt = type(to);
    if (to.is_bool()) emit(r + " = " + (from.is_float() ? "fcmp une " + v + ", 0.0" : "icmp ne " + v + ", 0"));
    else if (from.is_bool()) emit(r + " = " + (to.is_float() ? "uitofp " : "zext ") + v + " to " + tt);
    else if (!from.is_float() && !to.is_float()) {
      const char* op = to.bitsize() < from.bitsize() ? "trunc" : to.bitsize() == from.bitsize() ? "bitcast" : from.is_unsigned() ? "zext" : "sext";
      emit(r + " = " + op + " " + v + " to " + tt);
    } else if (!from.is_float()) {
      if (to.bitsize() == 16) return convert(convert(v0, from, dtypes::float32), dtypes::float32, to);  // via float, like bfloat16
      emit(r + " = " + (from.is_unsigned() ? "uitofp " : "sitofp ") + v + " to " + tt);
    } else if (!to.is_float()) {
      // From half on x86, through float (exact): LLVM 22 lowers llvm.fpto[su]i.sat from half with
      // AVX512-FP16's vcvttsh2si and clamps with compares that take a NaN for "below the minimum",
      // so NaN became -32768 instead of 0 (tests/codegen/test_kernels.cpp).
      if (from.scalar == ScalarType::Half && t_.arch == Arch::X86) return convert(convert(v0, from, dtypes::float32), dtypes::float32, to);
      std::string fn = std::string(to.is_unsigned() ? "llvm.fptoui.sat." : "llvm.fptosi.sat.") + suffix(to) + "." + suffix(from);
      call(tt, fn, {v}, type(from), r);
    } else if (from.bitsize() == 64 && to.bitsize() == 16) {
      // via float: float has more than twice half's precision plus two bits, so rounding twice equals
      // rounding once; this also keeps x86 from calling a compiler-rt helper.
      return convert(convert(v0, from, dtypes::float32), dtypes::float32, to);
    } else {
      emit(r + " = " + (to.bitsize() > from.bitsize() ? "fpext " : "fptrunc ") + v + " to " + tt);
    }
    return r;
  }

  void alu(const UOp& u, const std::string& r) {
    const auto src = u.src();
    DType t = src[0].dtype();
    std::string ty = type(t);
    bool f = t.is_float(), uns = t.is_unsigned() || t.is_bool();
    switch (u.op()) {
      case Op::NEG: return emit(r + " = " + (f ? "fneg " + tv(src[0]) : "sub " + ty + " 0, " + val(src[0])));
      case Op::RECIPROCAL: return emit(r + " = fdiv " + ty + " " + literal(UOp::const_float(t, 1.0)) + ", " + val(src[0]));
      case Op::FMA: call(ty, "llvm.fma." + suffix(t), {tv(src[0]), tv(src[1]), tv(src[2])}, ty + ", " + ty + ", " + ty, r); return;
      case Op::SQRT:
      case Op::TRUNC:
      case Op::EXP2:
      case Op::LOG2: {
        const char* n = u.op() == Op::SQRT ? "sqrt" : u.op() == Op::TRUNC ? "trunc" : u.op() == Op::EXP2 ? "exp2" : "log2";
        call(ty, std::string("llvm.") + n + "." + suffix(t), {tv(src[0])}, ty, r);
        return;
      }
      case Op::MAX: {
        std::string a = val(src[0]), b = val(src[1]), c = fresh();
        if (f) {
          std::string c1 = fresh(), c2 = fresh();
          emit(c1 + " = fcmp olt " + ty + " " + a + ", " + b);
          emit(c2 + " = fcmp uno " + ty + " " + b + ", " + b);
          emit(c + " = or i1 " + c1 + ", " + c2);
        } else {
          emit(c + " = icmp " + (uns ? "ult " : "slt ") + ty + " " + a + ", " + b);
        }
        return emit(r + " = select i1 " + c + ", " + ty + " " + b + ", " + ty + " " + a);
      }
      case Op::CDIV:
      case Op::CMOD: {
        if (f) break;
        // Division by zero (and INT_MIN / -1) would trap on x86 and is undefined in LLVM: divide by 1
        // instead, so bad data gives a wrong value, never a crash.
        std::string d = val(src[1]);
        // Bounds that exclude 0 (and -1 for signed division) need no guard.
        bool safe = ir::has_exact_bounds(src[1].dtype()) && (src[1].vmin() > 0 || (!uns && src[1].vmax() < -1));
        if (!safe && (!src[1].is_const() || src[1].const_int() == 0 || (!uns && src[1].const_int() == -1))) {
          std::string z = fresh(), d2 = fresh();
          emit(z + " = icmp eq " + ty + " " + d + ", 0");
          if (!uns) {
            std::string m1 = fresh(), mn = fresh(), ov = fresh(), bad = fresh();
            emit(m1 + " = icmp eq " + ty + " " + d + ", -1");
            emit(mn + " = icmp eq " + ty + " " + val(src[0]) + ", " + std::to_string(t.min_int()));
            emit(ov + " = and i1 " + m1 + ", " + mn);
            emit(bad + " = or i1 " + z + ", " + ov);
            z = bad;
          }
          emit(d2 + " = select i1 " + z + ", " + ty + " 1, " + ty + " " + d);
          d = d2;
        }
        const char* op = u.op() == Op::CDIV ? (uns ? "udiv" : "sdiv") : (uns ? "urem" : "srem");
        return emit(r + " = " + op + " " + ty + " " + val(src[0]) + ", " + d);
      }
      default: break;
    }
    auto it = alu_table().find(u.op());
    const char* name = it == alu_table().end() ? "" : f ? it->second.flt : uns ? it->second.uint : it->second.sint;
    if (!*name)
      throw Error(std::string(op_name(u.op())) + " on " + t.name() + " has no " + std::string(t_.name) + " instruction: " + to_inline(u, 100));
    if (t.is_bool() && (u.op() == Op::ADD || u.op() == Op::MUL)) name = u.op() == Op::ADD ? "or" : "and";
    emit(r + " = " + name + " " + ty + " " + val(src[0]) + ", " + val(src[1]));
  }

  const LoweredKernel& k_;
  const Target& t_;
  std::ostringstream globals_, entry_, body_;
  std::string params_, cc_, attrs_, block_ = "entry";
  std::set<std::string> declares_;
  std::unordered_map<const void*, std::string> names_, gates_;
  struct Loop {
    std::string label, var, type;
  };
  std::unordered_map<const void*, Loop> loops_;
  int tmp_ = 0;
};

}  // namespace

std::string render_llvm_ir(const LoweredKernel& kernel, const Target& target) { return Renderer(kernel, target).run(); }

}  // namespace ugpu::codegen
