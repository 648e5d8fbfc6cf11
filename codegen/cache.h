// The on-disk compile cache: one file per key under $UGPU_CACHE_DIR (default $XDG_CACHE_HOME/ugpu,
// else ~/.cache/ugpu); UGPU_CACHE=0 turns it off. A file is a set of named blobs with a SHA-256 of its
// contents; it is written to a temporary name and renamed into place, so concurrent processes never
// see half a file, and a damaged file is ignored and replaced. Native code is run from it, so: every
// entry names the key it was stored under and is refused under another (a copied or shared cache);
// the cache's folders are made private (0700) and a folder that is another user's or writable by
// others is not used (with a warning); anything but a regular file in an entry's place (a FIFO, a
// device, a symlink) is a miss, never a read that blocks.
#pragma once
#include <map>
#include <optional>
#include <string>

namespace ugpu::codegen {

using CacheEntry = std::map<std::string, std::string>;

class DiskCache {
 public:
  explicit DiskCache(std::string dir);  // empty: disabled
  static DiskCache& global();           // from the environment
  bool enabled() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }
  std::optional<CacheEntry> get(const std::string& key) const;      // key: hex
  void put(const std::string& key, const CacheEntry& entry) const;  // best effort: failures warn once

 private:
  std::string path(const std::string& key) const;
  std::string dir_;
};

// The cache folder the environment names now (empty: disabled); global() reads it once.
std::string cache_dir_from_env();

// Serialisation, exposed for tests of the damaged-file handling.
std::string encode_cache_entry(const CacheEntry& e);
std::optional<CacheEntry> decode_cache_entry(const std::string& bytes);

}  // namespace ugpu::codegen
