// Finding a record by name (`show`, `repro`): op numbers restart every
// step, so a name picks the first record in execution order unless a step
// is given; a name not found comes with the nearest names as suggestions.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "format/record.h"

namespace acc::analyzer {

class RecordSearch {
 public:
  RecordSearch(std::string name, std::optional<int64_t> step);

  // Offers a record (metadata suffices): true when it is the one wanted and
  // better than any found so far (the earliest in the wanted step).
  bool wants(const format::OpRecord& r);
  // Remembers `r` as found; call after wants(r) returned true.
  void take(format::OpRecord r) { found_ = std::move(r); }
  // Offers a record and takes it when wanted.
  void visit(format::OpRecord&& r);

  const std::optional<format::OpRecord>& found() const { return found_; }
  const std::set<int64_t>& steps() const { return steps_; }  // steps in which NAME occurs

  // The message for a name not found in `dir` (with "in step S", "in rank
  // R"), then the steps it occurs in or the nearest names: lines for stderr.
  std::string notFound(const std::string& command, const std::string& dir, std::optional<int64_t> rank) const;

 private:
  void suggest(const format::OpRecord& r);
  std::vector<std::string> suggestions() const;

  std::string name_, prefix_;
  std::optional<int64_t> step_;
  std::optional<format::OpRecord> found_;
  std::set<int64_t> steps_;
  std::set<std::string> same_op_, similar_;
};

// "aten::linear" of "aten::linear.2.fwd": the name up to ".<digit>".
std::string opPrefix(const std::string& name);

}  // namespace acc::analyzer
