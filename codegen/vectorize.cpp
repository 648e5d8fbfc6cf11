// Vector loads and stores: scalar accesses to one buffer at `base + c` for consecutive constants c
// (what unrolled UPCAST/UNROLL axes leave side by side) become one access of 2..16 lanes of at most
// the target's vector size (Target::vector_bytes), where the address is provably aligned to the
// access size. Alignment is proved from the
// index alone: every coefficient of the index's linear form and the first constant are multiples of
// the lane count, and buffers are 16-byte aligned (kernel.h: kBufferAlignment). Loads anywhere in the
// kernel combine when they share buffer, gate and base; stores combine within one GROUP (the copies
// of one unrolled body), which runs them together.
#include <algorithm>
#include <map>
#include <numeric>

#include "codegen/kernel.h"
#include "codegen/passes.h"
#include "common/error.h"
#include "ir/intmath.h"
#include "ir/rewrite.h"
#include "ir/symbolic.h"
#include "ir/upat.h"

namespace ugpu::codegen {
using namespace ir;
namespace {

// An access's address as buffer, gate and linear base, plus a constant element offset.
struct Key {
  const void* buf;
  const void* gate;
  const void* base;
  bool operator<(const Key& o) const { return std::tie(buf, gate, base) < std::tie(o.buf, o.gate, o.base); }
};
struct Access {
  UOp node;  // the LOAD or STORE
  int64_t offset;
};
struct Bucket {
  UOp buf, gate, base;
  int64_t divisor;  // every value of `base` is a multiple of it (0: base is 0)
  std::vector<Access> members;
};

bool vectorizable(const UOp& index) {
  if (index.op() != Op::INDEX) return false;
  DType p = index.dtype();
  if (p.count != 1 || (p.addrspace != AddrSpace::Global && p.addrspace != AddrSpace::Local)) return false;
  return !p.is_bool() && p.itemsize() <= kBufferAlignment / 2;
}

class Grouper {
 public:
  explicit Grouper(int max_bytes) : max_bytes_(max_bytes) {}
  void add(const UOp& access) {
    const UOp& idx = access.src(0);
    Linear l = linear_form(idx.src(1));
    int64_t c = l.constant, g = 0;
    for (const auto& [_, coef] : l.terms) g = std::gcd(g, coef);
    l.constant = 0;
    UOp base = from_linear(l, idx.src(1).dtype());
    UOp gate = idx.src().size() == 3 ? idx.src(2) : UOp();
    Bucket& grp = groups_[Key{idx.src(0).get(), gate.get(), base.get()}];
    if (grp.members.empty()) grp.buf = idx.src(0), grp.gate = gate, grp.base = base, grp.divisor = g;
    grp.members.push_back({access, c});
  }
  // Runs of consecutive offsets, cut into aligned chunks of the widest size that fits. A group with
  // two accesses at one offset is left alone (two stores there must keep their order).
  template <class F>
  void each_chunk(F&& f) {
    for (auto& [_, g] : groups_) {
      if (g.members.size() < 2) continue;
      std::sort(g.members.begin(), g.members.end(), [](const Access& a, const Access& b) { return a.offset < b.offset; });
      bool dup = false;
      for (size_t i = 1; i < g.members.size(); ++i) dup |= g.members[i].offset == g.members[i - 1].offset;
      if (dup) continue;
      int max_lanes = std::min(16, max_bytes_ / g.members[0].node.src(0).dtype().itemsize());
      for (size_t i = 0; i < g.members.size();) {
        size_t w = static_cast<size_t>(max_lanes);
        for (; w >= 2; w /= 2) {
          if (i + w > g.members.size() || g.members[i + w - 1].offset - g.members[i].offset != static_cast<int64_t>(w) - 1) continue;
          if (floor_mod<int64_t>(g.members[i].offset, w) == 0 && g.divisor % static_cast<int64_t>(w) == 0) break;
        }
        if (w < 2) {
          ++i;
          continue;
        }
        f(g, std::vector<Access>(g.members.begin() + i, g.members.begin() + i + w));
        i += w;
      }
    }
  }

 private:
  int max_bytes_;
  std::map<Key, Bucket> groups_;
};

UOp vector_index(const Access& first, size_t lanes) {
  const UOp& idx = first.node.src(0);
  std::vector<UOp> src(idx.src().begin(), idx.src().end());
  return UOp::make(Op::INDEX, idx.dtype().vec(static_cast<uint16_t>(lanes)), src);
}

UOp combine_loads(const UOp& sink, int max_bytes) {
  Grouper grouper(max_bytes);
  for (const UOp& u : sink.toposort())
    if (u.op() == Op::LOAD && vectorizable(u.src(0))) grouper.add(u);
  std::unordered_map<UOp, UOp, UOpHash> repl;
  grouper.each_chunk([&](const Bucket& g, const std::vector<Access>& chunk) {
    UOp idx = vector_index(chunk[0], chunk.size());
    std::vector<UOp> src{idx};
    if (g.gate) {
      std::vector<UOp> alts;
      for (const Access& a : chunk) alts.push_back(a.node.src(1));
      src.push_back(UOp::make(Op::VECTORIZE, idx.dtype().base(), alts));
    }
    UOp load = UOp::make(Op::LOAD, idx.dtype().base(), src);
    for (size_t lane = 0; lane < chunk.size(); ++lane)
      repl[chunk[lane].node] = UOp::make(Op::GEP, chunk[lane].node.dtype(), {load}, Ints{static_cast<int64_t>(lane)});
  });
  return repl.empty() ? sink : substitute(sink, repl);
}

// One GROUP's stores, combined.
UOp combine_stores(const UOp& group, int max_bytes) {
  Grouper grouper(max_bytes);
  for (const UOp& s : group.src())
    if (s.op() == Op::STORE && vectorizable(s.src(0))) grouper.add(s);
  std::unordered_map<UOp, UOp, UOpHash> merged;  // first store of a chunk -> vector store; the others -> null
  grouper.each_chunk([&](const Bucket&, const std::vector<Access>& chunk) {
    UOp idx = vector_index(chunk[0], chunk.size());
    std::vector<UOp> vals;
    for (const Access& a : chunk) vals.push_back(a.node.src(1));
    merged[chunk[0].node] = UOp::make(Op::STORE, dtypes::void_, {idx, UOp::make(Op::VECTORIZE, idx.dtype().base(), vals)});
    for (size_t i = 1; i < chunk.size(); ++i) merged[chunk[i].node] = UOp();
  });
  if (merged.empty()) return {};
  std::vector<UOp> src;
  for (const UOp& s : group.src()) {
    auto it = merged.find(s);
    if (it == merged.end()) src.push_back(s);
    else if (it->second) src.push_back(it->second);
  }
  return src.size() == 1 ? src[0] : UOp::make(Op::GROUP, dtypes::void_, src);
}

const PatternMatcher& store_rules() {
  static const PatternMatcher pm(
      "vector stores", {
                           Rule(
                               UPat(Op::GROUP), [](const Match& m) { return combine_stores(m.node(), m.ctx<int>()); }, "combine a GROUP's stores"),
                       });
  return pm;
}

}  // namespace

UOp vectorize_memory(const UOp& sink, const Target& t) {
  int max_bytes = t.vector_bytes();
  return graph_walk(combine_loads(sink, max_bytes), store_rules(), &max_bytes);
}

}  // namespace ugpu::codegen
