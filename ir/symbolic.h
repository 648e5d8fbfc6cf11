// The symbolic simplifier: rule sets for integer and index math, and the helpers they share.
//
// symbolic_simple(): constant folding of every ALU op and dtype, algebraic identities, bool algebra,
//   cast folding, WHERE folding. Safe for any dtype (floats: only what IEEE allows, treating the sign
//   of zero as insignificant, as codegen's nsz flag does).
// symbolic(): symbolic_simple plus what integer bounds and linear forms allow: sums put in one
//   canonical order with like terms combined, min==max nodes folded to constants, comparison and
//   MAX folding by bounds, floor division and modulo folding (by bounds, by gcd, by splitting the
//   numerator into quotient and remainder parts), and validity simplification of `where(valid, x, y)`.
//   Division, modulo and comparison rewrites that would be wrong under wrap-around apply to `index`
//   only; fixed-width integers get bounds-based folding, which is sound for them.
#pragma once
#include <vector>

#include "ir/upat.h"

namespace ugpu::ir {

const PatternMatcher& symbolic_simple();
const PatternMatcher& symbolic();
UOp simplify(const UOp& u);  // graph_rewrite with symbolic()

// An integer expression as sum(coef * term) + constant. Terms are the non-linear leaves, in the
// canonical order; no coefficient is 0; no term repeats.
struct Linear {
  std::vector<std::pair<UOp, int64_t>> terms;
  int64_t constant = 0;
};
Linear linear_form(const UOp& u);
UOp from_linear(const Linear& l, DType dt);

// Canonical order of nodes: op, then arg, dtype and sources (deterministic across processes).
bool canonical_less(const UOp& a, const UOp& b);

// x simplified under the assumption that `valid` (an AND of comparisons) is true.
UOp uop_given_valid(const UOp& valid, const UOp& x);
// An AND of comparisons with the clauses that the others imply removed (false if contradictory).
UOp simplify_valid(const UOp& valid);
// The clauses of an AND chain.
std::vector<UOp> split_and(const UOp& u);

// Floor division and modulo folding for index math (divmod.cpp). A null UOp if nothing applies.
UOp fold_divmod(const UOp& u);

}  // namespace ugpu::ir
