// Test helpers: compile a kernel for x86 and run it on host buffers.
#pragma once
#include <cstring>
#include <string>
#include <vector>

#include "codegen/compiler.h"
#include "codegen/host.h"
#include "ir/text.h"

namespace ugpu::test {

inline const codegen::Target& x86() { return codegen::find_target("x86"); }

// A host buffer of any element type.
struct Buf {
  std::vector<uint8_t> bytes;
  template <class T>
  static Buf of(const std::vector<T>& v) {
    Buf b;
    b.bytes.resize(v.size() * sizeof(T) + 64);
    std::memcpy(b.bytes.data(), v.data(), v.size() * sizeof(T));
    return b;
  }
  template <class T>
  static Buf zeros(size_t n) { return of(std::vector<T>(n)); }
  template <class T>
  std::vector<T> as(size_t n) const {
    std::vector<T> v(n);
    std::memcpy(v.data(), bytes.data(), n * sizeof(T));
    return v;
  }
};

// Compiles for x86 and calls the kernel once: buffers by slot, then variable values.
inline std::shared_ptr<const codegen::CompiledKernel> run_x86(const ir::UOp& kernel, std::vector<Buf*> bufs,
                                                               std::vector<int64_t> vars = {}, const std::string& name = "kernel") {
  codegen::CompileOptions o;
  o.name = name;
  auto ck = codegen::compile(kernel, x86(), o);
  codegen::HostFunction fn = codegen::HostFunction::load(ck->binary, ck->kernel.name);
  std::vector<uint64_t> args;
  for (Buf* b : bufs) args.push_back(reinterpret_cast<uint64_t>(b->bytes.data()));
  for (int64_t v : vars) args.push_back(static_cast<uint64_t>(v));
  fn(args.data());
  return ck;
}

inline ir::UOp kernel(const std::string& text) { return ir::parse(text); }

}  // namespace ugpu::test
