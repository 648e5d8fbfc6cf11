// The GPU virtual address space as an emulated GPU's engines and shader executors see it. Every access a
// kernel, a command processor or a copy engine makes is translated here; an address that is not mapped
// with the asked access is a page fault, as on hardware. Shared by the AMD and NVIDIA emulators.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

namespace ugpu::emu {

enum class Access : uint8_t { Read, Write, Atomic, Execute };
const char* name(Access a);

// `translate` returns the mapped range that contains all of [address, address + size) with the asked
// access, or nullopt (a page fault). Executors cache the returned span, so a mapping must not change
// while a dispatch runs.
class Memory {
 public:
  struct Span {
    uint64_t device = 0;  // first device address of the range
    uint8_t* host = nullptr;
    uint64_t size = 0;
    bool writable = false;
  };
  virtual ~Memory() = default;
  virtual std::optional<Span> translate(uint64_t address, uint64_t size, Access access) = 0;
};

// A Memory made of explicit ranges: host memory mapped at device addresses (tests, and the base of
// the emulated device models).
class RangeMemory : public Memory {
 public:
  void map(uint64_t device, void* host, uint64_t size, bool writable = true);  // throws Error on overlap
  void unmap(uint64_t device);
  std::optional<Span> translate(uint64_t address, uint64_t size, Access access) override;

 private:
  std::mutex mu_;
  std::map<uint64_t, Span> ranges_;  // by device start
};

}  // namespace ugpu::emu
