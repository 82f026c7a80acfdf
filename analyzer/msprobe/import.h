// msprobe dumps read as acc recordings, so that compare and check take the
// dumps users already hold (statistics or tensor task) as they take
// recordings: the dump is written once as an acc recording, which the rest
// of the analyzer reads as any other.
//
// Each dump.json entry becomes a record, in the file's (execution) order:
// "Functional.gelu.0.forward" is record Functional.gelu.0.fwd of op
// Functional.gelu, its backward Functional.gelu.0.bwd; module entries
// (Module.fc1.Linear.forward.0) are records of op Module.fc1.Linear, in
// module fc1; parameter gradients (Module.fc1.Linear.parameters_grad) are
// grad::fc1.weight records, as ACC_GRADS writes them. input_args, then
// input_kwargs (and a module's parameters) are inputs by position; output
// the outputs; a backward entry's input and output are the gradients
// flowing in and out. Statistics are msprobe's; a tensor task's .pt files
// are the tensors' data, from which the NaN and infinity counts and the
// checksum come (statistics.h says what a statistics task gives instead).
// construct.json's parents give module paths, stack.json the stacks.
#pragma once

#include <cstdint>
#include <string>

namespace acc::analyzer::msprobe {

struct Imported {
  std::string dir;   // the acc recording written
  std::string task;  // "tensor" or "statistics"
  uint64_t ranks = 0, steps = 0, records = 0, tensors = 0;
  uint64_t unreadable_files = 0;  // .pt files missing or unreadable: statistics only
  uint64_t skipped_entries = 0;   // entries of kinds acc does not read
};

// Writes the dump at `path` (any level findLeaves() accepts) as an acc
// recording in `out` (replaced). Throws InputError for what is not a dump,
// or a dump.json that cannot be read.
Imported importDump(const std::string& path, const std::string& out);

// The dump at `path` imported into a folder of its own under $TMPDIR
// (once per path, removed when the process exits), after one line on
// stderr that says so: every command opens msprobe dumps through this
// (analyzer/read/recording.h, openRecording).
std::string importedCopy(const std::string& path);

}  // namespace acc::analyzer::msprobe
