#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <random>

#include "common/error.h"
#include "ir/dtype.h"

using namespace ugpu::ir;
namespace dt = ugpu::ir::dtypes;

TEST_CASE("dtype: promotion lattice") {
  CHECK(least_upper_dtype(dt::int8, dt::uint8) == dt::int16);
  CHECK(least_upper_dtype(dt::int64, dt::uint64) == dt::float32);
  CHECK(least_upper_dtype(dt::half, dt::bfloat16) == dt::float32);
  CHECK(least_upper_dtype(dt::bool_, dt::int8) == dt::int8);
  CHECK(least_upper_dtype(dt::bool_, dt::uint8) == dt::uint8);
  CHECK(least_upper_dtype(dt::uint8, dt::int32) == dt::int32);
  CHECK(least_upper_dtype(dt::uint32, dt::int32) == dt::int64);
  CHECK(least_upper_dtype(dt::int32, dt::float32) == dt::float32);
  CHECK(least_upper_dtype(dt::int64, dt::half) == dt::half);
  CHECK(least_upper_dtype(dt::fp8e4m3, dt::fp8e5m2) == dt::half);
  CHECK(least_upper_dtype(dt::float32, dt::float64) == dt::float64);
  CHECK(least_upper_dtype(dt::half.vec(4), dt::float32.vec(4)) == dt::float32.vec(4));
  CHECK(least_upper_dtype(dt::index, dt::bool_) == dt::index);
  CHECK_THROWS_AS(least_upper_dtype(dt::index, dt::int32), ugpu::Error);
  CHECK_THROWS_AS(least_upper_dtype(dt::float32.vec(2), dt::float32), ugpu::Error);
  CHECK_THROWS_AS(least_upper_dtype(dt::float32.ptr(), dt::float32), ugpu::Error);
  // symmetric, idempotent
  for (int a = 1; a < kScalarTypeCount - 1; ++a)
    for (int b = 1; b < kScalarTypeCount - 1; ++b) {
      DType x{static_cast<ScalarType>(a)}, y{static_cast<ScalarType>(b)};
      CHECK(least_upper_dtype(x, y) == least_upper_dtype(y, x));
      CHECK(least_upper_dtype(x, x) == x);
    }
  CHECK(least_upper_float(dt::int32) == dt::float32);
  CHECK(least_upper_float(dt::half) == dt::half);
  CHECK(sum_acc_dtype(dt::int8) == dt::int32);
  CHECK(sum_acc_dtype(dt::uint8) == dt::uint32);
  CHECK(sum_acc_dtype(dt::bool_) == dt::int32);
  CHECK(sum_acc_dtype(dt::half) == dt::float32);
  CHECK(sum_acc_dtype(dt::float64) == dt::float64);
  CHECK(sum_acc_dtype(dt::uint64) == dt::uint64);
}

TEST_CASE("dtype: names parse back") {
  for (int i = 0; i < kScalarTypeCount; ++i) {
    DType t{static_cast<ScalarType>(i)};
    for (DType v : {t, t.vec(4), t.ptr(), t.vec(2).ptr(AddrSpace::Local), t.ptr(AddrSpace::Reg)}) {
      auto p = parse_dtype(v.name());
      REQUIRE(p.has_value());
      CHECK(*p == v);
    }
  }
  CHECK(dt::float32.vec(4).name() == "float.vec(4)");
  CHECK(dt::half.ptr().name() == "half*");
  CHECK_FALSE(parse_dtype("float32").has_value());
  CHECK_FALSE(parse_dtype("float.vec(0)").has_value());
  CHECK_FALSE(parse_dtype("float.vec(x)").has_value());
  CHECK(dt::int16.itemsize() == 2);
  CHECK(dt::float32.vec(4).itemsize() == 16);
}

TEST_CASE("dtype: integer wrap and ranges") {
  CHECK(wrap_int(300, dt::int8) == 44);
  CHECK(wrap_int(-1, dt::uint8) == 255);
  CHECK(wrap_int(128, dt::int8) == -128);
  CHECK(wrap_int(int64_t{1} << 32, dt::uint32) == 0);
  CHECK(wrap_int(5, dt::bool_) == 1);
  CHECK(dt::int8.min_int() == -128);
  CHECK(dt::uint16.max_int() == 65535);
  CHECK(dt::int64.min_int() == INT64_MIN);
}

TEST_CASE("dtype: half rounding matches the hardware conversion") {
  CHECK(round_float(65504.0, dt::half) == 65504.0);
  CHECK(std::isinf(round_float(65520.0, dt::half)));  // halfway to the next binade: ties to even = inf
  CHECK(round_float(65519.0, dt::half) == 65504.0);
  CHECK(round_float(1.0 + std::ldexp(1, -11), dt::half) == 1.0);  // tie -> even
  CHECK(round_float(1.0 + 3 * std::ldexp(1, -11), dt::half) == 1.0 + std::ldexp(1, -9));
  CHECK(round_float(std::ldexp(1, -25), dt::half) == 0.0);  // tie between 0 and the smallest denormal
  CHECK(round_float(3 * std::ldexp(1, -26), dt::half) == std::ldexp(1, -24));
  CHECK(std::signbit(round_float(-std::ldexp(1, -30), dt::half)));
  CHECK(float_to_bits(1.0, dt::half) == 0x3c00);
  CHECK(float_to_bits(-2.0, dt::half) == 0xc000);
  CHECK(float_to_bits(INFINITY, dt::half) == 0x7c00);
  CHECK(float_to_bits(std::ldexp(1, -24), dt::half) == 0x0001);
#if defined(__FLT16_MAX__)
  std::mt19937_64 rng(1);
  for (int i = 0; i < 200000; ++i) {
    double v = std::bit_cast<double>(rng());
    if (i % 2) v = std::ldexp(static_cast<double>(rng() >> 11), -60 + static_cast<int>(rng() % 70));
    if (std::isnan(v)) continue;
    double want = static_cast<double>(static_cast<_Float16>(v));
    double got = round_float(v, dt::half);
    CHECK_MESSAGE(std::bit_cast<uint64_t>(want) == std::bit_cast<uint64_t>(got), "v=", v);
  }
#endif
}

TEST_CASE("dtype: every half, bfloat16 and fp8 encoding decodes and re-encodes") {
  for (DType t : {dt::half, dt::bfloat16}) {
    for (uint32_t b = 0; b < 65536; ++b) {
      double v = float_from_bits(b, t);
      if (std::isnan(v)) continue;
      REQUIRE(float_to_bits(v, t) == b);
      REQUIRE(round_float(v, t) == v);
    }
  }
  for (DType t : {dt::fp8e4m3, dt::fp8e5m2}) {
    int nans = 0;
    for (uint32_t b = 0; b < 256; ++b) {
      double v = float_from_bits(b, t);
      if (std::isnan(v)) {
        ++nans;
        continue;
      }
      REQUIRE(float_to_bits(v, t) == b);
    }
    CHECK(nans == (t == dt::fp8e4m3 ? 2 : 6));
  }
}

TEST_CASE("dtype: bfloat16 rounding matches round-to-nearest-even on float bits") {
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    uint32_t bits = rng();
    float f = std::bit_cast<float>(bits);
    if (std::isnan(f)) continue;
    uint32_t want = (bits + 0x7fff + ((bits >> 16) & 1)) >> 16;
    REQUIRE(float_to_bits(f, dt::bfloat16) == want);
  }
}

TEST_CASE("dtype: fp8 limits") {
  CHECK(float_from_bits(0x7e, dt::fp8e4m3) == 448.0);
  CHECK(std::isnan(float_from_bits(0x7f, dt::fp8e4m3)));
  CHECK(float_from_bits(0x08, dt::fp8e4m3) == std::ldexp(1, -6));  // smallest normal
  CHECK(float_from_bits(0x01, dt::fp8e4m3) == std::ldexp(1, -9));  // smallest denormal
  CHECK(round_float(464.0, dt::fp8e4m3) == 448.0);                 // tie to even
  CHECK(std::isnan(round_float(480.0, dt::fp8e4m3)));              // overflow: no inf in e4m3
  CHECK(round_float(1e6, dt::fp8e4m3, /*saturate=*/true) == 448.0);
  CHECK(std::isnan(round_float(INFINITY, dt::fp8e4m3)));
  CHECK(float_from_bits(0x7b, dt::fp8e5m2) == 57344.0);
  CHECK(std::isinf(round_float(61440.0, dt::fp8e5m2)));
  CHECK(round_float(-61440.0, dt::fp8e5m2, true) == -57344.0);
  CHECK(float_from_bits(0x01, dt::fp8e5m2) == std::ldexp(1, -16));
  CHECK(float_to_bits(-0.0, dt::fp8e4m3) == 0x80);
}

TEST_CASE("dtype: float <-> int conversions") {
  CHECK(float_to_int(2.9, dt::int32) == 2);
  CHECK(float_to_int(-2.9, dt::int32) == -2);
  CHECK(float_to_int(NAN, dt::int32) == 0);
  CHECK(float_to_int(1e20, dt::int32) == INT32_MAX);
  CHECK(float_to_int(-1e20, dt::int8) == -128);
  CHECK(float_to_int(-5.0, dt::uint8) == 0);
  CHECK(float_to_int(1e30, dt::int64) == INT64_MAX);
  CHECK(static_cast<uint64_t>(float_to_int(1e30, dt::uint64)) == UINT64_MAX);
  CHECK(static_cast<uint64_t>(float_to_int(1.8e19, dt::uint64)) == 18000000000000000000ull);
  CHECK(float_to_int(NAN, dt::bool_) == 1);
  CHECK(float_to_int(0.0, dt::bool_) == 0);
  CHECK(int_to_float((int64_t{1} << 24) + 1, dt::int64, dt::float32) == 16777216.0);
  CHECK(int_to_float(-1, dt::uint64, dt::float64) == 18446744073709551616.0);
  std::mt19937_64 rng(3);
  for (int i = 0; i < 100000; ++i) {
    int64_t v = static_cast<int64_t>(rng()) >> (rng() % 64);
    REQUIRE(int_to_float(v, dt::int64, dt::float32) == static_cast<double>(static_cast<float>(v)));
    REQUIRE(int_to_float(v, dt::int64, dt::float64) == static_cast<double>(v));
    uint64_t u = rng() >> (rng() % 64);
    REQUIRE(int_to_float(static_cast<int64_t>(u), dt::uint64, dt::float32) == static_cast<double>(static_cast<float>(u)));
#if defined(__FLT16_MAX__)
    int64_t small = static_cast<int64_t>(rng() % 200000) - 100000;
    REQUIRE(int_to_float(small, dt::int64, dt::half) == static_cast<double>(static_cast<_Float16>(static_cast<double>(small))));
#endif
  }
}
