#include "codegen/scope.h"

#include <algorithm>

#include "common/error.h"
#include "ir/text.h"

namespace ugpu::codegen {
using ir::Op;
using ir::UOp;

Scopes::Scopes(const UOp& root) {
  for (const UOp& u : root.toposort())
    if (u.op() == Op::RANGE) ranges_.push_back(u);
  std::sort(ranges_.begin(), ranges_.end(), [](const UOp& a, const UOp& b) { return a.arg_as<ir::RangeArg>().axis < b.arg_as<ir::RangeArg>().axis; });
  for (size_t i = 0; i + 1 < ranges_.size(); ++i)
    if (ranges_[i].arg_as<ir::RangeArg>().axis == ranges_[i + 1].arg_as<ir::RangeArg>().axis)
      throw Error("two different RANGEs use axis " + std::to_string(ranges_[i].arg_as<ir::RangeArg>().axis) + ": " + ir::to_inline(ranges_[i], 80) +
                  " and " + ir::to_inline(ranges_[i + 1], 80) + "; give each loop its own axis id");
  if (ranges_.size() > 64) throw Error("the kernel has " + std::to_string(ranges_.size()) + " loops; at most 64 are supported");
  for (size_t i = 0; i < ranges_.size(); ++i) bit_[ranges_[i].get()] = static_cast<int>(i);
}

int Scopes::bit(const UOp& range) const {
  auto it = bit_.find(range.get());
  if (it == bit_.end()) throw Error("internal: a RANGE appeared that the kernel did not have: " + ir::to_inline(range, 80));
  return it->second;
}

// Post-order over the nodes not yet memoized, stopping at memoized ones: each node is visited once
// over all calls, so placing every node of a kernel costs O(n), not a toposort per node.
uint64_t Scopes::of(const UOp& u) {
  if (auto it = memo_.find(u.get()); it != memo_.end()) return it->second;
  std::vector<std::pair<const UOp*, size_t>> stack{{&u, 0}};
  while (!stack.empty()) {
    auto& [n, next] = stack.back();
    if (next < n->src().size()) {
      const UOp& x = n->src(next++);
      if (!memo_.count(x.get())) stack.push_back({&x, 0});
      continue;
    }
    if (!memo_.count(n->get())) {  // a node reached twice below this one is done the first time
      uint64_t s = 0;
      for (const UOp& x : n->src()) s |= memo_.at(x.get());
      if (n->op() == Op::RANGE) s |= uint64_t{1} << bit(*n);
      if (n->op() == Op::END || n->op() == Op::REDUCE)
        for (size_t i = 1; i < n->src().size(); ++i) s &= ~(uint64_t{1} << bit(n->src(i)));
      memo_[n->get()] = s;
    }
    stack.pop_back();
  }
  return memo_.at(u.get());
}

std::vector<UOp> Scopes::list(uint64_t bits) const {
  std::vector<UOp> out;
  for (size_t i = 0; i < ranges_.size(); ++i)
    if (bits >> i & 1) out.push_back(ranges_[i]);
  return out;
}

}  // namespace ugpu::codegen
