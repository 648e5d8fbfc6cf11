#include "codegen/examples.h"

#include "common/error.h"

namespace ugpu::codegen {

std::string fill(std::string text, const std::vector<std::pair<std::string, std::string>>& values) {
  for (const auto& [k, v] : values) {
    std::string pat = "{" + k + "}";
    for (size_t at = text.find(pat); at != std::string::npos; at = text.find(pat, at + v.size())) text.replace(at, pat.size(), v);
  }
  return text;
}

const std::vector<ExampleKernel>& example_kernels() {
  static const std::vector<ExampleKernel> k = {
      {"add", "out[i, j] = a[i, j] + b[j]: elementwise with a broadcast row, 64x100", R"(out = DEFINE_GLOBAL:float* {0}
a = DEFINE_GLOBAL:float* {1}
b = DEFINE_GLOBAL:float* {2}
i = RANGE(64) {0, GLOBAL}
j = RANGE(100) {1, GLOBAL}
v = LOAD:float(INDEX:float*(a, i*100 + j)) + LOAD:float(INDEX:float*(b, j))
SINK(END(STORE(INDEX:float*(out, i*100 + j), v), i, j))
)"},
      {"matmul", "c = a @ b with a 33x70, b 70x45 (shapes not multiples of any tile), float32", R"(c = DEFINE_GLOBAL:float* {0}
a = DEFINE_GLOBAL:float* {1}
b = DEFINE_GLOBAL:float* {2}
i = RANGE(33) {0, GLOBAL}
j = RANGE(45) {1, GLOBAL}
k = RANGE(70) {2, REDUCE}
acc = REDUCE:float(LOAD:float(INDEX:float*(a, i*70 + k)) * LOAD:float(INDEX:float*(b, k*45 + j)), k) {ADD}
SINK(END(STORE(INDEX:float*(c, i*45 + j), acc), i, j))
)"},
      {"matmul_upcast", "c = a @ b, 32x64 by 64x48, float32: 4 columns per work-item (UPCAST), k unrolled by 4 (UNROLL), vector loads and stores", R"(c = DEFINE_GLOBAL:float* {0}
a = DEFINE_GLOBAL:float* {1}
b = DEFINE_GLOBAL:float* {2}
i = RANGE(32) {0, GLOBAL}
j = RANGE(12) {1, GLOBAL}
ko = RANGE(16) {2, REDUCE}
u = RANGE(4) {3, UPCAST}
ku = RANGE(4) {4, UNROLL}
acc = REDUCE:float(LOAD:float(INDEX:float*(a, i*64 + ko*4 + ku)) * LOAD:float(INDEX:float*(b, (ko*4 + ku)*48 + j*4 + u)), ko, ku) {ADD}
SINK(END(STORE(INDEX:float*(c, i*48 + j*4 + u), acc), i, j, u))
)"},
      {"softmax", "softmax over rows of a 16x200 float32 matrix: max, sum of exp, normalise, in one kernel", R"(out = DEFINE_GLOBAL:float* {0}
x = DEFINE_GLOBAL:float* {1}
row = RANGE(16) {0, GLOBAL}
r1 = RANGE(200) {1, REDUCE}
r2 = RANGE(200) {2, REDUCE}
c = RANGE(200) {3, LOOP}
m = REDUCE:float(LOAD:float(INDEX:float*(x, row*200 + r1)), r1) {MAX}
s = REDUCE:float(EXP2:float((LOAD:float(INDEX:float*(x, row*200 + r2)) - m) * 1.4426950408889634), r2) {ADD}
e = EXP2:float((LOAD:float(INDEX:float*(x, row*200 + c)) - m) * 1.4426950408889634)
SINK(END(STORE(INDEX:float*(out, row*200 + c), e / s), row, c))
)"},
      {"conv2d", "3x3 convolution, 2 input and 4 output channels, 10x12 image, zero padding of 1", R"(out = DEFINE_GLOBAL:float* {0}
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
)"},
      {"gather", "embedding lookup: out[t, d] = table[ids[t], d] for 40 tokens of dimension 24, 1000-row table, 4 halves per access", R"(out = DEFINE_GLOBAL:half* {0}
table = DEFINE_GLOBAL:half* {1}
ids = DEFINE_GLOBAL:int32* {2}
t = RANGE(40) {0, GLOBAL}
d = RANGE(6) {1, GLOBAL}
u = RANGE(4) {2, UPCAST}
id = CAST:index(LOAD:int32(INDEX:int32*(ids, t)))
ok = (id > -1) & (id < 1000)
v = LOAD:half(INDEX:half*(table, WHERE(ok, id*24 + d*4 + u, INVALID)))
SINK(END(STORE(INDEX:half*(out, t*24 + d*4 + u), v), t, d, u))
)"},
      {"group_sum", "sum of 64-element rows by a 64-work-item workgroup through shared memory and a barrier (GPU only)", R"(out = DEFINE_GLOBAL:float* {0}
x = DEFINE_GLOBAL:float* {1}
tmp = DEFINE_LOCAL:float[local]* {(0, 64)}
g = RANGE(32) {0, GLOBAL}
l = RANGE(64) {1, LOCAL}
put = STORE(INDEX:float[local]*(tmp, l), LOAD:float(INDEX:float*(x, g*64 + l)))
bar = BARRIER(END(put, l))
r = RANGE(64) {2, REDUCE}
total = REDUCE:float(LOAD:float(INDEX:float[local]*(AFTER(tmp, bar), r)), r) {ADD}
SINK(END(STORE(INDEX:float*(out, WHERE(l == 0, g, INVALID)), total), g))
)", true},
  };
  return k;
}

const ExampleKernel& example_kernel(const std::string& name) {
  std::string names;
  for (const ExampleKernel& e : example_kernels()) {
    if (e.name == name) return e;
    names += (names.empty() ? "" : ", ") + e.name;
  }
  throw Error("no built-in kernel '" + name + "': the kernels are " + names);
}

}  // namespace ugpu::codegen
