#include "codegen/llvm/host.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "codegen/elf.h"

namespace ugpu::codegen {

HostFunction HostFunction::load(std::span<const uint8_t> object, const std::string& symbol) {
  // Lay out once to learn the size, map, then lay out again at the mapping's address.
  size_t size = link_elf(object, ElfMachine::X86_64, 0, "x86 object").bytes.size();
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t mapped = std::max<size_t>(page, (size + page - 1) / page * page);
  void* mem = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) throw Error("cannot map " + std::to_string(mapped) + " bytes for kernel code: " + std::strerror(errno));
  HostFunction f;
  f.mem_ = mem;
  f.size_ = mapped;
  ElfImage img = link_elf(object, ElfMachine::X86_64, reinterpret_cast<uint64_t>(mem), "x86 object");
  auto it = img.symbols.find(symbol);
  if (it == img.symbols.end()) throw ElfError("x86 object has no symbol '" + symbol + "'");
  if (it->second >= img.bytes.size()) throw ElfError("x86 object: symbol '" + symbol + "' lies outside the image");
  std::memcpy(mem, img.bytes.data(), img.bytes.size());
  if (mprotect(mem, mapped, PROT_READ | PROT_EXEC) != 0)
    throw Error(std::string("cannot make kernel code executable (mprotect): ") + std::strerror(errno) +
                "; a security policy may forbid executable memory");
  f.fn_ = reinterpret_cast<void (*)(const uint64_t*, int64_t, int64_t)>(static_cast<uint8_t*>(mem) + it->second);
  return f;
}

HostFunction::HostFunction(HostFunction&& o) noexcept
    : mem_(std::exchange(o.mem_, nullptr)), size_(std::exchange(o.size_, 0)), fn_(std::exchange(o.fn_, nullptr)) {}

HostFunction& HostFunction::operator=(HostFunction&& o) noexcept {
  if (this != &o) {
    this->~HostFunction();
    mem_ = std::exchange(o.mem_, nullptr);
    size_ = std::exchange(o.size_, 0);
    fn_ = std::exchange(o.fn_, nullptr);
  }
  return *this;
}

HostFunction::~HostFunction() {
  if (mem_) munmap(mem_, size_);
}

}  // namespace ugpu::codegen
