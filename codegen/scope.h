// Which loops are open at a node: the RANGEs it depends on, minus those an END or a REDUCE has closed.
// This one fact drives reduce lowering (where an accumulator is reset), the group-reduce lowering
// (which loops surround a reduction) and the linearizer (which loop body a node goes in).
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "ir/uop.h"

namespace ugpu::codegen {

class Scopes {
 public:
  // Numbers the RANGEs under `root` by axis id (bit i = i-th axis). Throws Error when two RANGEs
  // share an axis id or there are more than 64.
  explicit Scopes(const ir::UOp& root);
  uint64_t of(const ir::UOp& u);  // open ranges at u, memoized; works for nodes made later too
  const std::vector<ir::UOp>& ranges() const { return ranges_; }
  int bit(const ir::UOp& range) const;             // throws Error for a RANGE not under the root
  std::vector<ir::UOp> list(uint64_t bits) const;  // the RANGEs of a set, outermost axis first

 private:
  std::vector<ir::UOp> ranges_;
  std::unordered_map<const void*, int> bit_;
  std::unordered_map<const void*, uint64_t> memo_;
};

}  // namespace ugpu::codegen
