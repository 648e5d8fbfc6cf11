// Seeds and samples for the suites that draw their cases at random or do long numeric work
// (docs/testing.md). Two settings, both from the environment, so a run is reproduced by setting them:
// - UGPU_TEST_SEED: the run's seed. scripts/test draws a fresh one each run and prints it; a suite
//   with its own seed variable (UGPU_DIFF_SEED, UGPU_TENSOR_SEED, UGPU_OPT_SEED) takes that first.
//   Unset, every suite uses its fixed default, as a plain `meson test` always has.
// - UGPU_TEST_SAMPLE=1: the sanitizer build's run. The long numeric suites check a seeded sample of
//   their cases there (every device and every code path still runs under ASan and UBSan, on fewer
//   values); the release build runs them whole.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace ugpu::test {

// A suite's seed: `own` (its variable) if set, else UGPU_TEST_SEED, else `fallback`.
inline uint64_t suite_seed(const char* own, uint64_t fallback) {
  for (const char* name : {own, "UGPU_TEST_SEED"})
    if (const char* v = name ? std::getenv(name) : nullptr; v && *v) return std::strtoull(v, nullptr, 10);
  return fallback;
}

// Whether this run checks samples (UGPU_TEST_SAMPLE=1) rather than whole suites.
inline bool sampling() {
  const char* v = std::getenv("UGPU_TEST_SAMPLE");
  return v && *v && std::string(v) != "0";
}

// `full` when the suite runs whole, `sampled` under UGPU_TEST_SAMPLE: a count of random cases.
inline int64_t sample_size(int64_t full, int64_t sampled) { return sampling() ? std::min(full, sampled) : full; }

// The devices case `i` of a list runs on: all of `devices`, or under UGPU_TEST_SAMPLE one of them, in
// turn from a place the run's seed picks, so that every case runs and every device runs some of them.
// The first call of a process says so, with the seed.
inline std::vector<std::string> sample_devices(const std::vector<std::string>& devices, size_t i) {
  if (!sampling() || devices.size() <= 1) return devices;
  static bool said = false;
  if (!std::exchange(said, true))
    MESSAGE("UGPU_TEST_SAMPLE: each case on one device, in turn from UGPU_TEST_SEED=" << suite_seed(nullptr, 1)
                                                                                      << "; the release build runs every case on every device");
  return {devices[(suite_seed(nullptr, 1) + i) % devices.size()]};
}

}  // namespace ugpu::test
