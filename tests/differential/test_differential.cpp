// Differential test: random valid kernels run on every device (cpu, emu:amd, emu:nv) and compared,
// element by element and bit-exactly (any NaN matches any NaN, and -0 matches +0), with the IR's own
// reference evaluation of the same kernel (ir/alu.h's exec_alu: the semantics docs/ir.md defines;
// reductions as docs/codegen.md defines them). Kernels mix every integer width, bool,
// fp8, half, bfloat16, float and double through +, -, *, /, %, max, negation, bit ops, shifts,
// compares, WHERE, casts, bitcasts, trunc, multiply-add and sqrt, with masked loads (with and
// without an alternative value) and masked stores: elementwise (with a 4-wide UPCAST axis, a LOOP
// axis, or a grid sized by a variable) and as reductions (ADD, MUL, MAX).
// Inputs include the extremes: INT_MIN, -0.0, infinities, NaN, denormals. An element whose value the
// IR leaves open is not compared: integer division by zero, oversize shifts (exec_alu's nullopt), the
// bits of a NaN and the sign of a zero (codegen's nsz), which BITCAST and x / 0 would show.
//
// Seeded and bounded: UGPU_DIFF_SEED (else UGPU_TEST_SEED, else 1) picks the kernels, UGPU_DIFF_KERNELS
// (default 1500; 400 under UGPU_TEST_SAMPLE, the sanitizer build's run) caps how many,
// UGPU_DIFF_SECONDS (default 90; 30 sampled) stops earlier on a slow machine. A failure prints the
// kernel's text, so `ugpu run FILE.uop --device D` can replay it.
#include <doctest/doctest.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <sstream>

#include "ir/alu.h"
#include "ir/dtype.h"
#include "ir/text.h"
#include "tests/hcq/device_suite.h"
#include "tests/sampling.h"

using namespace ugpu;
using ir::DType;
using ir::Op;
using ir::Scalar;
using ir::UOp;
namespace dt = ir::dtypes;

namespace {

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoll(v, nullptr, 10) : fallback;
}

const std::vector<DType> kTypes = {dt::bool_, dt::int8,   dt::uint8, dt::int16,    dt::uint16,  dt::int32,  dt::uint32,
                                   dt::int64, dt::uint64, dt::half,  dt::bfloat16, dt::float32, dt::float64};

// One random kernel in the text form, with its input dtypes.
struct Kernel {
  std::string text;
  DType out;
  std::vector<DType> inputs;
  size_t out_elements = 0, in_elements = 0;
  int64_t var = -1;  // the value of variable n, where the grid's size is one
};

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  Kernel make() {
    k_ = Kernel{};
    int shape = pick(0, 3);  // 0: elementwise, 1: elementwise with UPCAST, 2: reduction, 3: elementwise with a LOOP axis
    k_.out = kTypes[static_cast<size_t>(pick(0, static_cast<int>(kTypes.size()) - 1))];
    if (shape == 2 && k_.out.is_bool()) k_.out = dt::int32;
    size_t n = static_cast<size_t>(pick(1, 40)) * (shape == 1 ? 4 : shape == 3 ? 3 : 1), reduce = static_cast<size_t>(pick(1, 9));
    idx_ = shape == 0 ? "i" : shape == 1 ? "i * 4 + u" : shape == 3 ? "i * 3 + j" : "i * " + std::to_string(reduce) + " + r";
    k_.var = shape == 0 && chance(40) ? static_cast<int64_t>(n) : -1;  // the grid's size from a variable
    std::string value = expr(k_.out, pick(1, 4));
    std::ostringstream s;
    s << "out = DEFINE_GLOBAL:" << k_.out.name() << "* {0}\n";
    for (size_t b = 0; b < k_.inputs.size(); ++b) s << "in" << b << " = DEFINE_GLOBAL:" << k_.inputs[b].name() << "* {" << b + 1 << "}\n";
    if (shape == 1) s << "i = RANGE(" << n / 4 << ") {0, GLOBAL}\nu = RANGE(4) {1, UPCAST}\n";
    else if (shape == 3) s << "i = RANGE(" << n / 3 << ") {0, GLOBAL}\nj = RANGE(3) {1, LOOP}\n";
    else if (k_.var >= 0) s << "n = DEFINE_VAR:index {\"n\", 0, 64}\ni = RANGE(n) {0, GLOBAL}\n";
    else s << "i = RANGE(" << n << ") {0, GLOBAL}\n";
    if (shape == 2) {
      static const char* kOps[] = {"ADD", "MAX", "MUL"};
      s << "r = RANGE(" << reduce << ") {1, REDUCE}\n";
      value = "REDUCE:" + k_.out.name() + "(" + value + ", r) {" + kOps[pick(0, 2)] + "}";
    }
    std::string out_idx = shape == 2 ? "i" : idx_;
    if (chance(20)) out_idx = gated(out_idx);  // a masked store: the other elements keep their bytes
    s << "SINK(END(STORE(INDEX:" << k_.out.name() << "*(out, " << out_idx << "), " << value << "), i"
      << (shape == 1   ? ", u"
          : shape == 3 ? ", j"
                       : "")
      << "))\n";
    k_.text = s.str();
    k_.out_elements = n;
    k_.in_elements = shape == 2 ? n * reduce : n;
    return k_;
  }

 private:
  std::mt19937_64 rng_;
  Kernel k_;
  std::string idx_;

  int pick(int lo, int hi) { return lo + static_cast<int>(rng_() % static_cast<uint64_t>(hi - lo + 1)); }
  bool chance(int percent) { return pick(0, 99) < percent; }
  DType any_type() { return kTypes[static_cast<size_t>(pick(0, static_cast<int>(kTypes.size()) - 1))]; }
  DType value_type() {  // not bool
    return kTypes[static_cast<size_t>(pick(1, static_cast<int>(kTypes.size()) - 1))];
  }

  DType same_size(DType t) {  // another non-bool dtype of t's width
    std::vector<DType> same;
    for (DType u : kTypes)
      if (!u.is_bool() && u != t && u.bitsize() == t.bitsize()) same.push_back(u);
    return same.empty() ? t : same[static_cast<size_t>(pick(0, static_cast<int>(same.size()) - 1))];
  }

  std::string load(DType t) {
    size_t b = k_.inputs.size();
    for (size_t i = 0; i < k_.inputs.size(); ++i)
      if (k_.inputs[i] == t && (b == k_.inputs.size() || chance(50))) b = i;
    if (b == k_.inputs.size()) {
      if (k_.inputs.size() >= 3) return "CAST:" + t.name() + "(" + load(k_.inputs[static_cast<size_t>(pick(0, 2))]) + ")";
      k_.inputs.push_back(t);
    }
    if (!chance(25)) return "LOAD:" + t.name() + "(INDEX:" + t.name() + "*(in" + std::to_string(b) + ", " + idx_ + "))";
    return "LOAD:" + t.name() + "(INDEX:" + t.name() + "*(in" + std::to_string(b) + ", " + gated(idx_) + ")" + (chance(50) ? ", " + literal(t) : "") +
           ")";
  }

  // A masked index: `idx` where a condition on it holds, INVALID (no access) elsewhere.
  std::string gated(const std::string& idx) {
    std::string cond = chance(50) ? "CMPNE:bool((" + idx + ") % " + std::to_string(pick(2, 4)) + ", " + std::to_string(pick(0, 1)) + ")"
                                  : "CMPLT:bool(" + idx + ", " + std::to_string(pick(0, 30)) + ")";
    return "WHERE(" + cond + ", " + idx + ", INVALID)";
  }

  std::string literal(DType t) {
    if (t.is_bool()) return chance(50) ? "true:bool" : "false:bool";
    if (t.is_float()) {
      static const char* kF[] = {"0.0", "1.0", "-1.5", "2.25", "0.1", "3.0", "-7.75", "1000.0", "0.3333", "-0.0", "65504.0", "1e-5"};
      return std::string(kF[pick(0, 11)]) + ":" + t.name();
    }
    int bits = t.bitsize();  // small values, the signed minimum, or a large positive value
    const int64_t lowest = t.is_unsigned() ? 0 : bits == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (bits - 1));
    int64_t v = chance(70) ? pick(-9, 9) : chance(50) ? lowest : (int64_t{1} << (std::min(bits, 63) - 1)) - 1;
    if (t.is_unsigned() && v < 0) v = -v;
    return std::to_string(v) + ":" + t.name();
  }

  std::string leaf(DType t) { return chance(65) ? load(t) : literal(t); }

  std::string expr(DType t, int depth) {
    if (depth <= 0 || chance(15)) return leaf(t);
    std::string T = t.name();
    auto sub = [&](DType s) { return expr(s, depth - 1); };
    auto bin = [&](const char* op) { return std::string(op) + ":" + T + "(" + sub(t) + ", " + sub(t) + ")"; };
    int c = pick(0, 9);
    if (c == 0) return "WHERE:" + T + "(" + sub(dt::bool_) + ", " + sub(t) + ", " + sub(t) + ")";
    if (c == 1) return "CAST:" + T + "(" + sub(any_type()) + ")";
    if (t.is_bool()) {
      static const char* kCmp[] = {"CMPLT", "CMPNE", "CMPEQ"};
      static const char* kLogic[] = {"AND", "OR", "XOR"};
      if (c < 7) {
        DType s = value_type();
        return std::string(kCmp[pick(0, 2)]) + ":bool(" + sub(s) + ", " + sub(s) + ")";
      }
      return bin(kLogic[pick(0, 2)]);
    }
    if (t.is_float()) {
      static const char* kOps[] = {"ADD", "SUB", "MUL", "MAX", "FDIV"};
      if (c == 2) return chance(50) ? "NEG:" + T + "(" + sub(t) + ")" : "TRUNC:" + T + "(" + sub(t) + ")";
      if (c == 3) return "SQRT:" + T + "(" + sub(t) + ")";
      if (c == 4 && chance(40)) return "MULACC:" + T + "(" + sub(t) + ", " + sub(t) + ", " + sub(t) + ")";
      if (c == 5 && chance(40)) return "BITCAST:" + T + "(" + sub(same_size(t)) + ")";
      return bin(kOps[pick(0, 4)]);
    }
    static const char* kOps[] = {"ADD", "SUB", "MUL", "MAX", "AND", "OR", "XOR"};
    if (c == 2) return "NEG:" + T + "(" + sub(t) + ")";
    if (c == 5 && chance(40)) return "BITCAST:" + T + "(" + sub(same_size(t)) + ")";
    if (c == 6 && chance(30)) return "MULACC:" + T + "(" + sub(t) + ", " + sub(t) + ", " + sub(t) + ")";
    if (c == 3) {
      const char* op = chance(50) ? "SHL" : "SHR";
      return std::string(op) + ":" + T + "(" + sub(t) + ", " + std::to_string(pick(0, t.bitsize() - 1)) + ":" + T + ")";
    }
    if (c == 4) {
      const char* op = chance(50) ? "CDIV" : "CMOD";
      int64_t d = pick(2, 100);
      if (!t.is_unsigned() && chance(30)) d = -d;
      if (t.is_unsigned() && chance(40)) return std::string(op) + ":" + T + "(" + sub(t) + ", OR:" + T + "(" + sub(t) + ", 1:" + T + "))";
      return std::string(op) + ":" + T + "(" + sub(t) + ", " + std::to_string(d) + ":" + T + ")";
    }
    return bin(kOps[pick(0, 6)]);
  }
};

// Input values: every bit pattern can occur for integers, small values more often; floats mix
// ordinary values with zeros of both signs, infinities, NaN and denormals.
void fill(codegen::HostData& b, std::mt19937_64& rng) {
  for (size_t i = 0; i < b.count(); ++i) {
    uint64_t r = rng();
    if (b.dtype.is_bool()) {
      b.set_bits(i, r & 1);
    } else if (!b.dtype.is_float()) {
      int kind = static_cast<int>(r % 8);
      if (kind < 5) b.set(i, static_cast<double>(static_cast<int64_t>(rng() % 41) - 20));
      else b.set_bits(i, rng());
    } else {
      static const double kSpecial[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1e-40, -1e-310, 65504.0, 1e30, -3.0e-8};
      int kind = static_cast<int>(r % 10);
      if (kind < 7) b.set(i, std::ldexp(static_cast<double>(static_cast<int64_t>(rng() % 2001) - 1000), -static_cast<int>(rng() % 12)));
      else b.set(i, kSpecial[rng() % 10]);
    }
  }
}

// The reference: the kernel's stored value at each output element, evaluated node by node with
// exec_alu. nullopt where the IR leaves the value undefined (see exec_alu).
class Reference {
 public:
  Reference(const UOp& sink, const codegen::Buffers& bufs, int64_t var) : bufs_(bufs) {
    for (const UOp& u : sink.toposort()) {
      if (u.op() == Op::STORE) store_ = u;
      if (u.op() == Op::RANGE) ranges_[u.arg_as<ir::RangeArg>().axis] = u;
      if (u.op() == Op::DEFINE_VAR) vars_[u.get()] = Scalar{var};
    }
  }
  // Element `e` of the output: which loop values write it, then the value.
  void run(codegen::HostData& out, std::vector<bool>& defined) {
    std::vector<UOp> loops;
    for (const auto& [axis, r] : ranges_)
      if (r.arg_as<ir::RangeArg>().type != ir::AxisType::REDUCE) loops.push_back(r);
    std::vector<int64_t> at(loops.size(), 0), end;
    for (const UOp& l : loops) {
      Env env = vars_;
      end.push_back(std::get<int64_t>(*eval(l.src(0), env)));
      if (end.back() == 0) return;
    }
    while (true) {
      Env env = vars_;
      for (size_t l = 0; l < loops.size(); ++l) env[loops[l].get()] = Scalar{at[l]};
      bool masked = false;
      auto idx = index(store_.src(0), env, masked);
      if (idx && !masked) {
        auto v = eval(store_.src(1), env);
        size_t e = static_cast<size_t>(std::get<int64_t>(*idx));
        defined[e] = v.has_value();
        if (v) out.set_bits(e, bits_of(*v, out.dtype));
      }
      size_t l = loops.size();
      while (l > 0) {
        --l;
        if (++at[l] < end[l]) break;
        at[l] = 0;
        if (l == 0) return;
      }
      if (loops.empty()) return;
    }
  }

 private:
  using Env = std::unordered_map<const void*, Scalar>;
  const codegen::Buffers& bufs_;
  UOp store_;
  std::map<int, UOp> ranges_;
  Env vars_;

  static uint64_t bits_of(const Scalar& v, DType t) {
    if (t.is_float()) {
      double d = std::get<double>(v);
      return t.bitsize() == 64 ? std::bit_cast<uint64_t>(d) : ir::float_to_bits(d, t);
    }
    return static_cast<uint64_t>(std::get<int64_t>(v));
  }
  Scalar load(const UOp& idx_node, int64_t e) const {
    const codegen::HostData& b = bufs_[static_cast<size_t>(idx_node.src(0).arg_as<int64_t>())];
    uint64_t bits = b.bits(static_cast<size_t>(e));
    if (b.dtype.is_float())
      return Scalar{b.dtype.bitsize() == 64 ? std::bit_cast<double>(bits) : ir::float_from_bits(static_cast<uint32_t>(bits), b.dtype)};
    if (b.dtype.is_bool()) return Scalar{int64_t{bits != 0}};
    return Scalar{b.dtype.is_unsigned() ? static_cast<int64_t>(bits) : ir::wrap_int(static_cast<int64_t>(bits), b.dtype)};
  }

  // The element an INDEX addresses; `masked` where it is WHERE(c, i, INVALID) and c is false.
  std::optional<Scalar> index(const UOp& idx_node, Env& env, bool& masked) {
    const UOp& i = idx_node.src(1);
    if (i.op() == Op::WHERE && i.src(2).op() == Op::INVALID) {
      auto c = eval(i.src(0), env);
      if (!c) return std::nullopt;
      masked = std::get<int64_t>(*c) == 0;
      return masked ? std::nullopt : eval(i.src(1), env);
    }
    return eval(i, env);
  }

  std::optional<Scalar> eval(const UOp& u, Env& env) {
    if (auto it = env.find(u.get()); it != env.end()) return it->second;
    std::optional<Scalar> r;
    if (u.op() == Op::CONST) r = ir::const_value(u);
    else if (u.op() == Op::LOAD) {
      bool masked = false;
      auto e = index(u.src(0), env, masked);
      if (masked) r = u.src().size() > 1 ? eval(u.src(1), env) : (u.dtype().is_float() ? Scalar{0.0} : Scalar{int64_t{0}});
      else if (e) r = load(u.src(0), std::get<int64_t>(*e));
    } else if (u.op() == Op::REDUCE) {
      // As docs/codegen.md defines it: sums and products accumulate in sum_acc_dtype (at least 32
      // bits: float for half and bfloat16) and are cast back once; MAX accumulates in the dtype.
      Op op = u.arg_as<Op>();
      DType t = u.dtype(), a = op == Op::MAX ? t : ir::sum_acc_dtype(t);
      Scalar acc = op == Op::ADD ? (a.is_float() ? Scalar{0.0} : Scalar{int64_t{0}})
                   : op == Op::MUL
                       ? (a.is_float() ? Scalar{1.0} : Scalar{int64_t{1}})
                       : (a.is_float() ? Scalar{-INFINITY} : Scalar{a.is_unsigned() ? int64_t{0} : ir::wrap_int(int64_t{1} << (a.bitsize() - 1), a)});
      const UOp& range = u.src(1);
      for (int64_t i = 0; i < range.src(0).const_int(); ++i) {
        Env inner = env;
        inner[range.get()] = Scalar{i};
        auto v = eval(u.src(0), inner);
        if (!v) return std::nullopt;
        Scalar one[1] = {*v};
        auto wide = ir::exec_alu(Op::CAST, a, t, one);
        if (!wide) return std::nullopt;
        Scalar args[2] = {acc, *wide};
        auto next = ir::exec_alu(op, a, a, args);
        if (!next) return std::nullopt;
        acc = *next;
      }
      Scalar one[1] = {acc};
      r = ir::exec_alu(Op::CAST, t, a, one);
    } else if (ir::is_alu(u.op())) {
      std::vector<Scalar> args;
      for (const UOp& s : u.src()) {
        auto v = eval(s, env);
        if (!v) return std::nullopt;
        args.push_back(*v);
      }
      // A NaN's payload is not specified (devices differ), so the bits of a BITCAST NaN are not either;
      // nor is the sign of a zero (nsz), so neither are a BITCAST zero and the sign of x / 0.
      if (u.op() == Op::BITCAST && u.src(0).dtype().is_float() && (std::isnan(std::get<double>(args[0])) || std::get<double>(args[0]) == 0))
        return std::nullopt;
      if (u.op() == Op::FDIV && std::get<double>(args[1]) == 0) return std::nullopt;
      r = ir::exec_alu(u.op(), u.dtype(), u.src(u.op() == Op::WHERE ? 1 : 0).dtype(), args);
    }
    if (r) env[u.get()] = *r;
    return r;
  }
};

// Bit-exact, except that any NaN equals any NaN (payloads differ between GPUs) and +0 equals -0 (the
// IR treats the sign of zero as insignificant: codegen compiles float math with nsz, docs/ir.md).
bool same(const codegen::HostData& a, const codegen::HostData& b, size_t i) {
  if (a.bits(i) == b.bits(i)) return true;
  if (!a.dtype.is_float()) return false;
  return (a.is_nan(i) && b.is_nan(i)) || (a.value(i) == 0 && b.value(i) == 0);
}

}  // namespace

TEST_CASE("differential: random kernels agree bit for bit with the IR's reference evaluation on every device") {
  const uint64_t seed = test::suite_seed("UGPU_DIFF_SEED", 1);
  const int64_t max_kernels = env_int("UGPU_DIFF_KERNELS", test::sample_size(1500, 400)),
                seconds = env_int("UGPU_DIFF_SECONDS", test::sample_size(90, 30));
  MESSAGE("UGPU_DIFF_SEED=" << seed << ", up to " << max_kernels << " kernels in " << seconds << " s");
  std::vector<std::pair<std::string, std::unique_ptr<hcq::Device>>> devices;
  for (const char* name : {"cpu", "emu:amd", "emu:amd:pci", "emu:amd:usb", "emu:nv", "emu:qcom"})
    devices.emplace_back(name, drivers::open_device(name));
  std::map<std::string, int64_t> skipped;
  Generator gen(seed);
  std::mt19937_64 rng(seed * 7919 + 1);
  auto start = std::chrono::steady_clock::now();
  int64_t ran = 0, compared = 0;
  for (; ran < max_kernels && std::chrono::steady_clock::now() - start < std::chrono::seconds(seconds); ++ran) {
    Kernel k = gen.make();
    CAPTURE(ran);
    INFO("kernel (seed ", seed, ", number ", ran, "):\n", k.text);
    UOp sink = ir::parse(k.text);
    codegen::Buffers in;
    in.push_back(
        codegen::HostData{.slot = 0, .dtype = k.out, .bytes = std::vector<uint8_t>(k.out_elements * static_cast<size_t>(k.out.itemsize()), 0xA5)});
    for (DType t : k.inputs) {
      in.push_back(codegen::HostData{
          .slot = static_cast<int64_t>(in.size()), .dtype = t, .bytes = std::vector<uint8_t>(k.in_elements * static_cast<size_t>(t.itemsize()))});
      fill(in.back(), rng);
    }
    codegen::HostData want = in[0];
    std::vector<bool> defined(k.out_elements, true);  // an element no store writes keeps its bytes
    Reference(sink, in, k.var).run(want, defined);
    std::vector<std::vector<uint8_t>> bytes;
    for (const auto& b : in) bytes.push_back(b.bytes);
    bool f64 = false;
    for (const UOp& u : sink.toposort()) f64 = f64 || u.dtype().scalar == ir::ScalarType::Double;
    for (auto& [name, dev] : devices) {
      CAPTURE(name);
      if (f64 && !codegen::find_target(dev->target()).has_f64) {  // an Adreno has no 64-bit floats
        ++skipped[name];
        continue;
      }
      std::vector<std::vector<uint8_t>> out;
      try {
        out = test::run_on(*dev, k.text, bytes, k.var >= 0 ? std::vector<int64_t>{k.var} : std::vector<int64_t>{});
      } catch (const std::exception& e) {
        FAIL_CHECK("the kernel did not run: " << std::string(e.what()));
        dev = drivers::open_device(name);  // a device in an error state is replaced
        continue;
      }
      codegen::HostData got{.slot = 0, .dtype = k.out, .bytes = out[0]};
      size_t wrong = 0, first = 0;
      for (size_t e = 0; e < k.out_elements; ++e)
        if (defined[e] && !same(want, got, e)) first = wrong++ ? first : e;
      compared += static_cast<int64_t>(k.out_elements);
      CHECK_MESSAGE(wrong == 0, wrong << " of " << k.out_elements << " elements differ from the reference; first: element " << first << ": want "
                                      << want.value(first) << " (bits " << want.bits(first) << "), got " << got.value(first) << " (bits "
                                      << got.bits(first) << ")");
    }
  }
  MESSAGE(ran << " random kernels (seed " << seed << "), " << compared << " elements compared across " << devices.size() << " devices");
  for (const auto& [name, n] : skipped) MESSAGE(name << ": " << n << " kernels with float64 not run (the target has none)");
  CHECK(ran > 0);
}
