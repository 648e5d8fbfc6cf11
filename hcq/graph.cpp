#include "hcq/graph.h"

#include <algorithm>

namespace ugpu::hcq {

Graph::~Graph() = default;

int Graph::device_index(Device* d) const { return static_cast<int>(std::find(devices_.begin(), devices_.end(), d) - devices_.begin()); }

int Graph::add(Node n, After after) {
  if (built_) throw Error("graph: nodes cannot be added after the first replay");
  int id = static_cast<int>(nodes_.size());
  n.after = after ? *after : id ? std::vector<int>{id - 1} : std::vector<int>{};
  for (int a : n.after)
    if (a < 0 || a >= id) throw Error("graph: node " + std::to_string(id) + " cannot run after node " + std::to_string(a) + " (only earlier nodes)");
  for (const Val& v : n.args)
    if (v.var >= 0) user_vars_ = std::max(user_vars_, v.var + 1);
  if (device_index(n.dev) == static_cast<int>(devices_.size())) devices_.push_back(n.dev);
  nodes_.push_back(std::move(n));
  return id;
}

int Graph::exec(Device& dev, std::shared_ptr<const Program> p, std::vector<Val> args, After after) {
  if (!p) throw Error("graph: exec of a null program");
  if (args.size() != static_cast<size_t>(p->buffers + p->vars))
    throw Error("graph: kernel " + p->name + " takes " + std::to_string(p->buffers + p->vars) + " arguments; " + std::to_string(args.size()) +
                " given");
  Node n;
  n.dev = &dev, n.prog = std::move(p), n.args = std::move(args);
  return add(std::move(n), std::move(after));
}

int Graph::copy(Device& dev, Val dst, Val src, uint64_t bytes, After after) {
  Node n;
  n.dev = &dev, n.args = {dst, src}, n.bytes = bytes;
  return add(std::move(n), std::move(after));
}

void Graph::build() {
  if (devices_.empty()) throw Error("graph: nothing to replay (no nodes)");
  // One queue per device ring, nodes in recording order (a topological order: `after` only
  // names earlier nodes), so a ring never waits on something queued behind it.
  for (Node& n : nodes_) {
    bool copy = !n.prog && n.dev->copy_ring_separate();
    auto q = std::find_if(queues_.begin(), queues_.end(), [&](const Queue& q) { return q.dev == n.dev && q.copy == copy; });
    if (q == queues_.end()) q = queues_.insert(queues_.end(), Queue{n.dev, copy, {}, n.dev->new_signal(), nullptr});
    n.queue = static_cast<int>(q - queues_.begin());
    n.index = static_cast<int>(q->nodes.size());
    q->nodes.push_back(static_cast<int>(&n - nodes_.data()));
  }
  for (Node& n : nodes_)
    for (int a : n.after)
      if (nodes_[a].queue != n.queue) nodes_[a].signals = true;
  for (Queue& q : queues_) nodes_[q.nodes.back()].signals = true;

  // Variables: the user's, then the kick value, each queue's progress base, and per device the
  // timeline's address, the value to wait for and the value to signal.
  const int kick = user_vars_, base = kick + 1, dev_base = base + static_cast<int>(queues_.size());
  auto progress = [&](int qi, int index) { return Val::variable(base + qi, static_cast<uint64_t>(index) + 1); };
  kick_ = devices_[0]->new_signal();
  for (size_t qi = 0; qi < queues_.size(); ++qi) {
    Queue& q = queues_[qi];
    int d = dev_base + 3 * device_index(q.dev);
    q.hw = q.copy ? q.dev->copy_queue() : q.dev->compute_queue();
    q.hw->wait(*kick_, Val::variable(kick)).wait_at(Val::variable(d), Val::variable(d + 1));
    for (int ni : q.nodes) {
      const Node& n = nodes_[ni];
      bool barrier = false;
      for (int a : n.after) {
        const Node& dep = nodes_[a];
        if (dep.queue == n.queue) barrier = true;
        else q.hw->wait(*queues_[dep.queue].progress, progress(dep.queue, dep.index));
      }
      if (barrier) q.hw->memory_barrier();
      if (n.prog) q.hw->exec(*n.prog, n.args);
      else q.hw->copy(n.args[0], n.args[1], n.bytes);
      if (n.signals) q.hw->memory_barrier().signal(*q.progress, progress(n.queue, n.index));
    }
    // The device's first queue ends the replay on that device: after its other queues, it signals
    // the timeline.
    if (std::find_if(queues_.begin(), queues_.end(), [&](const Queue& o) { return o.dev == q.dev; }) - queues_.begin() == static_cast<long>(qi)) {
      for (size_t oi = qi + 1; oi < queues_.size(); ++oi)
        if (queues_[oi].dev == q.dev)
          q.hw->wait(*queues_[oi].progress, progress(static_cast<int>(oi), static_cast<int>(queues_[oi].nodes.size()) - 1));
      q.hw->memory_barrier().signal_at(Val::variable(d), Val::variable(d + 2));
    }
    q.hw->bind();
  }
  vars_.assign(static_cast<size_t>(dev_base) + 3 * devices_.size(), 0);
  last_timeline_.assign(devices_.size(), 0);
  built_ = true;
}

void Graph::replay(std::span<const uint64_t> vars) {
  if (vars.size() < static_cast<size_t>(user_vars_))
    throw Error("graph: replay needs " + std::to_string(user_vars_) + " variables; " + std::to_string(vars.size()) + " given");
  if (!built_) build();
  for (Device* d : devices_) d->check_usable();
  const int kick = user_vars_, base = kick + 1, dev_base = base + static_cast<int>(queues_.size());
  // Progress values grow by (nodes + 1) per replay; before any reaches 2^31 (hardware compares 32
  // bits) the signals start over from 0.
  ++epoch_;
  for (const Queue& q : queues_)
    if ((epoch_ + 1) * (q.nodes.size() + 1) >= (uint64_t{1} << 31)) {
      wait();
      for (Queue& r : queues_) r.progress->set(0);
      kick_->set(0);
      epoch_ = 1;
      break;
    }
  std::copy(vars.begin(), vars.begin() + user_vars_, vars_.begin());
  vars_[kick] = epoch_;
  for (size_t qi = 0; qi < queues_.size(); ++qi) vars_[base + qi] = epoch_ * (queues_[qi].nodes.size() + 1);
  for (size_t di = 0; di < devices_.size(); ++di) {
    uint64_t v = devices_[di]->next_timeline();  // may roll the timeline over: read its address after
    vars_[dev_base + 3 * di] = devices_[di]->timeline().address();
    vars_[dev_base + 3 * di + 1] = v - 1;
    vars_[dev_base + 3 * di + 2] = last_timeline_[di] = v;
  }
  for (Queue& q : queues_) q.hw->submit(vars_);
  kick_->set(epoch_);
}

void Graph::wait() {
  for (size_t di = 0; di < devices_.size(); ++di)
    if (last_timeline_[di]) devices_[di]->wait(devices_[di]->timeline(), last_timeline_[di], "graph replay");
}

}  // namespace ugpu::hcq
