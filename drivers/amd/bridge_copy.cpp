// Copies through the USB bridge's SRAM (AmdInterface::BridgeMemory), where the host can map neither
// VRAM nor host memory for the GPU. Copy-in streams chunks into two SRAM windows in turn: each chunk's
// wire image ends in a sentinel word, and one SDMA submission holds, per chunk, a poll until the
// sentinel is there, the copy to the destination, and a write of the count of drained chunks to the
// bridge's fence, which the host reads before it refills a window — so the USB link carries the next
// chunk while the GPU drains this one, and never waits for a round trip per chunk. Copy-out arms the
// bridge's SRAM read, has SDMA copy a window's worth into the SRAM and write the release word, and
// reads the window back. The scheme is tinygrad's (ops_amd.py _copyin/_copyout), with one change: the
// host knows everything the SRAM holds (it wrote or read it all), so a sentinel that stale bytes at
// its place could match is never chosen.
#include <cstring>
#include <thread>
#include <utility>

#include "drivers/amd/internal.h"

namespace ugpu::amd {

namespace {
constexpr uint32_t kSector = 512;
uint32_t load32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
}  // namespace

void AmdDevice::copy_in_at(uint64_t va, std::span<const uint8_t> src) {
  if (AmdInterface::BridgeMemory* b = way_in_->bridge_memory()) return bridge_copy_in(*b, va, src, true);
  Device::copy_in_at(va, src);
}

void AmdDevice::upload(const hcq::Buffer& dst, std::span<const uint8_t> bytes) {
  if (bytes.size() > dst.size) throw Error(name() + ": upload of " + std::to_string(bytes.size()) + " bytes into " + std::to_string(dst.size));
  if (dst.host) return (void)std::memcpy(dst.host, bytes.data(), bytes.size());
  AmdInterface::BridgeMemory* b = way_in_->bridge_memory();
  if (!b) return copy_in(dst, 0, bytes);
  bridge_copy_in(*b, dst.va, bytes, false);
}

void AmdDevice::clear(const hcq::Buffer& dst) {
  AmdInterface::BridgeMemory* b = way_in_->bridge_memory();
  if (!b) return Device::clear(dst);
  static const std::vector<uint8_t> zeros(4 << 20);
  for (size_t done = 0; done < dst.size; done += zeros.size())
    bridge_copy_in(*b, dst.va + done, std::span(zeros).first(std::min(zeros.size(), dst.size - done)), false);
}

void AmdDevice::copy_out_at(std::span<uint8_t> dst, uint64_t va) {
  if (AmdInterface::BridgeMemory* b = way_in_->bridge_memory()) return bridge_copy_out(*b, dst, va);
  Device::copy_out_at(dst, va);
}

void AmdDevice::bridge_copy_in(AmdInterface::BridgeMemory& b, uint64_t dst, std::span<const uint8_t> src, bool ordered) {
  if (src.empty()) return;
  std::lock_guard lock(bridge_mu_);
  const size_t window = b.window_bytes, payload = window - 4;
  bridge_sync(b);
  // The wire image of chunk k in its window (in `sram`): payload, zeros, the sentinel in the last dword.
  struct Chunk {
    uint32_t seq, sentinel;
    size_t at, len, wire;
    uint8_t* image(std::vector<uint8_t>& sram, size_t window) const { return sram.data() + (seq & 1) * window; }
  };
  auto lay = [&](const Chunk& k, std::vector<uint8_t>& sram) {
    uint8_t* w = k.image(sram, window);
    std::memcpy(w, src.data() + k.at, k.len);
    std::memset(w + k.len, 0, k.wire - 4 - k.len);
    std::memcpy(w + k.wire - 4, &k.sentinel, 4);
  };
  const size_t per_submit = bridge_batch();
  const size_t chunks = (src.size() + payload - 1) / payload;
  const uint32_t base = bridge_chunks_;
  if (!bridge_done_) bridge_done_ = new_signal(0);
  try {
    for (size_t first = 0; first < chunks; first += per_submit) {
      // The plan, on a scratch copy of the SRAM: each chunk's sentinel differs from what its place
      // holds before the chunk lands, so the GPU never copies a window early.
      std::vector<Chunk> plan;
      std::vector<uint8_t> sram = sram_;
      for (size_t c = first; c < std::min(chunks, first + per_submit); ++c) {
        Chunk k;
        k.seq = base + uint32_t(c);
        k.at = c * payload, k.len = std::min(payload, src.size() - k.at);
        k.wire = (k.len + 4 + kSector - 1) / kSector * kSector;
        k.sentinel = 0x51000000u | (k.seq & 0xFFFFFF);
        if (load32(k.image(sram, window) + k.wire - 4) == k.sentinel) k.sentinel ^= 0x00800000u;
        lay(k, sram);
        plan.push_back(k);
      }
      hcq::Signal& done = ordered ? timeline() : *bridge_done_;
      uint64_t v = ordered ? next_timeline() : ++bridge_done_value_;
      // What the copy comes after has finished before the bridge is held: nothing it waits for can be
      // queued behind it.
      if (ordered) wait(done, v - 1, "the work before a copy in");
      auto q = make_sdma_queue(*this);
      for (const Chunk& k : plan) {
        uint64_t win = b.window_va[k.seq & 1];
        q->poll_equal(win + k.wire - 4, k.sentinel);
        if (ordered) q->copy(dst + k.at, win, k.len);
        else q->copy_untimed(dst + k.at, win, k.len);
        q->write32(b.fence_va, k.seq + 1);
      }
      q->signal(done, v);
      q->submit();           // before the bridge is held: a submit takes the ring's lock, then the bridge's
      auto held = b.hold();  // while writes are queued nothing else may use the bulk OUT endpoint
      // Stream: a window is refilled once its last write has gone out and the GPU has drained the
      // chunk it carried (fence >= seq - 1); meanwhile the other window's write keeps the link busy.
      uint64_t writes[2] = {0, 0};
      for (const Chunk& k : plan) {
        const int w = int(k.seq & 1);
        if (writes[w]) b.wait(std::exchange(writes[w], 0));
        if (k.seq >= 2) {
          auto start = std::chrono::steady_clock::now(), checked = start;
          while (int32_t(b.fence() - (k.seq - 1)) < 0) {
            auto now = std::chrono::steady_clock::now();
            if (now - checked > std::chrono::milliseconds(10)) check_exceptions(), check_usable(), checked = now;
            if (now - start > default_timeout()) {
              fail("copy in stalled");
              throw hcq::Timeout(name() + ": copy in through the USB bridge: the GPU drained no chunk for " +
                                 std::to_string(default_timeout().count()) + " ms (fence " + std::to_string(b.fence()) + ", waiting for " +
                                 std::to_string(k.seq - 1) + "); the device is marked failed");
            }
            std::this_thread::sleep_for(std::chrono::microseconds(20));
          }
        }
        lay(k, sram_);
        writes[w] = b.write_window(w, std::span<const uint8_t>(k.image(sram_, window), k.wire));
      }
      for (uint64_t& w : writes)
        if (w) b.wait(std::exchange(w, 0));
      held.reset();
      wait(done, v, "copy in through the USB bridge");
      bridge_chunks_ = base + uint32_t(first + plan.size());
    }
  } catch (const Error& e) {
    sram_.clear();  // what the SRAM and the fence hold is not known now: bridge_sync learns it again
    bridge_failed(e);
  }
}

void AmdDevice::bridge_copy_out(AmdInterface::BridgeMemory& b, std::span<uint8_t> dst, uint64_t src) {
  if (dst.empty()) return;
  std::lock_guard lock(bridge_mu_);
  bridge_sync(b);
  const size_t pieces = (dst.size() + b.out_bytes - 1) / b.out_bytes;
  const size_t per_submit = bridge_batch();
  try {
    for (size_t first = 0; first < pieces; first += per_submit) {
      const size_t count = std::min(per_submit, pieces - first);
      auto piece = [&](size_t i) { return std::pair(i * b.out_bytes, std::min(b.out_bytes, dst.size() - i * b.out_bytes)); };
      uint64_t v = next_timeline();
      wait(timeline(), v - 1, "the work before a copy out");
      // One submission: each piece waits for its go token, which the host sets once it has armed the
      // read, then fills the window and releases it.
      auto q = make_sdma_queue(*this);
      const uint8_t go0 = bridge_go_;
      for (size_t i = first; i < first + count; ++i) {
        auto [at, n] = piece(i);
        q->poll_equal_masked(b.go_va, uint8_t(go0 + 1 + (i - first)), 0xFF);
        q->copy(b.out_va, src + at, (n + 3) / 4 * 4);
        q->write32(b.release_va, 0);
      }
      q->signal(timeline(), v);
      q->submit();           // before the bridge is held (see copy in)
      auto held = b.hold();  // an armed read's bulk IN: no streamed read may come between
      std::vector<uint8_t> got(b.out_bytes);
      for (size_t i = first; i < first + count; ++i) {
        auto [at, n] = piece(i);
        const size_t whole = (n + 3) / 4 * 4;
        b.arm_out(whole, bridge_go_ = uint8_t(bridge_go_ + 1));
        b.read_out(std::span(got).first(whole), default_timeout());
        std::memcpy(dst.data() + at, got.data(), n);
        std::memcpy(sram_.data(), got.data(), std::min(whole, sram_.size()));  // the SRAM now holds what was read
      }
      held.reset();
      wait(timeline(), v, "copy out through the USB bridge");
    }
  } catch (const Error& e) {
    sram_.clear();
    bridge_failed(e);
  }
}

size_t AmdDevice::bridge_batch() {
  // A submission takes at most half the SDMA ring; a chunk or piece takes under 24 dwords of it.
  return std::max<size_t>(1, std::min<size_t>(4096, ring(true).dwords / 2 / 24));
}

void AmdDevice::bridge_failed(const Error& e) {
  // The SDMA program may be left polling for a chunk or a token that never comes: the device is failed.
  if (!failed()) fail(std::string("a copy through the USB bridge failed midway: ") + e.what());
  if (dynamic_cast<const hcq::DeviceError*>(&e) || dynamic_cast<const hcq::Timeout*>(&e)) throw;
  throw hcq::DeviceError(name() + ": " + error());
}

void AmdDevice::bridge_sync(AmdInterface::BridgeMemory& b) {
  if (!sram_.empty()) return;
  // At the first copy, and after one failed midway: zeroed windows, and the count of chunks the GPU drained.
  sram_.assign(2 * b.window_bytes, 0);
  auto held = b.hold();
  for (int w : {0, 1}) b.wait(b.write_window(w, std::span<const uint8_t>(sram_).first(b.window_bytes)));
  bridge_chunks_ = b.fence();
  bridge_go_ = b.go();
}

}  // namespace ugpu::amd
