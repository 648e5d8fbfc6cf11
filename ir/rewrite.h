// Rewriting whole graphs with a PatternMatcher.
//
// graph_rewrite (post-order, the default): sources are rewritten before their users; a node whose
// sources changed is rebuilt; then the matcher is applied, and every node a rule produces — or a
// rebuild creates — is itself rewritten again, until nothing matches (a fixed point).
// Bottom-up (`bpm`): the matcher is applied to a node *before* its sources are visited (it sees the
// original children), repeated until it stops matching; then the sources are rewritten. Both
// matchers may be given at once.
// graph_walk: one pass, post-order; what rules produce is not rewritten again.
// substitute: replaces the given nodes (not looking inside the replacements).
//
// A rewrite that comes back to a node it came from (A -> B -> A) is an infinite loop: it raises
// RewriteLoop showing the cycle and the rules that made it. A rewrite that never settles (each step
// makes a new node) raises it after `max_steps` rule applications.
#pragma once
#include <string>
#include <unordered_map>

#include "common/error.h"
#include "ir/upat.h"

namespace ugpu::ir {

class RewriteLoop : public Error {
 public:
  using Error::Error;
};

struct RewriteOptions {
  const PatternMatcher* bpm = nullptr;  // bottom-up (pre-order) matcher
  void* ctx = nullptr;                  // handed to rule callbacks (Match::ctx)
  size_t max_steps = 1'000'000;         // rule applications before RewriteLoop
};

UOp graph_rewrite(const UOp& root, const PatternMatcher* pm, const RewriteOptions& opts = {});
inline UOp graph_rewrite(const UOp& root, const PatternMatcher& pm, void* ctx = nullptr) {
  return graph_rewrite(root, &pm, RewriteOptions{nullptr, ctx});
}
inline UOp graph_rewrite_bottom_up(const UOp& root, const PatternMatcher& bpm, void* ctx = nullptr) {
  return graph_rewrite(root, nullptr, RewriteOptions{&bpm, ctx});
}
UOp graph_walk(const UOp& root, const PatternMatcher& pm, void* ctx = nullptr);
UOp substitute(const UOp& root, const std::unordered_map<UOp, UOp, UOpHash>& replacements);

// Counters of rewrites on this thread, accumulating (reset them to measure; for benchmarks).
struct RewriteStats {
  size_t node_visits = 0;  // matcher calls
  size_t rule_hits = 0;
};
RewriteStats& rewrite_stats();

}  // namespace ugpu::ir
