// The scheduler and realize: fusion by kernel counts, the memory plan, the example models against
// their host references, Jit replay, variables, and the errors a user acts on.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <numeric>
#include <random>

#include "schedule/schedule.h"
#include "tensor/examples.h"
#include "tensor/jit.h"
#include "tests/tensor/host.h"

namespace ugpu::test {
namespace {
namespace dt = tensor::dtypes;
using tensor::last_realize;

std::string joined(const std::vector<std::string>& v) {
  std::string r;
  for (const std::string& s : v) r += (r.empty() ? "" : " ") + s;
  return r;
}

size_t kernels_of(Tensor t) {
  t.realize();
  return last_realize().kernels;
}

void check_close(const Tensor& got, const tensor::examples::HostArray& want, double rtol, double atol) {
  ugpu::test::check_close(got, Host{want.shape, want.v}, rtol, atol);
}

TEST_CASE("schedule: fusion, counted in kernels") {
  for (const std::string& dev : test_devices()) {
    INFO("device " << dev);
    Tensor a = upload(random_host({16, 33}, 1), dev), b = upload(random_host({16, 33}, 2), dev);
    CHECK(kernels_of((a + b).relu().sum({1})) == 1);                                   // elementwise into a reduction
    CHECK(kernels_of(((a * 2.0).exp() + b.permute({1, 0}).transpose()).sqrt()) == 1);  // movement ops are index math
    CHECK(kernels_of(a.softmax(-1)) == 3);                                             // max, sum of exp, normalize
    CHECK(kernels_of(a.matmul(b.transpose()).relu()) == 1);
    CHECK(kernels_of(a.sum({1}).sum({0})) == 2);  // a reduction inside a reduction is a buffer
    CHECK(kernels_of((a + 1.0).contiguous() * 2.0) == 2);
    CHECK(kernels_of(a.reshape({4, 4, 33}).pad({{1, 1}, {0, 0}, {2, 0}}).flip({1}).shrink({{1, 5}, {0, 4}, {0, 30}})) == 1);
    // A buffer view needs no kernel.
    CHECK(kernels_of(a.reshape({33, 16})) == 0);
    // Dead tensors are never computed, and a shared subexpression is computed once per kernel.
    Tensor unused = a.exp().sum();
    Tensor e = (a * b).exp();
    CHECK(kernels_of(e + e) == 1);
    CHECK(joined(tensor::last_realize().kernel_names) == "E_16_33");
  }
}

TEST_CASE("schedule: outputs of one shape share a kernel; shared work is done once") {
  Tensor a = upload(random_host({16, 33}, 1), "cpu");
  Tensor s = a.sum({1});
  Tensor outs[] = {s + 1.0, s * 2.0, a.max({1})};
  Tensor::realize(outs);
  CHECK(joined(last_realize().kernel_names) == "R_16_x3");  // one loop over rows, three stores
  std::vector<double> sv = values(s), o1 = values(outs[0]), o2 = values(outs[1]);
  for (size_t i = 0; i < sv.size(); ++i) CHECK(o1[i] == static_cast<double>(static_cast<float>(sv[i]) + 1.0f));
  // Dependent outputs cannot share: the normalized rows need the sums first.
  Tensor dep[] = {s, a / s.reshape({16, 1})};
  Tensor::realize(dep);
  CHECK(last_realize().kernels == 2);
  // The recompute rule: in a chain where each step's value feeds the next step's max and the next
  // step itself, values costing more than kRecomputeLimit ops stop being recomputed.
  Tensor y = a;
  for (int i = 0; i < 24; ++i) y = (y * 0.5 - y.max({1}, true)).exp();
  y.realize();
  CHECK(last_realize().kernels == 32);  // 24 maxima, the result, and every third step's value (11 ops each: 3 steps pass 32)
}

TEST_CASE("schedule: outputs of one shape that read nothing in common keep their own kernels") {
  // Grouped, unrelated outputs would all be computed at the start and held until their last use.
  for (const std::string& dev : test_devices()) {
    INFO("device " << dev);
    Tensor a = upload(random_host({8, 16}, 1), dev), b = upload(random_host({8, 16}, 2), dev);
    std::vector<Tensor> apart{a.exp(), b.exp()};
    Tensor::realize(apart);
    CHECK(last_realize().kernels == 2);
    std::vector<Tensor> together{a.exp(), a.sin()};
    Tensor::realize(together);
    CHECK(last_realize().kernels == 1);
  }
}

TEST_CASE("schedule: intermediates share memory when their lifetimes do not overlap, and never when they do") {
  // Six chained reductions, each a buffer for the next: at most two are alive at once.
  Tensor x = upload(random_host({64, 64}, 3), "cpu");
  Tensor y = x;
  for (int i = 0; i < 6; ++i) y = (y * 0.5 - y.max({1}, true)).exp().contiguous();
  y.realize();
  const auto& st = last_realize();
  CHECK(st.kernels == 12);
  CHECK(st.unshared_bytes > st.arena_bytes);
  CHECK(st.arena_bytes == 2 * 64 * 64 * 4 + 256);  // y_i, its max, and y_i+1 being written
  // Property over random graphs: buffers alive at the same kernel never overlap in the arena.
  std::mt19937_64 rng(5);
  int64_t next = 1'000'000;
  for (int g = 0; g < 50; ++g) {
    std::vector<ir::UOp> pool{schedule::buffer_view(1, dt::float32, {8, 8})};
    for (int i = 0; i < 12; ++i) {
      ir::UOp a = pool[rng() % pool.size()], b = pool[rng() % pool.size()];
      ir::UOp s = ir::UOp::make(ir::Op::ADD, dt::float32, {a, b});
      if (rng() % 2) {  // a reduction broadcast back: a buffer boundary
        ir::UOp r = ir::UOp::make(ir::Op::REDUCE_AXIS, dt::float32, {s}, ir::ReduceAxisArg{ir::Op::MAX, {static_cast<int64_t>(rng() % 2)}});
        s = ir::UOp::make(ir::Op::EXPAND, dt::float32, {r}, ir::Ints{8, 8});
      }
      pool.push_back(s);
    }
    std::vector<ir::UOp> roots{pool.back()};
    schedule::Schedule s = schedule::make_schedule(roots, [&] { return next++; });
    // Lifetime of each intermediate: the kernel writing it .. the last kernel reading it.
    std::map<int64_t, std::pair<size_t, size_t>> life;
    for (size_t k = 0; k < s.kernels.size(); ++k)
      for (size_t slot = 0; slot < s.kernels[k].slots.size(); ++slot) {
        int64_t id = s.kernels[k].slots[slot];
        auto [it, fresh] = life.try_emplace(id, k, k);
        it->second.second = k;
        if (slot == 0) CHECK(fresh);  // slot 0 is written, once
      }
    for (const auto& a : s.buffers)
      for (const auto& b : s.buffers) {
        if (a.id >= b.id || a.output || b.output) continue;
        auto la = life.at(a.id), lb = life.at(b.id);
        bool live_together = la.first <= lb.second && lb.first <= la.second;
        int64_t ea = a.arena_offset + a.count * 4, eb = b.arena_offset + b.count * 4;
        bool overlap = a.arena_offset < eb && b.arena_offset < ea;
        CHECK_FALSE((live_together && overlap));
        CHECK(a.arena_offset % schedule::kArenaAlignment == 0);
      }
  }
}

TEST_CASE("schedule: an MLP and a transformer block forward match their host references, in a fixed number of kernels") {
  for (const std::string& dev : test_devices()) {
    INFO("device " << dev);
    auto mlp = tensor::examples::Mlp::random(20, 33, 10, 1, dev);
    Host x = random_host({4, 20}, 9);
    Tensor out = mlp.forward(upload(x, dev));
    out.realize();
    CHECK(last_realize().kernels == 5);  // two linear layers, then log_softmax's max, sum and output
    check_close(out, mlp.reference({x.shape, x.v}), 1e-4, 1e-5);

    auto block = tensor::examples::TransformerBlock::random(32, 4, 2, 48, 2, dev);
    Host xb = random_host({2, 5, 32}, 10);
    Tensor y = block.forward(upload(xb, dev));
    y.realize();
    // The 18 kernels of docs/tensor.md's walk-through: rms_norm's mean, the normalized x, q, the
    // rotary tables (frequencies; cos and sin in one kernel), q rotated, k and v (one kernel), k
    // rotated, scores, softmax's max and sum, the probabilities, attention @ v, wo + residual,
    // rms_norm's mean, the normalized h, silu(w1 h) * w3 h (both projections in one kernel), w2 +
    // residual. The planner fits the intermediates in 5712 bytes.
    CHECK(
        joined(last_realize().kernel_names) ==
        "R_2_5 E_2_5_32 R_2_5_32 E_4 E_5_4_x2 E_2_4_5_8 R_2_5_16_x2 E_2_2_5_8 R_2_4_5_5 R_2_4_5 R_2_4_5 E_2_4_5_5 R_2_4_5_8 R_2_5_32 R_2_5 E_2_5_32 "
        "R_2_5_48 R_2_5_32");
    CHECK(last_realize().arena_bytes == 5712);
    check_close(y, block.reference({xb.shape, xb.v}), 1e-4, 1e-5);
  }
}

TEST_CASE("tensor: the README's example runs as written, in 5 kernels") {
  Tensor x = Tensor::randn({8, 64}, /*seed*/ 1).realize();
  Tensor w1 = (Tensor::randn({128, 64}, 2) * 0.1).realize(), b1 = Tensor::zeros({128});
  Tensor w2 = (Tensor::randn({10, 128}, 3) * 0.1).realize();
  Tensor probs = x.linear(w1, b1).gelu().linear(w2).softmax(-1);
  probs.realize();
  CHECK(last_realize().kernels == 5);
  std::vector<float> p = probs.to_vector<float>();
  REQUIRE(p.size() == 80);
  for (int r = 0; r < 8; ++r) CHECK(std::accumulate(p.begin() + r * 10, p.begin() + r * 10 + 10, 0.0) == doctest::Approx(1.0).epsilon(1e-5));
}

TEST_CASE("jit: replays equal eager results, with new inputs and a new position variable") {
  for (const std::string& dev : test_devices()) {
    INFO("device " << dev);
    auto fn = [](const std::vector<Tensor>& in, const tensor::Jit::Vars& v) {
      Tensor pos = Tensor::variable("pos", 0, 100, v.at("pos"), in[0].device());
      Tensor w = (in[0] * pos.cast(dt::float32) + in[1]).softmax(-1);
      return std::vector<Tensor>{w, w.sum({0})};
    };
    tensor::Jit jit(fn);
    for (int64_t call = 0; call < 5; ++call) {
      INFO("call " << call);
      Host a = random_host({3, 17}, 100 + call), b = random_host({17}, 200 + call);
      std::vector<Tensor> in{upload(a, dev), upload(b, dev)};
      size_t before = tensor::kernels_run();
      std::vector<Tensor> got = jit(in, {{"pos", call * 7}});
      if (call >= 2) CHECK(tensor::kernels_run() == before);  // replayed: nothing scheduled or launched by realize
      std::vector<Tensor> want = fn(in, {{"pos", call * 7}});
      REQUIRE(got.size() == 2);
      check_close(got[0], Host{want[0].shape(), values(want[0])}, 1e-6, 1e-7);
      check_close(got[1], Host{want[1].shape(), values(want[1])}, 1e-6, 1e-7);
    }
    CHECK(jit.captured());
    CHECK(jit.kernels() == 4);
    std::vector<Tensor> wrong{upload(random_host({4, 17}, 1), dev), upload(random_host({17}, 2), dev)};
    CHECK_THROWS_WITH(jit(wrong, {{"pos", 1}}), doctest::Contains("input 0 is float [4, 17]"));
    std::vector<Tensor> ok{upload(random_host({3, 17}, 1), dev), upload(random_host({17}, 2), dev)};
    CHECK_THROWS_WITH(jit(ok, {{"pos", 101}}), doctest::Contains("outside its bounds [0, 100]"));
    CHECK_THROWS_WITH(jit(ok, {}), doctest::Contains("'pos' was given at capture and is missing"));
    tensor::Jit identity([](const std::vector<Tensor>& in, const tensor::Jit::Vars&) { return in; });
    identity(ok);
    CHECK_THROWS_WITH(identity(ok), doctest::Contains("an output is one of the inputs"));
  }
}

TEST_CASE("tensor: variables are kernel arguments, so a new value reuses the compiled kernel") {
  Tensor x = upload(random_host({8}, 1), "cpu");
  std::vector<double> base = values(x);
  for (int64_t p : {0, 3, 9}) {
    Tensor v = Tensor::variable("step", 0, 10, p, "cpu");
    Tensor y = x + v.cast(dt::float32);
    std::vector<double> got = values(y);
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == static_cast<double>(static_cast<float>(base[i]) + static_cast<float>(p)));
  }
  CHECK_THROWS_WITH(Tensor::variable("step", 0, 10, 11, "cpu"), doctest::Contains("min <= value <= max"));
  Tensor a = Tensor::variable("k", 0, 10, 1, "cpu"), b = Tensor::variable("k", 0, 10, 2, "cpu");
  CHECK_THROWS_WITH((a + b).realize(), doctest::Contains("variable 'k' is bound to both"));
}

TEST_CASE("tensor: errors name the operation and what did not fit") {
  Tensor a = Tensor::zeros({2, 3}, dt::float32, "cpu"), b = Tensor::zeros({4}, dt::float32, "cpu");
  CHECK_THROWS_WITH(a + b, "add: shapes [2, 3] and [4] do not broadcast");
  CHECK_THROWS_WITH(a.matmul(b), doctest::Contains("matmul: shapes [2, 3] and [4] do not fit: 3 != 4"));
  CHECK_THROWS_WITH(a.reshape({5}), "reshape: [2, 3] to [5] changes the number of elements");
  CHECK_THROWS_WITH(a.permute({0, 0}), "permute: [0, 0] is not a permutation");
  CHECK_THROWS_WITH(a.sum({2}), "sum: axis 2 is outside a tensor of 2 axes");
  CHECK_THROWS_WITH(a.bitwise_and(a), "bitwise_and: takes integer or bool tensors, not float");
  CHECK_THROWS_WITH(a.expand({4, 3}), doctest::Contains("only size-1 axes expand"));
  CHECK_THROWS_WITH(a.bitcast(dt::int8), doctest::Contains("the item sizes must match"));
  CHECK_THROWS_WITH(Tensor::from(std::vector<float>{1, 2, 3}, {2, 2}, "cpu"), doctest::Contains("12 bytes of data for 4 float elements"));
  CHECK_THROWS_WITH(a.to_vector<int32_t>(), "to_vector: the tensor holds float, not int32");
  Tensor on_amd = Tensor::zeros({2, 3}, dt::float32, "emu:amd");
  CHECK_THROWS_WITH(a + on_amd, doctest::Contains("device mismatch: a tensor on emu:amd and one on cpu"));
  CHECK_THROWS_WITH(Tensor::empty({int64_t{1} << 40}, dt::float32, "emu:amd").realize(), doctest::Contains("out of device memory on emu:amd"));
  CHECK_THROWS_WITH(Tensor::zeros({2}, dt::float32, "no-such-device").realize(), doctest::Contains("no-such-device"));
  CHECK_THROWS_WITH(Tensor::zeros({int64_t{1} << 40, int64_t{1} << 40}, dt::float32, "cpu"), doctest::Contains("more than 2^48 elements"));
  CHECK_THROWS_WITH(a.reshape({1, 6}).expand({-2, 6}), doctest::Contains("negative dimension"));
  CHECK_THROWS_WITH(a.pad({{-3, 0}}), doctest::Contains("removes more than axis 0 has"));
}

TEST_CASE("tensor: long chains build, schedule and free without deep recursion") {
  Tensor x = Tensor::ones({4}, dt::float32, "cpu");
  Tensor y = x;
  for (int i = 0; i < 5000; ++i) y = y + 1.0;
  y.realize();
  CHECK(last_realize().kernels == 21);  // cut below every kMaxFusedDepth (256) levels: 5000 / 257, rounded up
  check_close(y, Host{{4}, std::vector<double>(4, 5001)});
  Tensor z = x;
  for (int i = 0; i < 200000; ++i) z = z * 1.0;  // built and dropped, never realized
  z = Tensor();
  CHECK_FALSE(z.defined());
}

TEST_CASE("tensor: printing shows values as NumPy does, eliding the middle of long axes") {
  CHECK(Tensor::arange(6, dt::int32, "cpu").reshape({2, 3}).to_string() == "Tensor([[0, 1, 2],\n        [3, 4, 5]], int32, shape [2, 3], on cpu)");
  CHECK(Tensor::arange(10, dt::int32, "cpu").to_string(2) == "Tensor([0, 1, ..., 8, 9], int32, shape [10], on cpu)");
  CHECK(Tensor::full({}, 0.5, dt::float32, "cpu").to_string() == "Tensor(0.5, float, shape [], on cpu)");
  CHECK(Tensor::eye(2, dt::bool_, "cpu").to_string() == "Tensor([[true, false],\n        [false, true]], bool, shape [2, 2], on cpu)");
}

TEST_CASE("tensor: UGPU_DEBUG=1 prints every kernel a realize runs: device, name, UOps, device time") {
  Tensor a = upload(random_host({16, 33}, 1), "cpu");
  // Standard error into a file for the realize, then back.
  std::fflush(stderr);
  int saved = dup(2);
  FILE* log = std::tmpfile();
  REQUIRE(log);
  dup2(fileno(log), 2);
  tensor::set_debug(1);
  a.softmax(-1).realize();
  tensor::set_debug(0);
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::rewind(log);
  std::string text;
  char buf[256];
  while (std::fgets(buf, sizeof buf, log)) text += buf;
  std::fclose(log);
  INFO(text);
  CHECK(std::count(text.begin(), text.end(), '\n') == 3);  // max, sum, normalize
  CHECK(text.find("cpu    R_16") != std::string::npos);
  CHECK(text.find("E_16_33") != std::string::npos);
  CHECK(text.find(" uops ") != std::string::npos);
  CHECK(text.find(" us") != std::string::npos);
}

TEST_CASE("tensor: to() moves values between devices") {
  Host h = random_host({3, 5}, 4);
  Tensor a = upload(h, "cpu");
  Tensor b = a.to("emu:amd") * 2.0;
  CHECK(b.device() == "emu:amd");
  check_close(b.to("emu:nv").to("cpu"), map1(h, [](double x) { return 2 * x; }));
}

}  // namespace
}  // namespace ugpu::test
