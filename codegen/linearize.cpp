// The linearizer: from the kernel graph to one instruction list with structured loops.
//
// 1. Loop nesting. Ranges that occur together at some node must nest. The ranges still open at an END
//    enclose the ones it closes (a reduce's output loops enclose its reduce loops); beyond that, the
//    lower axis id is outside. Each loop's parent is the innermost of the outer ranges it occurs
//    with, and every such range must be on its parent chain.
// 2. Placement. A node goes in the innermost loop open at it (Scopes::of).
// 3. Order. Inside one loop body, the items are its own nodes and its child loops, each child loop
//    standing for everything nested in it; they are emitted in dependency order (ties by position in
//    the graph's toposort), child loops recursively.
#include <algorithm>
#include <bit>
#include <queue>
#include <unordered_map>

#include "codegen/passes.h"
#include "codegen/scope.h"
#include "common/error.h"
#include "ir/text.h"

namespace ugpu::codegen {
using namespace ir;
namespace {

class Linearizer {
 public:
  explicit Linearizer(const UOp& sink) : sink_(sink), sc_(sink) {}

  std::vector<UOp> run() {
    const std::vector<UOp>& topo = sink_.toposort();
    int n_ranges = static_cast<int>(sc_.ranges().size());
    root_ = n_ranges;
    std::vector<uint64_t> co(n_ranges, 0);
    for (size_t i = 0; i < topo.size(); ++i) {
      pos_[topo[i].get()] = i;
      uint64_t s = sc_.of(topo[i]);
      for (int b = 0; b < n_ranges; ++b)
        if (s >> b & 1) co[b] |= s;
    }
    // An END closing ranges rs inside the ranges still open after it says: those enclose every r in
    // rs. Loops are ordered by these constraints, otherwise by axis id.
    std::vector<uint64_t> must_enclose(n_ranges, 0);  // per range: ranges that must be outside it
    for (const UOp& u : topo)
      if (u.op() == Op::END) {
        uint64_t open = sc_.of(u);
        for (size_t i = 1; i < u.src().size(); ++i) must_enclose[sc_.bit(u.src(i))] |= open;
      }
    std::vector<int> order;
    uint64_t placed = 0;
    while (static_cast<int>(order.size()) < n_ranges) {
      int next = -1;
      for (int r = 0; r < n_ranges && next < 0; ++r)
        if (!(placed >> r & 1) && (must_enclose[r] & ~placed) == 0) next = r;
      if (next < 0) throw Error("loops are closed in an order that cannot nest (an END closes a loop that must enclose another it leaves open)");
      order.push_back(next);
      placed |= uint64_t{1} << next;
    }
    rank_.assign(n_ranges, 0);
    for (int i = 0; i < n_ranges; ++i) rank_[order[i]] = i;
    parent_.assign(n_ranges + 1, -1);
    chain_.assign(n_ranges + 1, 0);
    for (int r : order) {  // outer loops first, so a parent's chain is known
      int p = root_;
      for (int b = 0; b < n_ranges; ++b)
        if ((co[r] >> b & 1) && rank_[b] < rank_[r] && (p == root_ || rank_[b] > rank_[p])) p = b;
      parent_[r] = p;
      chain_[r] = (p == root_ ? 0 : chain_[p]) | (uint64_t{1} << r);
      uint64_t outer = 0;
      for (int b = 0; b < n_ranges; ++b)
        if ((co[r] >> b & 1) && rank_[b] < rank_[r]) outer |= uint64_t{1} << b;
      if (uint64_t missing = outer & ~chain_[r]) {
        int m = std::countr_zero(missing);
        throw Error("loops do not nest: " + to_inline(sc_.ranges()[r], 60) + " is used together with " + to_inline(sc_.ranges()[m], 60) +
                    " and with " + to_inline(sc_.ranges()[p], 60) + ", which are not nested in each other");
      }
    }
    members_.assign(n_ranges + 1, {});
    children_.assign(n_ranges + 1, {});
    for (int r : order) children_[parent_[r]].push_back(r);
    for (const UOp& u : topo) {
      uint64_t s = sc_.of(u);
      int place = root_;
      for (int b = 0; b < n_ranges; ++b)
        if ((s >> b & 1) && (place == root_ || rank_[b] > rank_[place])) place = b;
      if (place != root_ && (s & ~chain_[place])) throw Error("internal: a node's loops are not on one chain: " + to_inline(u, 120));
      place_[u.get()] = place;
      if (!(u.op() == Op::RANGE && place != root_ && sc_.ranges()[place] == u)) members_[place].push_back(u);
    }
    emit(root_);
    return out_;
  }

 private:
  bool inside(int loop, int outer) const {  // loop is outer or nested in it
    if (outer == root_) return true;
    for (int l = loop; l != root_; l = parent_[l])
      if (l == outer) return true;
    return false;
  }
  int child_toward(int loop, int outer) const {  // the child of `outer` that contains `loop`
    int l = loop;
    while (parent_[l] != outer) l = parent_[l];
    return l;
  }
  // Sources, from outside loop `r`, of the nodes nested in it (its RANGE included).
  void loop_sources(int r, std::vector<UOp>& out) const {
    for (const UOp& s : sc_.ranges()[r].src()) out.push_back(s);
    for (const UOp& u : members_[r])
      for (const UOp& s : u.src()) out.push_back(s);
    for (int c : children_[r]) loop_sources(c, out);
  }

  void emit(int loop) {
    // Items: index < members.size() is a node, else a child loop.
    const std::vector<UOp>& nodes = members_[loop];
    const std::vector<int>& kids = children_[loop];
    size_t n_items = nodes.size() + kids.size();
    std::unordered_map<const void*, size_t> node_item;
    for (size_t i = 0; i < nodes.size(); ++i) node_item[nodes[i].get()] = i;
    std::vector<std::vector<size_t>> users(n_items);
    std::vector<size_t> waiting(n_items, 0), key(n_items);
    // A source is emitted earlier (an enclosing loop's), or is an item here; only an END may reach
    // into a child loop (that is what closing a loop means).
    auto depend = [&](size_t item, const std::vector<UOp>& srcs, bool may_enter) {
      std::vector<size_t> deps;
      for (const UOp& s : srcs) {
        int p = place_.at(s.get());
        if (loop != root_ && p == loop && s == sc_.ranges()[loop]) continue;  // the loop's own counter
        if (p == loop) deps.push_back(node_item.at(s.get()));
        else if (p != root_ && inside(p, loop) && may_enter) deps.push_back(nodes.size() + child_index(kids, child_toward(p, loop)));
        else if (!inside(loop, p))
          throw Error("a value computed inside a loop is used outside it, without an END closing that loop: " + to_inline(s, 120));
      }
      std::sort(deps.begin(), deps.end());
      deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
      for (size_t d : deps)
        if (d != item) users[d].push_back(item), ++waiting[item];
    };
    for (size_t i = 0; i < nodes.size(); ++i) {
      key[i] = pos_.at(nodes[i].get());
      depend(i, std::vector<UOp>(nodes[i].src().begin(), nodes[i].src().end()), nodes[i].op() == Op::END);
    }
    for (size_t k = 0; k < kids.size(); ++k) {
      key[nodes.size() + k] = pos_.at(sc_.ranges()[kids[k]].get());
      std::vector<UOp> srcs;
      loop_sources(kids[k], srcs);
      std::vector<UOp> outside;
      for (const UOp& s : srcs)
        if (!inside(place_.at(s.get()), kids[k])) outside.push_back(s);
      depend(nodes.size() + k, outside, false);
    }
    using Entry = std::pair<size_t, size_t>;  // (key, item)
    std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
    for (size_t i = 0; i < n_items; ++i)
      if (!waiting[i]) ready.push({key[i], i});
    size_t done = 0;
    while (!ready.empty()) {
      size_t it = ready.top().second;
      ready.pop();
      ++done;
      if (it < nodes.size()) {
        Op op = nodes[it].op();
        if (op != Op::SINK && op != Op::END && op != Op::GROUP && op != Op::NOOP) out_.push_back(nodes[it]);
      } else {
        int r = kids[it - nodes.size()];
        out_.push_back(sc_.ranges()[r]);
        emit(r);
        out_.push_back(UOp::make(Op::END, dtypes::void_, {sc_.ranges()[r]}));
      }
      for (size_t u : users[it])
        if (--waiting[u] == 0) ready.push({key[u], u});
    }
    if (done != n_items) {
      std::string what;
      for (size_t i = 0; i < n_items && what.empty(); ++i)
        if (waiting[i]) what = i < nodes.size() ? to_inline(nodes[i], 100) : "the loop " + to_inline(sc_.ranges()[kids[i - nodes.size()]], 60);
      throw Error("the kernel's loops and values depend on each other in a cycle (a value needed before a loop is computed after it), at " + what);
    }
  }
  static size_t child_index(const std::vector<int>& kids, int r) {
    return static_cast<size_t>(std::find(kids.begin(), kids.end(), r) - kids.begin());
  }

  UOp sink_;
  Scopes sc_;
  int root_ = 0;
  std::unordered_map<const void*, size_t> pos_;
  std::unordered_map<const void*, int> place_;
  std::vector<int> rank_, parent_;
  std::vector<uint64_t> chain_;
  std::vector<std::vector<UOp>> members_;
  std::vector<std::vector<int>> children_;
  std::vector<UOp> out_;
};

}  // namespace

std::vector<UOp> linearize(const UOp& sink) { return Linearizer(sink).run(); }

}  // namespace ugpu::codegen
