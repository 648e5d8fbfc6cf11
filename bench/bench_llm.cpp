// bench-llm: prompt and decode speed of `ugpu llm` next to llama.cpp on the same GGUF file, in one
// run. The model is generated (llm/testmodel.h) at a realistic small shape — dim 768, 12 layers, 12
// heads, ffn 2048, vocabulary 32000 (about 110M parameters) — in Q8_0 and in the Q4_K_M mix.
// ugpu runs on --device (cpu by default, whose worker threads are the machine's cores) and llama.cpp
// with the same thread count (its CPU build; with --device nv and UGPU_LLAMA_CPP pointing at the
// -cuda package, its CUDA build). Each side has a warm-up generation first (ugpu compiles its kernels
// there), then one measured: the prompt as one batch, then greedy tokens one at a time.
//   bench-llm [--device D] [--prompt P] [--tokens N] [--threads T] [--small] [--weights q8_0,q4_k_m]
// Figures, as `name: value` lines:
//   llm_prefill_tps[W,D] / llm_decode_tps[W,D]          ugpu's tokens per second
//   llm_prefill_tps_llama_cpp[W] / llm_decode_tps_llama_cpp[W]
//   llm_prefill_ratio[W,D] / llm_decode_ratio[W,D]      ugpu / llama.cpp
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/split.h"
#include "hcq/device.h"
#include "llm/generate.h"
#include "llm/testmodel.h"
#include "tests/llm/llama_cpp.h"

using namespace ugpu;

namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

int main(int argc, char** argv) {
  std::string device = "cpu", weights = "q8_0,q4_k_m";
  int64_t prompt_len = 128, tokens = 32;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool small = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench-llm: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--device") device = next();
    else if (a == "--prompt") prompt_len = std::stol(next());
    else if (a == "--tokens") tokens = std::stol(next());
    else if (a == "--threads") threads = std::stoi(next());
    else if (a == "--weights") weights = next();
    else if (a == "--small") small = true;
    else {
      std::fprintf(stderr, "usage: bench-llm [--device D] [--prompt P] [--tokens N] [--threads T] [--small] [--weights q8_0,q4_k_m]\n");
      return 2;
    }
  }
  try {
    std::string why;
    test::LlamaCpp* ref = test::LlamaCpp::get(&why);
    if (!ref) std::fprintf(stderr, "bench-llm: no llama.cpp comparison: %s\n", why.c_str());
    // llama.cpp runs first, for every model, before ugpu opens a device: the device's threads would
    // otherwise share the cores with llama.cpp's.
    struct Run {
      std::string w, path;
      std::vector<int32_t> prompt;
      double ref_prefill_tps = 0, ref_decode_tps = 0;
    };
    std::vector<Run> runs;
    for (const std::string& w : split_list(weights)) {
      llm::TestModelSpec spec;
      spec.arch = "llama", spec.weights = w, spec.tokenizer = "llama";
      if (small) spec.dim = 256, spec.layers = 4, spec.heads = 4, spec.kv_heads = 4, spec.ffn = 768, spec.vocab = 4096;
      else spec.dim = 768, spec.layers = 12, spec.heads = 12, spec.kv_heads = 12, spec.ffn = 2048, spec.vocab = 32000;
      spec.context = 512;
      Run run{w, "/tmp/ugpu_bench_llm_" + std::to_string(getpid()) + "_" + w + ".gguf", {}};
      double t0 = now_s();
      llm::write_test_model(spec, run.path);
      llm::GgufFile f = llm::GgufFile::open(run.path);
      std::fprintf(stderr, "bench-llm: %s model, %.1f MiB, written in %.1f s\n", w.c_str(), static_cast<double>(f.size()) / (1 << 20), now_s() - t0);
      llm::Tokenizer tok = llm::Tokenizer::from_gguf(f);
      std::vector<int32_t> text = tok.encode(llm::test_model_text(), true, false);
      while (static_cast<int64_t>(run.prompt.size()) < prompt_len) run.prompt.insert(run.prompt.end(), text.begin(), text.end());
      run.prompt.resize(static_cast<size_t>(prompt_len));
      if (ref) {
        test::LlamaCpp::Session r(run.path, 512, threads);
        std::vector<float> l = r.eval(run.prompt);  // warm-up
        r.clear();
        double a = now_s();
        l = r.eval(run.prompt);
        double prefill = now_s() - a;
        int32_t next = static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
        a = now_s();
        for (int64_t i = 1; i < tokens; ++i) {
          l = r.eval(std::vector<int32_t>{next});
          next = static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
        }
        double decode = now_s() - a;
        run.ref_prefill_tps = static_cast<double>(run.prompt.size()) / prefill;
        run.ref_decode_tps = static_cast<double>(tokens - 1) / decode;
        std::printf("llm_prefill_tps_llama_cpp[%s]: %.1f\n", w.c_str(), run.ref_prefill_tps);
        std::printf("llm_decode_tps_llama_cpp[%s]: %.2f\n", w.c_str(), run.ref_decode_tps);
        std::fflush(stdout);
      }
      runs.push_back(std::move(run));
    }
    if (ref) std::printf("llm_threads: %d\n", threads);
    for (const Run& run : runs) {
      llm::GgufFile f = llm::GgufFile::open(run.path);
      llm::Model m = llm::Model::load(f, device, 512);
      llm::Generator g(m);
      auto keep_going = [](int32_t) { return true; };
      g.generate(run.prompt, 4, keep_going);  // warm-up: compiles the prefill and decode kernels, captures the Jit
      g.reset();
      llm::GenerateStats s = g.generate(run.prompt, tokens, keep_going);
      std::string tag = run.w + "," + device;
      std::printf("llm_prefill_tps[%s]: %.1f\n", tag.c_str(), s.prompt_tps());
      std::printf("llm_decode_tps[%s]: %.2f\n", tag.c_str(), s.decode_tps());
      std::printf("llm_peak_device_mib[%s]: %.1f\n", tag.c_str(), static_cast<double>(s.peak_device_bytes) / (1 << 20));
      if (ref) {
        std::printf("llm_prefill_ratio[%s]: %.4f\n", tag.c_str(), s.prompt_tps() / run.ref_prefill_tps);
        std::printf("llm_decode_ratio[%s]: %.4f\n", tag.c_str(), s.decode_tps() / run.ref_decode_tps);
      }
      std::fflush(stdout);
      std::remove(run.path.c_str());
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "bench-llm: %s\n", e.what());
    return 1;
  }
  return 0;
}
