// acc recordings written in msprobe's dump layout (dump_dir.h), so that
// msprobe's own compare and visualisation read them:
//   OUT/step{S}/rank{R}/dump.json, stack.json, construct.json
//   and, for records with data (level 2), dump_tensor_data/*.pt
//
// Records become API entries named "{Prefix}.{op}.{n}.{forward|backward}":
// aten::gelu is Aten.gelu, c10d:: ops are Distributed, other namespaces
// keep theirs (mylib::op is Mylib.op); n counts the op's forward records of
// the step, as msprobe counts an API's calls, and a backward record takes
// its forward's n. The task is "tensor" when the recording holds data,
// else "statistics". What msprobe has no place for is left out and
// counted: a forward op's second and later autograd nodes (msprobe hooks
// one per API), gradient records, and records of level 0 keep their
// metadata only (dtype and shape).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace acc::analyzer::msprobe {

struct ExportOptions {
  std::string dir, out;
  std::vector<std::string> names;  // lower case substrings; empty: every record
  std::optional<int64_t> rank;
};

struct Exported {
  std::string task;
  uint64_t entries = 0, tensors = 0, files = 0;
  uint64_t records_matched = 0;
  uint64_t left_out = 0;  // later autograd nodes and gradient records
  bool damaged = false;   // a records file was damaged (reported on stderr)
};

// Throws InputError (unreadable recording, no such rank) and
// std::runtime_error (write errors).
Exported exportDump(const ExportOptions& options);

}  // namespace acc::analyzer::msprobe
