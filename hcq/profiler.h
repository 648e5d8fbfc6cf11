// The profiler (docs/design.md §4): device timestamps of execs and copies, converted to host time, kept
// as events and written as Chrome-trace JSON (chrome://tracing and ui.perfetto.dev open it). One
// profiler may serve several devices; each device is one process row in the trace, its compute and
// copy engines two thread rows.
#pragma once
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace ugpu::hcq {

struct ProfileEvent {
  std::string device, name;
  bool copy = false;                 // a copy-engine event (else a kernel)
  int64_t start_ns = 0, end_ns = 0;  // host steady_clock nanoseconds
};

class Profiler {
 public:
  void add(ProfileEvent e);
  std::vector<ProfileEvent> events() const;   // in the order they were collected
  std::string chrome_trace() const;           // the JSON text
  void write(const std::string& path) const;  // throws Error when the file cannot be written

 private:
  mutable std::mutex mu_;
  std::vector<ProfileEvent> events_;
};

}  // namespace ugpu::hcq
