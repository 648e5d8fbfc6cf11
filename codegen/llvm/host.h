// x86 kernels in this process: a relocatable object from LLVM laid out (codegen/elf.h) into memory
// that is then made executable, and the kernel called as
//   void kernel(const uint64_t* args, int64_t part, int64_t parts)
// args: buffer addresses then variable values, one 64-bit slot each. The kernel's outermost GLOBAL
// axis (LoweredKernel::global_size[0] iterations) is cut into `parts` contiguous pieces and the call
// runs piece `part` (0 <= part < parts <= global_size[0]); (0, 1) runs everything. Calls for
// different parts may run concurrently.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace ugpu::codegen {

class HostFunction {
 public:
  // Throws ElfError for a bad object or a missing symbol, Error if memory cannot be mapped.
  static HostFunction load(std::span<const uint8_t> object, const std::string& symbol);
  HostFunction() = default;
  HostFunction(HostFunction&& o) noexcept;
  HostFunction& operator=(HostFunction&& o) noexcept;
  HostFunction(const HostFunction&) = delete;
  HostFunction& operator=(const HostFunction&) = delete;
  ~HostFunction();

  void operator()(const uint64_t* args, int64_t part = 0, int64_t parts = 1) const { fn_(args, part, parts); }
  explicit operator bool() const { return fn_ != nullptr; }

 private:
  void* mem_ = nullptr;
  size_t size_ = 0;
  void (*fn_)(const uint64_t*, int64_t, int64_t) = nullptr;
};

}  // namespace ugpu::codegen
