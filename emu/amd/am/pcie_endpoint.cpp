// The emulated AM card as the endpoint behind the emulated USB bridge's PCIe topology.
#include "emu/amd/am/card.h"
#include "emu/usb/pcie_topology.h"

namespace ugpu::emu::amd {
namespace {
class CardEndpoint final : public usb::PcieEndpoint {
 public:
  explicit CardEndpoint(std::shared_ptr<AmCard> c) : card_(std::move(c)), c_(static_cast<Card&>(*card_)) {}
  uint16_t vendor_id() const override { return 0x1002; }
  uint16_t device_id() const override { return card_->config().device_id; }
  std::array<Bar, 6> bars() const override {
    return {Bar{c_.bar0_bytes(), true}, {}, Bar{Card::kDoorbellBarBytes, true}, {}, {}, Bar{Card::kRegBarBytes, false}};
  }
  std::vector<uint64_t> bar0_sizes() const override {
    std::vector<uint64_t> out;
    if (!card_->config().resizable_bar) return out;
    for (uint64_t s = 256 << 20; s <= card_->config().vram_bytes; s *= 2) out.push_back(s);
    return out;
  }
  void bar0_resized(uint64_t bytes) override { c_.resize_bar0(bytes); }
  bool bar_read(int bar, uint64_t offset, std::span<uint8_t> out) override { return card_->bar_read(bar, offset, out); }
  bool bar_write(int bar, uint64_t offset, std::span<const uint8_t> data) override { return card_->bar_write(bar, offset, data); }

 private:
  std::shared_ptr<AmCard> card_;
  Card& c_;
};
}  // namespace

std::unique_ptr<usb::PcieEndpoint> pcie_endpoint(std::shared_ptr<AmCard> card) { return std::make_unique<CardEndpoint>(std::move(card)); }

}  // namespace ugpu::emu::amd
