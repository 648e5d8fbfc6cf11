// Device::alloc: the heap of small blocks (TLSF over driver chunks) and the LRU cache of large
// buffers. Both defer reuse of freed memory until the device's timeline has passed the work that
// was submitted before the free, so a buffer dropped while a kernel still reads it is not handed to
// someone else under that kernel — nor given back to the driver under it: a large buffer the cache
// does not keep (above the limit, or pushed out) waits in `dying` until its work is done.
#include <algorithm>
#include <cstring>
#include <list>

#include "hcq/device.h"

namespace ugpu::hcq {

struct Device::MemoryState {
  struct Chunk {
    Buffer mem;
    RangeAllocator ranges;
  };
  struct Retired {  // freed; reusable once the timeline reached `value` or rolled over since
    uint64_t generation, value;
  };
  struct Cached {
    Buffer mem;
    Retired when;
  };
  struct Deferred {
    Chunk* chunk;
    uint64_t addr;
    Retired when;
  };

  std::mutex mu;
  Device* dev;  // null once the device is gone: frees then release memory at once
  std::vector<std::unique_ptr<Chunk>> chunks;
  std::vector<Deferred> deferred;
  std::list<Cached> cache;    // most recently freed first
  std::vector<Cached> dying;  // large buffers to release (to the driver) once their work is done
  MemoryStats stats;

  explicit MemoryState(Device* d) : dev(d) {}
  Retired now() const { return {dev->rollovers_, dev->last_timeline()}; }
  bool done(Retired r) const { return r.generation != dev->rollovers_ || dev->timeline().value() >= r.value; }
  void reclaim() {  // deferred heap frees whose work has finished go back to their chunk
    std::erase_if(deferred, [&](const Deferred& d) {
      if (!done(d.when)) return false;
      d.chunk->ranges.free(d.addr);
      return true;
    });
    std::erase_if(dying, [&](const Cached& c) {  // the last copy: the driver frees it
      if (!done(c.when)) return false;
      stats.large_bytes -= c.mem.size;
      return true;
    });
  }
  void note_peak() { stats.peak_bytes = std::max(stats.peak_bytes, stats.chunk_bytes + stats.large_bytes); }
  void trim_cache(size_t limit) {
    while (stats.cached_bytes > limit && !cache.empty()) {
      stats.cached_bytes -= cache.back().mem.size;
      if (!done(cache.back().when)) dying.push_back(cache.back());
      else stats.large_bytes -= cache.back().mem.size;
      cache.pop_back();
    }
    stats.cached = cache.size();
  }
};

Buffer Device::alloc(size_t bytes) {
  Buffer b = take_memory(bytes);
  if (!b.host && b.size) clear(b);  // memory the host reaches is zeroed in take_memory
  return b;
}

Buffer Device::take_memory(size_t bytes) {
  check_usable();
  std::shared_ptr<MemoryState> st = mem_;
  std::unique_lock lock(st->mu);
  size_t want = std::max<size_t>(bytes, 1), heap_bytes = (want + 255) / 256 * 256;
  st->reclaim();
  auto sub = [&](MemoryState::Chunk& c, uint64_t addr) {
    Buffer b;
    b.va = addr, b.size = bytes;
    b.host = c.mem.host ? static_cast<uint8_t*>(c.mem.host) + (addr - c.mem.va) : nullptr;
    if (b.host) std::memset(b.host, 0, want);
    st->stats.heap_used += heap_bytes;
    MemoryState::Chunk* cp = &c;
    b.owner = std::shared_ptr<void>(b.host, [st, cp, addr, heap_bytes, keep = c.mem.owner](void*) {
      std::lock_guard l(st->mu);
      st->stats.heap_used -= heap_bytes;
      if (st->dev) st->deferred.push_back({cp, addr, st->now()});
      else cp->ranges.free(addr);
    });
    return b;
  };
  if (want <= heap_block_max_) {
    for (auto& c : st->chunks)
      if (auto a = c->ranges.alloc(want, 256)) return sub(*c, *a);
    Buffer m = alloc_memory(heap_chunk_);
    ++st->stats.driver_allocs, ++st->stats.chunks, st->stats.chunk_bytes += heap_chunk_;
    st->note_peak();
    st->chunks.push_back(std::make_unique<MemoryState::Chunk>(MemoryState::Chunk{m, RangeAllocator(m.va, (heap_chunk_ + 255) / 256 * 256)}));
    return sub(*st->chunks.back(), *st->chunks.back()->ranges.alloc(want, 256));
  }
  size_t rounded = (want + 4095) / 4096 * 4096;
  Buffer mem;
  for (auto it = st->cache.begin(); it != st->cache.end(); ++it)
    if (it->mem.size == rounded && st->done(it->when)) {
      mem = it->mem;
      st->stats.cached_bytes -= rounded;
      st->cache.erase(it);
      ++st->stats.cache_hits;
      if (mem.host) std::memset(mem.host, 0, rounded);
      break;
    }
  if (!mem.owner) {
    lock.unlock();  // the driver's allocation may be slow; it does not touch the cache
    try {
      mem = alloc_memory(rounded);
    } catch (const Error&) {  // out of memory: give the cache back and try again, then after the work holding memory
      trim();
      try {
        mem = alloc_memory(rounded);
      } catch (const Error&) {
        bool waiting;
        {
          std::lock_guard l(st->mu);
          waiting = !st->dying.empty() || !st->deferred.empty();
        }
        if (!waiting) throw;
        synchronize();
        trim();
        mem = alloc_memory(rounded);
      }
    }
    mem.size = rounded;
    lock.lock();
    ++st->stats.driver_allocs;
    st->stats.large_bytes += rounded;
    st->note_peak();
  }
  st->stats.cached = st->cache.size();
  Buffer b = mem;
  b.size = bytes;
  b.owner = std::shared_ptr<void>(mem.host, [st, mem, limit = cache_limit_](void*) {
    std::lock_guard l(st->mu);
    if (!st->dev) return;  // the memory goes with the last copy of `mem`
    if (mem.size > limit) {
      st->dying.push_back({mem, st->now()});
      return;
    }
    st->cache.push_front({mem, st->now()});
    st->stats.cached_bytes += mem.size;
    st->trim_cache(limit);
  });
  return b;
}

void Device::open_memory() { mem_ = std::make_shared<MemoryState>(this); }

MemoryStats Device::memory_stats() const {
  std::lock_guard lock(mem_->mu);
  return mem_->stats;
}

void Device::trim() {
  std::lock_guard lock(mem_->mu);
  mem_->trim_cache(0);
  mem_->reclaim();
  std::erase_if(mem_->chunks, [&](const std::unique_ptr<MemoryState::Chunk>& c) {
    if (c->ranges.free_bytes() != c->ranges.size()) return false;
    --mem_->stats.chunks, mem_->stats.chunk_bytes -= heap_chunk_;
    return true;
  });
}

void Device::close_memory() {
  std::lock_guard lock(mem_->mu);
  for (const auto& d : mem_->deferred) d.chunk->ranges.free(d.addr);
  mem_->deferred.clear();
  mem_->trim_cache(0);
  mem_->dying.clear();
  mem_->dev = nullptr;
}

}  // namespace ugpu::hcq
