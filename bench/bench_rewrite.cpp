// bench-rewrite: simplifies the index-expression corpus (bench/corpus/index_exprs.txt) and reports
// the cost of the rewrite engine: microseconds per expression and matcher calls ("node visits",
// nested rewrites included) per second. Usage: bench-rewrite [CORPUS] [--seconds S]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
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
  std::vector<std::string> texts;
  std::string line, chunk;
  auto flush = [&] {
    if (chunk.find_first_not_of(" \n") != std::string::npos) texts.push_back(chunk);
    chunk.clear();
  };
  while (std::getline(in, line)) {
    if (line == "---") flush();
    else chunk += line + "\n";
  }
  flush();
  auto parse_all = [&] {
    std::vector<UOp> exprs;
    for (const std::string& t : texts) exprs.push_back(parse(t));
    return exprs;
  };
  std::vector<UOp> exprs;
  try {
    exprs = parse_all();
  } catch (const ugpu::Error& e) {
    std::fprintf(stderr, "bench-rewrite: %s: %s\n", path.c_str(), e.what());
    return 1;
  }
  size_t nodes = 0, simplified_nodes = 0;
  for (const UOp& e : exprs) nodes += e.toposort().size(), simplified_nodes += simplify(e).toposort().size();
  std::printf("corpus: %zu expressions, %zu nodes (%zu after simplification)\n", exprs.size(), nodes, simplified_nodes);
  exprs.clear();

  // cold: every round parses the corpus anew (untimed), so no node carries facts cached by an
  // earlier round; warm: the same parsed nodes simplified again (bounds and keys already cached).
  auto measure = [&](bool cold) {
    double elapsed = 0;
    size_t count = 0;
    rewrite_stats() = {};
    std::vector<UOp> warm = parse_all();
    do {
      std::vector<UOp> batch = cold ? parse_all() : warm;
      auto t0 = std::chrono::steady_clock::now();
      for (const UOp& e : batch) simplify(e);
      elapsed += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      count += batch.size();
    } while (elapsed < seconds / 2);
    RewriteStats st = rewrite_stats();
    return std::tuple{elapsed * 1e6 / static_cast<double>(count), static_cast<double>(st.node_visits) / elapsed,
                      static_cast<double>(st.rule_hits) / static_cast<double>(count)};
  };
  auto [cold_us, cold_visits, hits] = measure(true);
  auto [warm_us, warm_visits, warm_hits] = measure(false);
  (void)warm_hits;
  std::printf("rewrite_us_per_expr: %.2f\n", cold_us);
  std::printf("node_visits_per_s: %.0f\n", cold_visits);
  std::printf("rule_hits_per_expr: %.1f\n", hits);
  std::printf("warm_rewrite_us_per_expr: %.2f\n", warm_us);
  std::printf("warm_node_visits_per_s: %.0f\n", warm_visits);
  return 0;
}
