#include "codegen/builtin_kernels.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "codegen/passes.h"
#include "codegen/target.h"
#include "common/error.h"
#include "ir/dtype.h"
#include "ir/text.h"

namespace ugpu::codegen {
using ir::DType;

// ---- host buffers and runs ------------------------------------------------------------------------

uint64_t HostData::bits(size_t i) const {
  uint64_t b = 0;
  std::memcpy(&b, bytes.data() + i * static_cast<size_t>(dtype.itemsize()), static_cast<size_t>(dtype.itemsize()));
  return b;
}

void HostData::set_bits(size_t i, uint64_t b) {
  std::memcpy(bytes.data() + i * static_cast<size_t>(dtype.itemsize()), &b, static_cast<size_t>(dtype.itemsize()));  // little-endian: the low bytes
}

double HostData::value(size_t i) const {
  uint64_t b = bits(i);
  if (dtype.is_float()) return dtype.bitsize() == 64 ? std::bit_cast<double>(b) : ir::float_from_bits(static_cast<uint32_t>(b), dtype);
  if (dtype.is_unsigned() || dtype.is_bool()) return static_cast<double>(b);
  return static_cast<double>(ir::wrap_int(static_cast<int64_t>(b), dtype));
}

void HostData::set(size_t i, double v) {
  if (!dtype.is_float()) return set_bits(i, static_cast<uint64_t>(ir::wrap_int(static_cast<int64_t>(v), dtype)));
  set_bits(i, dtype.bitsize() == 64 ? std::bit_cast<uint64_t>(v) : ir::float_to_bits(v, dtype));
}

bool HostData::is_nan(size_t i) const { return dtype.is_float() && std::isnan(value(i)); }

const std::string& KernelRun::value(const std::string& key) const {
  for (const auto& [k, v] : values)
    if (k == key) return v;
  throw Error("internal: a built-in kernel's run has no value for {" + key + "}");
}

std::vector<int64_t> KernelRun::var_values() const {
  std::vector<int64_t> out;
  for (const auto& [_, v] : vars) out.push_back(v);
  return out;
}

std::string KernelRun::label() const {
  std::string s;
  for (const auto& [k, v] : values) s += (s.empty() ? "" : " ") + k + "=" + v;
  for (const auto& [k, v] : vars) s += (s.empty() ? "" : " ") + k + "=" + std::to_string(v);
  return s;
}

std::string fill(std::string text, const std::vector<std::pair<std::string, std::string>>& values) {
  for (const auto& [k, v] : values) {
    std::string pat = "{" + k + "}";
    for (size_t at = text.find(pat); at != std::string::npos; at = text.find(pat, at + v.size())) text.replace(at, pat.size(), v);
  }
  return text;
}

std::string BuiltinKernel::source(const KernelRun& run) const { return fill(text, run.values); }
ir::UOp BuiltinKernel::parse(const KernelRun& run) const { return ir::parse(source(run)); }

void fill_uniform(HostData& b, double lo, double hi, std::mt19937_64& rng) {
  for (size_t i = 0; i < b.count(); ++i) {
    double v = std::uniform_real_distribution<double>(lo, hi)(rng);
    b.set(i, b.dtype.is_float() ? v : std::floor(v));
  }
}

void fill_random_bits(HostData& b, std::mt19937_64& rng) {
  for (size_t i = 0; i < b.count(); ++i) b.set_bits(i, rng());
}

namespace {

// Element i of slot s, and the slots as the references name them.
double at(const Buffers& b, size_t slot, size_t i) { return b[slot].value(i); }

// ---- the kernels: text, runs, inputs and host reference, one function each -------------------------
// Float references follow the kernel's own order of operations in float32, so they are bit-exact on
// every device (tests/emu and tests/nv check the executors bit-exact against x86 too).

BuiltinKernel add() {
  return {.name = "add",
          .description = "out[i, j] = a[i, j] + b[j]: elementwise with a broadcast row, 64x100",
          .text = R"(out = DEFINE_GLOBAL:float* {0}
a = DEFINE_GLOBAL:float* {1}
b = DEFINE_GLOBAL:float* {2}
i = RANGE(64) {0, GLOBAL}
j = RANGE(100) {1, GLOBAL}
v = LOAD:float(INDEX:float*(a, i*100 + j)) + LOAD:float(INDEX:float*(b, j))
SINK(END(STORE(INDEX:float*(out, i*100 + j), v), i, j))
)",
          .runs = {{.elements = {6400, 6400, 100}}},
          .reference = [](const KernelRun&, Buffers& b) {
            for (size_t i = 0; i < 6400; ++i) b[0].set(i, static_cast<float>(at(b, 1, i)) + static_cast<float>(at(b, 2, i % 100)));
          }};
}

// c[i, j] = sum over k of a[i, k] * b[k, j], the products added in k order in float.
void matmul_reference(Buffers& b, size_t m, size_t k, size_t n) {
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j < n; ++j) {
      float acc = 0;
      for (size_t r = 0; r < k; ++r) acc += static_cast<float>(at(b, 1, i * k + r)) * static_cast<float>(at(b, 2, r * n + j));
      b[0].set(i * n + j, acc);
    }
}

BuiltinKernel matmul() {
  return {.name = "matmul",
          .description = "c = a @ b with a 33x70, b 70x45 (shapes not multiples of any tile), float32",
          .text = R"(c = DEFINE_GLOBAL:float* {0}
a = DEFINE_GLOBAL:float* {1}
b = DEFINE_GLOBAL:float* {2}
i = RANGE(33) {0, GLOBAL}
j = RANGE(45) {1, GLOBAL}
k = RANGE(70) {2, REDUCE}
acc = REDUCE:float(LOAD:float(INDEX:float*(a, i*70 + k)) * LOAD:float(INDEX:float*(b, k*45 + j)), k) {ADD}
SINK(END(STORE(INDEX:float*(c, i*45 + j), acc), i, j))
)",
          .runs = {{.elements = {33 * 45, 33 * 70, 70 * 45}}},
          .reference = [](const KernelRun&, Buffers& b) { matmul_reference(b, 33, 70, 45); }};
}

BuiltinKernel matmul_upcast() {
  return {.name = "matmul_upcast",
          .description = "c = a @ b, 32x64 by 64x48, float32: 4 columns per work-item (UPCAST), k unrolled by 4 (UNROLL), vector loads and stores",
          .text = R"(c = DEFINE_GLOBAL:float* {0}
a = DEFINE_GLOBAL:float* {1}
b = DEFINE_GLOBAL:float* {2}
i = RANGE(32) {0, GLOBAL}
j = RANGE(12) {1, GLOBAL}
ko = RANGE(16) {2, REDUCE}
u = RANGE(4) {3, UPCAST}
ku = RANGE(4) {4, UNROLL}
acc = REDUCE:float(LOAD:float(INDEX:float*(a, i*64 + ko*4 + ku)) * LOAD:float(INDEX:float*(b, (ko*4 + ku)*48 + j*4 + u)), ko, ku) {ADD}
SINK(END(STORE(INDEX:float*(c, i*48 + j*4 + u), acc), i, j, u))
)",
          .runs = {{.elements = {32 * 48, 32 * 64, 64 * 48}}},
          // The unrolled products of one k-chunk are summed first, then added to the accumulator
          // (codegen/expand.cpp).
          .reference = [](const KernelRun&, Buffers& b) {
            for (size_t i = 0; i < 32; ++i)
              for (size_t j = 0; j < 48; ++j) {
                float acc = 0;
                for (size_t ko = 0; ko < 16; ++ko) {
                  float chunk = 0;
                  for (size_t ku = 0; ku < 4; ++ku) {
                    size_t k = ko * 4 + ku;
                    float p = static_cast<float>(at(b, 1, i * 64 + k)) * static_cast<float>(at(b, 2, k * 48 + j));
                    chunk = ku == 0 ? p : chunk + p;
                  }
                  acc += chunk;
                }
                b[0].set(i * 48 + j, acc);
              }
          }};
}

BuiltinKernel softmax() {
  return {.name = "softmax",
          .description = "softmax over rows of a 16x200 float32 matrix: max, sum of exp, normalise, in one kernel",
          .text = R"(out = DEFINE_GLOBAL:float* {0}
x = DEFINE_GLOBAL:float* {1}
row = RANGE(16) {0, GLOBAL}
r1 = RANGE(200) {1, REDUCE}
r2 = RANGE(200) {2, REDUCE}
c = RANGE(200) {3, LOOP}
m = REDUCE:float(LOAD:float(INDEX:float*(x, row*200 + r1)), r1) {MAX}
s = REDUCE:float(EXP2:float((LOAD:float(INDEX:float*(x, row*200 + r2)) - m) * 1.4426950408889634), r2) {ADD}
e = EXP2:float((LOAD:float(INDEX:float*(x, row*200 + c)) - m) * 1.4426950408889634)
SINK(END(STORE(INDEX:float*(out, row*200 + c), e / s), row, c))
)",
          .runs = {{.elements = {3200, 3200}}},
          // In double: the kernel's exp2 is within 1 ULP on GPUs, and its float sum of 200 terms rounds.
          .reference =
              [](const KernelRun&, Buffers& b) {
                for (size_t row = 0; row < 16; ++row) {
                  double m = -INFINITY, s = 0;
                  for (size_t c = 0; c < 200; ++c) m = std::max(m, at(b, 1, row * 200 + c));
                  for (size_t c = 0; c < 200; ++c) s += std::exp(at(b, 1, row * 200 + c) - m);
                  for (size_t c = 0; c < 200; ++c) b[0].set(row * 200 + c, std::exp(at(b, 1, row * 200 + c) - m) / s);
                }
              },
          .tolerance = 2e-5};
}

BuiltinKernel conv2d() {
  return {.name = "conv2d",
          .description = "3x3 convolution, 2 input and 4 output channels, 10x12 image, zero padding of 1",
          .text = R"(out = DEFINE_GLOBAL:float* {0}
img = DEFINE_GLOBAL:float* {1}
w = DEFINE_GLOBAL:float* {2}
co = RANGE(4) {0, GLOBAL}
y = RANGE(10) {1, GLOBAL}
x = RANGE(12) {2, GLOBAL}
ci = RANGE(2) {3, REDUCE}
ky = RANGE(3) {4, REDUCE}
kx = RANGE(3) {5, REDUCE}
iy = y + ky - 1
ix = x + kx - 1
valid = (iy > -1) & (iy < 10) & (ix > -1) & (ix < 12)
pix = LOAD:float(INDEX:float*(img, WHERE(valid, ci*120 + iy*12 + ix, INVALID)))
acc = REDUCE:float(pix * LOAD:float(INDEX:float*(w, co*18 + ci*9 + ky*3 + kx)), ci, ky, kx) {ADD}
SINK(END(STORE(INDEX:float*(out, co*120 + y*12 + x), acc), co, y, x))
)",
          .runs = {{.elements = {4 * 120, 2 * 120, 4 * 18}}},
          // A pixel outside the image is a masked load, which reads 0 (and 0 * w still joins the sum).
          .reference = [](const KernelRun&, Buffers& b) {
            for (int co = 0; co < 4; ++co)
              for (int y = 0; y < 10; ++y)
                for (int x = 0; x < 12; ++x) {
                  float acc = 0;
                  for (int ci = 0; ci < 2; ++ci)
                    for (int ky = 0; ky < 3; ++ky)
                      for (int kx = 0; kx < 3; ++kx) {
                        int iy = y + ky - 1, ix = x + kx - 1;
                        bool inside = iy >= 0 && iy < 10 && ix >= 0 && ix < 12;
                        float p = inside ? static_cast<float>(at(b, 1, static_cast<size_t>(ci * 120 + iy * 12 + ix))) : 0.0f;
                        acc += p * static_cast<float>(at(b, 2, static_cast<size_t>(co * 18 + ci * 9 + ky * 3 + kx)));
                      }
                  b[0].set(static_cast<size_t>(co * 120 + y * 12 + x), acc);
                }
          }};
}

BuiltinKernel gather() {
  return {.name = "gather",
          .description = "embedding lookup: out[t, d] = table[ids[t], d] for 40 tokens of dimension 24, 1000-row table, 4 halves per access",
          .text = R"(out = DEFINE_GLOBAL:half* {0}
table = DEFINE_GLOBAL:half* {1}
ids = DEFINE_GLOBAL:int32* {2}
t = RANGE(40) {0, GLOBAL}
d = RANGE(6) {1, GLOBAL}
u = RANGE(4) {2, UPCAST}
id = CAST:index(LOAD:int32(INDEX:int32*(ids, t)))
ok = (id > -1) & (id < 1000)
v = LOAD:half(INDEX:half*(table, WHERE(ok, id*24 + d*4 + u, INVALID)))
SINK(END(STORE(INDEX:half*(out, t*24 + d*4 + u), v), t, d, u))
)",
          .runs = {{.elements = {40 * 24, 1000 * 24, 40}}},
          // Ids spread over the table, and some outside it (both ends, the most negative int32): those
          // rows must read nothing and give 0.
          .inputs =
              [](const KernelRun&, Buffers& b, std::mt19937_64&) {
                for (size_t t = 0; t < 40; ++t) b[2].set(t, static_cast<double>(t * 97 % 1000));
                for (auto [t, id] : std::initializer_list<std::pair<size_t, int64_t>>{{3, -1}, {7, 1000}, {11, INT32_MIN}, {13, 999}, {20, 123456}})
                  b[2].set(t, static_cast<double>(id));
              },
          .reference =
              [](const KernelRun&, Buffers& b) {
                for (size_t t = 0; t < 40; ++t) {
                  auto id = static_cast<int64_t>(at(b, 2, t));
                  for (size_t d = 0; d < 24; ++d) b[0].set_bits(t * 24 + d, id >= 0 && id < 1000 ? b[1].bits(static_cast<size_t>(id) * 24 + d) : 0);
                }
              }};
}

BuiltinKernel group_sum() {
  return {.name = "group_sum",
          .description =
              "sum of 64-element rows by a 64-work-item workgroup through workgroup memory and a barrier (on the host: the "
              "work-items in turn, a loop before the barrier and one after)",
          .text = R"(out = DEFINE_GLOBAL:float* {0}
x = DEFINE_GLOBAL:float* {1}
tmp = DEFINE_LOCAL:float[local]* {(0, 64)}
g = RANGE(32) {0, GLOBAL}
l = RANGE(64) {1, LOCAL}
put = STORE(INDEX:float[local]*(tmp, l), LOAD:float(INDEX:float*(x, g*64 + l)))
bar = BARRIER(END(put, l))
r = RANGE(64) {2, REDUCE}
total = REDUCE:float(LOAD:float(INDEX:float[local]*(AFTER(tmp, bar), r)), r) {ADD}
SINK(END(STORE(INDEX:float*(out, WHERE(l == 0, g, INVALID)), total), g))
)",
          .runs = {{.elements = {32, 32 * 64}}},
          // Every work-item sums the row the workgroup stored, in order; work-item 0 writes it.
          .reference = [](const KernelRun&, Buffers& b) {
            for (size_t g = 0; g < 32; ++g) {
              float total = 0;
              for (size_t r = 0; r < 64; ++r) total += static_cast<float>(at(b, 1, g * 64 + r));
              b[0].set(g, total);
            }
          }};
}

// MAX as the kernel computes it: b when a < b or b is NaN (NaN propagates), else a.
double max_like_kernel(double a, double b) { return a < b || std::isnan(b) ? b : a; }

// (a * b + a) max b in the integer dtype t: wrapping arithmetic, compared in t's own order.
uint64_t elementwise_int(uint64_t a, uint64_t b, DType t) {
  uint64_t mask = t.bitsize() == 64 ? ~uint64_t{0} : (uint64_t{1} << t.bitsize()) - 1;
  uint64_t r = (a * b + a) & mask;
  b &= mask;
  bool less = t.is_unsigned() ? r < b : ir::wrap_int(static_cast<int64_t>(r), t) < ir::wrap_int(static_cast<int64_t>(b), t);
  return less ? b : r;
}

BuiltinKernel elementwise() {
  std::vector<KernelRun> runs;
  for (const char* t : {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "half", "bfloat16", "float", "double"})
    runs.push_back({.values = {{"T", t}}, .elements = {257, 257, 257}});
  return {.name = "elementwise",
          .description = "out = (a * b + a) max b over 257 elements, in each of the 12 dtypes: wrap-around, rounding, NaN",
          .text = R"(out = DEFINE_GLOBAL:{T}* {0}
a = DEFINE_GLOBAL:{T}* {1}
b = DEFINE_GLOBAL:{T}* {2}
i = RANGE(257) {0, GLOBAL}
x = LOAD:{T}(INDEX:{T}*(a, i))
y = LOAD:{T}(INDEX:{T}*(b, i))
SINK(END(STORE(INDEX:{T}*(out, i), MAX(x * y + x, y)), i))
)",
          .runs = runs,
          // Random bits: every integer wraps somewhere, narrow floats meet inf and NaN. float32 stays
          // finite and normal, where GPUs may flush denormals.
          .inputs =
              [](const KernelRun&, Buffers& b, std::mt19937_64& rng) {
                for (size_t s : {1, 2}) {
                  if (b[s].dtype == ir::dtypes::float32) fill_uniform(b[s], -300, 300, rng);
                  else fill_random_bits(b[s], rng);
                }
              },
          // Floats: each operation rounded once to the dtype (a double holds every exact product and
          // rounds the sums innocuously).
          .reference =
              [](const KernelRun&, Buffers& b) {
                DType t = b[0].dtype;
                for (size_t i = 0; i < 257; ++i) {
                  if (!t.is_float()) {
                    b[0].set_bits(i, elementwise_int(b[1].bits(i), b[2].bits(i), t));
                    continue;
                  }
                  double x = at(b, 1, i), y = at(b, 2, i);
                  b[0].set(i, max_like_kernel(ir::round_float(ir::round_float(x * y, t) + x, t), y));
                }
              }};
}

BuiltinKernel reduce() {
  std::vector<KernelRun> runs;
  // Over the inner axis of a 37x53 matrix (37 outputs) and over the outer one (53 outputs).
  for (bool inner : {true, false})
    for (const char* op : {"ADD", "MAX"})
      for (const char* t : {"float", "int32"}) {
        const char *keep = inner ? "37" : "53", *red = inner ? "53" : "37";
        runs.push_back({.values = {{"T", t}, {"OP", op}, {"KEEP", keep}, {"RED", red}, {"SO", inner ? "53" : "1"}, {"SR", inner ? "1" : "53"}},
                        .elements = {inner ? 37u : 53u, 37 * 53}});
      }
  return {.name = "reduce",
          .description = "a sum or max for each row (or column) of a 37x53 matrix, float32 and int32",
          .text = R"(out = DEFINE_GLOBAL:{T}* {0}
x = DEFINE_GLOBAL:{T}* {1}
o = RANGE({KEEP}) {0, GLOBAL}
r = RANGE({RED}) {1, REDUCE}
v = REDUCE:{T}(LOAD:{T}(INDEX:{T}*(x, o*{SO} + r*{SR})), r) {{OP}}
SINK(END(STORE(INDEX:{T}*(out, o), v), o))
)",
          .runs = runs,
          // In element order, in the dtype: float sums round at each step, int32 sums wrap.
          .reference = [](const KernelRun& run, Buffers& b) {
            bool add = run.value("OP") == "ADD", fl = b[0].dtype.is_float();
            auto keep = static_cast<size_t>(run.number("KEEP")), red = static_cast<size_t>(run.number("RED"));
            auto so = static_cast<size_t>(run.number("SO")), sr = static_cast<size_t>(run.number("SR"));
            for (size_t o = 0; o < keep; ++o) {
              float accf = add ? 0.0f : -INFINITY;
              uint32_t sum = 0;
              int32_t most = INT32_MIN;
              for (size_t r = 0; r < red; ++r) {
                size_t i = o * so + r * sr;
                if (fl) accf = add ? accf + static_cast<float>(at(b, 1, i)) : static_cast<float>(max_like_kernel(accf, at(b, 1, i)));
                else sum += static_cast<uint32_t>(b[1].bits(i)), most = std::max(most, static_cast<int32_t>(b[1].bits(i)));
              }
              if (fl) b[0].set(o, accf);
              else b[0].set_bits(o, add ? sum : static_cast<uint32_t>(most));
            }
          }};
}

BuiltinKernel floordiv() {
  std::vector<KernelRun> runs;
  for (const char* d : {"7", "8", "1", "-3"}) runs.push_back({.values = {{"D", d}}, .elements = {100}});
  for (int64_t n : {13, 1, 2, 50, 100}) runs.push_back({.values = {{"D", "n"}}, .vars = {{"n", n}}, .elements = {100}});
  return {.name = "floordiv",
          .description =
              "out[i] = (i - 50) // d + 1000 * ((i - 50) % d): floor division and modulo of negative numbers, by constants "
              "(powers of two, 1, negative) and by a variable",
          .text = R"(out = DEFINE_GLOBAL:int32* {0}
n = DEFINE_VAR {"n", 1, 100}
i = RANGE(100) {0, GLOBAL}
v = i - 50
SINK(END(STORE(INDEX:int32*(out, i), CAST:int32(v // {D} + 1000 * (v % {D}))), i))
)",
          .runs = runs,
          .reference = [](const KernelRun& run, Buffers& b) {
            int64_t d = run.value("D") == "n" ? run.vars.at("n") : run.number("D");
            for (int64_t i = 0; i < 100; ++i) {
              int64_t v = i - 50, q = v / d, r = v % d;
              if (r != 0 && (r < 0) != (d < 0)) q -= 1, r += d;  // C++ truncates; floor division rounds down
              b[0].set(static_cast<size_t>(i), static_cast<double>(q + 1000 * r));
            }
          }};
}

BuiltinKernel variable_loop() {
  std::vector<KernelRun> runs;
  for (int64_t n : {0, 1, 17, 1000}) runs.push_back({.vars = {{"n", n}}, .elements = {10}});
  return {.name = "variable_loop",
          .description = "out[i] = how many j < n have (j % 3 == 0) != (i % 2 == 0): a loop bound from a variable (0 included), bool logic",
          .text = R"(out = DEFINE_GLOBAL:int32* {0}
n = DEFINE_VAR {"n", 0, 1000}
i = RANGE(10) {0, GLOBAL}
j = RANGE(n) {1, REDUCE}
hit = (j % 3 == 0) != (i % 2 == 0)
SINK(END(STORE(INDEX:int32*(out, i), REDUCE:int32(CAST:int32(hit), j) {ADD}), i))
)",
          .runs = runs,
          .reference = [](const KernelRun& run, Buffers& b) {
            for (int64_t i = 0; i < 10; ++i) {
              int64_t hits = 0;
              for (int64_t j = 0; j < run.vars.at("n"); ++j) hits += (j % 3 == 0) != (i % 2 == 0);
              b[0].set(static_cast<size_t>(i), static_cast<double>(hits));
            }
          }};
}

BuiltinKernel add_one() {
  return {.name = "add_one",
          .description = "out[i] = in[i] + 1 over 1000 int32s: the small kernel the runtime and driver tests launch",
          .text = R"(out = DEFINE_GLOBAL:int32* {0}
in = DEFINE_GLOBAL:int32* {1}
i = RANGE(1000) {0, GLOBAL}
SINK(END(STORE(INDEX:int32*(out, i), LOAD:int32(INDEX:int32*(in, i)) + 1), i))
)",
          .runs = {{.elements = {1000, 1000}}},
          .reference = [](const KernelRun&, Buffers& b) {
            for (size_t i = 0; i < 1000; ++i) b[0].set_bits(i, static_cast<uint32_t>(b[1].bits(i)) + 1u);  // wraps
          }};
}

// The outputs' slots and every slot's dtype, from the kernel's DEFINE_GLOBALs and STOREs.
Buffers slots_of(const ir::UOp& kernel) {
  std::map<int64_t, HostData> by_slot;
  for (const ir::UOp& u : kernel.toposort()) {
    if (u.op() == ir::Op::DEFINE_GLOBAL) {
      HostData& b = by_slot[u.arg_as<int64_t>()];
      b.slot = u.arg_as<int64_t>(), b.dtype = u.dtype().base();
    }
    if (u.op() == ir::Op::STORE && buffer_of(u.src(0)).op() == ir::Op::DEFINE_GLOBAL) by_slot[buffer_of(u.src(0)).arg_as<int64_t>()].written = true;
  }
  Buffers out;
  for (auto& [slot, b] : by_slot) out.push_back(std::move(b));
  return out;
}

// How far element i of `got` is from `want`'s: 0 for the same bits or two NaNs, the relative
// difference of other floats, infinite for different integers or a NaN against a number.
double difference(const HostData& want, const HostData& got, size_t i) {
  if (want.bits(i) == got.bits(i) || (want.is_nan(i) && got.is_nan(i))) return 0;
  if (!want.dtype.is_float() || want.is_nan(i) || got.is_nan(i)) return INFINITY;
  return std::fabs(got.value(i) - want.value(i)) / std::max(std::fabs(want.value(i)), 1e-300);
}

// An element for a message: its value, and its bits where the value does not tell them apart.
std::string show(const HostData& b, size_t i) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g (0x%llx)", b.value(i), static_cast<unsigned long long>(b.bits(i)));
  return buf;
}

}  // namespace

const std::vector<BuiltinKernel>& builtin_kernels() {
  static const std::vector<BuiltinKernel> k = {add(),       matmul(),      matmul_upcast(), softmax(),  conv2d(),        gather(),
                                               group_sum(), elementwise(), reduce(),        floordiv(), variable_loop(), add_one()};
  return k;
}

std::string unsupported_on(const BuiltinKernel& k, const KernelRun& run, const Target& t) {
  if (t.has_f64) return "";
  ir::UOp kernel = k.parse(run);
  for (const ir::UOp& u : kernel.toposort())
    if (u.dtype().scalar == ir::ScalarType::Double) return "no float64 on " + std::string(t.name);
  return "";
}

const BuiltinKernel& builtin_kernel(const std::string& name) {
  std::string names;
  for (const BuiltinKernel& k : builtin_kernels()) {
    if (k.name == name) return k;
    names += (names.empty() ? "" : ", ") + k.name;
  }
  throw Error("no built-in kernel '" + name + "': the kernels are " + names);
}

Buffers make_buffers(const BuiltinKernel& k, const KernelRun& run, uint64_t seed) {
  Buffers bufs = slots_of(k.parse(run));
  if (bufs.size() != run.elements.size())
    throw Error("built-in kernel " + k.name + " has " + std::to_string(bufs.size()) + " buffers; its run " + run.label() + " sizes " +
                std::to_string(run.elements.size()));
  std::mt19937_64 rng(seed);
  for (size_t s = 0; s < bufs.size(); ++s) {
    HostData& b = bufs[s];
    b.bytes.assign(run.elements[s] * static_cast<size_t>(b.dtype.itemsize()), 0);
    if (b.written) continue;
    if (b.dtype.is_float()) fill_uniform(b, -20, 20, rng);
    else fill_random_bits(b, rng);
  }
  if (k.inputs) k.inputs(run, bufs, rng);
  return bufs;
}

Buffers expected(const BuiltinKernel& k, const KernelRun& run, Buffers before) {
  for (HostData& b : before)
    if (b.written) std::fill(b.bytes.begin(), b.bytes.end(), uint8_t{0});
  k.reference(run, before);
  return before;
}

Comparison compare(const BuiltinKernel& k, const Buffers& want, const Buffers& got) {
  if (want.size() != got.size())
    throw Error("kernel " + k.name + ": " + std::to_string(got.size()) + " buffers to compare with " + std::to_string(want.size()));
  Comparison c;
  for (size_t s = 0; s < want.size(); ++s) {
    const HostData &w = want[s], &g = got[s];
    if (!w.written) continue;
    if (g.bytes.size() != w.bytes.size()) throw Error("kernel " + k.name + ": buffer " + std::to_string(s) + " has the wrong size");
    for (size_t i = 0; i < w.count(); ++i, ++c.elements) {
      double diff = difference(w, g, i);
      c.worst = std::max(c.worst, diff);
      if (diff <= k.tolerance) continue;
      if (c.wrong++ == 0)
        c.first_wrong = "slot " + std::to_string(s) + " element " + std::to_string(i) + ": got " + show(g, i) + ", want " + show(w, i);
    }
  }
  return c;
}

}  // namespace ugpu::codegen
