#include "ir/rewrite.h"

#include <algorithm>
#include <deque>
#include <unordered_set>

#include "ir/text.h"

namespace ugpu::ir {

RewriteStats& rewrite_stats() {
  thread_local RewriteStats stats;
  return stats;
}

namespace {

using Map = std::unordered_map<UOp, UOp, UOpHash>;

// The rewriter works on raw handle pointers: nodes of the input graph are kept alive by the root,
// nodes made during the rewrite by `keep_` (a deque, so the handles never move). This keeps
// reference counting off the hot path.
struct Frame {
  const UOp* n;
  int stage;
  const UOp* next;  // stage 2: the node whose result becomes n's
  bool bpm_done;
};

class Rewriter {
 public:
  Rewriter(const PatternMatcher* pm, const RewriteOptions& opts) : pm_(pm), opts_(opts) {}

  UOp run(const UOp& root) {
    stack_.push_back({&root, 0, nullptr, false});
    while (!stack_.empty()) {
      Frame f = stack_.back();
      stack_.pop_back();
      if (f.stage == 0) enter(f);
      else if (f.stage == 1) finish(*f.n);
      else settle(*f.n, result(*f.next));
    }
    return result(root);
  }

 private:
  static const void* key(const UOp& u) { return u.get(); }
  const UOp& result(const UOp& u) const { return *replace_.at(key(u)); }
  bool done(const UOp& u) const { return replace_.count(key(u)) != 0; }
  const UOp* hold(UOp u) {
    keep_.push_back(std::move(u));
    return &keep_.back();
  }

  const UOp* apply(const PatternMatcher& m, const UOp& n) {
    const std::string* rule = nullptr;
    ++rewrite_stats().node_visits;
    UOp r = m.rewrite(n, opts_.ctx, &rule);
    if (!r) return nullptr;
    ++rewrite_stats().rule_hits;
    if (++steps_ > opts_.max_steps) not_converging();
    recent_[steps_ % kRecent] = *rule;
    const UOp* held = hold(std::move(r));
    origin_.emplace(key(*held), std::make_pair(&n, rule));
    return held;
  }

  void enter(const Frame& f) {
    const UOp& n = *f.n;
    if (done(n)) return;
    if (active_.count(key(n))) loop(n, "it is needed to rewrite itself");
    if (opts_.bpm && !f.bpm_done) {
      const UOp* cur = &n;
      std::vector<const void*> chain{key(n)};
      while (const UOp* r = apply(*opts_.bpm, *cur)) {
        if (std::find(chain.begin(), chain.end(), key(*r)) != chain.end()) loop(*r, "the bottom-up rules come back to it");
        chain.push_back(key(*r));
        cur = r;
      }
      if (cur != &n) {
        link(n, cur, /*bpm_done=*/true);
        return;
      }
    }
    active_.insert(key(n));
    stack_.push_back({&n, 1, nullptr, false});
    for (size_t i = n.src().size(); i-- > 0;)
      if (!done(n.src(i))) stack_.push_back({&n.src(i), 0, nullptr, false});
  }

  void finish(const UOp& n) {
    bool changed = false;
    for (const UOp& s : n.src()) changed = changed || !(result(s) == s);
    const UOp* next;
    if (!changed) {
      next = pm_ ? apply(*pm_, n) : nullptr;
      if (!next) {
        settle(n, n);
        return;
      }
    } else {
      std::vector<UOp> srcs;
      srcs.reserve(n.src().size());
      for (const UOp& s : n.src()) srcs.push_back(result(s));
      next = hold(n.with_src(srcs));
      origin_.emplace(key(*next), std::make_pair(&n, nullptr));
    }
    active_.erase(key(n));
    link(n, next, false);
  }

  // n's result is whatever next rewrites to.
  void link(const UOp& n, const UOp* next, bool bpm_done) {
    if (auto it = replace_.find(key(*next)); it != replace_.end()) {
      settle(n, *it->second);
      return;
    }
    if (active_.count(key(*next))) loop(*next, "a rewrite of it produced it again");
    active_.insert(key(n));
    stack_.push_back({&n, 2, next, false});
    stack_.push_back({next, 0, nullptr, bpm_done});
  }

  void settle(const UOp& n, const UOp& result) {
    replace_[key(n)] = &result;
    active_.erase(key(n));
  }

  [[noreturn]] void loop(const UOp& again, const std::string& why) {
    std::string msg = "rewrite loop: " + why + ": " + to_inline(again, 120);
    // Walk back from the node that most recently led here to `again`, through what produced what.
    std::vector<std::string> steps;
    const UOp* cur = &again;
    for (int guard = 0; guard < 16; ++guard) {
      auto it = origin_.find(key(*cur));
      if (it == origin_.end()) break;
      const auto& [from, rule] = it->second;
      steps.push_back("  " + to_inline(*from, 100) + "\n    --[" + (rule ? *rule : std::string("rebuilt with new sources")) + "]--> " +
                      to_inline(*cur, 100));
      cur = from;
      if (*cur == again) break;
    }
    if (!steps.empty()) msg += "\ncycle, most recent step last:";
    for (size_t i = steps.size(); i-- > 0;) msg += "\n" + steps[i];
    throw RewriteLoop(msg);
  }

  [[noreturn]] void not_converging() {
    std::string msg =
        "rewrite did not converge after " + std::to_string(opts_.max_steps) + " rule applications (a rule keeps making new nodes); last rules:";
    for (size_t i = 0; i < kRecent; ++i) {
      const std::string& r = recent_[(steps_ + i) % kRecent];
      if (!r.empty()) msg += " " + r;
    }
    throw RewriteLoop(msg);
  }

  static constexpr size_t kRecent = 8;
  const PatternMatcher* pm_;
  RewriteOptions opts_;
  std::vector<Frame> stack_;
  std::deque<UOp> keep_;
  std::unordered_map<const void*, const UOp*> replace_;
  std::unordered_set<const void*> active_;
  std::unordered_map<const void*, std::pair<const UOp*, const std::string*>> origin_;
  size_t steps_ = 0;
  std::string recent_[kRecent];
};

// Post-order, memoised, iterative: result(n) = f(n, n's sources' results).
template <class Visit, class Combine>
UOp transform(const UOp& root, Visit pre, Combine combine) {
  Map done;
  std::vector<std::pair<UOp, bool>> stack{{root, false}};
  while (!stack.empty()) {
    auto [n, expanded] = stack.back();
    stack.pop_back();
    if (done.count(n)) continue;
    if (UOp r = pre(n)) {
      done[n] = r;
      continue;
    }
    if (!expanded) {
      stack.push_back({n, true});
      for (size_t i = n.src().size(); i-- > 0;)
        if (!done.count(n.src(i))) stack.push_back({n.src(i), false});
      continue;
    }
    std::vector<UOp> srcs;
    for (const UOp& s : n.src()) srcs.push_back(done.at(s));
    done[n] = combine(n.with_src(srcs));
  }
  return done.at(root);
}

}  // namespace

UOp graph_rewrite(const UOp& root, const PatternMatcher* pm, const RewriteOptions& opts) { return Rewriter(pm, opts).run(root); }

UOp graph_walk(const UOp& root, const PatternMatcher& pm, void* ctx) {
  return transform(
      root, [](const UOp&) { return UOp(); },
      [&](const UOp& n) {
        ++rewrite_stats().node_visits;
        UOp r = pm.rewrite(n, ctx);
        if (r) ++rewrite_stats().rule_hits;
        return r ? r : n;
      });
}

UOp substitute(const UOp& root, const std::unordered_map<UOp, UOp, UOpHash>& replacements) {
  return transform(
      root,
      [&](const UOp& n) {
        auto it = replacements.find(n);
        return it == replacements.end() ? UOp() : it->second;
      },
      [](const UOp& n) { return n; });
}

}  // namespace ugpu::ir
