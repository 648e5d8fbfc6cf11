// The HCQ conformance suite: the same checks for every device the build knows (the CPU for now).
#include <doctest/doctest.h>

#include <cstring>
#include <functional>
#include <random>
#include <thread>

#include "drivers/cpu/cpu_device.h"
#include "ir/text.h"

using namespace ugpu;
using hcq::Val;

namespace {

struct TestDevice {
  std::string name;
  std::function<std::unique_ptr<cpu::CpuDevice>()> open;
};
const std::vector<TestDevice>& devices() {
  static const std::vector<TestDevice> d = {{"cpu", [] { return std::make_unique<cpu::CpuDevice>(2); }}};
  return d;
}

const char* kAddOne = R"(out = DEFINE_GLOBAL:int32* {0}
in = DEFINE_GLOBAL:int32* {1}
i = RANGE(1000) {0, GLOBAL}
SINK(END(STORE(INDEX:int32*(out, i), LOAD:int32(INDEX:int32*(in, i)) + 1), i))
)";

template <class F>
void each_device(F f) {
  for (const TestDevice& d : devices()) {
    CAPTURE(d.name);
    auto dev = d.open();
    f(*dev);
  }
}

}  // namespace

TEST_CASE("hcq: a wait issued before its signal holds the queue until the host sets it") {
  each_device([](hcq::Device& dev) {
    auto a = dev.new_signal(), b = dev.new_signal();
    auto q = dev.compute_queue();
    q->wait(*a, 1).signal(*b, 7);
    q->submit();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(b->value() == 0);
    a->set(1);
    dev.wait(*b, 7, "test signal");
    CHECK(b->value() == 7);
  });
}

TEST_CASE("hcq: a wait that is never satisfied ends in Timeout and a device error state") {
  each_device([](hcq::Device& dev) {
    auto s = dev.new_signal();
    CHECK_THROWS_WITH_AS(dev.wait(*s, 1, "a signal nobody sets", std::chrono::milliseconds(50)), doctest::Contains("did not reach 1 within 50 ms"), hcq::Timeout);
    CHECK(dev.failed());
    auto q = dev.compute_queue();
    q->signal(*s, 1);
    CHECK_THROWS_AS(q->submit(), hcq::DeviceError);
  });
  // Another device is unaffected.
  auto other = devices()[0].open();
  auto s = other->new_signal();
  auto q = other->compute_queue();
  q->signal(*s, 3);
  q->submit();
  other->wait(*s, 3, "other device");
}

TEST_CASE("hcq: patch slots take each submit's values and only changed ones are rewritten") {
  each_device([](hcq::Device& dev) {
    auto s = dev.new_signal(), t = dev.new_signal();
    auto q = dev.compute_queue();
    q->signal(*s, Val::variable(0)).signal(*t, Val::variable(1, 100));
    uint64_t v1[] = {5, 1};
    q->submit(v1);
    dev.wait(*t, 101, "t");
    CHECK(s->value() == 5);
    CHECK(q->patch_writes() == 2);
    uint64_t v2[] = {5, 2};
    q->submit(v2);
    dev.wait(*t, 102, "t");
    CHECK(q->patch_writes() == 3);
    CHECK_THROWS_WITH(q->submit(), doctest::Contains("uses variable"));
  });
}

TEST_CASE("hcq: 2 x 100 resubmits of a bound queue running a kernel, with patched arguments") {
  each_device([](cpu::CpuDevice& dev) {
    auto prog = dev.load(ir::parse(kAddOne), "add_one");
    hcq::Buffer a = dev.alloc(4000), b = dev.alloc(4000);
    auto q = dev.compute_queue();
    Val args[] = {Val::variable(1), Val::variable(2)};
    q->wait(dev.timeline(), Val::variable(0)).exec(*prog, args).memory_barrier().signal(dev.timeline(), Val::variable(0, 1));
    q->bind();
    CHECK(q->bound());
    for (int round = 0; round < 2; ++round) {
      // ping-pong between a and b: after 100 launches every element has grown by 100
      for (int i = 0; i < 1000; ++i) static_cast<int32_t*>(a.host)[i] = i * round;
      for (int n = 0; n < 100; ++n) {
        uint64_t v = dev.next_timeline();
        bool even = n % 2 == 0;
        uint64_t vars[] = {v - 1, even ? b.va : a.va, even ? a.va : b.va};
        q->submit(vars);
      }
      dev.synchronize();
      int bad = 0;
      for (int i = 0; i < 1000; ++i) bad += static_cast<int32_t*>(a.host)[i] != i * round + 100;
      CHECK(bad == 0);
    }
  });
}

TEST_CASE("hcq: copies in and out of any size through small staging buffers; overlaps refused") {
  each_device([](cpu::CpuDevice& dev) {
    std::mt19937 rng(3);
    for (size_t n : {size_t{1}, size_t{3}, size_t{4097}, size_t{(5 << 20) + 7}}) {
      CAPTURE(n);
      std::vector<uint8_t> in(n), out(n);
      for (auto& x : in) x = static_cast<uint8_t>(rng());
      hcq::Buffer b = dev.alloc(n + 5);
      dev.copy_in(b, 5, in);
      dev.copy_out(out, b, 5);
      CHECK(in == out);
    }
    hcq::Buffer b = dev.alloc(64);
    std::vector<uint8_t> big(65);
    CHECK_THROWS_WITH(dev.copy_in(b, 0, big), doctest::Contains("outside the 64-byte buffer"));
    auto q = dev.compute_queue();
    CHECK_THROWS_WITH(q->copy(b.va, b.va + 8, 16), doctest::Contains("overlapping"));
  });
}

TEST_CASE("hcq: timeline rollover near 2^31 keeps ordering and values") {
  each_device([](cpu::CpuDevice& dev) {
    auto prog = dev.load(ir::parse(kAddOne), "add_one");
    hcq::Buffer a = dev.alloc(4000), b = dev.alloc(4000);
    dev.set_rollover_for_test((uint64_t{1} << 31) - 5, uint64_t{1} << 31);
    for (int n = 0; n < 12; ++n) {
      uint64_t v = dev.next_timeline();
      auto q = dev.compute_queue();
      Val args[] = {n % 2 ? a.va : b.va, n % 2 ? b.va : a.va};
      q->wait(dev.timeline(), v - 1).exec(*prog, args).memory_barrier().signal(dev.timeline(), v);
      q->submit();
    }
    dev.synchronize();
    CHECK(dev.last_timeline() < 100);  // rolled over
    int bad = 0;
    for (int i = 0; i < 1000; ++i) bad += static_cast<int32_t*>(a.host)[i] != 12;
    CHECK(bad == 0);
  });
}

TEST_CASE("hcq: the ring is never overrun: submits wait for space") {
  cpu::CpuDevice dev(2, 64);
  auto s = dev.new_signal();
  for (int n = 1; n <= 300; ++n) {
    auto q = dev.compute_queue();
    q->signal(*s, n).signal(*s, n).signal(*s, n);
    q->submit();
  }
  dev.wait(*s, 300, "last signal");
  CHECK(dev.ring_waits() > 0);
  auto big = dev.compute_queue();
  for (int i = 0; i < 10; ++i) big->signal(*s, 1);
  CHECK_THROWS_WITH(big->submit(), doctest::Contains("bind() it"));
  big->bind();
  big->submit();  // one indirect command
  dev.synchronize();
}
