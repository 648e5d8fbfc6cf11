// A comma-separated list from a flag or an environment variable ("cpu,emu:amd,,nv"): its non-empty
// pieces, in order.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace ugpu {

inline std::vector<std::string> split_list(std::string_view list, char sep = ',') {
  std::vector<std::string> out;
  for (size_t at = 0; at <= list.size();) {
    size_t end = std::min(list.find(sep, at), list.size());
    if (end > at) out.emplace_back(list.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

}  // namespace ugpu
