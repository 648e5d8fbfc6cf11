#include <doctest/doctest.h>

#include <random>
#include <thread>

#include "common/error.h"
#include "ir/alu.h"
#include "ir/uop.h"

using namespace ugpu::ir;
namespace dt = ugpu::ir::dtypes;

TEST_CASE("uop: hash-consing makes equal nodes the same node") {
  UOp x = UOp::var("x", 0, 10);
  UOp a = x + 3, b = x + 3;
  CHECK(a == b);
  CHECK(a.get() == b.get());
  CHECK_FALSE(a == x + 4);
  CHECK_FALSE(UOp::var("x", 0, 11) == x);
  CHECK(UOp::const_float(dt::float32, 0.0) == UOp::const_float(dt::float32, 0.0));
  CHECK_FALSE(UOp::const_float(dt::float32, 0.0) == UOp::const_float(dt::float32, -0.0));
  CHECK(UOp::const_float(dt::float32, NAN) == UOp::const_float(dt::float32, -NAN));
  CHECK_FALSE(UOp::const_int(dt::int32, 1) == UOp::const_int(dt::int64, 1));
  CHECK(a.with_src(a.src()) == a);
  UOp both[] = {x, x};
  CHECK(a.with_src(both) == x + x);
}

TEST_CASE("uop: nodes are freed when the last handle goes, even long chains") {
  size_t before = live_uop_count();
  {
    UOp x = UOp::var("chain_x", 0, 10);
    UOp acc = x;
    for (int i = 0; i < 200000; ++i) acc = UOp::alu(Op::ADD, {acc, x});
    CHECK(live_uop_count() >= before + 200000);
    CHECK(acc.vmax() == 2000010);  // bounds of a deep chain compute without recursion
    CHECK(acc.toposort().size() == 200001);
    CHECK(acc.key_hex().size() == 64);
  }
  CHECK(live_uop_count() == before);
}

TEST_CASE("uop: construction from several threads agrees") {
  size_t before = live_uop_count();
  {
    auto build = [] {
      UOp x = UOp::var("t", 0, 100);
      std::vector<UOp> keep;
      for (int i = 0; i < 20000; ++i) keep.push_back((x * (i % 97)) + (i % 13));
      return keep;
    };
    std::vector<UOp> a, b;
    std::thread t1([&] { a = build(); }), t2([&] { b = build(); });
    t1.join();
    t2.join();
    for (size_t i = 0; i < a.size(); ++i) REQUIRE(a[i] == b[i]);
    // churn: create and drop the same nodes concurrently
    auto churn = [] {
      for (int i = 0; i < 20000; ++i) {
        UOp x = UOp::var("churn", 0, i % 7);
        UOp y = x + 1;
        (void)y.vmax();
      }
    };
    std::thread c1(churn), c2(churn);
    c1.join();
    c2.join();
  }
  CHECK(live_uop_count() == before);
}

TEST_CASE("uop: content key is structural and stable") {
  UOp x = UOp::var("x", 0, 10);
  UOp e1 = (x * 4) + 1;
  std::string k = e1.key_hex();
  CHECK(k.size() == 64);
  CHECK(k == ((x * 4) + 1).key_hex());
  CHECK(k != ((x * 4) + 2).key_hex());
  CHECK(k != ((UOp::var("x", 0, 11) * 4) + 1).key_hex());
  CHECK(UOp::const_float(dt::float32, 0.0).key_hex() != UOp::const_float(dt::float32, -0.0).key_hex());
  CHECK(UOp::const_int(dt::int32, 1).key_hex() != UOp::const_int(dt::int64, 1).key_hex());
  // The key is SHA-256 over "op\0dtype\0arg\0" then the source keys. The first value below is what
  // coreutils' `printf 'CONST\0index\0001\0' | sha256sum` prints; pinning these makes a change to the
  // derivation (which invalidates every on-disk cache) a deliberate one.
  CHECK(UOp::const_int(dt::index, 1).key_hex() == "957364904608f0c88d42ba2ed2b92d403a2ceaab7c8f3957366cd4eb10c62775");
  CHECK(e1.key_hex() == "db0ad713de07660c568ef34b4f115ccb5350764f28c4c3eb03bbc880406dbf33");
}

TEST_CASE("uop: bounds of each op") {
  UOp r = UOp::range(16, 0);
  CHECK(r.vmin() == 0);
  CHECK(r.vmax() == 15);
  CHECK(UOp::range(0, 1).vmax() == 0);
  UOp v = UOp::var("v", -3, 5);
  auto b = [](const UOp& u) { return std::pair{u.vmin(), u.vmax()}; };
  CHECK(b(v + r) == std::pair<int64_t, int64_t>{-3, 20});
  CHECK(b(v - r) == std::pair<int64_t, int64_t>{-18, 5});
  CHECK(b(v * r) == std::pair<int64_t, int64_t>{-45, 75});
  CHECK(b(-v) == std::pair<int64_t, int64_t>{-5, 3});
  UOp w = UOp::var("w", -5, 7);
  CHECK(b(w.floordiv(4)) == std::pair<int64_t, int64_t>{-2, 1});
  CHECK(b(w.floordiv(-4)) == std::pair<int64_t, int64_t>{-2, 1});
  CHECK(b(w % 4) == std::pair<int64_t, int64_t>{0, 3});
  CHECK(b(UOp::var("p", 5, 7) % 4) == std::pair<int64_t, int64_t>{1, 3});
  CHECK(b(UOp::alu(Op::CDIV, {w, UOp::const_int(dt::index, 4)})) == std::pair<int64_t, int64_t>{-1, 1});
  CHECK(b(UOp::alu(Op::CMOD, {w, UOp::const_int(dt::index, 4)})) == std::pair<int64_t, int64_t>{-3, 3});
  CHECK(b(v.max(r)) == std::pair<int64_t, int64_t>{0, 15});
  CHECK(b(r << 2) == std::pair<int64_t, int64_t>{0, 60});
  CHECK(b(r >> 2) == std::pair<int64_t, int64_t>{0, 3});
  CHECK(b(UOp::var("big", 0, 1000) & 7) == std::pair<int64_t, int64_t>{0, 7});
  CHECK(b(r | 1) == std::pair<int64_t, int64_t>{1, 15});
  CHECK(b(r.lt(UOp::const_int(dt::index, 16))) == std::pair<int64_t, int64_t>{1, 1});
  CHECK(b(r.lt(UOp::const_int(dt::index, 8))) == std::pair<int64_t, int64_t>{0, 1});
  CHECK(b(r.ne(UOp::const_int(dt::index, 20))) == std::pair<int64_t, int64_t>{1, 1});
  CHECK(b(r.lt(UOp::const_int(dt::index, 8)).where(v, r)) == std::pair<int64_t, int64_t>{-3, 15});
  CHECK(b(r.lt(UOp::const_int(dt::index, 8)).where(v, UOp::invalid())) == std::pair<int64_t, int64_t>{-3, 5});
  // fixed-width: an overflowing sum can be anything
  UOp i32 = UOp::var("i", 0, INT32_MAX, dt::int32);
  CHECK(b(i32 + 1) == std::pair<int64_t, int64_t>{INT32_MIN, INT32_MAX});
  CHECK(b(UOp::var("s", 0, 300, dt::int32).cast(dt::int8)) == std::pair<int64_t, int64_t>{-128, 127});
  CHECK(b(UOp::var("s", 0, 100, dt::int32).cast(dt::int8)) == std::pair<int64_t, int64_t>{0, 100});
  CHECK(b(UOp::const_float(dt::float32, 1.5)) == std::pair<int64_t, int64_t>{INT64_MIN, INT64_MAX});
}

TEST_CASE("uop: bounds are sound (every value at every point lies inside)") {
  std::mt19937 rng(11);
  const Op ops[] = {Op::ADD, Op::SUB, Op::MUL, Op::FLOORDIV, Op::FLOORMOD, Op::CDIV,  Op::CMOD, Op::MAX,
                    Op::AND, Op::OR,  Op::XOR, Op::CMPLT,    Op::CMPNE,    Op::CMPEQ, Op::SHL,  Op::SHR};
  for (int iter = 0; iter < 400; ++iter) {
    int64_t alo = static_cast<int64_t>(rng() % 21) - 10, blo = static_cast<int64_t>(rng() % 21) - 10;
    UOp a = UOp::var("a", alo, alo + static_cast<int64_t>(rng() % 12), dt::int32);
    UOp bb = UOp::var("b", blo, blo + static_cast<int64_t>(rng() % 12), dt::int32);
    Op op = ops[rng() % std::size(ops)];
    if (op == Op::SHL || op == Op::SHR) bb = UOp::const_int(dt::int32, rng() % 5);
    if ((op == Op::AND || op == Op::OR || op == Op::XOR) && rng() % 2) bb = UOp::const_int(dt::int32, rng() % 16);
    UOp e = UOp::alu(op, {a, bb});
    for (int64_t va = a.vmin(); va <= a.vmax(); ++va)
      for (int64_t vb = bb.vmin(); vb <= bb.vmax(); ++vb) {
        auto r = evaluate(e, {{a, Scalar{va}}, {bb, Scalar{vb}}});
        if (!r) continue;
        int64_t v = std::get<int64_t>(*r);
        INFO(op_name(op), " a=", va, " b=", vb, " -> ", v, " bounds [", e.vmin(), ", ", e.vmax(), "]");
        REQUIRE(v >= e.vmin());
        REQUIRE(v <= e.vmax());
      }
  }
}

TEST_CASE("uop: shapes of movement, reduce and elementwise ops") {
  UOp x = UOp::make(Op::RESHAPE, dt::float32, {UOp::const_float(dt::float32, 1)}, Ints{2, 3, 4});
  REQUIRE(x.shape().has_value());
  CHECK(*x.shape() == Shape{2, 3, 4});
  CHECK(*UOp::make(Op::PERMUTE, dt::float32, {x}, Ints{2, 0, 1}).shape() == Shape{4, 2, 3});
  CHECK(*UOp::make(Op::PAD, dt::float32, {x}, Pairs{{1, 1}, {0, 2}, {0, 0}}).shape() == Shape{4, 5, 4});
  CHECK(*UOp::make(Op::SHRINK, dt::float32, {x}, Pairs{{0, 1}, {1, 3}, {0, 4}}).shape() == Shape{1, 2, 4});
  CHECK(*UOp::make(Op::REDUCE_AXIS, dt::float32, {x}, ReduceAxisArg{Op::ADD, {1}}).shape() == Shape{2, 1, 4});
  CHECK(*UOp::make(Op::FLIP, dt::float32, {x}, Ints{0}).shape() == Shape{2, 3, 4});
  CHECK(*(x + x).shape() == Shape{2, 3, 4});
  CHECK(*(x * 2.0).shape() == Shape{2, 3, 4});  // constants broadcast
  UOp y = UOp::make(Op::RESHAPE, dt::float32, {x}, Ints{6, 4});
  CHECK_FALSE((x + y).shape().has_value());  // mismatched: undefined
  CHECK_FALSE(UOp::var("v", 0, 1).shape().has_value());
}

TEST_CASE("uop: toposort lists sources before users, each once") {
  UOp x = UOp::var("x", 0, 10), y = UOp::var("y", 0, 10);
  UOp s = (x + y) * (x + y) + x;
  const auto& order = s.toposort();
  CHECK(order.back() == s);
  CHECK(order.size() == 5);  // x, y, x+y, (x+y)*(x+y), the sum
  std::unordered_map<const void*, size_t> pos;
  for (size_t i = 0; i < order.size(); ++i) pos[order[i].get()] = i;
  for (const UOp& n : order)
    for (const UOp& src : n.src()) CHECK(pos.at(src.get()) < pos.at(n.get()));
}

TEST_CASE("uop: misuse is an error, not a crash") {
  CHECK_THROWS_AS(UOp::var("bad", 5, 1), ugpu::Error);
  CHECK_THROWS_AS(UOp::const_int(dt::int32, 1).const_float(), ugpu::Error);
  CHECK_THROWS_AS(UOp::var("x", 0, 1).const_int(), ugpu::Error);
  CHECK_THROWS_AS(UOp::make(Op::ADD, dt::int32, {UOp(), UOp()}), ugpu::Error);
}
