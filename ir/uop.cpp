#include "ir/uop.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <new>
#include <unordered_set>

#include "common/error.h"
#include "ir/intmath.h"
#include "ir/sha256.h"

namespace ugpu::ir {

// ---- args ----------------------------------------------------------------------------------------

bool arg_equal(const Arg& a, const Arg& b) {
  if (a.index() != b.index()) return false;
  if (const double* x = std::get_if<double>(&a)) return std::bit_cast<uint64_t>(*x) == std::bit_cast<uint64_t>(std::get<double>(b));
  return a == b;
}

namespace {

constexpr uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 32);
}
uint64_t hash_bytes(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

}  // namespace

uint64_t arg_hash(const Arg& a) {
  uint64_t h = mix(0, a.index());
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) h = mix(h, static_cast<uint64_t>(v));
        else if constexpr (std::is_same_v<T, double>) h = mix(h, std::bit_cast<uint64_t>(v));
        else if constexpr (std::is_same_v<T, std::string>) h = mix(h, hash_bytes(v));
        else if constexpr (std::is_same_v<T, Op>) h = mix(h, static_cast<uint64_t>(v));
        else if constexpr (std::is_same_v<T, Ints>)
          for (int64_t x : v) h = mix(h, static_cast<uint64_t>(x));
        else if constexpr (std::is_same_v<T, Pairs>)
          for (auto [x, y] : v) h = mix(mix(h, static_cast<uint64_t>(x)), static_cast<uint64_t>(y));
        else if constexpr (std::is_same_v<T, VarArg>)
          h = mix(mix(mix(h, hash_bytes(v.name)), static_cast<uint64_t>(v.min)), static_cast<uint64_t>(v.max));
        else if constexpr (std::is_same_v<T, RangeArg>) h = mix(mix(h, static_cast<uint64_t>(v.axis)), static_cast<uint64_t>(v.type));
        else if constexpr (std::is_same_v<T, ReduceAxisArg>) {
          h = mix(h, static_cast<uint64_t>(v.op));
          for (int64_t x : v.axes) h = mix(h, static_cast<uint64_t>(x));
        }
      },
      a);
  return h;
}

std::string float_text(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, end);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

namespace {

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += static_cast<char>(c);
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c >= 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x", out += kHex[c >> 4], out += kHex[c & 15];
    } else out += static_cast<char>(c);
  }
  return out + "\"";
}

std::string ints_text(const Ints& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + ")";
}

}  // namespace

std::string arg_text(const Arg& a) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) return "";
        else if constexpr (std::is_same_v<T, int64_t>) return std::to_string(v);
        else if constexpr (std::is_same_v<T, double>) return float_text(v);
        else if constexpr (std::is_same_v<T, std::string>) return quote(v);
        else if constexpr (std::is_same_v<T, Op>) return std::string(op_name(v));
        else if constexpr (std::is_same_v<T, Ints>) return ints_text(v);
        else if constexpr (std::is_same_v<T, Pairs>) {
          std::string s = "(";
          for (size_t i = 0; i < v.size(); ++i) s += (i ? ", (" : "(") + std::to_string(v[i].first) + ", " + std::to_string(v[i].second) + ")";
          return s + ")";
        } else if constexpr (std::is_same_v<T, VarArg>) return quote(v.name) + ", " + std::to_string(v.min) + ", " + std::to_string(v.max);
        else if constexpr (std::is_same_v<T, RangeArg>) return std::to_string(v.axis) + ", " + std::string(axis_type_name(v.type));
        else return std::string(op_name(v.op)) + ", " + ints_text(v.axes);
      },
      a);
}

// ---- nodes and the intern table ------------------------------------------------------------------

namespace detail {

struct Node {
  std::atomic<uint32_t> refs{1};
  Op op;
  DType dtype;
  uint32_t nsrc;
  uint64_t hash;
  Arg arg;
  // Lazily derived facts. Published with release stores; a racing second computation writes the same.
  std::atomic<bool> bounds_ready{false};
  std::atomic<int64_t> vmin{0}, vmax{0};
  std::atomic<std::optional<Shape>*> shape{nullptr};
  std::atomic<std::vector<UOp>*> topo{nullptr};
  std::atomic<ContentKey*> key{nullptr};

  UOp* srcs() { return std::launder(reinterpret_cast<UOp*>(this + 1)); }
  const UOp* srcs() const { return std::launder(reinterpret_cast<const UOp*>(this + 1)); }
  std::span<const UOp> src_span() const { return {srcs(), nsrc}; }
};
static_assert(sizeof(Node) % alignof(UOp) == 0);

}  // namespace detail

using detail::Node;

namespace {

struct KeyView {
  Op op;
  DType dtype;
  std::span<const UOp> src;
  const Arg* arg;
  uint64_t hash;
};

uint64_t hash_of(Op op, DType dt, std::span<const UOp> src, const Arg& arg) {
  uint64_t h = mix(
      mix(static_cast<uint64_t>(op), static_cast<uint64_t>(dt.scalar) | uint64_t{dt.count} << 8 | uint64_t(static_cast<uint8_t>(dt.addrspace)) << 24),
      arg_hash(arg));
  for (const UOp& s : src) h = mix(h, s.hash());
  return h;
}

KeyView view(const Node* n) { return {n->op, n->dtype, n->src_span(), &n->arg, n->hash}; }

struct TableHash {
  using is_transparent = void;
  size_t operator()(const Node* n) const { return n->hash; }
  size_t operator()(const KeyView& k) const { return k.hash; }
};
struct TableEq {
  using is_transparent = void;
  static bool same(const KeyView& a, const KeyView& b) {
    if (a.hash != b.hash || a.op != b.op || !(a.dtype == b.dtype) || a.src.size() != b.src.size()) return false;
    for (size_t i = 0; i < a.src.size(); ++i)
      if (!(a.src[i] == b.src[i])) return false;
    return arg_equal(*a.arg, *b.arg);
  }
  bool operator()(const Node* a, const Node* b) const { return a == b || same(view(a), view(b)); }
  bool operator()(const KeyView& a, const Node* b) const { return same(a, view(b)); }
  bool operator()(const Node* a, const KeyView& b) const { return same(view(a), b); }
};

struct Shard {
  std::mutex mu;
  std::unordered_set<Node*, TableHash, TableEq> set;
};
constexpr size_t kShards = 32;
// Leaked on purpose: nodes may be released during static destruction of other objects.
Shard* shards() {
  static Shard* s = new Shard[kShards];
  return s;
}
Shard& shard_for(uint64_t hash) { return shards()[(hash >> 7) % kShards]; }
std::atomic<size_t> g_live{0};

bool try_acquire(Node* n) {
  uint32_t r = n->refs.load(std::memory_order_relaxed);
  while (r != 0)
    if (n->refs.compare_exchange_weak(r, r + 1, std::memory_order_acq_rel)) return true;
  return false;
}

void destroy(Node* n) {
  delete n->shape.load();
  if (auto* t = n->topo.load()) {
    t->back().release_raw();  // the entry for n itself holds no count (see UOp::toposort)
    delete t;
  }
  delete n->key.load();
  n->~Node();
  ::operator delete(n);
  g_live.fetch_sub(1, std::memory_order_relaxed);
}

// Frees a node whose count reached zero, and then every source that this leaves unreferenced —
// iteratively, so releasing a long chain cannot overflow the stack.
void release_chain(Node* first) {
  std::vector<Node*> work{first};
  while (!work.empty()) {
    Node* n = work.back();
    work.pop_back();
    {
      Shard& sh = shard_for(n->hash);
      std::lock_guard lock(sh.mu);
      auto it = sh.set.find(n);
      if (it != sh.set.end() && *it == n) sh.set.erase(it);
    }
    for (uint32_t i = 0; i < n->nsrc; ++i) {
      Node* s = n->srcs()[i].release_raw();
      n->srcs()[i].~UOp();
      if (s->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) work.push_back(s);
    }
    n->nsrc = 0;
    destroy(n);
  }
}

Node* intern(Op op, DType dt, std::span<const UOp> src, Arg&& arg) {
  if (const double* d = std::get_if<double>(&arg); d && std::isnan(*d)) arg = std::numeric_limits<double>::quiet_NaN();
  for (const UOp& s : src)
    if (!s) throw Error(std::string("UOp::make(") + std::string(op_name(op)) + "): a source is null");
  uint64_t h = hash_of(op, dt, src, arg);
  Shard& sh = shard_for(h);
  std::lock_guard lock(sh.mu);
  KeyView k{op, dt, src, &arg, h};
  auto it = sh.set.find(k);
  if (it != sh.set.end()) {
    if (try_acquire(*it)) return *it;
    sh.set.erase(it);  // dying: its releaser will see that the table no longer points at it
  }
  void* mem = ::operator new(sizeof(Node) + src.size() * sizeof(UOp));
  Node* n = new (mem) Node{};
  n->op = op, n->dtype = dt, n->nsrc = static_cast<uint32_t>(src.size()), n->hash = h, n->arg = std::move(arg);
  for (size_t i = 0; i < src.size(); ++i) new (n->srcs() + i) UOp(src[i]);
  sh.set.insert(n);
  g_live.fetch_add(1, std::memory_order_relaxed);
  return n;
}

Node* node(const UOp& u) { return const_cast<Node*>(u.get()); }

// Runs `compute` on every node under root (sources first) for which `done` is false. Iterative.
template <class Done, class Compute>
void postorder(Node* root, Done done, Compute compute) {
  if (done(root)) return;
  std::vector<std::pair<Node*, uint32_t>> stack{{root, 0}};
  while (!stack.empty()) {
    Node* n = stack.back().first;
    uint32_t i = stack.back().second;
    if (i < n->nsrc) {
      stack.back().second++;
      Node* s = node(n->srcs()[i]);
      if (!done(s)) stack.push_back({s, 0});
      continue;
    }
    if (!done(n)) compute(n);
    stack.pop_back();
  }
}

}  // namespace

size_t live_uop_count() { return g_live.load(std::memory_order_relaxed); }

// ---- handle --------------------------------------------------------------------------------------

UOp::UOp(const UOp& o) noexcept : n_(o.n_) {
  if (n_) n_->refs.fetch_add(1, std::memory_order_relaxed);
}
UOp& UOp::operator=(const UOp& o) noexcept {
  UOp tmp(o);
  std::swap(n_, tmp.n_);
  return *this;
}
UOp& UOp::operator=(UOp&& o) noexcept {
  UOp tmp(std::move(o));
  std::swap(n_, tmp.n_);
  return *this;
}
UOp::~UOp() {
  if (n_ && n_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) release_chain(n_);
}

Op UOp::op() const { return n_->op; }
DType UOp::dtype() const { return n_->dtype; }
std::span<const UOp> UOp::src() const { return n_->src_span(); }
const Arg& UOp::arg() const { return n_->arg; }
uint64_t UOp::hash() const { return n_->hash; }

bool UOp::is_int_const(int64_t v) const {
  if (op() != Op::CONST) return false;
  const int64_t* x = std::get_if<int64_t>(&n_->arg);
  return x && *x == v;
}
int64_t UOp::const_int() const {
  const int64_t* x = op() == Op::CONST ? std::get_if<int64_t>(&n_->arg) : nullptr;
  if (!x) throw Error("const_int() on a node that is not an integer CONST");
  return *x;
}
double UOp::const_float() const {
  const double* x = op() == Op::CONST ? std::get_if<double>(&n_->arg) : nullptr;
  if (!x) throw Error("const_float() on a node that is not a float CONST");
  return *x;
}

UOp UOp::make(Op op, DType dtype, std::span<const UOp> src, Arg arg) { return adopt_raw(intern(op, dtype, src, std::move(arg))); }

UOp UOp::const_int(DType dt, int64_t v) {
  if (dt.is_float()) return const_float(dt, int_to_float(v, dtypes::int64, dt));
  return make(Op::CONST, dt, {}, wrap_int(v, dt));
}
UOp UOp::const_float(DType dt, double v) {
  if (!dt.is_float()) return make(Op::CONST, dt, {}, wrap_int(float_to_int(v, dt.is_index() ? dtypes::int64 : dt), dt));
  return make(Op::CONST, dt, {}, round_float(v, dt));
}
UOp UOp::const_like(const UOp& like, double v) { return const_float(like.dtype(), v); }

UOp UOp::var(std::string name, int64_t min, int64_t max, DType dt) {
  if (min > max) throw Error("variable '" + name + "': min " + std::to_string(min) + " > max " + std::to_string(max));
  return make(Op::DEFINE_VAR, dt, {}, VarArg{std::move(name), min, max});
}
UOp UOp::range(const UOp& end, int64_t axis, AxisType type) { return make(Op::RANGE, end.dtype(), {end}, RangeArg{axis, type}); }
UOp UOp::range(int64_t end, int64_t axis, AxisType type) { return range(const_int(dtypes::index, end), axis, type); }
UOp UOp::special(std::string name, int64_t size) { return make(Op::SPECIAL, dtypes::index, {const_int(dtypes::index, size)}, std::move(name)); }

UOp UOp::alu(Op op, std::span<const UOp> src) {
  if (src.empty()) throw Error("alu(" + std::string(op_name(op)) + ") with no sources");
  DType dt = src[0].dtype();
  if (is_comparison(op)) dt = dtypes::bool_.vec(dt.count);
  else if (op == Op::WHERE && src.size() == 3) dt = src[1].dtype();
  return make(op, dt, src);
}

UOp UOp::with_src(std::span<const UOp> src) const {
  if (src.size() == n_->nsrc && std::equal(src.begin(), src.end(), n_->srcs())) return *this;
  return make(op(), dtype(), src, arg());
}

// ---- bounds --------------------------------------------------------------------------------------

bool has_exact_bounds(DType dt) {
  if (dt.is_ptr()) return false;
  return dt.is_bool() || dt.is_index() || (dt.is_int() && !(dt.is_unsigned() && dt.bitsize() == 64));
}

namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
using i128 = __int128;
// Set when a bound had to be clamped to int64: the value it bounds can wrap, so the node's bounds are
// then its type's whole range (a clamped bound would pin a wrapping expression to a constant).
thread_local bool g_clamped = false;
int64_t sat(i128 v) {
  if (v < kMin || v > kMax) g_clamped = true;
  return v < kMin ? kMin : v > kMax ? kMax : static_cast<int64_t>(v);
}
int64_t floordiv(int64_t a, int64_t b) { return b == -1 ? sat(-static_cast<i128>(a)) : floor_div(a, b); }

struct Bounds {
  int64_t lo, hi;
};

Bounds full(DType dt) {
  if (!has_exact_bounds(dt)) return {kMin, kMax};
  return {dt.min_int(), dt.max_int()};
}

Bounds corners(Bounds a, Bounds b, i128 (*f)(i128, i128)) {
  i128 v[4] = {f(a.lo, b.lo), f(a.lo, b.hi), f(a.hi, b.lo), f(a.hi, b.hi)};
  return {sat(*std::min_element(v, v + 4)), sat(*std::max_element(v, v + 4))};
}

uint64_t bit_ceil_mask(int64_t v) { return v <= 0 ? 0 : (std::bit_ceil(static_cast<uint64_t>(v) + 1) - 1); }

Bounds compute_bounds(const Node* n) {
  DType dt = n->dtype;
  if (!has_exact_bounds(dt)) return full(dt);
  auto b = [&](int i) {
    const UOp& s = n->srcs()[i];
    return Bounds{s.vmin(), s.vmax()};
  };
  auto is_c = [&](int i) { return n->srcs()[i].op() == Op::CONST && n->srcs()[i].vmin() == n->srcs()[i].vmax(); };
  switch (n->op) {
    case Op::CONST:
      if (const int64_t* v = std::get_if<int64_t>(&n->arg)) return {*v, *v};
      return full(dt);
    case Op::DEFINE_VAR: {
      const auto& v = std::get<VarArg>(n->arg);
      return {v.min, v.max};
    }
    case Op::RANGE:
    case Op::SPECIAL: return {0, std::max<int64_t>(0, sat(i128{b(0).hi} - 1))};
    case Op::ADD: return {sat(i128{b(0).lo} + b(1).lo), sat(i128{b(0).hi} + b(1).hi)};
    case Op::SUB: return {sat(i128{b(0).lo} - b(1).hi), sat(i128{b(0).hi} - b(1).lo)};
    case Op::NEG: return {sat(-i128{b(0).hi}), sat(-i128{b(0).lo})};
    case Op::MUL: return corners(b(0), b(1), [](i128 x, i128 y) { return x * y; });
    case Op::MULACC: {
      Bounds p = corners(b(0), b(1), [](i128 x, i128 y) { return x * y; });
      return {sat(i128{p.lo} + b(2).lo), sat(i128{p.hi} + b(2).hi)};
    }
    case Op::MAX: return {std::max(b(0).lo, b(1).lo), std::max(b(0).hi, b(1).hi)};
    case Op::FLOORDIV:
    case Op::CDIV: {
      Bounds d = b(1);
      if (d.lo <= 0 && d.hi >= 0) break;
      if (n->op == Op::FLOORDIV) return corners(b(0), d, floor_div<i128>);
      return corners(b(0), d, [](i128 x, i128 y) { return x / y; });
    }
    case Op::FLOORMOD: {
      Bounds a = b(0), d = b(1);
      if (d.lo > 0) {
        if (is_c(1) && floordiv(a.lo, d.lo) == floordiv(a.hi, d.lo)) {
          int64_t base = floordiv(a.lo, d.lo) * d.lo;
          return {a.lo - base, a.hi - base};
        }
        if (a.lo >= 0 && a.hi < d.lo) return a;
        return {0, d.hi - 1};
      }
      if (d.hi < 0) return {sat(i128{d.lo} + 1), 0};
      break;
    }
    case Op::CMOD: {
      Bounds a = b(0), d = b(1);
      if (d.lo <= 0 && d.hi >= 0) break;
      int64_t lo_abs = sat(d.lo < 0 ? -i128{d.lo} : i128{d.lo}), hi_abs = sat(d.hi < 0 ? -i128{d.hi} : i128{d.hi});
      int64_t m = std::max(lo_abs, hi_abs) - 1, smallest = std::min(lo_abs, hi_abs);
      if (a.lo >= 0) return a.hi < smallest ? a : Bounds{0, std::min(a.hi, m)};
      if (a.hi <= 0) return -i128{a.lo} < smallest ? a : Bounds{std::max(a.lo, -m), 0};
      return {std::max(a.lo, -m), std::min(a.hi, m)};
    }
    case Op::SHL:
      if (is_c(1) && b(1).lo >= 0 && b(1).lo < 63) {
        i128 f = i128{1} << b(1).lo;
        return {sat(b(0).lo * f), sat(b(0).hi * f)};
      }
      break;
    case Op::SHR:
      if (is_c(1) && b(1).lo >= 0 && b(1).lo < 63 && (b(0).lo >= 0 || !dt.is_unsigned()))
        return {floordiv(b(0).lo, int64_t{1} << b(1).lo), floordiv(b(0).hi, int64_t{1} << b(1).lo)};
      break;
    case Op::AND:
      if (dt.is_bool()) return {b(0).lo & b(1).lo, b(0).hi & b(1).hi};
      if (b(0).lo >= 0 && b(1).lo >= 0) return {0, std::min(b(0).hi, b(1).hi)};
      if (b(0).lo >= 0) return {0, b(0).hi};
      if (b(1).lo >= 0) return {0, b(1).hi};
      break;
    case Op::OR:
    case Op::XOR:
      if (dt.is_bool()) {
        if (n->op == Op::OR) return {b(0).lo | b(1).lo, b(0).hi | b(1).hi};
        break;
      }
      if (b(0).lo >= 0 && b(1).lo >= 0) {
        int64_t top = static_cast<int64_t>(bit_ceil_mask(std::max(b(0).hi, b(1).hi)));
        return {n->op == Op::OR ? std::max(b(0).lo, b(1).lo) : 0, top};
      }
      break;
    case Op::CMPLT:
      if (b(0).hi < b(1).lo) return {1, 1};
      if (b(0).lo >= b(1).hi) return {0, 0};
      return {0, 1};
    case Op::CMPNE:
    case Op::CMPEQ: {
      Bounds x = b(0), y = b(1);
      int64_t ne_lo = (x.hi < y.lo || y.hi < x.lo) ? 1 : 0;
      int64_t ne_hi = (x.lo == x.hi && y.lo == y.hi && x.lo == y.lo) ? 0 : 1;
      if (n->op == Op::CMPNE) return {ne_lo, ne_hi};
      return {1 - ne_hi, 1 - ne_lo};
    }
    case Op::WHERE: {
      Bounds c = b(0);
      const UOp& t = n->srcs()[1];
      const UOp& f = n->srcs()[2];
      if (c.lo == 1 || f.op() == Op::INVALID) return b(1);
      if (c.hi == 0 || t.op() == Op::INVALID) return b(2);
      return {std::min(b(1).lo, b(2).lo), std::max(b(1).hi, b(2).hi)};
    }
    case Op::CAST: {
      const UOp& s = n->srcs()[0];
      if (!has_exact_bounds(s.dtype())) break;
      Bounds x = b(0), t = full(dt);
      if (dt.is_bool()) return {x.lo > 0 || x.hi < 0 ? 1 : 0, x.lo == 0 && x.hi == 0 ? 0 : 1};
      if (x.lo >= t.lo && x.hi <= t.hi) return x;
      break;
    }
    case Op::TRUNC: return b(0);
    default: break;
  }
  return full(dt);
}

void ensure_bounds(Node* root) {
  postorder(
      root, [](Node* n) { return n->bounds_ready.load(std::memory_order_acquire); },
      [](Node* n) {
        const bool outer = g_clamped;  // a caller's computation in progress on this thread
        g_clamped = false;
        Bounds r = compute_bounds(n);
        Bounds f = full(n->dtype);
        if (g_clamped) r = f;
        g_clamped = outer;
        if (r.lo < f.lo || r.hi > f.hi || r.lo > r.hi) r = f;  // wrapped: anything is possible
        n->vmin.store(r.lo, std::memory_order_relaxed);
        n->vmax.store(r.hi, std::memory_order_relaxed);
        n->bounds_ready.store(true, std::memory_order_release);
      });
}

}  // namespace

int64_t UOp::vmin() const {
  if (!n_->bounds_ready.load(std::memory_order_acquire)) ensure_bounds(n_);
  return n_->vmin.load(std::memory_order_relaxed);
}
int64_t UOp::vmax() const {
  if (!n_->bounds_ready.load(std::memory_order_acquire)) ensure_bounds(n_);
  return n_->vmax.load(std::memory_order_relaxed);
}

// ---- shape, toposort, key ------------------------------------------------------------------------

namespace {

template <class T>
const T& publish(std::atomic<T*>& slot, T* fresh) {
  T* expected = nullptr;
  if (!slot.compare_exchange_strong(expected, fresh, std::memory_order_acq_rel)) {
    delete fresh;
    return *expected;
  }
  return *fresh;
}

std::optional<Shape> compute_shape(const Node* n) {
  auto src_shape = [&](int i) -> const std::optional<Shape>& { return n->srcs()[i].shape(); };
  switch (op_info(n->op).group) {
    case OpGroup::Movement: {
      if (n->op == Op::RESHAPE || n->op == Op::EXPAND) return std::get<Ints>(n->arg);
      if (n->nsrc < 1) return std::nullopt;  // malformed (the verifier says so); never read past the node
      const auto& in = src_shape(0);
      if (!in) return std::nullopt;
      if (n->op == Op::FLIP || n->op == Op::CONTIGUOUS || n->op == Op::DETACH || n->op == Op::ASSIGN) return in;
      if (n->op == Op::GATHER) return n->nsrc == 2 ? n->srcs()[1].shape() : std::nullopt;
      if (n->op == Op::PERMUTE) {
        const Ints& p = std::get<Ints>(n->arg);
        if (p.size() != in->size()) return std::nullopt;
        Shape out;
        for (int64_t i : p) {
          if (i < 0 || static_cast<size_t>(i) >= in->size()) return std::nullopt;
          out.push_back((*in)[i]);
        }
        return out;
      }
      const Pairs& pr = std::get<Pairs>(n->arg);
      if (pr.size() != in->size()) return std::nullopt;
      Shape out(in->size());
      for (size_t i = 0; i < pr.size(); ++i) out[i] = n->op == Op::PAD ? (*in)[i] + pr[i].first + pr[i].second : pr[i].second - pr[i].first;
      return out;
    }
    case OpGroup::Define:
      if (n->op == Op::IOTA && std::get<Ints>(n->arg).size() == 1) return Shape{std::get<Ints>(n->arg)[0]};
      if (n->op != Op::BUFFER || std::get<Ints>(n->arg).size() != 2) return std::nullopt;
      return Shape{std::get<Ints>(n->arg)[1]};
    case OpGroup::Reduce: {
      if (n->op != Op::REDUCE_AXIS || n->nsrc < 1) return std::nullopt;
      auto in = src_shape(0);
      if (!in) return std::nullopt;
      for (int64_t a : std::get<ReduceAxisArg>(n->arg).axes)
        if (a >= 0 && static_cast<size_t>(a) < in->size()) (*in)[a] = 1;
      return in;
    }
    case OpGroup::Unary:
    case OpGroup::Binary:
    case OpGroup::Ternary: {
      std::optional<Shape> out;
      for (uint32_t i = 0; i < n->nsrc; ++i) {
        const auto& s = src_shape(static_cast<int>(i));
        if (!s) continue;
        if (out && *out != *s) return std::nullopt;
        out = s;
      }
      return out;
    }
    default: return std::nullopt;
  }
}

}  // namespace

const std::optional<Shape>& UOp::shape() const {
  if (auto* s = n_->shape.load(std::memory_order_acquire)) return *s;
  postorder(
      n_, [](Node* n) { return n->shape.load(std::memory_order_acquire) != nullptr; },
      [](Node* n) { publish(n->shape, new std::optional<Shape>(compute_shape(n))); });
  return *n_->shape.load(std::memory_order_acquire);
}

void UOp::throw_missing_source(size_t i) const {
  throw Error(std::string(op_name(op())) + " has " + std::to_string(src().size()) + " source" + (src().size() == 1 ? "" : "s") + ", so no source " +
              std::to_string(i));
}

const std::vector<UOp>& UOp::toposort() const {
  if (auto* t = n_->topo.load(std::memory_order_acquire)) return *t;
  auto* order = new std::vector<UOp>;
  std::unordered_set<const Node*> seen;
  postorder(
      n_, [&](Node* n) { return seen.count(n) != 0; },
      [&](Node* n) {
        seen.insert(n);
        order->push_back(adopt_raw(n));
        if (n != n_) n->refs.fetch_add(1, std::memory_order_relaxed);  // no count on itself: no cycle
      });
  std::atomic<std::vector<UOp>*>& slot = n_->topo;
  std::vector<UOp>* expected = nullptr;
  if (!slot.compare_exchange_strong(expected, order, std::memory_order_acq_rel)) {
    order->back().release_raw();
    delete order;
    return *expected;
  }
  return *order;
}

const ContentKey& UOp::key() const {
  if (auto* k = n_->key.load(std::memory_order_acquire)) return *k;
  postorder(
      n_, [](Node* n) { return n->key.load(std::memory_order_acquire) != nullptr; },
      [](Node* n) {
        Sha256 h;
        h.update(op_name(n->op));
        h.update("\0", 1);
        h.update(n->dtype.name());
        h.update("\0", 1);
        h.update(arg_text(n->arg));
        h.update("\0", 1);
        for (uint32_t i = 0; i < n->nsrc; ++i) h.update(n->srcs()[i].key().data(), 32);
        publish(n->key, new ContentKey(h.finish()));
      });
  return *n_->key.load(std::memory_order_acquire);
}

std::string UOp::key_hex() const { return hex(key()); }

}  // namespace ugpu::ir
