// The optimizer's actions on a kernel's loops, with their legality checks (codegen/opt/opt.h).
#include <algorithm>
#include <charconv>
#include <numeric>
#include <unordered_map>

#include "codegen/opt/opt.h"
#include "codegen/passes.h"
#include "ir/rewrite.h"
#include "ir/symbolic.h"
#include "ir/text.h"
#include "ir/upat.h"

namespace ugpu::codegen::opt {
using namespace ir;
namespace {

constexpr int64_t kMaxUpcast = 16;   // one UPCAST: copies of the body per output element
constexpr int64_t kMaxUnroll = 64;   // one UNROLL (expand()'s limit of one axis)
constexpr int64_t kMaxCopies = 256;  // all UPCAST and UNROLL axes together
constexpr int64_t kMaxGroup = 256;   // work-items reducing one value together

constexpr std::string_view kOpNames[] = {
#define UGPU_OPT_NAME(name) #name,
    UGPU_OPT_OPS(UGPU_OPT_NAME)
#undef UGPU_OPT_NAME
};

std::string axis_name(const Axis& a) { return std::string(axis_type_name(a.type)) + " axis " + std::to_string(a.id); }

// Rebuilds the graph with each replaced range's value in its place wherever a value is used, and with
// its list of loops where an END or REDUCE lists the loops it closes.
struct RangeReplacement {
  UOp value;
  std::vector<UOp> closes;
};
UOp replace_ranges(const UOp& sink, const std::unordered_map<UOp, RangeReplacement, UOpHash>& repl) {
  std::unordered_map<const void*, UOp> done;
  for (const UOp& u : sink.toposort()) {
    if (auto it = repl.find(u); it != repl.end()) {
      done[u.get()] = it->second.value;
      continue;
    }
    std::vector<UOp> src;
    bool changed = false;
    bool lists_loops = u.op() == Op::END || u.op() == Op::REDUCE;
    for (size_t i = 0; i < u.src().size(); ++i) {
      const UOp& s = u.src(i);
      if (auto it = repl.find(s); lists_loops && i > 0 && it != repl.end()) {
        src.insert(src.end(), it->second.closes.begin(), it->second.closes.end());
        changed = true;
        continue;
      }
      const UOp& n = done.at(s.get());
      changed |= !(n == s);
      src.push_back(n);
    }
    done[u.get()] = changed ? UOp::make(u.op(), u.dtype(), src, u.arg()) : u;
  }
  return done.at(sink.get());
}
UOp replace_range(const UOp& sink, const UOp& r, const UOp& value, const std::vector<UOp>& closes) {
  return replace_ranges(sink, {{r, {value, closes}}});
}

// Splits axis a into (outer: a's id and type, size/amount) and (inner: a new id, `type`, amount):
// r = outer * amount + inner. An amount of the whole size changes the axis's type instead.
UOp split(const UOp& sink, const std::vector<Axis>& axes, const Axis& a, int64_t amount, AxisType type) {
  const RangeArg& ra = a.range.arg_as<RangeArg>();
  if (amount == a.size) {
    UOp whole = UOp::range(a.size, ra.axis, type);
    return replace_range(sink, a.range, whole, {whole});
  }
  UOp outer = UOp::range(a.size / amount, ra.axis, ra.type);
  UOp inner = UOp::range(amount, next_axis_id(axes), type);
  return replace_range(sink, a.range, outer * UOp::const_int(dtypes::index, amount) + inner, {outer, inner});
}

// PADTO: the axis runs to the next multiple of `amount`; the extra iterations read nothing (their
// loads are masked), store nothing, and add the identity to any reduction over the axis.
struct Padding {
  UOp range, valid;
};
const PatternMatcher& padding_rules() {
  static const PatternMatcher pm("padto", {Rule(
                                               UPat({Op::LOAD, Op::STORE}),
                                               [](const Match& m) {
                                                 const UOp& u = m.node();
                                                 const Padding& p = m.ctx<Padding>();
                                                 if (u.src(0).op() != Op::INDEX || u.src(0).src().size() < 2) return UOp();
                                                 return depends_on(u.src(0).src(1), p.range) ? add_mask(u, p.valid) : UOp();
                                               },
                                               "mask the padded iterations' accesses"),
                                           Rule(
                                               UPat(Op::REDUCE),
                                               [](const Match& m) {
                                                 const UOp& u = m.node();
                                                 const Padding& p = m.ctx<Padding>();
                                                 if (!closes(u, p.range)) return UOp();
                                                 std::vector<UOp> src(u.src().begin(), u.src().end());
                                                 src[0] = p.valid.where(src[0], reduce_identity(u.arg_as<Op>(), u.dtype()));
                                                 return u.with_src(src);
                                               },
                                               "the padded iterations add the identity")});
  return pm;
}
UOp pad(const UOp& sink, const Axis& a, int64_t amount) {
  int64_t padded = (a.size + amount - 1) / amount * amount;
  const RangeArg& ra = a.range.arg_as<RangeArg>();
  Padding p;
  p.range = UOp::range(padded, ra.axis, ra.type);
  p.valid = p.range.lt(UOp::const_int(dtypes::index, a.size));
  return graph_walk(replace_range(sink, a.range, p.range, {p.range}), padding_rules(), &p);
}

// LANES: reduce axis a = outer * n + lane; every reduction over a becomes n reductions over outer
// (one per lane, side by side: unrolled copies that vectorize) and a sum of the n results at the end.
const PatternMatcher& lane_rules() {
  static const PatternMatcher pm("lanes", {Rule(
                                              UPat(Op::REDUCE),
                                              [](const Match& m) {
                                                const UOp& u = m.node();
                                                const UOp& lane = m.ctx<UOp>();
                                                if (!closes(u, lane)) return UOp();
                                                std::vector<UOp> inner{u.src(0)};
                                                for (size_t i = 1; i < u.src().size(); ++i)
                                                  if (!(u.src(i) == lane)) inner.push_back(u.src(i));
                                                return UOp::make(Op::REDUCE, u.dtype(), {UOp::make(Op::REDUCE, u.dtype(), inner, u.arg()), lane},
                                                                 u.arg());
                                              },
                                              "one reduction per lane, summed over the lanes")});
  return pm;
}
UOp lanes(const UOp& sink, const std::vector<Axis>& axes, const Axis& a, int64_t n) {
  const RangeArg& ra = a.range.arg_as<RangeArg>();
  UOp outer = UOp::range(a.size / n, ra.axis, AxisType::REDUCE);
  UOp lane = UOp::range(n, next_axis_id(axes), AxisType::UNROLL);
  return graph_walk(replace_range(sink, a.range, outer * UOp::const_int(dtypes::index, n) + lane, {outer, lane}), lane_rules(), &lane);
}

// SWAP: the two output axes exchange their ids, so their loop order (and on GPUs which one is the
// grid's x) is exchanged; what each computes stays the same.
UOp swap(const UOp& sink, const Axis& a, const Axis& b) {
  UOp ra = UOp::range(a.range.src(0), b.id, a.type), rb = UOp::range(b.range.src(0), a.id, b.type);
  return replace_ranges(sink, {{a.range, {ra, {ra}}}, {b.range, {rb, {rb}}}});
}

}  // namespace

int64_t next_axis_id(const std::vector<Axis>& axes) {
  int64_t m = -1;
  for (const Axis& a : axes) m = std::max(m, a.id);
  return m + 1;
}

bool has_workgroup_memory(const UOp& sink) {
  for (const UOp& u : sink.toposort())
    if (u.op() == Op::DEFINE_LOCAL || u.op() == Op::BARRIER) return true;
  return false;
}

std::string_view opt_op_name(OptOp op) { return kOpNames[static_cast<size_t>(op)]; }

std::string Opt::text() const { return std::string(opt_op_name(op)) + "(" + std::to_string(axis) + ", " + std::to_string(amount) + ")"; }

std::string opts_text(std::span<const Opt> opts) {
  if (opts.empty()) return "none";
  std::string s;
  for (const Opt& o : opts) s += (s.empty() ? "" : " ") + o.text();
  return s;
}

std::vector<Opt> parse_opts(std::string_view text) {
  std::vector<Opt> out;
  if (text.find_first_not_of(" \t\n") != std::string_view::npos && text.substr(text.find_first_not_of(" \t\n")).starts_with("none")) return out;
  size_t i = 0;
  auto skip = [&] {
    while (i < text.size() && (text[i] == ' ' || text[i] == ',' || text[i] == '\t' || text[i] == '\n')) ++i;
  };
  auto number = [&](const char* what) {
    skip();
    int64_t v = 0;
    auto [p, ec] = std::from_chars(text.data() + i, text.data() + text.size(), v);
    if (ec != std::errc()) throw Error("optimizer actions: expected " + std::string(what) + " at '" + std::string(text.substr(i, 20)) + "'");
    i = static_cast<size_t>(p - text.data());
    return v;
  };
  for (skip(); i < text.size(); skip()) {
    size_t open = text.find('(', i);
    if (open == std::string_view::npos) throw Error("optimizer actions: expected NAME(axis, amount) at '" + std::string(text.substr(i, 20)) + "'");
    std::string_view name = text.substr(i, open - i);
    auto it = std::find(std::begin(kOpNames), std::end(kOpNames), name);
    if (it == std::end(kOpNames)) {
      std::string names;
      for (auto n : kOpNames) names += (names.empty() ? "" : ", ") + std::string(n);
      throw Error("optimizer actions: unknown action '" + std::string(name) + "' (one of " + names + ")");
    }
    i = open + 1;
    Opt o{static_cast<OptOp>(it - std::begin(kOpNames))};
    o.axis = number("an axis id");
    o.amount = number("an amount");
    skip();
    if (i >= text.size() || text[i] != ')') throw Error("optimizer actions: expected ')' after " + o.text());
    ++i;
    out.push_back(o);
  }
  return out;
}

int64_t product_of(const std::vector<Axis>& axes, std::initializer_list<AxisType> types) {
  int64_t p = 1;
  for (const Axis& a : axes)
    if (std::find(types.begin(), types.end(), a.type) != types.end()) p *= std::max<int64_t>(a.size, 1);
  return p;
}

std::vector<Axis> kernel_axes(const UOp& sink) {
  std::vector<Axis> out;
  for (const UOp& u : sink.toposort())
    if (u.op() == Op::RANGE) {
      const RangeArg& a = u.arg_as<RangeArg>();
      out.push_back({u, a.axis, a.type, u.src(0).is_const() ? u.src(0).const_int() : -1});
    }
  std::sort(out.begin(), out.end(), [](const Axis& a, const Axis& b) { return a.id < b.id; });
  return out;
}

bool hand_optimized(const UOp& sink) {
  for (const Axis& a : kernel_axes(sink))
    if (a.type != AxisType::GLOBAL && a.type != AxisType::LOOP && a.type != AxisType::REDUCE) return true;
  return has_workgroup_memory(sink);
}

UOp apply_opt(const UOp& sink, const Opt& o, const Target& t) {
  std::vector<Axis> axes = kernel_axes(sink);
  auto find = [&](int64_t id) -> const Axis& {
    for (const Axis& a : axes)
      if (a.id == id) return a;
    std::string ids;
    for (const Axis& a : axes) ids += (ids.empty() ? "" : ", ") + std::to_string(a.id) + " " + std::string(axis_type_name(a.type));
    throw OptError(o.text() + ": the kernel has no axis " + std::to_string(id) + " (its axes: " + (ids.empty() ? "none" : ids) + ")");
  };
  if (o.op == OptOp::STAGE) {
    auto refuse = [&](const std::string& why) -> OptError { return OptError(o.text() + " on buffer " + std::to_string(o.axis) + ": " + why); };
    if (o.amount != 0) throw refuse("STAGE's amount is 0");
    return apply_stage(sink, axes, o.axis, t, refuse);
  }
  if (staged(sink)) throw OptError(o.text() + ": the kernel's tiles are staged in workgroup memory already; STAGE goes after every other action");
  const Axis& a = find(o.axis);
  auto refuse = [&](const std::string& why) -> OptError { return OptError(o.text() + " on " + axis_name(a) + ": " + why); };
  for (const Axis& x : axes)
    for (const Axis& y : axes)
      if (&x != &y && x.id == y.id) throw refuse("two ranges share axis id " + std::to_string(x.id) + "; the kernel's axes must be distinct");
  if (o.op == OptOp::SWAP) {
    const Axis& b = find(o.amount);
    if (!is_output(a.type) || a.type != b.type) throw refuse("SWAP exchanges two output axes of one type (GLOBAL or LOOP), not " + axis_name(b));
    if (a.id == b.id) throw refuse("SWAP needs two different axes");
    return swap(sink, a, b);
  }
  if (o.op == OptOp::TC) {
    if (a.size < 0) throw refuse("its size is not a constant (" + to_inline(a.range.src(0), 60) + ")");
    return apply_tc(sink, axes, a, o.amount, t, refuse);
  }
  if (a.size < 0) throw refuse("its size is not a constant (" + to_inline(a.range.src(0), 60) + "); only constant axes are split or padded");
  if (o.op == OptOp::PADTO) {
    if (o.amount < 2) throw refuse("PADTO takes a multiple of at least 2");
    if (a.type != AxisType::REDUCE && !is_output(a.type)) throw refuse("PADTO pads output and reduce axes, not already split ones");
    if (a.size % o.amount == 0) throw refuse(std::to_string(a.size) + " is already a multiple of " + std::to_string(o.amount));
    if (a.size < o.amount / 2) throw refuse("padding " + std::to_string(a.size) + " to " + std::to_string(o.amount) + " more than doubles it");
    if (has_workgroup_memory(sink)) throw refuse("the kernel uses workgroup memory, whose indices PADTO would not mask");
    if (has_tensor_core(sink)) throw refuse("the kernel runs on a tensor core; PADTO goes before TC");
    return pad(sink, a, o.amount);
  }
  if (o.amount < 2) throw refuse("the amount must be at least 2");
  if (a.size % o.amount != 0)
    throw refuse(std::to_string(o.amount) + " does not divide its size " + std::to_string(a.size) + " (PADTO it to a multiple first)");
  switch (o.op) {
    case OptOp::UPCAST:
    case OptOp::UNROLL: {
      bool up = o.op == OptOp::UPCAST;
      if (up && !is_output(a.type)) throw refuse("UPCAST splits output axes (GLOBAL, LOOP); a reduce axis is UNROLLed");
      if (!up && a.type != AxisType::REDUCE) throw refuse("UNROLL splits reduce axes; an output axis is UPCAST");
      int64_t limit = up ? kMaxUpcast : kMaxUnroll;
      if (o.amount > limit) throw refuse("at most " + std::to_string(limit) + " copies");
      int64_t copies = product_of(axes, {AxisType::UPCAST, AxisType::UNROLL}) * o.amount;
      if (copies > kMaxCopies)
        throw refuse("the kernel would have " + std::to_string(copies) + " unrolled copies of its body; at most " + std::to_string(kMaxCopies));
      return split(sink, axes, a, o.amount, up ? AxisType::UPCAST : AxisType::UNROLL);
    }
    case OptOp::LANES: {
      if (a.type != AxisType::REDUCE) throw refuse("LANES splits reduce axes");
      if (o.amount > kMaxUpcast) throw refuse("at most " + std::to_string(kMaxUpcast) + " lanes");
      if (o.amount == a.size) throw refuse("lanes over the whole axis are UNROLL(" + std::to_string(a.id) + ", " + std::to_string(a.size) + ")");
      int64_t copies = product_of(axes, {AxisType::UPCAST, AxisType::UNROLL}) * o.amount;
      if (copies > kMaxCopies)
        throw refuse("the kernel would have " + std::to_string(copies) + " unrolled copies of its body; at most " + std::to_string(kMaxCopies));
      return lanes(sink, axes, a, o.amount);
    }
    case OptOp::TILE: {
      // The inner part becomes a loop with the newest id, so it nests inside every other output loop:
      // TILE(i, 16) TILE(j, 16) walks the outputs in 16x16 tiles whose inputs stay in cache.
      if (!is_output(a.type)) throw refuse("TILE blocks output axes (GLOBAL, LOOP)");
      if (o.amount == a.size) throw refuse("a tile of the whole axis changes nothing");
      for (const Axis& x : axes)
        if (x.type == AxisType::GROUP_REDUCE) throw refuse("the kernel has a GROUP axis, whose barrier cannot sit inside a loop");
      return split(sink, axes, a, o.amount, AxisType::LOOP);
    }
    case OptOp::LOCAL: {
      if (!t.gpu()) throw refuse(std::string(t.name) + " runs a workgroup's work-items one after another; LOCAL is for GPU targets");
      if (a.type != AxisType::GLOBAL) throw refuse("LOCAL splits GLOBAL axes");
      if (has_workgroup_memory(sink)) throw refuse("the kernel already uses workgroup memory");
      int64_t locals = product_of(axes, {AxisType::LOCAL, AxisType::GROUP_REDUCE, AxisType::WARP}) * o.amount;
      if (locals > t.max_local_total)
        throw refuse("the workgroup would have " + std::to_string(locals) + " work-items; " + std::string(t.name) + " allows " +
                     std::to_string(t.max_local_total));
      int64_t count = 1;
      for (const Axis& x : axes) count += x.type == AxisType::LOCAL || x.type == AxisType::GROUP_REDUCE || x.type == AxisType::WARP;
      if (count > 3) throw refuse("a workgroup has at most 3 dimensions");
      return split(sink, axes, a, o.amount, AxisType::LOCAL);
    }
    case OptOp::GROUP: {
      if (!t.gpu()) throw refuse(std::string(t.name) + " has no work-items running side by side; GROUP is for GPU targets");
      if (a.type != AxisType::REDUCE) throw refuse("GROUP splits reduce axes");
      if (o.amount > kMaxGroup) throw refuse("at most " + std::to_string(kMaxGroup) + " work-items reduce one value");
      if (has_workgroup_memory(sink)) throw refuse("the kernel already uses workgroup memory");
      if (has_tensor_core(sink)) throw refuse("the kernel runs on a tensor core, whose lanes already share the reduction");
      for (const Axis& x : axes)
        if (x.type == AxisType::GROUP_REDUCE) throw refuse("the kernel already has a GROUP axis");
      int64_t locals = product_of(axes, {AxisType::LOCAL}) * o.amount;
      if (locals > t.max_local_total)
        throw refuse("the workgroup would have " + std::to_string(locals) + " work-items; " + std::string(t.name) + " allows " +
                     std::to_string(t.max_local_total));
      int64_t count = 1;
      for (const Axis& x : axes) count += x.type == AxisType::LOCAL;
      if (count > 3) throw refuse("a workgroup has at most 3 dimensions");
      // The group's work-items take neighbouring elements: r = outer * amount + g.
      UOp out = split(sink, axes, a, o.amount, AxisType::GROUP_REDUCE);
      for (const Axis& x : kernel_axes(out))
        if (x.type == AxisType::GROUP_REDUCE)
          if (std::string why = group_reduce_problem(out, x.range); !why.empty()) throw refuse(why);
      return out;
    }
    default: break;
  }
  throw refuse("unknown action");
}

UOp apply_opts(const UOp& sink, std::span<const Opt> opts, const Target& t) {
  UOp s = sink;
  for (const Opt& o : opts) s = apply_opt(s, o, t);
  return s;
}

std::vector<Access> kernel_accesses(const UOp& sink, const std::vector<Axis>& axes) {
  std::vector<Access> out;
  for (const UOp& u : sink.toposort()) {
    if (u.op() != Op::LOAD && u.op() != Op::STORE) continue;
    const UOp& idx = u.src(0);
    if (idx.op() != Op::INDEX || buffer_of(idx).op() != Op::DEFINE_GLOBAL || idx.src().size() < 2) continue;
    UOp i = idx.src(1);
    if (i.op() == Op::WHERE && i.src(2).op() == Op::INVALID) i = i.src(1);
    i = simplify(i);
    Linear l = linear_form(i);
    Access acc{idx, u.op() == Op::STORE, std::vector<int64_t>(axes.size(), 0)};
    for (size_t k = 0; k < axes.size(); ++k)
      for (const auto& [term, c] : l.terms) {
        if (term == axes[k].range && acc.stride[k] != -1) acc.stride[k] = c;
        else if (!(term == axes[k].range) && depends_on(term, axes[k].range)) acc.stride[k] = -1;
      }
    out.push_back(std::move(acc));
  }
  return out;
}

}  // namespace ugpu::codegen::opt
