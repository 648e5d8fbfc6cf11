// Every built-in kernel, in one table (builtin_kernels.cpp): what `ugpu compile --kernel NAME` and
// `ugpu decode --kernel NAME` compile, what `ugpu demo` runs on a device and checks, what
// bench-codegen and bench-emu time, and what the kernel suites run — on x86 against the host
// references (tests/codegen), on the RDNA3 and PTX executors against x86 (tests/emu, tests/nv),
// through each device's driver against the CPU device (tests/hcq, tests/amd, tests/nv,
// tests/silicon). Each kernel carries its text, the runs it is checked with (template values,
// variables, buffer sizes), how its inputs are made, and its host reference: C++ computing the
// expected outputs from the inputs. Kernels that exist for one test only (a hang, a fault) stay in
// that test.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "ir/uop.h"

namespace ugpu::codegen {

struct Target;

// A kernel's buffer on the host, by slot: element type, bytes, and whether the kernel stores to it.
struct HostData {
  int64_t slot = 0;
  ir::DType dtype;  // the element type
  std::vector<uint8_t> bytes;
  bool written = false;  // an output

  size_t count() const { return bytes.size() / static_cast<size_t>(dtype.itemsize()); }
  uint64_t bits(size_t i) const;  // element i's encoding, zero-extended
  void set_bits(size_t i, uint64_t bits);
  double value(size_t i) const;  // floats exactly; integers as their value in the dtype
  void set(size_t i, double v);  // rounded to a float dtype (denormals kept); for an integer one, v is an int64 wrapped to it
  bool is_nan(size_t i) const;
};

// One way a kernel is run: the values of its text's `{KEY}` placeholders, its variables, and the
// element count of each buffer slot.
struct KernelRun {
  std::vector<std::pair<std::string, std::string>> values{};
  std::map<std::string, int64_t> vars{};                   // by name
  std::vector<size_t> elements{};                          // slot 0 first
  const std::string& value(const std::string& key) const;  // throws Error for a key this run does not set
  int64_t number(const std::string& key) const { return std::stoll(value(key)); }
  std::vector<int64_t> var_values() const;  // in the compiled kernel's order (by name), for a launch
  std::string label() const;                // "T=half", "D=n n=13"; empty for a plain kernel
};

using Buffers = std::vector<HostData>;
struct BuiltinKernel {
  std::string name{}, description{};
  std::string text{};             // ugpu's text form; `{KEY}` placeholders are filled from a run's values
  std::vector<KernelRun> runs{};  // what it is checked with; the first is what `ugpu compile --kernel` compiles
  bool gpu_only = false;          // needs a GPU target; none does today (the host runs a workgroup's work-items in turn)
  // Writes the inputs this kernel needs after the default ones (floats uniform in [-20, 20) rounded to
  // the dtype, integers random bits), e.g. gather's ids with some out of the table; may be empty.
  std::function<void(const KernelRun&, Buffers&, std::mt19937_64&)> inputs{};
  // The host reference: writes the expected contents of the buffers the kernel stores to, from the
  // inputs in the others (outputs arrive zeroed).
  std::function<void(const KernelRun&, Buffers&)> reference{};
  // Relative error allowed on float outputs, against the reference and between devices: the bound of
  // a transcendental (softmax's exp). 0: bit-exact, any NaN matching any NaN.
  double tolerance = 0;

  std::string source(const KernelRun& run) const;  // the text with the run's values filled in
  std::string source() const { return source(runs.at(0)); }
  ir::UOp parse(const KernelRun& run) const;  // throws ir::ParseError
  ir::UOp parse() const { return parse(runs.at(0)); }
};

const std::vector<BuiltinKernel>& builtin_kernels();
// Why `run` of `k` cannot run on target `t` (a dtype it lacks: float64 on an Adreno), or "".
std::string unsupported_on(const BuiltinKernel& k, const KernelRun& run, const Target& t);
const BuiltinKernel& builtin_kernel(const std::string& name);  // throws Error listing the names

// The drivers' byte-copy kernel, for a copy their command processor cannot do itself (NVIDIA's compute
// queue; an Adreno copy of bytes that are not whole aligned dwords): dst[i] = src[i] for i < n.
inline constexpr const char* kByteCopyKernel = R"(dst = DEFINE_GLOBAL:uint8* {0}
src = DEFINE_GLOBAL:uint8* {1}
n = DEFINE_VAR:index {"n", 1, 2147483647}
i = RANGE(n) {0, GLOBAL}
SINK(END(STORE(INDEX:uint8*(dst, i), LOAD:uint8(INDEX:uint8*(src, i))), i))
)";

// Replaces every `{key}` in `text` by its value: kernel text templates with sizes filled in.
std::string fill(std::string text, const std::vector<std::pair<std::string, std::string>>& values);

// The buffers of one run, by slot (dtypes and outputs read from the kernel): outputs zeroed, inputs
// made from `seed` as the kernel says. Throws Error when the run's sizes do not match the slots.
Buffers make_buffers(const BuiltinKernel& k, const KernelRun& run, uint64_t seed);
// What the reference says the buffers hold after the run, from the buffers before it.
Buffers expected(const BuiltinKernel& k, const KernelRun& run, Buffers before);

// How far the outputs a device gave are from what was wanted, under the kernel's tolerance.
struct Comparison {
  size_t elements = 0, wrong = 0;  // output elements compared; those outside the tolerance
  double worst = 0;                // the largest relative difference of a float output (0: identical)
  std::string first_wrong;         // "slot 0 element 12: got 3.5, want 3.25"
  bool ok() const { return wrong == 0; }
};
Comparison compare(const BuiltinKernel& k, const Buffers& want, const Buffers& got);

// Input makers for `BuiltinKernel::inputs`.
void fill_uniform(HostData& b, double lo, double hi, std::mt19937_64& rng);  // rounded (floats) or truncated (integers)
void fill_random_bits(HostData& b, std::mt19937_64& rng);

}  // namespace ugpu::codegen
