// Graph (docs/design.md §4): a recorded schedule of kernels and copies over one or more devices and
// their queues, replayed with new inputs. The first replay records one bound queue per device ring;
// every replay after that patches the slots whose values changed (inputs, signal values), submits
// each queue as one indirect command and releases a single kick signal that all queues wait on, so
// the host's cost of a replay does not depend on how many kernels the graph runs.
//
// Ordering: a node runs after the nodes in its `after` list (by default the node recorded just
// before it). Dependencies inside one queue become memory barriers, across queues and devices waits
// on per-queue progress signals. Every replay also waits for the work submitted to each device's
// timeline before it, and signals the timeline when it ends, so synchronize() covers it.
#pragma once
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "hcq/device.h"

namespace ugpu::hcq {

class Graph {
 public:
  using After = std::optional<std::vector<int>>;
  Graph() = default;
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Nodes; the arguments may use Val::variable(i) for values given to each replay. Returns the
  // node's index for `after` lists. The devices must outlive the graph.
  int exec(Device& dev, std::shared_ptr<const Program> p, std::vector<Val> args, After after = std::nullopt);
  int copy(Device& dev, Val dst, Val src, uint64_t bytes, After after = std::nullopt);

  void replay(std::span<const uint64_t> vars = {});  // starts a run; returns without waiting for it
  void wait();                                       // the last run has finished on every device
  size_t nodes() const { return nodes_.size(); }
  size_t queues() const { return queues_.size(); }
  int variables() const { return user_vars_; }           // replay() takes at least this many values
  void set_replays_for_test(uint64_t n) { epoch_ = n; }  // as if n replays had run (progress near 2^31)

 private:
  struct Node {
    Device* dev = nullptr;
    std::shared_ptr<const Program> prog;  // null: a copy
    std::vector<Val> args;                // exec: arguments; copy: dst, src
    uint64_t bytes = 0;
    std::vector<int> after;
    int queue = -1, index = -1;  // its queue, and its position there
    bool signals = false;        // a later node of another queue waits for it, or it ends its queue
  };
  struct Queue {
    Device* dev;
    bool copy;
    std::vector<int> nodes;
    SignalRef progress;
    std::unique_ptr<HWQueue> hw;
  };
  int add(Node n, After after);
  void build();
  int device_index(Device* d) const;

  std::vector<Node> nodes_;
  std::vector<Queue> queues_;
  std::vector<Device*> devices_;
  std::vector<uint64_t> last_timeline_;  // per device: the value the last replay signals
  SignalRef kick_;
  uint64_t epoch_ = 0;
  int user_vars_ = 0;
  std::vector<uint64_t> vars_;
  bool built_ = false;
};

}  // namespace ugpu::hcq
