// Which kernels a ring's submissions run, by ring position: what a driver's fault and hang messages
// name. The owner serialises access (a ring's lock).
#pragma once
#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace ugpu::hcq {

class KernelsInFlight {
 public:
  using Names = std::shared_ptr<const std::vector<std::string>>;
  // A submission at `position` runs `names`; entries the device has finished (<= done) are dropped.
  void add(uint64_t position, Names names, uint64_t done) {
    while (!entries_.empty() && entries_.front().first <= done) entries_.pop_front();
    entries_.emplace_back(position, std::move(names));
  }
  // "kernel a", "one of the kernels a, b" (at most 8 named), or "no kernel (a copy, wait or signal)".
  std::string describe(uint64_t done) const {
    std::vector<std::string> names;
    for (const auto& [pos, k] : entries_)
      if (pos > done)
        for (const std::string& n : *k)
          if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
    if (names.empty()) return "no kernel (a copy, wait or signal)";
    std::string s = names.size() == 1 ? "kernel " : "one of the kernels ";
    for (size_t i = 0; i < names.size() && i < 8; ++i) s += (i ? ", " : "") + names[i];
    return s;
  }

 private:
  std::deque<std::pair<uint64_t, Names>> entries_;
};

}  // namespace ugpu::hcq
