// BEAM search over the optimizer's actions (codegen/opt/opt.h): each round extends every kept
// candidate by every action that applies, drops duplicates (the same kernel reached in another
// order), compiles the new ones on several threads, has the caller time them on the device, and keeps
// the `width` fastest. It stops when a round finds nothing faster than the best so far (by at least
// 1%), or after `max_rounds`.
#include <algorithm>
#include <set>

#include "codegen/compiler.h"
#include "codegen/opt/opt.h"

namespace ugpu::codegen::opt {
using namespace ir;

std::vector<Opt> candidate_actions(const UOp& sink, const Target& t) {
  std::vector<Opt> out;
  auto axes = kernel_axes(sink);
  for (const Axis& a : axes) {
    if (a.size < 0) continue;
    auto add = [&](OptOp op, std::initializer_list<int64_t> amounts) {
      for (int64_t n : amounts) out.push_back({op, a.id, n});
    };
    if (is_output(a.type)) {
      add(OptOp::UPCAST, {2, 3, 4, 8, 16});
      if (t.gpu()) add(OptOp::LOCAL, {2, 4, 8, 16, 32});
      else add(OptOp::TILE, {4, 8, 16});
      for (const Axis& b : axes)
        if (b.id > a.id && b.type == a.type) out.push_back({OptOp::SWAP, a.id, b.id});
    }
    if (a.type == AxisType::REDUCE) {
      add(OptOp::UNROLL, {2, 4, 8, 16});
      if (a.size <= 32) add(OptOp::UNROLL, {a.size});
      add(OptOp::LANES, {4, 8, 16});
      if (t.gpu()) add(OptOp::GROUP, {4, 8, 16, 32, 64});
      if (t.gpu()) add(OptOp::TC, {0});
    }
  }
  if (t.gpu())
    for (const UOp& u : sink.toposort())
      if (u.op() == Op::DEFINE_GLOBAL &&
          std::none_of(out.begin(), out.end(), [&](const Opt& o) { return o.op == OptOp::STAGE && o.axis == u.arg_as<int64_t>(); }))
        out.push_back({OptOp::STAGE, u.arg_as<int64_t>(), 0});
  return out;
}

std::vector<Opt> beam_search(const UOp& sink, const Target& t, const BeamOptions& o, const Measure& measure) {
  struct Candidate {
    std::vector<Opt> opts;
    UOp kernel;
    double seconds;
  };
  auto base_time = measure({});
  if (!base_time) return {};
  std::vector<Candidate> beam{{{}, sink, *base_time}};
  Candidate best = beam[0];
  std::set<ContentKey> seen{sink.key()};
  for (int round = 0; round < o.max_rounds; ++round) {
    std::vector<Candidate> next;
    for (const Candidate& c : beam)
      for (const Opt& a : candidate_actions(c.kernel, t)) {
        UOp k;
        try {
          k = apply_opt(c.kernel, a, t);
        } catch (const OptError&) { continue; }
        // tf32 rounds float32 inputs: asked for by hand only, never searched.
        if (a.op == OptOp::TC && kernel_tensor_core(k)->rounds_inputs) continue;
        if (!seen.insert(k.key()).second) continue;
        std::vector<Opt> opts = c.opts;
        opts.push_back(a);
        next.push_back({std::move(opts), k, 0});
      }
    if (next.empty()) break;
    // Compiled ahead on several threads (the caller's measure() then hits the compile cache);
    // candidates that do not compile are dropped there.
    std::vector<std::pair<UOp, CompileOptions>> jobs;
    for (const Candidate& c : next) {
      CompileOptions co;
      co.name = o.name;
      co.opts = c.opts;
      jobs.emplace_back(sink, co);
    }
    compile_in_parallel(t, jobs);
    std::vector<Candidate> timed;
    for (Candidate& c : next) {
      auto s = measure(c.opts);
      if (!s) continue;
      c.seconds = *s;
      timed.push_back(std::move(c));
    }
    if (timed.empty()) break;
    std::sort(timed.begin(), timed.end(), [](const Candidate& a, const Candidate& b) { return a.seconds < b.seconds; });
    if (timed.size() > static_cast<size_t>(o.width)) timed.resize(static_cast<size_t>(o.width));
    if (o.progress) o.progress(round + 1, next.size(), timed[0].opts, timed[0].seconds);
    if (timed[0].seconds >= best.seconds * 0.99) break;
    best = timed[0];
    beam = std::move(timed);
  }
  return best.opts;
}

}  // namespace ugpu::codegen::opt
