// The op registry: every semantic table by mnemonic.
#include "emu/amd/rdna3/ops.h"

#include <deque>
#include <mutex>
#include <unordered_map>

namespace ugpu::emu::amd {

std::string_view keep_name(std::string s) {
  static std::mutex mu;
  static std::deque<std::string> names;
  std::lock_guard lock(mu);
  return names.emplace_back(std::move(s));
}

const OpDef* find_op(std::string_view mnemonic) {
  static const std::unordered_map<std::string_view, const OpDef*> table = [] {
    std::unordered_map<std::string_view, const OpDef*> t;
    for (auto ops : {scalar_ops(), vector_ops(), memory_ops()})
      for (const OpDef& d : ops) t.emplace(d.name, &d);
    return t;
  }();
  auto it = table.find(mnemonic);
  return it == table.end() ? nullptr : it->second;
}

}  // namespace ugpu::emu::amd
