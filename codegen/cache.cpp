#include "codegen/cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "ir/sha256.h"

namespace ugpu::codegen {
namespace fs = std::filesystem;
namespace {

constexpr char kMagic[8] = {'U', 'G', 'P', 'U', 'C', 'C', '0', '1'};

void put_u64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s += static_cast<char>(v >> (8 * i));
}
bool get_u64(const std::string& s, size_t& at, uint64_t& v) {
  if (s.size() - at < 8 || at > s.size()) return false;
  v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<uint8_t>(s[at + i])} << (8 * i);
  at += 8;
  return true;
}
std::string digest(const std::string& s) {
  ir::Sha256 h;
  h.update(s);
  auto d = h.finish();
  return std::string(reinterpret_cast<const char*>(d.data()), d.size());
}

void warn_once(const std::string& msg) {
  static std::atomic<bool> said{false};
  if (!said.exchange(true)) std::cerr << "ugpu: warning: " << msg << " (continuing without the disk cache)\n";
}

// The field every entry carries: the key it was stored under. An entry found under another key (a
// copied or shared cache directory) is refused: it would be another kernel's machine code.
constexpr const char* kKeyField = "ugpu-cache-key";
constexpr uint64_t kMaxEntryBytes = uint64_t{256} << 20;

// Why a directory of the cache must not be used, or "" when it may (or does not exist yet): native
// code is executed from it, so it must be ours and writable by no one else.
std::string unsafe_reason(const fs::path& d) {
  struct stat st{};
  if (::stat(d.c_str(), &st) != 0) return errno == ENOENT ? "" : "cannot stat " + d.string() + ": " + std::strerror(errno);
  if (!S_ISDIR(st.st_mode)) return d.string() + " is not a directory";
  if (st.st_uid != ::geteuid()) return d.string() + " belongs to another user";
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return d.string() + " is writable by other users (ugpu runs native code from it; chmod go-w " + d.string() + ")";
  return "";
}

// The file's bytes if it is a regular file of a sane size; nothing for a FIFO, a device, a symlink
// or a directory in its place (none of which may block or feed endless data).
std::optional<std::string> read_regular(const fs::path& p) {
  int fd = ::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::optional<std::string> out;
  struct stat st{};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) <= kMaxEntryBytes) {
    std::string b(static_cast<size_t>(st.st_size), '\0');
    size_t got = 0;
    while (got < b.size()) {
      ssize_t n = ::read(fd, b.data() + got, b.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    if (got == b.size()) out = std::move(b);
  }
  ::close(fd);
  return out;
}

}  // namespace

std::string encode_cache_entry(const CacheEntry& e) {
  std::string s(kMagic, sizeof kMagic);
  put_u64(s, e.size());
  for (const auto& [k, v] : e) {
    put_u64(s, k.size());
    s += k;
    put_u64(s, v.size());
    s += v;
  }
  return s + digest(s);
}

std::optional<CacheEntry> decode_cache_entry(const std::string& b) {
  if (b.size() < sizeof kMagic + 8 + 32 || std::memcmp(b.data(), kMagic, sizeof kMagic) != 0) return std::nullopt;
  std::string body = b.substr(0, b.size() - 32);
  if (digest(body) != b.substr(b.size() - 32)) return std::nullopt;
  size_t at = sizeof kMagic;
  uint64_t n;
  if (!get_u64(body, at, n)) return std::nullopt;
  CacheEntry e;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t kl, vl;
    if (!get_u64(body, at, kl) || body.size() - at < kl) return std::nullopt;
    std::string k = body.substr(at, kl);
    at += kl;
    if (!get_u64(body, at, vl) || body.size() - at < vl) return std::nullopt;
    e[k] = body.substr(at, vl);
    at += vl;
  }
  if (at != body.size()) return std::nullopt;
  return e;
}

DiskCache::DiskCache(std::string dir) : dir_(std::move(dir)) {}

std::string cache_dir_from_env() {
  const char* off = std::getenv("UGPU_CACHE");
  if (off && std::string(off) == "0") return std::string();
  if (const char* d = std::getenv("UGPU_CACHE_DIR"); d && *d) return std::string(d);
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/ugpu";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/ugpu";
  return std::string();
}

DiskCache& DiskCache::global() {
  static DiskCache c(cache_dir_from_env());
  return c;
}

std::string DiskCache::path(const std::string& key) const { return dir_ + "/" + key.substr(0, 2) + "/" + key + ".bin"; }

std::optional<CacheEntry> DiskCache::get(const std::string& key) const {
  if (!enabled()) return std::nullopt;
  fs::path p = path(key);
  for (const fs::path& d : {fs::path(dir_), p.parent_path()})
    if (std::string why = unsafe_reason(d); !why.empty()) return warn_once("the compile cache is not used: " + why), std::nullopt;
  std::optional<std::string> bytes = read_regular(p);
  std::optional<CacheEntry> e = bytes ? decode_cache_entry(*bytes) : std::nullopt;
  if (!e) return std::nullopt;
  auto named = e->find(kKeyField);
  if (named == e->end() || named->second != key) return std::nullopt;  // stored under another key: not this kernel's code
  e->erase(named);
  return e;
}

void DiskCache::put(const std::string& key, const CacheEntry& entry) const {
  if (!enabled()) return;
  fs::path p = path(key);
  std::error_code ec;
  fs::create_directories(fs::path(dir_).parent_path(), ec);  // the cache's own folders are made below, private
  for (const fs::path& d : {fs::path(dir_), p.parent_path()}) {
    if (std::string why = unsafe_reason(d); !why.empty()) return warn_once("the compile cache is not used: " + why);
    if (!fs::exists(d, ec) && (::mkdir(d.c_str(), 0700) != 0 && errno != EEXIST))
      return warn_once("cannot create the cache directory " + d.string() + ": " + std::strerror(errno));
  }
  thread_local std::mt19937_64 rng{std::random_device{}()};
  fs::path tmp = p.string() + ".tmp." + std::to_string(getpid()) + "." + std::to_string(rng());
  {
    std::ofstream f(tmp, std::ios::binary);
    CacheEntry named = entry;
    named[kKeyField] = key;
    f << encode_cache_entry(named);
    if (!f) {
      fs::remove(tmp, ec);
      return warn_once("cannot write the compile cache file " + tmp.string());
    }
  }
  fs::rename(tmp, p, ec);
  if (ec) {
    fs::remove(tmp, ec);
    warn_once("cannot rename into the compile cache: " + p.string());
  }
}

}  // namespace ugpu::codegen
