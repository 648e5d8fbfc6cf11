#include "codegen/llvm/ptxas.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "common/error.h"

extern char** environ;

namespace ugpu::codegen {
namespace fs = std::filesystem;
namespace {

bool executable(const std::string& p) { return !p.empty() && access(p.c_str(), X_OK) == 0 && fs::is_regular_file(p); }

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// A private temporary directory, removed with everything in it.
struct TempDir {
  fs::path path;
  TempDir() {
    std::error_code ec;
    fs::path base = fs::temp_directory_path(ec);
    if (ec) throw Error("cannot create a temporary directory for ptxas: " + ec.message() + " (TMPDIR names no directory?)");
    std::string tmpl = (base / "ugpu-ptxas-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw Error(std::string("cannot create a temporary directory for ptxas: ") + std::strerror(errno));
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

constexpr int kDidNotStart = -1, kTimedOut = -2;

// How long ptxas may run: UGPU_PTXAS_TIMEOUT_S (1 to 86400), else 300 s.
std::chrono::seconds ptxas_timeout() {
  const char* e = std::getenv("UGPU_PTXAS_TIMEOUT_S");
  if (!e || !*e) return std::chrono::seconds(300);
  char* end = nullptr;
  long long v = std::strtoll(e, &end, 10);
  if (!end || *end || v < 1 || v > 86400) throw Error(std::string("UGPU_PTXAS_TIMEOUT_S=") + e + ": a whole number of seconds from 1 to 86400");
  return std::chrono::seconds(v);
}

// Runs argv with stdout and stderr into `log`; returns the exit status, kDidNotStart, or kTimedOut
// (the process was killed after ptxas_timeout()).
int run(const std::vector<std::string>& argv, const fs::path& log) {
  const auto deadline = std::chrono::steady_clock::now() + ptxas_timeout();
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0].c_str(), &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return kDidNotStart;
  int status = 0;
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid || (r < 0 && errno != EINTR)) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
      return kTimedOut;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace

std::optional<std::string> find_ptxas() {
  if (const char* e = std::getenv("UGPU_PTXAS"); e && *e) {
    if (executable(e)) return std::string(e);
    return std::nullopt;
  }
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    std::string dir;
    while (std::getline(ss, dir, ':'))
      if (!dir.empty() && executable(dir + "/ptxas")) return dir + "/ptxas";
  }
  if (executable("/usr/local/cuda/bin/ptxas")) return std::string("/usr/local/cuda/bin/ptxas");
  return std::nullopt;
}

std::string ptxas_version(const std::string& ptxas) {
  static std::mutex mu;
  static std::map<std::string, std::string> known;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = known.find(ptxas); it != known.end()) return it->second;
  TempDir tmp;
  int rc = run({ptxas, "--version"}, tmp.path / "version.txt");
  std::string v = rc == 0 ? slurp(tmp.path / "version.txt") : "unknown";
  return known[ptxas] = v;
}

std::vector<uint8_t> run_ptxas(const std::string& ptxas, const std::string& ptx, const std::string& arch) {
  TempDir tmp;
  fs::path in = tmp.path / "kernel.ptx", out = tmp.path / "kernel.cubin", log = tmp.path / "ptxas.log";
  {
    std::ofstream f(in, std::ios::binary);
    f << ptx;
    if (!f) throw Error("cannot write PTX for ptxas to " + in.string());
  }
  int rc = run({ptxas, "-arch=" + arch, "-O3", in.string(), "-o", out.string()}, log);
  if (rc == kDidNotStart) throw Error("cannot run ptxas at " + ptxas);
  if (rc == kTimedOut)
    throw Error("ptxas (" + ptxas + ") did not finish within " + std::to_string(ptxas_timeout().count()) +
                " s and was stopped (UGPU_PTXAS_TIMEOUT_S sets the limit)");
  if (rc != 0) throw Error("ptxas (" + ptxas + ") rejected the PTX for " + arch + " (exit " + std::to_string(rc) + "):\n" + slurp(log));
  std::string bin = slurp(out);
  if (bin.empty()) throw Error("ptxas produced no cubin");
  return {bin.begin(), bin.end()};
}

}  // namespace ugpu::codegen
