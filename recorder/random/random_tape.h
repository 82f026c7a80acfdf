// ACC_RANDOM: the values random ops draw, saved by the reference run and
// replayed into the run under test, so that both see the same randomness.
// Each device's generator draws other numbers from the same seed (CUDA's
// Philox, the CPU's Mersenne twister): without this, every op after the
// first dropout differs and compare can only say "everything diverges".
//
// Only the innermost random op of a call is taken (random_ops.h): the op
// whose output is pure draw, such as dropout's bernoulli_ on the CPU or the
// fused native_dropout's mask on a device. A draw is keyed by its step, the
// outermost op it ran in (the op the program called), that op's ordinal
// among the outermost ops of the same name that drew in the step, and the
// draw's index inside it. So an extra op elsewhere in the run under test
// shifts no draw, and the CPU's bernoulli_ and a device's fused mask of the
// same dropout meet (both are 0/1 masks: the values convert exactly).
//
// Save: every draw, whatever ACC_LEVEL and the op filters (up to the last
// step ACC_STEPS selects), is written to random.acc beside records.acc,
// device values copied behind the op's kernels as level 2 copies them.
// Replay: the source's random.acc is indexed at start; each draw's values
// overwrite the op's output through an alias with a version counter of its
// own (autograd's saved-tensor check would otherwise reject the write), and
// a fused dropout's output is recomputed from the replayed mask. A draw not
// found, or of another shape or type, is counted and left as drawn.
#pragma once

#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "env/config.h"
#include "format/frame.h"
#include "recorder/random/random_ops.h"
#include "recorder/write/writer.h"

namespace acc::recorder {

class RandomTape {
 public:
  // What the observer keeps of a random op between its start and end.
  struct Op {
    RandomKind kind = RandomKind::None;
    uint64_t draws_before = 0;  // this thread's draws when the op started
    at::Tensor input;           // native_dropout: its input, to recompute its output
    double scale = 1;           // native_dropout: 1 / (1 - p)
  };

  // Null, with `error` set, when the tape cannot be opened (an unreadable
  // source, an unwritable random.acc).
  static std::unique_ptr<RandomTape> open(const env::Config& config, int64_t rank, const std::string& dir,
                                          std::string& error);
  ~RandomTape();

  // The observer's calls, on the op's thread. An op (or autograd node)
  // starting outside every other op: the outermost op of what follows.
  static void outerStarted(const char* op);
  // Its record name's number, when it has one ({op}.{n}.fwd).
  static void outerNumbered(uint64_t number);
  // Every forward op: whether it is a random op to watch (kind None: not).
  Op started(const at::RecordFunction& fn) const;
  void ended(const at::RecordFunction& fn, const Op& op, int64_t step);

  // Drains the save writer; afterwards nothing is saved or replayed.
  void stop();
  nlohmann::json toJson() const;  // manifest "random"
  std::string summary() const;    // the end line

 private:
  struct Entry {
    std::string name, op;
    int dtype = 0;  // format::Dtype
    std::vector<int64_t> shape;
    uint64_t data_offset = 0, data_size = 0;
    bool used = false;
  };
  struct Key;

  RandomTape(const env::Config& config, std::string source);
  void save(const at::Tensor& t, const Key& key, const char* op, size_t output);
  void replay(const at::RecordFunction& fn, const Op& op, const Key& key, const at::Tensor& target);
  bool index(std::string& error);
  at::Tensor load(const Entry& e, c10::DeviceType to);  // in host memory for `to`
  int64_t ordinal(int64_t step, const char* outer);
  void note(const std::string& what);

  const env::Random mode_;
  const std::string source_;  // replay: the random.acc read
  const int64_t last_step_;   // save: the last step ACC_STEPS selects
  std::unique_ptr<Writer> writer_;  // save
  std::unique_ptr<format::FrameReader> reader_;  // replay, under mutex_
  std::unordered_map<std::string, Entry> entries_;  // replay, by Key::text()
  std::atomic<bool> stopped_{false};

  mutable std::mutex mutex_;  // reader_, entries_' used flags, ordinals_, notes_
  int64_t ordinal_step_ = -1;
  std::map<std::string, int64_t> ordinals_;  // outermost op -> draws so far in ordinal_step_
  std::vector<std::string> notes_;           // the first problems, for the manifest
  std::atomic<uint64_t> draws_{0}, saved_{0}, replayed_{0}, unmatched_{0}, mismatched_{0}, opaque_{0},
      errors_{0};
};

}  // namespace acc::recorder
