// SHA-256 (FIPS 180-4), for content keys that caches share across processes.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ugpu::ir {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t n);
  void update(std::string_view s) { update(s.data(), s.size()); }
  std::array<uint8_t, 32> finish();

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_{};
  size_t used_ = 0;
  uint64_t total_ = 0;
};

// A digest as 64 lowercase hex digits (file names and keys of the disk caches).
std::string hex(const std::array<uint8_t, 32>& digest);

}  // namespace ugpu::ir
