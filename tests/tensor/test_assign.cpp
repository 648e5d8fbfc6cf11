// In-place writes (Tensor::assign, assign_at): values, ordering against readers of the old value,
// a KV cache written at a variable position through a Jit, and the errors.
#include "common/error.h"
#include "tensor/jit.h"
#include "tests/tensor/host.h"

namespace ugpu::test {
namespace {
namespace dt = tensor::dtypes;

TEST_CASE("assign: whole and row writes land in the buffer every handle sees") {
  for (const std::string& dev : test_devices()) {
    INFO("device " << dev);
    Tensor a = Tensor::zeros({3, 4}, dt::float32, dev).realize();
    Tensor alias = a;  // a copy of the handle
    a.assign(Tensor::arange(12, dt::float32, dev).reshape({3, 4}) * 2);
    CHECK(!a.realized());
    std::vector<float> got = alias.to_vector<float>();
    for (int i = 0; i < 12; ++i) CHECK(got[i] == 2.0f * i);
    CHECK(a.realized());

    // Rows 2 and 0 (in that order) get the value's rows 0 and 1; index 7 is out of range and writes nothing.
    Tensor idx = Tensor::from(std::vector<int32_t>{2, 0, 7}, {3}, dev);
    Tensor val = Tensor::from(std::vector<float>{1, 1, 1, 1, 5, 5, 5, 5, 9, 9, 9, 9}, {3, 4}, dev);
    a.assign_at(0, idx, val);
    got = a.to_vector<float>();
    std::vector<float> want{5, 5, 5, 5, 8, 10, 12, 14, 1, 1, 1, 1};
    CHECK(got == want);

    // Along the last axis, with a value broadcast over the rows.
    Tensor b = Tensor::zeros({2, 5}, dt::int32, dev).realize();
    b.assign_at(1, Tensor::from(std::vector<int32_t>{4, 1}, {2}, dev), Tensor::from(std::vector<int32_t>{7, 3}, {2}, dev));
    CHECK(b.to_vector<int32_t>() == std::vector<int32_t>{0, 3, 0, 0, 7, 0, 3, 0, 0, 7});
  }
}

TEST_CASE("assign: readers of the old value realized with the write run before it") {
  for (const std::string& dev : test_devices()) {
    INFO("device " << dev);
    Tensor a = Tensor::arange(8, dt::float32, dev).realize();
    Tensor before = (a * 10).sum();  // made before the write
    a.assign(a * 0 + 1);             // reads a and overwrites it (same element: fine)
    std::vector<Tensor> both{before, a};
    Tensor::realize(both);
    CHECK(both[0].item() == 280.0);
    CHECK(both[1].to_vector<float>() == std::vector<float>(8, 1.0f));
    Tensor after = (a * 10).sum();
    CHECK(after.item() == 80.0);
  }
}

TEST_CASE("assign: a KV cache written at a variable position and read in the same step, replayed by a Jit") {
  for (const std::string& dev : test_devices()) {
    INFO("device " << dev);
    const int64_t ctx = 6, width = 3;
    Tensor cache = Tensor::zeros({ctx, width}, dt::float32, dev).realize();
    tensor::Jit step([&](const std::vector<Tensor>& in, const tensor::Jit::Vars& v) {
      Tensor pos = Tensor::variable("pos", 0, ctx - 1, v.at("pos"), dev);
      cache.assign_at(0, pos.reshape({1}), in[0].reshape({1, width}));
      // The sum of the rows written so far (rows past pos are masked off).
      Tensor rows = Tensor::arange(ctx, dt::int32, dev).reshape({ctx, 1});
      Tensor seen = rows.le(pos).where(cache, 0.0).sum({0});
      std::vector<Tensor> out{seen, cache};
      Tensor::realize(out);
      return std::vector<Tensor>{out[0]};
    });
    std::vector<float> total(width, 0);
    for (int64_t p = 0; p < ctx; ++p) {
      std::vector<float> row{float(p + 1), float(10 * p), -1.0f};
      for (int64_t j = 0; j < width; ++j) total[j] += row[j];
      Tensor got = step({Tensor::from(row, {width}, dev)}, {{"pos", p}})[0];
      CHECK(got.to_vector<float>() == total);
    }
    CHECK(step.captured());
    std::vector<float> c = cache.to_vector<float>();
    CHECK(c[3 * width + 1] == 30.0f);
    CHECK(c[5 * width + 0] == 6.0f);
  }
}

TEST_CASE("assign: a value that reads its own target is computed before the stores") {
  for (const std::string& dev : test_devices()) {
    INFO("device " << dev);
    Tensor a = Tensor::arange(8, dt::float32, dev).realize();
    a.assign(a.flip({0}));  // each store overwrites an element another lane still reads
    CHECK(a.to_vector<float>() == std::vector<float>{7, 6, 5, 4, 3, 2, 1, 0});
    // A sliding window: the cache shifted up by one row, the new row last.
    Tensor cache = Tensor::arange(12, dt::float32, dev).reshape({4, 3}).realize();
    Tensor parts[] = {cache.slice(0, 1, 4), Tensor::full({1, 3}, -1, dt::float32, dev)};
    cache.assign(Tensor::cat(parts, 0));
    CHECK(cache.to_vector<float>() == std::vector<float>{3, 4, 5, 6, 7, 8, 9, 10, 11, -1, -1, -1});
  }
}

TEST_CASE("assign: writes that cannot be ordered are refused") {
  Tensor x = Tensor::zeros({4}).realize(), y = Tensor::ones({4}).realize();
  Tensor x_old = x.reshape({2, 2}), y_old = y.reshape({2, 2});  // views of the buffers before the writes
  x.assign(Tensor::full({4}, 5.0));
  y.assign(Tensor::full({4}, 6.0));
  // p1 reads X's old contents and Y's new ones, p2 the other way round: no order serves both.
  std::vector<Tensor> both{(x_old + y.reshape({2, 2})).contiguous(), (y_old + x.reshape({2, 2})).contiguous()};
  CHECK_THROWS_WITH_AS(Tensor::realize(both), doctest::Contains("cannot be ordered"), Error);
  // One kernel that needs both the old contents and the write.
  Tensor z = Tensor::zeros({4}).realize();
  Tensor z_old = z.reshape({2, 2});  // (a reshape to the same shape would be the same handle)
  z.assign(Tensor::full({4}, 2.0));
  Tensor mixed = (z_old + z.reshape({2, 2})).contiguous();
  CHECK_THROWS_WITH_AS(mixed.realize(), doctest::Contains("both before and after an assign"), Error);
}

TEST_CASE("assign: errors name what does not fit") {
  Tensor a = Tensor::zeros({3, 4}).realize();
  CHECK_THROWS_WITH_AS(a.assign_at(0, Tensor::zeros({2}), Tensor::zeros({2, 4})), doctest::Contains("the index must be an integer tensor"), Error);
  CHECK_THROWS_WITH_AS(a.assign_at(0, Tensor::zeros({2}, dt::int32), Tensor::zeros({3, 4})), doctest::Contains("does not fit target [3, 4]"), Error);
  CHECK_THROWS_WITH_AS(a.assign(Tensor::zeros({5})), doctest::Contains("expand"), Error);
}

}  // namespace
}  // namespace ugpu::test
