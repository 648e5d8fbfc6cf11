#include "ir/verify.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <variant>

#include "ir/text.h"

namespace ugpu::ir {
namespace {

// Returns an empty string when the node is well formed, else what is wrong.
using Check = std::string (*)(const UOp&);

std::string need(bool ok, const std::string& why) { return ok ? "" : why; }
std::string nsrc(const UOp& u, size_t lo, size_t hi) {
  size_t n = u.src().size();
  if (n >= lo && n <= hi) return "";
  return "expects " + (lo == hi ? std::to_string(lo) : std::to_string(lo) + ".." + (hi > 99 ? "n" : std::to_string(hi))) + " sources, has " +
         std::to_string(n);
}
constexpr size_t kMany = 1u << 30;
bool int_scalar(DType t) { return t.is_int() && t.is_scalar(); }
std::string same_dtype(const UOp& u, size_t from) {
  for (size_t i = from; i < u.src().size(); ++i)
    if (u.src(i).dtype() != u.dtype() && u.src(i).op() != Op::INVALID)
      return "source " + std::to_string(i) + " is " + u.src(i).dtype().name() + ", the node " + u.dtype().name();
  return "";
}
std::string first(std::initializer_list<std::string> checks) {
  for (const std::string& c : checks)
    if (!c.empty()) return c;
  return "";
}

std::string check_const(const UOp& u) {
  DType t = u.dtype();
  if (!u.src().empty()) return "CONST has sources";
  if (t.is_ptr() || t.is_void()) return "CONST of dtype " + t.name();
  if (t.is_float()) {
    const double* v = std::get_if<double>(&u.arg());
    if (!v) return "float CONST needs a float value";
    return need(std::isnan(*v) || round_float(*v, t) == *v, "value " + float_text(*v) + " is not exact in " + t.name());
  }
  const int64_t* v = std::get_if<int64_t>(&u.arg());
  if (!v) return "integer CONST needs an integer value";
  return need(wrap_int(*v, t) == *v, "value " + std::to_string(*v) + " does not fit " + t.name());
}

std::string check_define(const UOp& u) {
  AddrSpace want = u.op() == Op::DEFINE_GLOBAL ? AddrSpace::Global : u.op() == Op::DEFINE_LOCAL ? AddrSpace::Local : AddrSpace::Reg;
  std::string e = first({nsrc(u, 0, 0), need(u.dtype().addrspace == want, "dtype must be a pointer in its address space, is " + u.dtype().name())});
  if (!e.empty()) return e;
  if (u.op() == Op::DEFINE_GLOBAL) return need(u.arg_as<int64_t>() >= 0, "slot must be >= 0");
  const Ints& a = u.arg_as<Ints>();  // (id, element count)
  return need(a.size() == 2 && a[0] >= 0 && a[1] >= 1, "arg must be (id, element count) with id >= 0 and count >= 1");
}

// A tensor-level buffer: (unique id, element count), holding values of a scalar dtype.
std::string check_buffer(const UOp& u) {
  const Ints& a = u.arg_as<Ints>();
  return first({nsrc(u, 0, 0),
                need(u.dtype().is_scalar() && !u.dtype().is_void() && !u.dtype().is_index(), "BUFFER holds scalars of a storable dtype"),
                need(a.size() == 2 && a[0] >= 0 && a[1] >= 0, "arg must be (id, element count) with id >= 0 and count >= 0")});
}

std::string check_iota(const UOp& u) {
  const Ints& a = u.arg_as<Ints>();
  return first({nsrc(u, 0, 0), need(int_scalar(u.dtype()) && !u.dtype().is_index(), "IOTA counts in an integer dtype"),
                need(a.size() == 1 && a[0] >= 0, "arg must be (n) with n >= 0")});
}

// GATHER(x, index) {axis}: x at index's values along the axis, at index's position on the others.
std::string check_gather(const UOp& u) {
  if (auto e = nsrc(u, 2, 2); !e.empty()) return e;
  if (u.src(0).dtype() != u.dtype()) return "the input is " + u.src(0).dtype().name() + ", the node " + u.dtype().name();
  if (!u.src(1).dtype().is_int() || !u.src(1).dtype().is_scalar()) return "the index must be an integer";
  const auto& x = u.src(0).shape();
  const auto& i = u.src(1).shape();
  int64_t ax = u.arg_as<int64_t>();
  if (!x || !i) return "";
  if (x->size() != i->size()) return "input and index have different ranks";
  if (ax < 0 || static_cast<size_t>(ax) >= x->size()) return "axis outside the shape";
  for (size_t d = 0; d < x->size(); ++d)
    if (static_cast<int64_t>(d) != ax && (*i)[d] > (*x)[d]) return "index larger than the input on axis " + std::to_string(d);
  return "";
}

// ASSIGN(target, value) {-1}: value written over the whole target, shapes equal.
// ASSIGN(target, value, index) {axis}: target[..., index[t], ...] = value[..., t, ...] along the axis
// (index 1-D, value's other axes the target's). Either way the node is the target after the write.
std::string check_assign(const UOp& u) {
  if (auto e = nsrc(u, 2, 3); !e.empty()) return e;
  if (u.src(0).dtype() != u.dtype() || u.src(1).dtype() != u.dtype()) return "target, value and node must have one dtype";
  int64_t ax = u.arg_as<int64_t>();
  const auto& t = u.src(0).shape();
  const auto& v = u.src(1).shape();
  if (u.src().size() == 2) return first({need(ax == -1, "a whole assign has axis -1"), need(!t || !v || *t == *v, "value and target shapes differ")});
  if (!u.src(2).dtype().is_int() || !u.src(2).dtype().is_scalar()) return "the index must be an integer";
  const auto& i = u.src(2).shape();
  if (!t || !v) return "";
  if (t->size() != v->size()) return "value and target have different ranks";
  if (ax < 0 || static_cast<size_t>(ax) >= t->size()) return "axis outside the shape";
  for (size_t d = 0; d < t->size(); ++d)
    if (static_cast<int64_t>(d) != ax && (*t)[d] != (*v)[d]) return "value and target differ on axis " + std::to_string(d);
  return need(!i || (i->size() == 1 && (*i)[0] == (*v)[ax]), "the index must be 1-D, as long as the value's axis");
}

std::string check_var(const UOp& u) {
  const auto& v = u.arg_as<VarArg>();
  return first({nsrc(u, 0, 0), need(int_scalar(u.dtype()), "variable must be an integer scalar"), need(v.min <= v.max, "min > max"),
                need(!v.name.empty(), "variable needs a name"),
                need(!has_exact_bounds(u.dtype()) || (v.min >= u.dtype().min_int() && v.max <= u.dtype().max_int()),
                     "bounds do not fit " + u.dtype().name())});
}

std::string check_special(const UOp& u) {
  return first({nsrc(u, 1, 1), need(int_scalar(u.dtype()), "must be an integer"), need(int_scalar(u.src(0).dtype()), "size must be an integer"),
                need(!u.arg_as<std::string>().empty(), "needs a name")});
}

std::string check_range(const UOp& u) {
  if (auto e = first({nsrc(u, 1, kMany), need(int_scalar(u.dtype()), "must be an integer"),
                      need(u.src(0).dtype() == u.dtype(), "end is " + u.src(0).dtype().name() + ", range " + u.dtype().name())});
      !e.empty())
    return e;
  return need(u.src(0).vmax() >= 0, "the end cannot be negative (at most " + std::to_string(u.src(0).vmax()) + ")");
}

std::string check_end(const UOp& u) {
  if (auto e = nsrc(u, 2, kMany); !e.empty()) return e;
  for (size_t i = 1; i < u.src().size(); ++i)
    if (u.src(i).op() != Op::RANGE) return "sources after the first must be RANGEs";
  return need(u.dtype().is_void(), "END is void");
}

std::string check_void(const UOp& u) { return need(u.dtype().is_void(), std::string(op_name(u.op())) + " is void"); }
std::string check_if(const UOp& u) { return first({nsrc(u, 1, kMany), need(u.src(0).dtype().is_bool(), "condition must be bool"), check_void(u)}); }
std::string check_endif(const UOp& u) { return first({nsrc(u, 1, 1), need(u.src(0).op() == Op::IF, "ENDIF closes an IF"), check_void(u)}); }
std::string check_after(const UOp& u) {
  return first({nsrc(u, 1, kMany), need(u.src(0).dtype() == u.dtype(), "AFTER has its first source's dtype")});
}

std::string check_vectorize(const UOp& u) {
  if (auto e = nsrc(u, 1, kMany); !e.empty()) return e;
  DType el = u.src(0).dtype();
  for (const UOp& s : u.src())
    if (s.dtype() != el) return "sources differ in dtype";
  return need(el.is_scalar() && u.dtype() == el.vec(static_cast<uint16_t>(u.src().size())),
              "dtype must be " + el.name() + ".vec(" + std::to_string(u.src().size()) + ")");
}

std::string check_gep(const UOp& u) {
  if (auto e = nsrc(u, 1, 1); !e.empty()) return e;
  const Ints& lanes = u.arg_as<Ints>();
  DType v = u.src(0).dtype();
  for (int64_t l : lanes)
    if (l < 0 || l >= v.count) return "lane " + std::to_string(l) + " outside " + v.name();
  return need(!lanes.empty() && u.dtype() == v.element().vec(static_cast<uint16_t>(lanes.size())), "dtype must be the selected lanes'");
}

std::string check_index(const UOp& u) {
  if (auto e = nsrc(u, 2, kMany); !e.empty()) return e;
  if (!u.src(0).dtype().is_ptr()) return "INDEX's first source must be a pointer";
  for (size_t i = 1; i < u.src().size(); ++i)
    if (!u.src(i).dtype().is_int() && !(i == u.src().size() - 1 && u.src(i).dtype().is_bool())) return "indices must be integers";
  return first({need(u.dtype().is_ptr() && u.dtype().scalar == u.src(0).dtype().scalar, "INDEX yields a pointer of its buffer's type"),
                need(u.dtype().addrspace == u.src(0).dtype().addrspace,
                     "INDEX yields a pointer in its buffer's address space (" + u.src(0).dtype().name() + "), not " + u.dtype().name())});
}

// A masked access carries its gate in the INDEX (last source, bool); a gated LOAD may give the value
// to use where the gate is false (default 0).
std::string check_load(const UOp& u) {
  if (auto e = nsrc(u, 1, 2); !e.empty()) return e;
  if (!u.src(0).dtype().is_ptr()) return "LOAD's first source must be a pointer";
  if (u.dtype() != u.src(0).dtype().base()) return "LOAD yields " + u.src(0).dtype().base().name();
  return need(u.src().size() == 1 || u.src(1).dtype() == u.dtype(), "alt value has another dtype");
}

std::string check_store(const UOp& u) {
  if (auto e = nsrc(u, 2, 2); !e.empty()) return e;
  if (!u.src(0).dtype().is_ptr()) return "STORE's first source must be a pointer";
  return first({need(u.src(1).dtype() == u.src(0).dtype().base(),
                     "stored value is " + u.src(1).dtype().name() + ", buffer holds " + u.src(0).dtype().base().name()),
                check_void(u)});
}

bool reduce_op(Op o) { return o == Op::ADD || o == Op::MUL || o == Op::MAX; }

std::string check_reduce(const UOp& u) {
  if (auto e = nsrc(u, 1, kMany); !e.empty()) return e;
  for (size_t i = 1; i < u.src().size(); ++i)
    if (u.src(i).op() != Op::RANGE) return "reduced axes must be RANGEs";
  return first(
      {need(reduce_op(u.arg_as<Op>()), "reduces with ADD, MUL or MAX"), need(u.src(0).dtype() == u.dtype(), "REDUCE has its value's dtype")});
}

std::string check_reduce_axis(const UOp& u) {
  if (auto e = nsrc(u, 1, 1); !e.empty()) return e;
  const auto& a = u.arg_as<ReduceAxisArg>();
  if (!reduce_op(a.op)) return "reduces with ADD, MUL or MAX";
  if (const auto& s = u.src(0).shape())
    for (int64_t ax : a.axes)
      if (ax < 0 || static_cast<size_t>(ax) >= s->size()) return "axis " + std::to_string(ax) + " outside the shape";
  return same_dtype(u, 0);
}

std::string check_movement(const UOp& u) {
  if (auto e = nsrc(u, 1, 1); !e.empty()) return e;
  if (auto e = same_dtype(u, 0); !e.empty()) return e;
  const auto& in = u.src(0).shape();
  // The element count, or -1 past int64 (hostile shapes must not overflow here).
  auto prod = [](const Shape& s) {
    int64_t n = 1;
    for (int64_t d : s)
      if (__builtin_mul_overflow(n, d, &n)) return int64_t{-1};
    return n;
  };
  switch (u.op()) {
    case Op::RESHAPE: {
      const Ints& to = u.arg_as<Ints>();
      for (int64_t d : to)
        if (d < 0) return "negative dimension";
      return need(!in || (prod(*in) == prod(to) && prod(to) >= 0), "reshape changes the element count (or it does not fit int64)");
    }
    case Op::EXPAND: {
      const Ints& to = u.arg_as<Ints>();
      for (int64_t d : to)
        if (d < 0) return "negative dimension";
      if (!in) return "";
      if (to.size() != in->size()) return "expand keeps the rank";
      for (size_t i = 0; i < to.size(); ++i)
        if ((*in)[i] != to[i] && (*in)[i] != 1) return "only size-1 axes expand";
      return "";
    }
    case Op::PERMUTE: {
      Ints p = u.arg_as<Ints>();
      std::sort(p.begin(), p.end());
      for (size_t i = 0; i < p.size(); ++i)
        if (p[i] != static_cast<int64_t>(i)) return "not a permutation";
      return need(!in || in->size() == p.size(), "permutation rank differs from the shape's");
    }
    case Op::CONTIGUOUS:
    case Op::DETACH: return "";
    case Op::FLIP: {
      for (int64_t a : u.arg_as<Ints>())
        if (a < 0 || (in && static_cast<size_t>(a) >= in->size())) return "flip axis outside the shape";
      return "";
    }
    default: {  // PAD, SHRINK
      const Pairs& p = u.arg_as<Pairs>();
      if (in && p.size() != in->size()) return "one pair per axis";
      for (size_t i = 0; i < p.size(); ++i) {
        if (u.op() == Op::PAD && (p[i].first < 0 || p[i].second < 0)) return "negative padding";
        if (u.op() == Op::SHRINK && (p[i].first < 0 || p[i].first > p[i].second || (in && p[i].second > (*in)[i])))
          return "shrink range outside the axis";
      }
      return "";
    }
  }
}

std::string check_unary(const UOp& u) {
  if (auto e = nsrc(u, 1, 1); !e.empty()) return e;
  DType s = u.src(0).dtype(), t = u.dtype();
  switch (u.op()) {
    case Op::CAST: return need(!s.is_ptr() && !t.is_ptr() && s.count == t.count && !t.is_void(), "CAST keeps the lane count");
    case Op::BITCAST: return need(s.bitsize() * s.count == t.bitsize() * t.count && !s.is_index() && !t.is_index(), "BITCAST keeps the bit size");
    case Op::NEG:
    case Op::TRUNC: return first({same_dtype(u, 0), need(!t.is_bool(), "not for bool")});
    default: return first({same_dtype(u, 0), need(t.is_float(), std::string(op_name(u.op())) + " is for floats")});
  }
}

std::string check_binary(const UOp& u) {
  if (auto e = nsrc(u, 2, 2); !e.empty()) return e;
  DType a = u.src(0).dtype(), b = u.src(1).dtype();
  if (a != b) return "sources have different dtypes " + a.name() + " and " + b.name();
  if (a.is_ptr() || a.is_void()) return "ALU on " + a.name();
  Op op = u.op();
  if (is_comparison(op)) return need(u.dtype() == dtypes::bool_.vec(a.count), "comparisons give bool");
  if (u.dtype() != a) return "result must be " + a.name();
  switch (op) {
    case Op::FDIV:
    case Op::POW: return need(a.is_float(), std::string(op_name(op)) + " is for floats");
    case Op::CDIV:
    case Op::CMOD:
    case Op::FLOORDIV:
    case Op::FLOORMOD:
    case Op::SHL:
    case Op::SHR: return need(a.is_int(), std::string(op_name(op)) + " is for integers");
    case Op::AND:
    case Op::OR:
    case Op::XOR: return need(a.is_int() || a.is_bool(), std::string(op_name(op)) + " is for integers and bool");
    default: return "";
  }
}

std::string check_ternary(const UOp& u) {
  if (auto e = nsrc(u, 3, 3); !e.empty()) return e;
  if (u.op() == Op::WHERE)
    return first({need(u.src(0).dtype() == dtypes::bool_.vec(u.dtype().count) || u.src(0).dtype() == dtypes::bool_,
                       "condition must be bool (one per lane, or one for all)"),
                  same_dtype(u, 1), need(u.src(1).op() != Op::INVALID || u.src(2).op() != Op::INVALID, "both branches INVALID")});
  if (u.op() == Op::FMA)
    return first({same_dtype(u, 0), same_dtype(u, 1), same_dtype(u, 2), need(u.dtype().is_float(), "FMA on " + u.dtype().name())});
  return first({same_dtype(u, 0), need(!u.dtype().is_bool() && !u.dtype().is_ptr(), "MULACC on " + u.dtype().name())});
}

std::string check_noarg_void(const UOp& u) { return check_void(u); }

// WMMA(a, b, c): a tensor core's matrix product of one wave's fragments, D = A x B + C (codegen/tensor_core.h).
std::string check_wmma(const UOp& u) {
  if (auto e = nsrc(u, 3, 3); !e.empty()) return e;
  DType a = u.src(0).dtype(), b = u.src(1).dtype(), c = u.src(2).dtype();
  return first({need(a.scalar == b.scalar && !a.is_ptr() && !b.is_ptr() && a.count > 1 && b.count > 1 && a.is_float(),
                     "A and B are float vectors of one type"),
                need(c.count > 1 && c.is_float() && !c.is_ptr(), "C is a float vector"), same_dtype(u, 2)});
}

struct Entry {
  Op op;
  Check check;
};
constexpr Entry kChecks[] = {
    {Op::CONST, check_const},
    {Op::INVALID, [](const UOp& u) { return first({nsrc(u, 0, 0), need(int_scalar(u.dtype()), "INVALID is an integer")}); }},
    {Op::DEFINE_GLOBAL, check_define},
    {Op::DEFINE_LOCAL, check_define},
    {Op::DEFINE_REG, check_define},
    {Op::DEFINE_VAR, check_var},
    {Op::BUFFER, check_buffer},
    {Op::IOTA, check_iota},
    {Op::GATHER, check_gather},
    {Op::ASSIGN, check_assign},
    {Op::SPECIAL, check_special},
    {Op::RANGE, check_range},
    {Op::END, check_end},
    {Op::IF, check_if},
    {Op::ENDIF, check_endif},
    {Op::BARRIER, check_noarg_void},
    {Op::SINK, check_noarg_void},
    {Op::NOOP, check_noarg_void},
    {Op::GROUP, check_noarg_void},
    {Op::AFTER, check_after},
    {Op::VECTORIZE, check_vectorize},
    {Op::GEP, check_gep},
    {Op::INDEX, check_index},
    {Op::LOAD, check_load},
    {Op::STORE, check_store},
    {Op::REDUCE, check_reduce},
    {Op::REDUCE_AXIS, check_reduce_axis},
    {Op::WMMA, check_wmma},
};

Check check_for(Op op) {
  for (const Entry& e : kChecks)
    if (e.op == op) return e.check;
  switch (op_info(op).group) {
    case OpGroup::Movement: return check_movement;
    case OpGroup::Unary: return check_unary;
    case OpGroup::Binary: return check_binary;
    case OpGroup::Ternary: return check_ternary;
    default: return nullptr;
  }
}

bool arg_kind_ok(const UOp& u) {
  const Arg& a = u.arg();
  switch (op_info(u.op()).arg) {
    case ArgKind::None: return std::holds_alternative<std::monostate>(a);
    case ArgKind::Value: return std::holds_alternative<int64_t>(a) || std::holds_alternative<double>(a);
    case ArgKind::Int: return std::holds_alternative<int64_t>(a);
    case ArgKind::String: return std::holds_alternative<std::string>(a);
    case ArgKind::Var: return std::holds_alternative<VarArg>(a);
    case ArgKind::Range: return std::holds_alternative<RangeArg>(a);
    case ArgKind::ReduceOp: return std::holds_alternative<Op>(a);
    case ArgKind::ReduceAxis: return std::holds_alternative<ReduceAxisArg>(a);
    case ArgKind::Ints: return std::holds_alternative<Ints>(a);
    case ArgKind::Pairs: return std::holds_alternative<Pairs>(a);
  }
  return false;
}

}  // namespace

std::vector<Problem> verify_nodes(const UOp& root) {
  std::vector<Problem> problems;
  for (const UOp& u : root.toposort()) {
    std::string why;
    if (!arg_kind_ok(u)) why = "arg of the wrong kind";
    else if (Check c = check_for(u.op())) {
      try {
        why = c(u);
      } catch (const std::bad_variant_access&) {  // a check reading an argument some other op's shape allows
        why = "arg of the wrong kind";
      } catch (const Error& e) {  // a check reading a source the node does not have
        why = std::string("too few sources: ") + e.what();
      }
    }
    if (!why.empty()) problems.push_back({u, std::string(op_name(u.op())) + ": " + why + ": " + to_inline(u, 160)});
  }
  return problems;
}

std::vector<std::string> verify(const UOp& root) {
  std::vector<std::string> out;
  for (Problem& p : verify_nodes(root)) out.push_back(std::move(p.message));
  return out;
}

namespace {
void throw_problems(const std::vector<Problem>& problems, const SourceMap* where, const std::string& file) {
  if (problems.empty()) return;
  std::string msg = "UOp graph fails verification (" + std::to_string(problems.size()) + " problem" + (problems.size() > 1 ? "s" : "") + "):";
  for (size_t i = 0; i < problems.size() && i < 8; ++i) {
    msg += "\n  ";
    if (where)
      if (auto it = where->find(problems[i].node); it != where->end())
        msg += file + ":" + std::to_string(it->second.line) + ":" + std::to_string(it->second.col) + ": ";
    msg += problems[i].message;
  }
  throw VerifyError(msg);
}
}  // namespace

void verify_or_throw(const UOp& root) { throw_problems(verify_nodes(root), nullptr, ""); }
void verify_or_throw(const UOp& root, const SourceMap& where, const std::string& file) { throw_problems(verify_nodes(root), &where, file); }

}  // namespace ugpu::ir
