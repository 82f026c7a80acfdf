// acc-synthetic-recording: writes a long recording in seconds, without
// torch or a training run, for what only long runs show (compare's memory
// and speed at a million records, reports that must stay usable).
//
//   acc-synthetic-recording OUT --records N [--ops-per-step K] [--level 0|1]
//                           [--wrong-op I [--wrong-from-step S]] [--seed S]
//
// Each step runs K/2 forward ops, a chain: op i reads op i-1's output and a
// weight of its own (updated every step), and writes one output; then the
// K/2 backward records of those ops in reverse order. Statistics are
// deterministic functions of (step, op, tensor), and a tensor read again is
// the same content (same checksum), recorded as a reference to the record
// that produced it (format v4 content ids, numbered in order, as the
// recorder's ACC_DEDUP default writes them; level 1). --wrong-op I
// makes forward op I of every step (from step S on with --wrong-from-step:
// a long run whose runs part late) a kernel off by 1e-3: its output and
// everything computed from it after differ from the run without it, as two
// devices' runs would.
#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "format/frame.h"
#include "format/record.h"
#include "format/record_sink.h"

namespace {

namespace fs = std::filesystem;
using acc::format::Role;

struct Options {
  std::string out;
  uint64_t records = 100000, ops_per_step = 200;
  int level = 1;
  int64_t wrong_op = -1;
  uint64_t wrong_from_step = 0;
  uint64_t seed = 1;
};

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

// A tensor's content: its statistics follow from its identity, and
// `error` scales them as a kernel off by that much would.
acc::format::Tensor tensor(Role role, uint32_t position, uint64_t id, double error, int level) {
  acc::format::Tensor t;
  t.role = role;
  t.position = position;
  t.dtype = acc::format::Dtype::Float32;
  t.device = "cpu";
  t.shape = {64, 256};
  t.strides = {256, 1};
  if (level >= 1) {
    const double u = static_cast<double>(mix(id) % 1000000) / 1e6;
    const double scale = 1 + error;
    t.has_stats = true;
    t.stats.min = -1 - u * scale;
    t.stats.max = (1 + u) * scale;
    t.stats.mean = (u - 0.5) * 0.01 * scale;
    t.stats.norm = (50 + 10 * u) * scale;
    t.stats.checksum = error == 0 ? mix(id ^ 0x5eed) : mix(id ^ 0xbad);
  }
  return t;
}

int usage(const char* why) {
  std::fprintf(stderr,
               "acc-synthetic-recording: %s\n"
               "usage: acc-synthetic-recording OUT --records N [--ops-per-step K] [--level 0|1] [--wrong-op I "
               "[--wrong-from-step S]] [--seed S]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool value = i + 1 < argc;
    if (a == "--records" && value) o.records = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--ops-per-step" && value) o.ops_per_step = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--level" && value) o.level = std::atoi(argv[++i]);
    else if (a == "--wrong-op" && value) o.wrong_op = std::atoll(argv[++i]);
    else if (a == "--wrong-from-step" && value) o.wrong_from_step = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--seed" && value) o.seed = std::strtoull(argv[++i], nullptr, 10);
    else if (!a.empty() && a[0] != '-' && o.out.empty()) o.out = a;
    else return usage(("unknown argument " + a).c_str());
  }
  if (o.out.empty() || o.records == 0 || o.ops_per_step < 2 || o.level < 0 || o.level > 1) {
    return usage("OUT, --records >= 1, --ops-per-step >= 2 and --level 0 or 1 are needed");
  }
  const fs::path rank = fs::path(o.out) / "rank0";
  fs::create_directories(rank);
  const std::string file = (rank / "records.acc").string();
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return usage(("cannot write " + file).c_str());
  const std::string header = acc::format::fileHeader();
  acc::format::writeAll(fd, header.data(), header.size());
  acc::format::RecordSink sink(fd, 1, 1, 1 << 20);

  const uint64_t forward = o.ops_per_step / 2;
  const char* ops[] = {"aten::linear", "aten::gelu", "aten::layer_norm", "aten::add", "aten::mul", "aten::softmax"};
  uint64_t index = 0;
  std::string bytes;
  // Format v4 content ids, as the recorder numbers them: 1, 2, ... in the
  // order contents are first recorded. A reference repeats the tensor's
  // metadata and flags; its values are those of the content it names.
  uint64_t contents = 0, defined = 0, referenced = 0;
  auto define = [&](acc::format::Tensor t) {
    if (o.level < 1) return t;
    t.content = ++contents;
    ++defined;
    return t;
  };
  auto refer = [&](acc::format::Tensor t, uint64_t content) {
    if (o.level < 1 || content == 0) return t;
    t.content = content;
    t.content_ref = true;
    ++referenced;
    return t;
  };
  // Content ids: (step, op, slot) -> one 64-bit id; the seed tells runs apart
  // only where --wrong-op makes them differ.
  auto id = [&](uint64_t step, uint64_t op, uint64_t slot) { return mix((step << 40) ^ (op << 8) ^ slot ^ o.seed); };
  for (uint64_t step = 0; index < o.records; ++step) {
    // Error each forward op's output carries: from the wrong op on, in every step.
    std::vector<double> carried(forward, 0);
    uint64_t output = 0;  // content id of the last forward output
    for (uint64_t i = 0; i < forward && index < o.records; ++i) {
      acc::format::OpRecord r;
      r.index = index++;
      r.op = ops[i % 6];
      r.name = r.op + "." + std::to_string(i) + ".fwd";
      r.op_number = i;
      r.step = static_cast<int64_t>(step);
      r.has_module = true;
      r.module = "layers." + std::to_string(i / 6);
      const double in = i == 0 ? 0 : carried[i - 1];
      carried[i] = static_cast<int64_t>(i) == o.wrong_op && step >= o.wrong_from_step ? 1e-3 : in;
      // Input 0 is op i-1's output; the batch (op 0's input) and each
      // step's updated weight are new contents.
      if (i == 0) {
        r.tensors.push_back(define(tensor(Role::Input, 0, id(step, 0, 9), in, o.level)));
      } else {
        r.tensors.push_back(refer(tensor(Role::Input, 0, id(step, i - 1, 1), in, o.level), output));
      }
      r.tensors.push_back(define(tensor(Role::Input, 1, id(step, i, 2), 0, o.level)));  // the op's weight
      r.tensors.push_back(define(tensor(Role::Output, 0, id(step, i, 1), carried[i], o.level)));
      output = r.tensors.back().content;
      bytes.clear();
      acc::format::encode(r, bytes);
      sink.add(bytes);
      if (sink.pending() >= (1 << 20)) sink.flush();
    }
    uint64_t grad = 0;  // content id of the last gradient out
    for (uint64_t k = forward; k-- > 0 && index < o.records;) {
      acc::format::OpRecord r;
      r.index = index++;
      r.op = ops[k % 6];
      r.pass = acc::format::Pass::Backward;
      r.name = r.op + "." + std::to_string(k) + ".bwd";
      r.forward_name = r.op + "." + std::to_string(k) + ".fwd";
      r.grad_fn = "SyntheticBackward0";
      r.op_number = k;
      r.step = static_cast<int64_t>(step);
      r.has_module = true;
      r.module = "layers." + std::to_string(k / 6);
      const double e = carried[forward - 1];  // the loss carries the last output's error back
      // The gradient in is the previous backward record's gradient out
      // (the loss's, a new content, for the first).
      acc::format::Tensor in = tensor(Role::GradIn, 0, id(step, k + 1, 3), e, o.level);
      r.tensors.push_back(grad ? refer(in, grad) : define(in));
      r.tensors.push_back(define(tensor(Role::GradOut, 0, id(step, k, 3), e, o.level)));
      grad = r.tensors.back().content;
      bytes.clear();
      acc::format::encode(r, bytes);
      sink.add(bytes);
      if (sink.pending() >= (1 << 20)) sink.flush();
    }
  }
  sink.flush();
  ::close(fd);
  if (!sink.error().empty()) return usage(sink.error().c_str());
  nlohmann::json manifest = {{"format", "acc-recording"},
                             {"format_version", acc::format::kFormatVersion},
                             {"status", "complete"},
                             {"rank", 0},
                             {"torch_version", "synthetic"},
                             {"devices", {"cpu"}},
                             {"config", {{"level", o.level}}},
                             {"counts", {{"recorded", index}, {"written", index}, {"dropped", 0}, {"lost_io", 0}}},
                             {"contents", {{"defined", defined}, {"referenced", referenced}}}};
  std::ofstream(rank / "manifest.json") << manifest.dump(2) << "\n";
  std::printf("wrote %llu records to %s\n", static_cast<unsigned long long>(index), file.c_str());
  return 0;
}
