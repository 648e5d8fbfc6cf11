// bench-rewrite: simplifies the index-expression corpus (bench/corpus/index_exprs.txt) and reports
// the cost of the rewrite engine. Usage: bench-rewrite [CORPUS] [--seconds S]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "ir/rewrite.h"
#include "ir/symbolic.h"
#include "ir/text.h"

using namespace ugpu::ir;

int main(int argc, char** argv) {
  std::string path = UGPU_SOURCE_ROOT "/bench/corpus/index_exprs.txt";
  double seconds = 2.0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--seconds" && i + 1 < argc) seconds = std::atof(argv[++i]);
    else path = a;
  }
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "bench-rewrite: cannot open corpus '%s'\n", path.c_str());
    return 1;
  }
  std::vector<UOp> exprs;
  std::string line, chunk;
  size_t nodes = 0;
  try {
    auto flush = [&] {
      if (chunk.find_first_not_of(" \n") != std::string::npos) {
        exprs.push_back(parse(chunk));
        nodes += exprs.back().toposort().size();
      }
      chunk.clear();
    };
    while (std::getline(in, line)) {
      if (line == "---") flush();
      else chunk += line + "\n";
    }
    flush();
  } catch (const ugpu::Error& e) {
    std::fprintf(stderr, "bench-rewrite: %s: %s\n", path.c_str(), e.what());
    return 1;
  }
  std::printf("corpus: %zu expressions, %zu nodes\n", exprs.size(), nodes);
  simplify(exprs[0]);  // warm the matchers' static tables
  size_t rounds = 0, simplified_nodes = 0;
  rewrite_stats() = {};
  auto t0 = std::chrono::steady_clock::now();
  double elapsed = 0;
  do {
    for (const UOp& e : exprs) {
      UOp s = simplify(e);
      if (rounds == 0) simplified_nodes += s.toposort().size();
    }
    ++rounds;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } while (elapsed < seconds);
  RewriteStats st = rewrite_stats();
  double per_expr_us = elapsed * 1e6 / static_cast<double>(rounds * exprs.size());
  std::printf("rounds: %zu, nodes after simplification: %zu\n", rounds, simplified_nodes);
  std::printf("rewrite_us_per_expr: %.2f\n", per_expr_us);
  std::printf("node_visits_per_s: %.0f\n", static_cast<double>(st.node_visits) / elapsed);
  std::printf("rule_hits_per_expr: %.1f\n", static_cast<double>(st.rule_hits) / static_cast<double>(rounds * exprs.size()));
  return 0;
}
