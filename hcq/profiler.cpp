#include "hcq/profiler.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "common/error.h"
#include "common/json_quote.h"

namespace ugpu::hcq {
namespace {
std::string micros(int64_t ns) {  // Chrome traces count microseconds; keep nanosecond precision
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(ns / 1000), static_cast<long long>(ns % 1000));
  return buf;
}
}  // namespace

void Profiler::add(ProfileEvent e) {
  std::lock_guard lock(mu_);
  events_.push_back(std::move(e));
}

std::vector<ProfileEvent> Profiler::events() const {
  std::lock_guard lock(mu_);
  return events_;
}

std::string Profiler::chrome_trace() const {
  std::vector<ProfileEvent> ev = events();
  int64_t origin = ev.empty() ? 0 : std::min_element(ev.begin(), ev.end(), [](auto& a, auto& b) { return a.start_ns < b.start_ns; })->start_ns;
  std::map<std::string, int> pid;
  std::string out = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
  bool first = true;
  auto emit = [&](const std::string& e) { out += (first ? "\n" : ",\n") + e, first = false; };
  for (const ProfileEvent& e : ev) {
    auto [it, fresh] = pid.emplace(e.device, static_cast<int>(pid.size()) + 1);
    std::string p = std::to_string(it->second);
    if (fresh) {
      emit("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + p + ",\"args\":{\"name\":" + json_quote(e.device) + "}}");
      emit("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + p + ",\"tid\":0,\"args\":{\"name\":\"compute\"}}");
      emit("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + p + ",\"tid\":1,\"args\":{\"name\":\"copy\"}}");
    }
    emit("{\"ph\":\"X\",\"name\":" + json_quote(e.name) + ",\"cat\":\"" + (e.copy ? "copy" : "kernel") + "\",\"pid\":" + p + ",\"tid\":" +
         (e.copy ? "1" : "0") + ",\"ts\":" + micros(e.start_ns - origin) + ",\"dur\":" + micros(std::max<int64_t>(e.end_ns - e.start_ns, 0)) + "}");
  }
  return out + "\n]}\n";
}

void Profiler::write(const std::string& path) const {
  std::string text = chrome_trace();
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw Error("cannot write the trace to " + path + ": " + std::strerror(errno));
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok) throw Error("writing the trace to " + path + " failed: " + std::strerror(errno));
}

}  // namespace ugpu::hcq
