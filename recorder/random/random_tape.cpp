#include "recorder/random/random_tape.h"

#include <algorithm>
#include <sstream>

#include "format/record.h"
#include "recorder/observe/captured_op.h"
#include "recorder/capture/device/device_capture.h"
#include "recorder/dtypes.h"
#include "recorder/capture/tensor_capture.h"
#include "recorder/torch_compat.h"

namespace acc::recorder {
namespace {

constexpr size_t kMaxNotes = 8;

// The outermost op running on this thread and the draws made inside it.
struct ThreadDraws {
  const char* outer = nullptr;
  bool numbered = false;
  uint64_t number = 0;
  int64_t ordinal = -1;  // assigned at its first draw
  uint32_t draws = 0;    // draws inside it so far
  uint64_t taken = 0;    // random ops taken on this thread: tells the innermost
};
thread_local ThreadDraws t_draws;

std::string shapeText(c10::IntArrayRef shape) {
  std::ostringstream s;
  s << '[';
  for (size_t i = 0; i < shape.size(); ++i) s << (i ? ", " : "") << shape[i];
  s << ']';
  return s.str();
}

}  // namespace

struct RandomTape::Key {
  int64_t step = 0;
  std::string outer;  // the outermost op
  int64_t ordinal = 0;
  uint32_t draw = 0;
  std::string outer_record;  // its record name, for people

  std::string text() const {
    return std::to_string(step) + '\n' + outer + '\n' + std::to_string(ordinal) + '\n' + std::to_string(draw);
  }
  std::string name(const char* op) const { return outer_record + "/" + op + "." + std::to_string(draw); }
};

RandomTape::RandomTape(const env::Config& config, std::string source)
    : mode_(config.random), source_(std::move(source)), last_step_(config.steps.last()) {}

RandomTape::~RandomTape() { stop(); }

std::unique_ptr<RandomTape> RandomTape::open(const env::Config& config, int64_t rank, const std::string& dir,
                                             std::string& error) {
  if (config.random == env::Random::Save) {
    std::unique_ptr<RandomTape> tape(new RandomTape(config, ""));
    try {
      tape->writer_ = std::make_unique<Writer>(dir + "/" + env::kRandomFile, config);
    } catch (const std::exception& e) {
      error = std::string("cannot write ") + e.what();
      return nullptr;
    }
    return tape;
  }
  const std::string file = env::rankFile(config.random_source, rank, env::kRandomFile);
  if (file.empty()) {
    error = config.random_source + " holds no " + env::kRandomFile + " for rank " + std::to_string(rank) +
            " (record the reference with ACC_RANDOM=save)";
    return nullptr;
  }
  std::unique_ptr<RandomTape> tape(new RandomTape(config, file));
  if (!tape->index(error)) return nullptr;
  return tape;
}

bool RandomTape::index(std::string& error) {
  try {
    reader_ = std::make_unique<format::FrameReader>(source_);
    std::string payload;
    while (reader_->next(payload)) {
      format::RecordCursor cursor(payload);
      format::RecordKind kind;
      std::string_view body;
      while (cursor.next(kind, body)) {
        if (kind != format::RecordKind::Op) continue;
        format::OpRecord r = format::decodeOp(body, false, cursor.dataOffset());
        if (r.tensors.size() != 1 || !r.tensors[0].has_data) continue;
        const format::Tensor& t = r.tensors[0];
        Key key{r.step, r.forward_name, static_cast<int64_t>(r.op_number), static_cast<uint32_t>(r.sequence_nr), ""};
        Entry e;
        e.name = r.name;
        e.op = r.op;
        e.dtype = static_cast<int>(t.dtype);
        e.shape = t.shape;
        e.data_offset = t.data_offset;
        e.data_size = t.data_size;
        entries_.emplace(key.text(), std::move(e));
      }
    }
  } catch (const std::exception& e) {
    error = source_ + ": " + e.what();
    return false;
  }
  return true;
}

void RandomTape::outerStarted(const char* op) {
  const uint64_t taken = t_draws.taken;
  t_draws = ThreadDraws{};
  t_draws.outer = op;
  t_draws.taken = taken;
}

void RandomTape::outerNumbered(uint64_t number) {
  t_draws.numbered = true;
  t_draws.number = number;
}

RandomTape::Op RandomTape::started(const at::RecordFunction& fn) const {
  Op op;
  op.kind = randomKind(fn);
  if (op.kind == RandomKind::None) return op;
  if (op.kind == RandomKind::DropoutMask) {
    // native_dropout(Tensor input, float p, bool? train): the inputs are
    // gone by the op's end on torch 2.x, so what recomputing its output
    // needs is kept now.
    c10::ArrayRef<const c10::IValue> inputs = fn.inputs();
    const double p = inputs.size() > 1 && inputs[1].isDouble() ? inputs[1].toDouble() : 0.5;
    const bool train = inputs.size() <= 2 || !inputs[2].isBool() || inputs[2].toBool();
    if (!train || p == 0 || inputs.empty() || !inputs[0].isTensor()) {
      op.kind = RandomKind::None;  // draws nothing
      return op;
    }
    op.input = inputs[0].toTensor();
    op.scale = p >= 1 ? 0 : 1 / (1 - p);
  } else if (op.kind == RandomKind::Opaque && drawsNothing(fn)) {
    op.kind = RandomKind::None;
    return op;
  }
  op.draws_before = t_draws.taken;
  return op;
}

int64_t RandomTape::ordinal(int64_t step, const char* outer) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (step != ordinal_step_) {
    ordinals_.clear();
    ordinal_step_ = step;
  }
  return ordinals_[outer]++;
}

void RandomTape::note(const std::string& what) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (notes_.size() < kMaxNotes) notes_.push_back(what);
}

void RandomTape::ended(const at::RecordFunction& fn, const Op& op, int64_t step) {
  if (stopped_.load(std::memory_order_relaxed)) return;
  // An op inside this one drew: that one was taken (or was a composite's
  // part that draws nothing of its own).
  if (t_draws.taken != op.draws_before || op.kind == RandomKind::Composite) return;
  ++t_draws.taken;
  draws_.fetch_add(1, std::memory_order_relaxed);
  if (t_draws.outer == nullptr) t_draws.outer = fn.name();
  if (t_draws.ordinal < 0) t_draws.ordinal = ordinal(step, t_draws.outer);
  Key key{step, t_draws.outer, t_draws.ordinal, t_draws.draws++, ""};
  key.outer_record = t_draws.numbered ? key.outer + "." + std::to_string(t_draws.number) + ".fwd" : key.outer;
  if (op.kind == RandomKind::Opaque) {
    opaque_.fetch_add(1, std::memory_order_relaxed);
    note(key.name(fn.name()) + ": draws inside its kernel, cannot be " +
         (mode_ == env::Random::Save ? "saved" : "replayed"));
    return;
  }
  const size_t output = drawnOutput(op.kind);
  const std::vector<c10::IValue>& outputs = fn.outputs();
  if (output >= outputs.size() || !outputs[output].isTensor() || !readable(outputs[output].toTensor())) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    note(key.name(fn.name()) + ": its output cannot be read");
    return;
  }
  try {
    if (mode_ == env::Random::Save) {
      if (step <= last_step_) save(outputs[output].toTensor(), key, fn.name(), output);
    } else {
      replay(fn, op, key, outputs[output].toTensor());
    }
  } catch (const std::exception& e) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    note(key.name(fn.name()) + ": " + e.what());
  }
}

void RandomTape::save(const at::Tensor& t, const Key& key, const char* op, size_t output) {
  CaptureGuard guard;
  auto r = std::make_unique<CapturedOp>();
  r->index = draws_.load(std::memory_order_relaxed);
  r->name = key.name(op);
  r->op = op;
  r->forward_name = key.outer;
  r->op_number = static_cast<uint64_t>(key.ordinal);
  r->sequence_nr = key.draw;
  r->step = key.step;
  r->thread = compat::currentThreadId();
  const bool here = t.device().is_cpu();
  r->tensors.push_back(captureTensor(t, format::Role::Output, static_cast<uint32_t>(output), 0, here ? 2 : 0));
  if (!here) {
    captureOnDevice(t, 2, 0, *r, /*batch=*/nullptr, /*with_stats=*/false);
    markCopies(*r);
  }
  bool queued;
  if (r->inFlight()) {
    queued = writer_->submit(inFlight(std::move(r)));
  } else {
    std::string bytes;
    format::encode(*r, bytes);
    format::appendData(*r, bytes);
    queued = writer_->submit(std::move(bytes));
  }
  if (queued) saved_.fetch_add(1, std::memory_order_relaxed);
}

at::Tensor RandomTape::load(const Entry& e, c10::DeviceType to) {
  at::Tensor host = hostBuffer(e.shape, scalarTypeOf(static_cast<format::Dtype>(e.dtype)), to);
  if (static_cast<uint64_t>(host.nbytes()) != e.data_size) throw std::runtime_error("its saved size is wrong");
  std::lock_guard<std::mutex> lock(mutex_);
  if (!reader_->readData(e.data_offset, e.data_size, static_cast<char*>(host.data_ptr()))) {
    throw std::runtime_error("its saved values cannot be read from " + source_);
  }
  return host;
}

void RandomTape::replay(const at::RecordFunction& fn, const Op& op, const Key& key, const at::Tensor& target) {
  const std::string name = key.name(fn.name());
  auto it = entries_.find(key.text());
  if (it == entries_.end()) {
    unmatched_.fetch_add(1, std::memory_order_relaxed);
    note(name + ": the reference drew nothing here");
    return;
  }
  Entry& e = it->second;
  const auto dtype = static_cast<format::Dtype>(e.dtype);
  const bool same_shape = target.sizes().equals(e.shape);
  const bool same_type = dtypeOf(target.scalar_type()) == dtype || (drawsMask(e.op) && drawsMask(fn.name()));
  if (!same_shape || !same_type) {
    mismatched_.fetch_add(1, std::memory_order_relaxed);
    note(name + ": " + shapeText(target.sizes()) + " " + format::dtypeName(dtypeOf(target.scalar_type())) +
         " here, " + shapeText(e.shape) + " " + format::dtypeName(dtype) + " in the reference (" + e.name + ")");
    return;
  }
  CaptureGuard guard;  // acc's ops: unseen, out of autograd, no op numbers taken
  const c10::DeviceType device = target.device().type();
  at::Tensor values = load(e, device);
  if (values.scalar_type() != target.scalar_type()) {
    // 0/1 masks of another element type (the CPU's float bernoulli_, a
    // device's bool dropout mask): exact in every type.
    at::Tensor converted = hostBuffer(e.shape, target.scalar_type(), device);
    converted.copy_(values);
    values = converted;
  }
  // .data's semantics: the same memory, a version counter of its own.
  target.variable_data().copy_(values, /*non_blocking=*/device != c10::DeviceType::CPU);
  if (op.kind == RandomKind::DropoutMask) {
    // The fused kernel's output, as the CPU kernel computes it: input * mask * scale.
    const at::Tensor& out = fn.outputs()[0].toTensor();
    out.variable_data().copy_(op.input.mul(target).mul_(op.scale));
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    e.used = true;
  }
  replayed_.fetch_add(1, std::memory_order_relaxed);
}

void RandomTape::stop() {
  if (stopped_.exchange(true)) return;
  if (writer_) writer_->stop();
}

nlohmann::json RandomTape::toJson() const {
  nlohmann::json j = {
      {"mode", env::randomName(mode_)},
      {"draws", draws_.load()},
      {"opaque", opaque_.load()},
      {"errors", errors_.load()},
  };
  std::lock_guard<std::mutex> lock(mutex_);
  if (mode_ == env::Random::Save) {
    const WriterCounts w = writer_->counts();
    j["saved"] = saved_.load();
    j["lost"] = w.records_dropped + w.records_lost;
  } else {
    j["source"] = source_;
    j["replayed"] = replayed_.load();
    j["unmatched"] = unmatched_.load();
    j["mismatched"] = mismatched_.load();
    j["unused"] = std::count_if(entries_.begin(), entries_.end(), [](const auto& e) { return !e.second.used; });
  }
  j["notes"] = notes_;
  return j;
}

std::string RandomTape::summary() const {
  const nlohmann::json j = toJson();
  std::ostringstream s;
  s << "acc: random ops: " << j["draws"].get<uint64_t>() << " draws";
  if (mode_ == env::Random::Save) {
    s << ", " << j["saved"].get<uint64_t>() << " saved to " << env::kRandomFile;
    if (j["lost"].get<uint64_t>() != 0) s << ", " << j["lost"].get<uint64_t>() << " LOST (queue full or I/O error)";
  } else {
    s << ", " << j["replayed"].get<uint64_t>() << " replayed from " << source_ << " (ACC_RANDOM: this run's numbers changed on purpose), "
      << j["unmatched"].get<uint64_t>() << " not in the reference, " << j["mismatched"].get<uint64_t>()
      << " of another shape or type, " << j["unused"].get<uint64_t>() << " reference draws unused";
  }
  if (j["opaque"].get<uint64_t>() != 0) s << ", " << j["opaque"].get<uint64_t>() << " inside kernels (not replaceable)";
  if (j["errors"].get<uint64_t>() != 0) s << ", " << j["errors"].get<uint64_t>() << " failed";
  for (const auto& n : j["notes"]) s << "\nacc:   " << n.get<std::string>();
  return s.str();
}

}  // namespace acc::recorder
