// What acc-analyzer and its acc-replay workers say to each other over a
// pipe: length-prefixed messages holding op records with their tensor data
// (format/record.h's encoding). Torch-free: the analyzer side links it
// without libtorch.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "format/record.h"

namespace acc::replay {

// One op to run again. A forward record alone, or a backward record after
// the forward record it belongs to (its inputs are what autograd saved).
// Tensors carry their data (level 2).
struct Request {
  std::vector<format::OpRecord> records;
  // Nonzero (10: TF32, 7: bfloat16): also run the op in float64 on float32
  // factors rounded to this many mantissa bits, the precision the recorded
  // run's settings allowed the op (analyzer/read/numeric_settings.h).
  uint8_t reduced_mantissa = 0;
};

enum class Status : uint8_t {
  Replayed = 0,       // the op ran again: see the two records below
  NotReplayable = 1,  // by nature: random, collective, no schema, ... (reason)
  Failed = 2,         // the op threw on the CPU (reason: its message)
};
const char* statusName(Status s);

// The tensors the op produced when run again on the CPU, with data, in the
// roles and positions of the recorded ones (outputs; grad_out for backward):
// once in the recorded dtypes, once with floating inputs promoted to float64.
struct Outcome {
  Status status = Status::Failed;
  std::string reason;
  bool has_same_dtype = false, has_float64 = false, has_reduced = false;
  format::OpRecord same_dtype, float64;
  format::OpRecord reduced;  // float64 on rounded factors (Request::reduced_mantissa)
  std::string float64_error;  // why there is no float64 run, when not
};

std::string encodeRequest(const Request& r);
Request decodeRequest(std::string_view bytes);
std::string encodeOutcome(const Outcome& o);
Outcome decodeOutcome(std::string_view bytes);

// u64 length + bytes. readMessage returns false at a clean end of input and
// throws std::runtime_error on a truncated message or an I/O error.
bool readMessage(int fd, std::string& out);
void writeMessage(int fd, std::string_view bytes);

}  // namespace acc::replay
