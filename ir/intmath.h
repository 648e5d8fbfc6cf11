// Floor and ceiling division of integers (C++'s `/` truncates). For int64_t and __int128 alike.
// The caller keeps b != 0 and avoids MIN / -1.
#pragma once

namespace ugpu::ir {

template <class T>
constexpr T floor_div(T a, T b) {
  T q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <class T>
constexpr T floor_mod(T a, T b) {
  return a - floor_div(a, b) * b;
}
template <class T>
constexpr T ceil_div(T a, T b) {
  return -floor_div(-a, b);
}

static_assert(floor_div(-7, 2) == -4 && floor_mod(-7, 2) == 1 && floor_mod(7, -2) == -1 && ceil_div(7, 2) == 4 && ceil_div(-7, 2) == -3 &&
              floor_div(7, -2) == -4);

}  // namespace ugpu::ir
