// UPat and PatternMatcher: matching UOp graphs against patterns, and rules that rewrite them.
//
// A UPat constrains a node's op (a set), dtype (a set), arg, and sources, and may bind the node to a
// name. A name used twice must bind the identical node (so `x + x` only matches a doubling). Sources
// are matched positionally (exact count, or a prefix with allow_any_len), in any order (every
// permutation is tried; commutative ALU operators build these), or with one pattern repeated over
// every source. A match can bind in several ways; the rule's callback is called for each until it
// returns a node. The callback is the rule's predicate too: returning a null UOp rejects.
//
// A PatternMatcher holds rules in order; for a node it tries, in list order, the rules whose pattern
// can start at the node's op, skipping at once those whose single-op source patterns cannot be met.
// The first rule whose callback returns a node different from the input wins.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/uop.h"

namespace ugpu::ir {

class Match;
using RewriteFn = std::function<UOp(const Match&)>;

class UPat {
 public:
  struct Node;
  UPat();                                  // matches any node
  UPat(Op op);                             // NOLINT: a node of this op, any sources
  UPat(OpSet ops);                         // NOLINT
  UPat(OpSet ops, std::vector<UPat> src);  // positional sources

  static UPat var(std::string name, std::vector<DType> dtypes = {});        // any node, bound to name
  static UPat cvar(std::string name = "", std::vector<DType> dtypes = {});  // any CONST
  static UPat cnst(double value);                                           // a CONST equal in value (0 matches 0 and 0.0 and -0.0)

  UPat named(std::string name) const;
  UPat dtypes(std::vector<DType> dts) const;
  UPat arg(Arg a) const;
  UPat src(std::vector<UPat> src) const;                   // positional
  UPat any_order(std::vector<UPat> src) const;             // every permutation
  UPat repeat(UPat each) const;                            // every source, any count
  UPat allow_any_len() const;                              // positional sources are a prefix
  UPat check(std::function<bool(const UOp&)> pred) const;  // extra test on the node

  std::shared_ptr<const Node> node() const { return n_; }

 private:
  explicit UPat(std::shared_ptr<Node> n) : n_(std::move(n)) {}
  UPat with(const std::function<void(Node&)>& edit) const;
  std::shared_ptr<Node> n_;
};

// ALU patterns: commutative ops take their sources in any order.
UPat upat_alu(Op op, std::vector<UPat> src);
inline UPat operator+(const UPat& a, const UPat& b) { return upat_alu(Op::ADD, {a, b}); }
inline UPat operator*(const UPat& a, const UPat& b) { return upat_alu(Op::MUL, {a, b}); }
inline UPat operator%(const UPat& a, const UPat& b) { return upat_alu(Op::FLOORMOD, {a, b}); }
inline UPat operator&(const UPat& a, const UPat& b) { return upat_alu(Op::AND, {a, b}); }
inline UPat operator|(const UPat& a, const UPat& b) { return upat_alu(Op::OR, {a, b}); }
inline UPat operator^(const UPat& a, const UPat& b) { return upat_alu(Op::XOR, {a, b}); }

// What a rule's callback sees: the bound names, the matched node and the rewrite context.
class Match {
 public:
  const UOp& operator[](std::string_view name) const;  // throws ugpu::Error if not bound
  const UOp* get(std::string_view name) const;         // nullptr if not bound
  const UOp& node() const { return *root_; }
  template <class T>
  T& ctx() const {
    return *static_cast<T*>(ctx_);
  }
  void* raw_ctx() const { return ctx_; }

 private:
  friend class PatternMatcher;
  const std::vector<std::string>* names_ = nullptr;
  const UOp* const* slots_ = nullptr;
  const UOp* root_ = nullptr;
  void* ctx_ = nullptr;
};

struct Rule {
  Rule(UPat pat, RewriteFn fn, std::string name = "") : pat(std::move(pat)), fn(std::move(fn)), name(std::move(name)) {}
  UPat pat;
  RewriteFn fn;
  std::string name;  // shown in rewrite-loop errors; defaults to "<matcher>#<index>"
};

class PatternMatcher {
 public:
  PatternMatcher(std::string name, std::vector<Rule> rules);
  // The first rule's result that is non-null and not `u` itself, or a null UOp. `fired` receives
  // the winning rule's name.
  UOp rewrite(const UOp& u, void* ctx = nullptr, const std::string** fired = nullptr) const;
  const std::string& name() const;
  size_t size() const;
  // The rules of a, then those of b.
  friend PatternMatcher operator+(const PatternMatcher& a, const PatternMatcher& b);

  struct Impl;

 private:
  explicit PatternMatcher(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace ugpu::ir
