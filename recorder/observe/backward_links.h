// Links autograd nodes to the forward op that created them. A forward op
// owns the sequence numbers taken between its start and end on its thread;
// a backward node carries its number and forward thread, so its record can
// be named after the forward op ({op}.{n}.bwd).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <c10/util/SmallVector.h>

#include "recorder/side_heap.h"

namespace acc::recorder {

struct ForwardOp {
  ForwardOp(std::string op_name, uint64_t n, int64_t at_step, const std::string& in_module)
      : op(std::move(op_name)), number(n), step(at_step), module(in_module) {}
  const std::string op;  // aten::linear
  const uint64_t number;  // n of aten::linear.n.fwd
  const int64_t step;
  const std::string& module;  // its module path (recorder/python/module_paths.h: lives as long as the process)
  std::atomic<uint32_t> backward_nodes{0};  // nodes of this op seen in backward so far
};

class BackwardLinks {
 public:
  // Links the sequence numbers [begin, end) of `thread` to `op` and returns
  // those it claimed, in ascending order: numbers an inner (nested) op
  // linked first stay its.
  // (Most ops make one node or none: the list is on the stack.)
  using Claimed = c10::SmallVector<uint64_t, 4>;
  Claimed claim(uint64_t thread, uint64_t begin, uint64_t end, const std::shared_ptr<ForwardOp>& op);
  // Notes that the node with this number carries acc's post hook, which
  // reports the gradients the node produces.
  void markHooked(uint64_t thread, uint64_t seq);

  struct Found {
    std::shared_ptr<ForwardOp> op;  // null when the node is unknown
    bool hooked = false;
  };
  // Removes and returns the link of one node.
  Found take(uint64_t thread, uint64_t seq);
  void clear();
  uint64_t evicted() const;

 private:
  mutable std::mutex mutex_;
  // A node per forward op that made autograd nodes, taken in the forward
  // pass and let go in the backward: from pages of their own (side_heap.h),
  // not malloc, among the step's activations.
  SideHeap heap_;
  std::pmr::map<std::pair<uint64_t, uint64_t>, Found> links_{heap_.resource()};
  uint64_t evicted_ = 0;
};

}  // namespace acc::recorder
