// The llama.cpp comparison (tests/llm/test_llama_cpp.cpp) exits 77 — skipped, with the reason — where
// llama.cpp is not installed (scripts/setup --tests fetches it from npm), rather than passing with
// nothing compared.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "tests/llm/llama_cpp.h"

int main(int argc, char** argv) {
  std::string why;
  if (!ugpu::test::LlamaCpp::get(&why)) {
    std::printf("skipped: %s\n", why.c_str());
    return 77;
  }
  doctest::Context ctx(argc, argv);
  return ctx.run();
}
