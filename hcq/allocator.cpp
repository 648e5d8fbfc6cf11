#include "hcq/allocator.h"

#include <bit>
#include <iterator>

#include "common/error.h"

namespace ugpu::hcq {

// ---- RangeAllocator (TLSF) ----
// Sizes are counted in granules. Below 16 granules the first level is 0 and the second level is
// the size itself; above, the first level is the power of two (shifted so 16..31 is level 1) and
// the second level the next four bits, so each class spans 1/16 of its power of two.

RangeAllocator::RangeAllocator(uint64_t base, uint64_t size, uint64_t granule) : base_(base), size_(size), granule_(granule) {
  if (!std::has_single_bit(granule) || base % granule || size % granule || size == 0)
    throw Error("range allocator: base, size and granule must be multiples of a power-of-two granule");
  second_bitmap_.assign(64, 0);
  heads_.assign(64, {});
  for (auto& h : heads_) h.fill(-1);
  int b = new_block(base, size);
  insert_free(b);
}

std::pair<int, int> RangeAllocator::class_of(uint64_t n) {
  if (n < kSecond) return {0, static_cast<int>(n)};
  int msb = 63 - std::countl_zero(n);
  return {msb - 3, static_cast<int>((n >> (msb - 4)) & (kSecond - 1))};
}

int RangeAllocator::new_block(uint64_t addr, uint64_t size) {
  Block blk{addr, size};
  if (!unused_.empty()) {
    int i = unused_.back();
    unused_.pop_back();
    blocks_[i] = blk;
    return i;
  }
  blocks_.push_back(blk);
  return static_cast<int>(blocks_.size() - 1);
}

void RangeAllocator::insert_free(int b) {
  auto [f, s] = class_of(blocks_[b].size / granule_);
  Block& blk = blocks_[b];
  blk.free = true, blk.free_prev = -1, blk.free_next = heads_[f][s];
  if (blk.free_next >= 0) blocks_[blk.free_next].free_prev = b;
  heads_[f][s] = b;
  second_bitmap_[f] |= 1u << s;
  first_bitmap_ |= uint64_t{1} << f;
  free_bytes_ += blk.size;
}

void RangeAllocator::remove_free(int b) {
  Block& blk = blocks_[b];
  auto [f, s] = class_of(blk.size / granule_);
  if (blk.free_prev >= 0) blocks_[blk.free_prev].free_next = blk.free_next;
  else heads_[f][s] = blk.free_next;
  if (blk.free_next >= 0) blocks_[blk.free_next].free_prev = blk.free_prev;
  if (heads_[f][s] < 0 && !(second_bitmap_[f] &= ~(1u << s))) first_bitmap_ &= ~(uint64_t{1} << f);
  blk.free = false, blk.free_prev = blk.free_next = -1;
  free_bytes_ -= blk.size;
}

int RangeAllocator::find_fit(uint64_t size) const {
  uint64_t n = size / granule_;
  if (n >= kSecond) n += (uint64_t{1} << (63 - std::countl_zero(n) - 4)) - 1;  // every block of the class fits
  auto [f, s] = class_of(n);
  if (f >= 64) return -1;
  uint32_t sl = s < 32 ? second_bitmap_[f] & (~0u << s) : 0;
  if (!sl) {
    uint64_t fl = f + 1 < 64 ? first_bitmap_ & (~uint64_t{0} << (f + 1)) : 0;
    if (!fl) return -1;
    f = std::countr_zero(fl);
    sl = second_bitmap_[f];
  }
  return heads_[f][std::countr_zero(sl)];
}

void RangeAllocator::split(int b, uint64_t at) {
  uint64_t end = blocks_[b].addr + blocks_[b].size;
  int nb = new_block(at, end - at);  // may move blocks_: index, never hold references across it
  blocks_[nb].prev = b, blocks_[nb].next = blocks_[b].next;
  if (blocks_[b].next >= 0) blocks_[blocks_[b].next].prev = nb;
  blocks_[b].next = nb;
  blocks_[b].size = at - blocks_[b].addr;
}

std::optional<uint64_t> RangeAllocator::alloc(uint64_t size, uint64_t align) {
  if (align && !std::has_single_bit(align)) throw Error("range allocator: alignment " + std::to_string(align) + " is not a power of two");
  if (size > size_) return std::nullopt;
  uint64_t n = size ? (size + granule_ - 1) / granule_ * granule_ : granule_;
  uint64_t extra = align > granule_ ? align - granule_ : 0;
  int b = find_fit(n + extra);
  if (b < 0) return std::nullopt;
  remove_free(b);
  uint64_t addr = blocks_[b].addr, aligned = align > granule_ ? (addr + align - 1) / align * align : addr;
  if (aligned > addr) {  // the padding in front stays free
    split(b, aligned);
    int front = b;
    b = blocks_[b].next;
    insert_free(front);
  }
  if (blocks_[b].size > n) {
    split(b, aligned + n);
    insert_free(blocks_[b].next);
  }
  used_[aligned] = b;
  return aligned;
}

void RangeAllocator::free(uint64_t addr) {
  auto it = used_.find(addr);
  if (it == used_.end()) throw Error("range allocator: free of address " + std::to_string(addr) + " that is not allocated");
  int b = it->second;
  used_.erase(it);
  auto merge = [&](int left, int right) {  // right joins left; right's entry is recycled
    blocks_[left].size += blocks_[right].size;
    blocks_[left].next = blocks_[right].next;
    if (blocks_[right].next >= 0) blocks_[blocks_[right].next].prev = left;
    unused_.push_back(right);
  };
  if (int n = blocks_[b].next; n >= 0 && blocks_[n].free) remove_free(n), merge(b, n);
  if (int p = blocks_[b].prev; p >= 0 && blocks_[p].free) remove_free(p), merge(p, b), b = p;
  insert_free(b);
}

uint64_t RangeAllocator::largest_free() const {
  if (!first_bitmap_) return 0;
  int f = 63 - std::countl_zero(first_bitmap_);
  int s = 31 - std::countl_zero(second_bitmap_[f]);
  uint64_t best = 0;
  for (int b = heads_[f][s]; b >= 0; b = blocks_[b].free_next) best = std::max(best, blocks_[b].size);
  return best;
}

// ---- KernargRing ----

KernargRing::KernargRing(uint64_t* host, uint64_t va, size_t bytes, Hooks hooks) : host_(host), va_(va), bytes_(bytes), hooks_(std::move(hooks)) {
  stats_.ring_bytes = bytes;
}

Kernargs KernargRing::alloc(size_t bytes) {
  size_t n = (std::max<size_t>(bytes, 8) + 63) / 64 * 64;
  std::unique_lock lock(mu_);
  ++stats_.allocations;
  size_t start = cursor_;
  bool wrapped = false;
  while (n <= bytes_) {
    if (cursor_ + n > bytes_) {
      if (wrapped) break;
      cursor_ = 0, wrapped = true;
    }
    if (wrapped && cursor_ >= start && cursor_ != 0) break;  // a whole lap: live queues hold all of it
    auto it = live_.upper_bound(cursor_);
    if (it != live_.begin()) {
      auto before = std::prev(it);
      if (before->first + before->second->bytes > cursor_) it = before;
    }
    if (it == live_.end() || it->first >= cursor_ + n) {
      auto blk = std::make_shared<Block>(Block{cursor_, n});
      live_[cursor_] = blk;
      Kernargs k{host_ + cursor_ / 8, va_ + cursor_, n, blk};
      cursor_ += n;
      return k;
    }
    Block& b = *it->second;
    if (b.retire_at == UINT64_MAX) {  // its queue is alive: step over it
      ++stats_.skips;
      cursor_ = b.offset + b.bytes;
      continue;
    }
    if (!hooks_.consumed(b.retire_at)) {
      ++stats_.waits;
      hooks_.wait(b.retire_at);  // back-pressure: the device may still read it
    }
    live_.erase(it);
  }
  ++stats_.overflows;
  lock.unlock();
  Kernargs k = hooks_.overflow(n);
  k.overflow = true;
  return k;
}

void KernargRing::release(const Kernargs& k, uint64_t position) {
  if (k.overflow) return;
  std::lock_guard lock(mu_);
  auto it = live_.find(static_cast<size_t>(k.va - va_));
  if (it == live_.end() || it->second != k.block) return;
  if (position == 0 || hooks_.consumed(position)) live_.erase(it);
  else it->second->retire_at = position;
}

KernargStats KernargRing::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace ugpu::hcq
