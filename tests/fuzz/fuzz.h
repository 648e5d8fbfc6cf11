// Shared by the fuzz targets (tests/fuzz/fuzz_*.cpp). Each target feeds one parser of outside input
// with arbitrary bytes. A ugpu::Error is the parser's clear refusal and is expected; anything else —
// another exception, a crash, a sanitizer report, a hang — is a bug the fuzzer reports.
// Built against libFuzzer where the build has -Dfuzz=true (clang), else against replay_main.cpp,
// which runs every file of the seed corpus once (so the g++ sanitizer build replays it too).
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "common/error.h"

namespace ugpu::fuzz {

// Runs f, swallowing the parser's own refusals (ugpu::Error) and nothing else.
template <class F>
void refusals_ok(F&& f) {
  try {
    f();
  } catch (const Error&) {}
}

inline std::string_view text(const uint8_t* data, size_t size) { return {reinterpret_cast<const char*>(data), size}; }

}  // namespace ugpu::fuzz
