// x86 kernels in this process: a relocatable object from LLVM laid out (codegen/elf.h) into memory
// that is then made executable, and the kernel called as `void kernel(const uint64_t* args)`.
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

  void operator()(const uint64_t* args) const { fn_(args); }
  explicit operator bool() const { return fn_ != nullptr; }

 private:
  void* mem_ = nullptr;
  size_t size_ = 0;
  void (*fn_)(const uint64_t*) = nullptr;
};

}  // namespace ugpu::codegen
