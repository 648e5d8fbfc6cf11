#include "ir/upat.h"

#include <algorithm>
#include <array>
#include <bit>
#include <map>
#include <set>

#include "common/error.h"

namespace ugpu::ir {

enum class SrcMode : uint8_t { Any, Positional, Permute, Repeat };

struct UPat::Node {
  OpSet ops;
  std::vector<DType> dtypes;
  std::optional<Arg> arg;
  std::optional<double> value;
  std::string name;
  SrcMode mode = SrcMode::Any;
  bool any_len = false;
  std::vector<UPat> src;
  std::function<bool(const UOp&)> pred;
};

UPat::UPat() : n_(std::make_shared<Node>()) {}
UPat::UPat(Op op) : UPat(OpSet{op}) {}
UPat::UPat(OpSet ops) : n_(std::make_shared<Node>()) { n_->ops = ops; }
UPat::UPat(OpSet ops, std::vector<UPat> src) : UPat(ops) {
  n_->mode = SrcMode::Positional;
  n_->src = std::move(src);
}

UPat UPat::with(const std::function<void(Node&)>& edit) const {
  auto n = std::make_shared<Node>(*n_);
  edit(*n);
  return UPat(std::move(n));
}

UPat UPat::var(std::string name, std::vector<DType> dts) { return UPat().named(std::move(name)).dtypes(std::move(dts)); }
UPat UPat::cvar(std::string name, std::vector<DType> dts) { return UPat(Op::CONST).named(std::move(name)).dtypes(std::move(dts)); }
UPat UPat::cnst(double value) {
  return UPat(Op::CONST).with([&](Node& n) { n.value = value; });
}
UPat UPat::named(std::string name) const {
  return with([&](Node& n) { n.name = std::move(name); });
}
UPat UPat::dtypes(std::vector<DType> dts) const {
  return with([&](Node& n) { n.dtypes = std::move(dts); });
}
UPat UPat::arg(Arg a) const {
  return with([&](Node& n) { n.arg = std::move(a); });
}
UPat UPat::src(std::vector<UPat> s) const {
  return with([&](Node& n) { n.mode = SrcMode::Positional, n.src = std::move(s); });
}
UPat UPat::any_order(std::vector<UPat> s) const {
  if (s.size() > 8) throw Error("UPat::any_order: at most 8 sources (" + std::to_string(s.size()) + " given)");
  return with([&](Node& n) { n.mode = SrcMode::Permute, n.src = std::move(s); });
}
UPat UPat::repeat(UPat each) const {
  return with([&](Node& n) { n.mode = SrcMode::Repeat, n.src = {std::move(each)}; });
}
UPat UPat::allow_any_len() const {
  return with([](Node& n) { n.any_len = true; });
}
UPat UPat::check(std::function<bool(const UOp&)> pred) const {
  return with([&](Node& n) {
    if (n.pred) n.pred = [a = n.pred, b = std::move(pred)](const UOp& u) { return a(u) && b(u); };
    else n.pred = std::move(pred);
  });
}

UPat upat_alu(Op op, std::vector<UPat> src) {
  UPat p(op);
  return is_commutative(op) ? p.any_order(std::move(src)) : p.src(std::move(src));
}

// ---- compiled patterns ---------------------------------------------------------------------------

namespace {

constexpr int kMaxSlots = 32;

struct CPat {
  OpSet ops;
  std::vector<DType> dtypes;
  std::optional<Arg> arg;
  std::optional<double> value;
  int slot = -1;
  SrcMode mode = SrcMode::Any;
  bool any_len = false;
  std::vector<const CPat*> src;
  std::vector<std::vector<const CPat*>> perms;  // Permute: distinct orders of src
  std::function<bool(const UOp&)> pred;
};

struct Compiler {
  std::vector<std::unique_ptr<CPat>> pool;
  std::vector<std::string> names;

  const CPat* compile(const UPat::Node& n) {
    auto c = std::make_unique<CPat>();
    c->ops = n.ops, c->dtypes = n.dtypes, c->arg = n.arg, c->value = n.value, c->mode = n.mode, c->any_len = n.any_len;
    c->pred = n.pred;
    if (!n.name.empty()) {
      auto it = std::find(names.begin(), names.end(), n.name);
      if (it == names.end()) {
        if (names.size() == kMaxSlots) throw Error("pattern binds more than 32 names");
        names.push_back(n.name);
        it = names.end() - 1;
      }
      c->slot = static_cast<int>(it - names.begin());
    }
    std::vector<const UPat::Node*> raw;
    for (const UPat& s : n.src) {
      raw.push_back(s.node().get());
      c->src.push_back(compile(*s.node()));
    }
    if (n.mode == SrcMode::Permute) {
      // Permute pattern nodes; orders that give the same sequence of pattern nodes are one order.
      std::vector<size_t> idx(raw.size());
      for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
      std::set<std::vector<const UPat::Node*>> seen;
      do {
        std::vector<const UPat::Node*> key;
        std::vector<const CPat*> order;
        for (size_t i : idx) key.push_back(raw[i]), order.push_back(c->src[i]);
        if (seen.insert(key).second) c->perms.push_back(std::move(order));
      } while (std::next_permutation(idx.begin(), idx.end()));
    }
    pool.push_back(std::move(c));
    return pool.back().get();
  }
};

// The ops a node's sources must include for the pattern to have a chance.
OpSet required_src_ops(const CPat& p) {
  OpSet r;
  if (p.mode != SrcMode::Positional && p.mode != SrcMode::Permute) return r;
  for (const CPat* s : p.src)
    if (s->ops.count() == 1) r.bits |= s->ops.bits;
  return r;
}

// A non-owning callable "() -> bool", so continuation-passing matching never allocates.
class Cont {
 public:
  template <class F>
  explicit Cont(F& f) : obj_(&f), fn_([](void* o) { return (*static_cast<F*>(o))(); }) {}
  bool operator()() const { return fn_(obj_); }

 private:
  void* obj_;
  bool (*fn_)(void*);
};

bool value_equal(const UOp& u, double v) {
  const Arg& a = u.arg();
  if (const int64_t* i = std::get_if<int64_t>(&a)) return static_cast<double>(*i) == v;
  if (const double* d = std::get_if<double>(&a)) return *d == v;
  return false;
}

struct Engine {
  std::array<const UOp*, kMaxSlots> slots{};

  bool match(const CPat& p, const UOp& u, Cont k) {
    if (!p.ops.empty() && !p.ops.has(u.op())) return false;
    if (!p.dtypes.empty() && std::find(p.dtypes.begin(), p.dtypes.end(), u.dtype()) == p.dtypes.end()) return false;
    if (p.arg && !arg_equal(*p.arg, u.arg())) return false;
    if (p.value && (u.op() != Op::CONST || !value_equal(u, *p.value))) return false;
    if (p.pred && !p.pred(u)) return false;
    bool bound_here = false;
    if (p.slot >= 0) {
      if (slots[p.slot]) {
        if (!(*slots[p.slot] == u)) return false;
      } else {
        slots[p.slot] = &u;
        bound_here = true;
      }
    }
    bool ok = match_src(p, u, k);
    if (bound_here) slots[p.slot] = nullptr;
    return ok;
  }

  // Matches pats[i..] against srcs[i..] (or `each` against every source), then calls k.
  bool seq(const std::vector<const CPat*>& pats, const CPat* each, size_t i, std::span<const UOp> srcs, Cont k) {
    size_t n = each ? srcs.size() : pats.size();
    if (i == n) return k();
    auto next = [&] { return seq(pats, each, i + 1, srcs, k); };
    return match(each ? *each : *pats[i], srcs[i], Cont(next));
  }

  bool match_src(const CPat& p, const UOp& u, Cont k) {
    std::span<const UOp> srcs = u.src();
    switch (p.mode) {
      case SrcMode::Any: return k();
      case SrcMode::Positional:
        if (p.any_len ? srcs.size() < p.src.size() : srcs.size() != p.src.size()) return false;
        return seq(p.src, nullptr, 0, srcs, k);
      case SrcMode::Permute:
        if (srcs.size() != p.src.size()) return false;
        for (const auto& order : p.perms)
          if (seq(order, nullptr, 0, srcs, k)) return true;
        return false;
      case SrcMode::Repeat: return seq({}, p.src[0], 0, srcs, k);
    }
    return false;
  }
};

struct CompiledRule {
  std::vector<std::unique_ptr<CPat>> pool;
  const CPat* root = nullptr;
  std::vector<std::string> names;
  RewriteFn fn;
  std::string name;
  OpSet early_reject;
};

}  // namespace

const UOp* Match::get(std::string_view name) const {
  for (size_t i = 0; i < names_->size(); ++i)
    if ((*names_)[i] == name) return slots_[i];
  return nullptr;
}
const UOp& Match::operator[](std::string_view name) const {
  const UOp* u = get(name);
  if (!u) throw Error("pattern rule asked for '" + std::string(name) + "', which its pattern does not bind");
  return *u;
}

struct PatternMatcher::Impl {
  std::string name;
  std::vector<std::shared_ptr<const CompiledRule>> rules;
  std::array<std::vector<uint32_t>, kOpCount> by_op;

  void index() {
    for (auto& v : by_op) v.clear();
    for (uint32_t i = 0; i < rules.size(); ++i)
      for (int op = 0; op < kOpCount; ++op)
        if (rules[i]->root->ops.empty() || rules[i]->root->ops.has(static_cast<Op>(op))) by_op[op].push_back(i);
  }
};

PatternMatcher::PatternMatcher(std::string name, std::vector<Rule> rules) {
  auto impl = std::make_shared<Impl>();
  impl->name = std::move(name);
  for (size_t i = 0; i < rules.size(); ++i) {
    Compiler c;
    auto r = std::make_shared<CompiledRule>();
    r->root = c.compile(*rules[i].pat.node());
    r->pool = std::move(c.pool);
    r->names = std::move(c.names);
    r->fn = std::move(rules[i].fn);
    r->name = rules[i].name.empty() ? impl->name + "#" + std::to_string(i) : std::move(rules[i].name);
    r->early_reject = required_src_ops(*r->root);
    impl->rules.push_back(std::move(r));
  }
  impl->index();
  impl_ = std::move(impl);
}

PatternMatcher operator+(const PatternMatcher& a, const PatternMatcher& b) {
  auto impl = std::make_shared<PatternMatcher::Impl>();
  impl->name = a.impl_->name + "+" + b.impl_->name;
  impl->rules = a.impl_->rules;
  impl->rules.insert(impl->rules.end(), b.impl_->rules.begin(), b.impl_->rules.end());
  impl->index();
  return PatternMatcher(std::move(impl));
}

const std::string& PatternMatcher::name() const { return impl_->name; }
size_t PatternMatcher::size() const { return impl_->rules.size(); }

UOp PatternMatcher::rewrite(const UOp& u, void* ctx, const std::string** fired) const {
  const auto& candidates = impl_->by_op[static_cast<size_t>(u.op())];
  if (candidates.empty()) return {};
  OpSet present;
  for (const UOp& s : u.src()) present.bits |= OpSet::bit(s.op());
  Engine engine;
  for (uint32_t idx : candidates) {
    const CompiledRule& rule = *impl_->rules[idx];
    if (rule.early_reject.bits & ~present.bits) continue;
    UOp result;
    auto finish = [&] {
      Match m;
      m.names_ = &rule.names, m.slots_ = engine.slots.data(), m.root_ = &u, m.ctx_ = ctx;
      UOp r = rule.fn(m);
      if (r && !(r == u)) {
        result = std::move(r);
        return true;
      }
      return false;
    };
    if (engine.match(*rule.root, u, Cont(finish))) {
      if (fired) *fired = &rule.name;
      return result;
    }
  }
  return {};
}

}  // namespace ugpu::ir
