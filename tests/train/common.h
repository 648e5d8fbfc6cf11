// What the training suite's files share: the devices they run on, the error measure, error texts.
#pragma once
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "common/error.h"
#include "tests/tensor/host.h"

namespace ugpu::test {

// test_devices() without emu:amd:pci and emu:amd:usb: the same emulated GPU as emu:amd, reached
// through other transports the tensor and hcq suites cover.
inline std::vector<std::string> train_test_devices() {
  std::vector<std::string> d = test_devices();
  std::erase_if(d, [](const std::string& n) { return n == "emu:amd:pci" || n == "emu:amd:usb"; });
  return d;
}

// max |got - want| / max(max |want|, 1): one number per tensor, scaled as the tensor is (NaN: inf).
inline double scaled_error(const std::vector<double>& got, const std::vector<double>& want) {
  double worst = 0, scale = 1;
  for (double w : want) scale = std::max(scale, std::abs(w));
  for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::isnan(got[i]) ? INFINITY : std::abs(got[i] - want[i]) / scale);
  return worst;
}

// The text of the Error f throws, or "no error".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) { return e.what(); }
  return "no error";
}

}  // namespace ugpu::test
