// BEAM search on the device (tensor/beam.h): a realize with UGPU_BEAM searches each new kernel once,
// keeps the result correct, stores the winner in the compile cache, and a later realize (this
// process's results forgotten, the compiled kernels too) takes it from the disk without searching.
#include <cstdlib>
#include <filesystem>

#include "codegen/compiler.h"
#include "tensor/beam.h"
#include "tests/tensor/host.h"

namespace ugpu::test {
namespace {

// The disk cache in a fresh folder while the test runs (the suite runs with UGPU_CACHE=0).
struct TempCache {
  std::filesystem::path dir;
  std::string old_cache;
  bool had_cache;
  TempCache() {
    char tmpl[] = "/tmp/ugpu-beam-XXXXXX";
    dir = mkdtemp(tmpl);
    const char* c = std::getenv("UGPU_CACHE");
    had_cache = c != nullptr;
    old_cache = c ? c : "";
    setenv("UGPU_CACHE", "1", 1);
    setenv("UGPU_CACHE_DIR", dir.c_str(), 1);
  }
  ~TempCache() {
    if (had_cache) setenv("UGPU_CACHE", old_cache.c_str(), 1);
    else unsetenv("UGPU_CACHE");
    unsetenv("UGPU_CACHE_DIR");
    tensor::set_beam_width(0);
    std::filesystem::remove_all(dir);
  }
};

}  // namespace

TEST_CASE("beam: a kernel is searched once on each device, its result stays right, and the winner comes back from the disk cache") {
  TempCache cache;
  for (const std::string& dev : {std::string("cpu"), std::string("emu:amd"), std::string("emu:nv")}) {
    INFO("device " << dev);
    Host ha = random_host({32, 48}, 11), hb = random_host({48, 16}, 12);
    Tensor a = upload(ha, dev), b = upload(hb, dev);
    tensor::set_beam_width(2);
    tensor::BeamStats before = tensor::beam_stats();
    Tensor c = a.matmul(b);
    check_close(c, matmul(ha, hb), 1e-4, 1e-5);
    tensor::BeamStats searched = tensor::beam_stats();
    CHECK(searched.searches == before.searches + 1);
    CHECK(std::filesystem::exists(cache.dir));

    // A new process in effect: no results in memory, no compiled kernels.
    tensor::forget_beam_results();
    codegen::clear_memory_cache();
    Tensor again = a.matmul(b);
    check_close(again, matmul(ha, hb), 1e-4, 1e-5);
    tensor::BeamStats after = tensor::beam_stats();
    CHECK(after.searches == searched.searches);  // nothing searched the second time
    CHECK(after.cache_hits == searched.cache_hits + 1);
    tensor::set_beam_width(0);
  }
}

TEST_CASE("UGPU_OPT other than 0 or 1 is an error, not silently on") {
  setenv("UGPU_OPT", "off", 1);
  tensor::reread_optimize_kernels();
  CHECK_THROWS_WITH_AS(tensor::optimize_kernels(), doctest::Contains("UGPU_OPT takes 0"), Error);
  setenv("UGPU_OPT", "0", 1);
  tensor::reread_optimize_kernels();
  CHECK_FALSE(tensor::optimize_kernels());
  unsetenv("UGPU_OPT");
  tensor::reread_optimize_kernels();
  CHECK(tensor::optimize_kernels());
}

TEST_CASE("beam: UGPU_BEAM that is not a width is an error, not silently off") {
  tensor::set_beam_width(-1);  // read the environment again
  setenv("UGPU_BEAM", "four", 1);
  CHECK_THROWS_WITH_AS(tensor::beam_width(), doctest::Contains("UGPU_BEAM takes a beam width"), Error);
  setenv("UGPU_BEAM", "2", 1);
  CHECK(tensor::beam_width() == 2);
  unsetenv("UGPU_BEAM");
  tensor::set_beam_width(0);
}

}  // namespace ugpu::test
