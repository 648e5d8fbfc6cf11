#include "hw/amd/reg_trace.h"

#include <cinttypes>
#include <cstdio>
#include <sstream>

#include "common/error.h"
#include "hw/amd/packets.h"

namespace ugpu::hw::amd {

std::string format_reg_trace(const RegTrace& t) {
  std::string out = "# ugpu register trace (`ugpu decode --regs FILE` names the registers)\n";
  char buf[96];
  for (int ip = 0; ip < kIpCount; ++ip) {
    out += std::string("# bases ") + ip_name(Ip(ip));
    for (uint32_t b : t.bases.of[ip]) std::snprintf(buf, sizeof buf, " 0x%x", b), out += buf;
    out += "\n";
  }
  for (const RegAccess& a : t.accesses) {
    std::snprintf(buf, sizeof buf, "%.4f %c 0x%08x 0x%08x\n", a.ms, a.write ? 'W' : 'R', a.dword, a.value);
    out += buf;
  }
  return out;
}

RegTrace parse_reg_trace(std::string_view text) {
  RegTrace t;
  std::istringstream in{std::string(text)};
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    auto bad = [&](const std::string& why) { return Error("register trace line " + std::to_string(n) + ": " + why + ": '" + line + "'"); };
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::istringstream l(line.substr(1));
      std::string word, name;
      if (!(l >> word) || word != "bases") continue;  // a comment
      l >> name;
      int ip = -1;
      for (int i = 0; i < kIpCount; ++i)
        if (name == ip_name(Ip(i))) ip = i;
      if (ip < 0) throw bad("unknown IP block '" + name + "'");
      for (int s = 0; s < kMaxSegments; ++s) {
        std::string v;
        if (!(l >> v)) break;
        try {
          t.bases.of[ip][s] = uint32_t(std::stoul(v, nullptr, 0));
        } catch (const std::exception&) { throw bad("'" + v + "' is not a base address"); }
      }
      continue;
    }
    RegAccess a;
    char op = 0;
    unsigned dword = 0, value = 0;
    int used = 0;
    if (std::sscanf(line.c_str(), "%lf %c %x %x %n", &a.ms, &op, &dword, &value, &used) != 4 || (op != 'R' && op != 'W') ||
        line.find_first_not_of(" \t\r", size_t(used)) != std::string::npos)
      throw bad("expected 'MS R|W DWORD VALUE'");
    a.write = op == 'W', a.dword = dword, a.value = value;
    t.accesses.push_back(a);
  }
  return t;
}

std::string describe_reg_trace(const RegTrace& t) {
  std::string out;
  char buf[160];
  for (const RegAccess& a : t.accesses) {
    std::string name = register_name(a.dword, t.bases);
    if (name.empty()) std::snprintf(buf, sizeof buf, "0x%05x", a.dword), name = std::string("register ") + buf;
    std::snprintf(buf, sizeof buf, "%10.3f ms  %-5s %-48s 0x%08x\n", a.ms, a.write ? "write" : "read", name.c_str(), a.value);
    out += buf;
  }
  return out;
}

}  // namespace ugpu::hw::amd
