// The dispatcher callbacks, one file of about 700 lines on purpose: every
// function here is one step of an op's life (start, capture, writes and
// versions, gradient hooks, end) on the per-op context and per-thread state
// declared below, which a split would have to publish in a header for every
// room to see. observer.h is the interface; the helpers it needs from other
// rooms (selection, op writes, backward links, capture) live there.
#include "recorder/observe/observer.h"

#include <ATen/core/function_schema.h>
#include <c10/util/SmallVector.h>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <chrono>
#include <cstring>
#include <algorithm>
#include <charconv>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "recorder/collectives/collectives.h"
#include "recorder/capture/device/device_capture.h"
#include "recorder/observe/emit_record.h"
#include "recorder/ivalue_tensors.h"
#include "recorder/per_thread.h"
#include "recorder/python/module_paths.h"
#include "recorder/observe/op_writes.h"
#include "recorder/python/python_hooks.h"
#include "recorder/write/record_pool.h"
#include "recorder/session/session.h"
#include "recorder/capture/tensor_capture.h"
#include "recorder/torch_compat.h"
#include "recorder/watch/watch.h"

namespace acc::recorder::observer {
namespace {

using format::Pass;
using format::Role;

at::CallbackHandle g_handle = 0;

// Events of record_function() itself, not ops.
bool isProfilerEvent(const char* name) { return std::strncmp(name, "profiler::", 10) == 0; }

// torch.compile's own scopes (torch 2.x): the guard check before a compiled
// frame and the frame itself ("Torch-Compiled Region: 0/0"). They carry no
// tensors and their numbering follows recompilations, so they are not ops:
// what runs inside is, CompiledFunction (the compiled graph as an autograd
// function, with its inputs) first among them.
bool isCompileScope(const char* name) {
  return std::strncmp(name, "Torch-Compiled Region", 21) == 0 ||
         std::strcmp(name, "TorchDynamo Cache Lookup") == 0;
}

// The autograd engine's wrapper around one node: it holds the node's
// BACKWARD_FUNCTION event and engine work (such as reducing a gradient to
// its input's shape) that belongs to no forward op.
bool isEngineScope(const char* name) {
  return std::strncmp(name, "autograd::engine::evaluate_function", 35) == 0;
}

// ATen's ops ("aten::add"), nearly every scope the observer sees, are none
// of the scopes above: one look at the name's first characters spares the
// comparisons with each of them (a few thousand a step on a small model).
bool isAtenOp(const char* name) {
  return name[0] == 'a' && name[1] == 't' && name[2] == 'e' && name[3] == 'n' && name[4] == ':' && name[5] == ':';
}

bool isNotAnOp(const char* node) {
  return std::strcmp(node, "torch::autograd::AccumulateGrad") == 0 ||
         std::strcmp(node, "torch::autograd::GraphRoot") == 0;
}

// torch 1.13's record_function() makes its handle inside the scope it has
// just opened: an aten::empty of sizeof(at::RecordFunction) bytes
// (cpp_custom_type_hack), the first op after the scope's start on its
// thread (torch 2 returns an object instead). It is no op of the program:
// not recorded, and its storage, which no op writes, is not tracked as
// uninitialized, which made every op of the scope look its inputs up and
// take a context, nested ones too (nestedOnly): the optimizer's zero_grad
// and step are such scopes.
bool isScopeHandle(const at::RecordFunction& fn) {
  if (std::strcmp(fn.name(), "aten::empty") != 0) return false;
  c10::ArrayRef<const c10::IValue> in = fn.inputs();
  if (in.size() < 2 || !in[0].isList() || !in[1].isInt()) return false;
  c10::ArrayRef<c10::IValue> size = in[0].toListRef();
  return size.size() == 1 && size[0].isInt() && size[0].toInt() == static_cast<int64_t>(sizeof(at::RecordFunction)) &&
         in[1].toInt() == static_cast<int64_t>(at::kByte);
}

uint64_t nowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

void finishRecord(Session& s, std::unique_ptr<CapturedOp> record);

struct ThreadState {
  int depth = 0;         // ops (and autograd nodes) entered on this thread
  int engine_depth = 0;  // autograd engine scopes entered
  bool scope_started = false;  // a record_function() scope started; no op since (isScopeHandle)
  // A backward record waits here between its node's end and the node's post
  // hook, which adds the gradients the node produced.
  std::unique_ptr<CapturedOp> pending;
  uint64_t pending_seq = 0;
  // The device this thread last told the session about: almost every
  // tensor is on the same one, and telling takes the session's lock.
  std::optional<c10::Device> last_device;
  // A backward record's names while they are built, in buffers kept from
  // node to node.
  std::string name, forward_name;
  std::vector<c10::IValue> grad_values;  // GradOutHook's, kept from node to node
  // hookNodes' walk, kept from op to op.
  std::vector<torch::autograd::Node*> todo, seen;

  ~ThreadState() {
    // A node whose hook never ran is recorded when its backward pass ends
    // (onEnd). One still here belongs to a thread that left mid-pass; at
    // exit the encoder's thread-local buffer may already be gone, so it is
    // counted, not written.
    Session* s = Session::active();
    if (pending && s != nullptr) s->counts().capture_errors.fetch_add(1, std::memory_order_relaxed);
  }
};
// This thread's state (per_thread.h). Callbacks check at their entry that
// it still exists (threadStateIfAlive): a thread whose exit destroyed it
// is not observed any more, and everything they call may then read it.
ThreadState* threadStateIfAlive() { return PerThread<ThreadState>::get(); }
ThreadState& threadState() { return *PerThread<ThreadState>::get(); }

struct OpContext : at::ObserverContext {
  // One per op: its memory is reused (RecordFunction frees it through the
  // base's virtual destructor, which finds these).
  static void* operator new(size_t size) { return record_pool::takeBlock(size); }
  static void operator delete(void* p, size_t size) { record_pool::giveBlock(p, size); }

  bool entered = false;  // counted in the thread's depth
  bool top_level_forward = false;  // called by user code, outside any op
  // Small vectors: an op writes one or two arguments (an optimizer's
  // _foreach_ op, more), and a heap vector here was one allocation per
  // in-place op.
  c10::SmallVector<at::Tensor, 2> writes;  // uninitialized storages this op writes
  // A top-level in-place op's written arguments and their versions at its
  // start (checkVersions).
  c10::SmallVector<std::pair<at::Tensor, uint32_t>, 2> versions;
  bool engine_scope = false;  // counted in the thread's engine_depth
  bool optimizer_step = false;
  bool named = false;  // numbered and offered to the selector
  bool forward = false;  // a named forward op: number and step are set
  uint64_t thread = 0;
  uint64_t seq_begin = 0;
  uint64_t number = 0;  // n of {op}.{n}.fwd
  int64_t step = 0;
  std::unique_ptr<CapturedOp> record;
  bool hooked = false;
  uint64_t backward_seq = 0;
  RandomTape::Op random;  // ACC_RANDOM: a random op's draw to save or replay
  std::unique_ptr<OpOverride::Call> override_call;  // ACC_OVERRIDE: this op is computed again
  bool collective = false;  // a c10d:: op: its results arrive after its end
  c10::IValue filled;       // a collective returning only its work: argument 0, which it fills
};

// Where a finished record goes: to the writer, to the NaN/Inf watch, which
// judges it and writes only what it finds, or to ACC_REFERENCE's judge,
// which writes it at level 2 when it is a find.
void finishRecord(Session& s, std::unique_ptr<CapturedOp> record) {
  if (Watch* watch = s.watch()) {
    watch->finish(s, std::move(record));
  } else if (Reference* reference = s.reference()) {
    reference->finish(s, std::move(record));
  } else {
    emitRecord(s, std::move(record));
  }
}

void flushPending(Session& s) {
  ThreadState& tls = threadState();
  if (tls.pending) finishRecord(s, std::move(tls.pending));
}

// `module`: the op's module path (a backward record's forward op's), null
// when unknown; records carry one whenever the module hooks are in.
// `name` and `op` are copied into the buffers of a recycled record.
std::unique_ptr<CapturedOp> newRecord(Session& s, std::string_view name, std::string_view op, Pass pass,
                                       uint64_t number, int64_t step, const std::string* module) {
  std::unique_ptr<CapturedOp> r = record_pool::take();
  r->batch = s.batches().mine();
  r->index = s.nextIndex();
  r->name.assign(name);
  r->op.assign(op);
  r->pass = pass;
  r->op_number = number;
  r->step = step;
  r->depth = static_cast<uint32_t>(threadState().depth - 1);
  r->thread = compat::currentThreadId();
  r->start_ns = nowNs();
  if (PythonHooks::instance().installed()) {
    r->has_module = true;
    if (module != nullptr) r->module.assign(*module);
  }
  if (s.config().stack != env::StackMode::None) r->stack_id = s.stacks().capture();
  if (s.watch() != nullptr || (s.reference() != nullptr && s.reference()->holds())) {
    r->hold = TensorHold::take();
  }
  return r;
}

// `dedup` false: every tensor captured whole (a collective's results,
// written where no version counter sees them). `first_metadata`: argument 0
// holds no data yet (the buffer a collective fills).
void captureAll(Session& s, c10::ArrayRef<const c10::IValue> values, Role role, CapturedOp& r, bool dedup = true,
                bool first_metadata = false, const OpWrites* writes = nullptr) {
  // Capture takes the guard (CaptureGuard: acc's own ops unobserved and out
  // of autograd) only for tensors whose values it reads through ops.
  Capture capture;
  // The watch keeps metadata and holds the tensors; it captures values
  // only for the op it finds. ACC_REFERENCE holds them beside what the
  // level captures.
  const bool watched = r.hold && s.watch() != nullptr;
  capture.level = watched ? 0 : s.config().level;
  capture.hold = r.hold.get();
  std::optional<c10::Device>& last = threadState().last_device;  // one thread-local lookup, not one per tensor
  const auto note_device = [&s, &last](c10::Device d) {
    if (last == d) return;
    s.noteDevice(deviceName(d));
    last = d;
  };
  capture.devices = note_device;
  capture.contents = watched || !dedup ? nullptr : s.contents();
  capture.batch = s.statsBatch();
  if (capture.contents != nullptr && capture.level >= 2) capture.writes = writes;
  // Read only for statistics: none at level 0.
  if (role == Role::Output && capture.level >= 1) capture.constant = filledWith(r);
  const auto all_uninitialized = [](const at::Tensor&) { return true; };
  const auto tracked_uninitialized = [&s](const at::Tensor& t) { return s.uninitialized().contains(t); };
  if (role == Role::Output && outputsUninitialized(r.op)) {
    capture.uninitialized = all_uninitialized;
  } else if (role == Role::Input || role == Role::Output) {
    capture.uninitialized = tracked_uninitialized;
  }
  r.tensors.reserve(r.tensors.size() + values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    if (i == 0 && first_metadata) {
      const int level = capture.level;
      capture.level = 0;
      captureValue(values[i], role, 0, capture, r);
      capture.level = level;
    } else {
      captureValue(values[i], role, static_cast<uint32_t>(i), capture, r);
    }
  }
  markCopies(r);
}

// Runs at the start of every forward op, recorded or not (inputs can only
// be read at the start): which tracked uninitialized storages it writes.
void noteWrites(Session& s, const at::RecordFunction& fn, OpContext& ctx) {
  UninitializedMemory& memory = s.uninitialized();
  if (memory.empty()) return;
  memory.sweepSometimes();
  c10::ArrayRef<const c10::IValue> inputs = fn.inputs();
  const OpWrites* writes = nullptr;  // looked up only when needed
  bool known = true;  // false once the op's schema turned out unknown: nothing more to learn
  for (size_t i = 0; i < inputs.size() && known; ++i) {
    forEachTensor(inputs[i], [&](const at::Tensor& t) {
      if (!known || !memory.contains(t)) return;
      if (writes == nullptr) writes = &opWrites(fn);
      known = writes->known;
      if (known && writes->writes(i)) ctx.writes.push_back(t);
    });
  }
}

// In-place ops that change a tensor's autograd state or geometry, never its
// values: detach_ bumps no version by design, and a new geometry or storage
// is a new content anyway (ContentStore compares them).
bool changesOnlyMetadata(std::string_view name) {
  static const std::unordered_set<std::string_view> ops = {
      "aten::detach_",  "aten::squeeze_", "aten::unsqueeze_", "aten::transpose_", "aten::t_",
      "aten::swapdims_", "aten::swapaxes_", "aten::as_strided_", "aten::resize_", "aten::resize_as_",
      "aten::set_"};
  return ops.count(name) != 0;
}

// Runs at the start of a top-level in-place op (its name ends in "_"), or
// of one that writes arguments its schema does not mark (batch_norm's
// running statistics, which a nested op updates): the versions of the
// arguments it writes. At this level every announced write goes through
// ADInplaceOrView, which bumps them; torch 2.1's _foreach_ ops on a device
// do not, nor does any torch's batch norm for its running statistics, so
// the content store would take a tensor the op updated for the content it
// held before (checkVersions): on a device, where no sample of the values
// checks a hit, every later step's running statistics were the first's.
void noteVersions(Session& s, const at::RecordFunction& fn, OpContext& ctx) {
  if (s.contents() == nullptr || !ctx.top_level_forward) return;
  const char* name = fn.name();
  const size_t length = std::strlen(name);
  const bool in_place = length != 0 && name[length - 1] == '_' && !changesOnlyMetadata(name);
  const OpWrites& writes = opWrites(fn);
  if (!in_place && !writes.unannounced) return;
  forEachWrittenTensor(writes, fn.inputs(), [&](const at::Tensor& t) {
    if (!t.defined() || compat::versionCounterIdentity(*t.unsafeGetTensorImpl()) == nullptr) return;
    ctx.versions.emplace_back(t, t.unsafeGetTensorImpl()->version_counter().current_version());
  });
}

// Runs at the end of such an op, before its outputs are identified: an
// argument whose version did not move was written behind its counter.
// (noteVersions notes nothing without a content store.)
void checkVersions(Session& s, OpContext& ctx) {
  for (const auto& [t, version] : ctx.versions) {
    if (t.unsafeGetTensorImpl()->version_counter().current_version() == version) s.contents()->writtenUnseen(t);
  }
  ctx.versions.clear();
}

// Runs at the end of every forward op, before its outputs are read (an
// in-place op's output is the input it wrote).
void trackUninitialized(Session& s, const at::RecordFunction& fn, OpContext& ctx) {
  UninitializedMemory& memory = s.uninitialized();
  for (const at::Tensor& t : ctx.writes) memory.written(t);
  ctx.writes.clear();
  if (ctx.top_level_forward && outputsUninitialized(fn.name())) {
    for (const c10::IValue& v : fn.outputs()) {
      if (v.isTensor()) memory.add(v.toTensor());
    }
  }
}

class GradOutHook : public compat::PostHook {
 public:
  explicit GradOutHook(uint64_t seq) : seq_(seq) {}

  compat::VariableList operator()(const compat::VariableList& outputs,
                                  const compat::VariableList& /*grad_outputs*/) override {
    Session* s = Session::active();
    ThreadState* state = threadStateIfAlive();
    if (s == nullptr || state == nullptr) return outputs;
    ThreadState& tls = *state;
    if (!tls.pending || tls.pending_seq != seq_) return outputs;
    // The gradients as IValues, in this thread's buffer (one allocation
    // per node before), emptied after so that it holds no tensor.
    std::vector<c10::IValue>& values = tls.grad_values;
    try {
      values.assign(outputs.begin(), outputs.end());
      captureAll(*s, c10::ArrayRef<const c10::IValue>(values.data(), values.size()), Role::GradOut, *tls.pending);
    } catch (...) {
      s->counts().capture_errors.fetch_add(1, std::memory_order_relaxed);
    }
    values.clear();
    finishRecord(*s, std::move(tls.pending));
    return outputs;
  }

 private:
  uint64_t seq_;
};

// Hooks the autograd nodes an op created (reachable from its outputs and
// numbered inside the op's claimed range).
void hookNodes(Session& s, const std::vector<c10::IValue>& outputs, uint64_t thread,
               const BackwardLinks::Claimed& claimed) {
  // In this thread's buffers; `seen` holds only the op's own (claimed)
  // nodes, almost always a few, so it is searched in turn; an op that
  // claimed many takes a hash set.
  ThreadState& tls = threadState();
  std::vector<torch::autograd::Node*>& todo = tls.todo;
  std::vector<torch::autograd::Node*>& seen = tls.seen;
  todo.clear();
  seen.clear();
  std::unordered_set<torch::autograd::Node*> many;
  const bool hashed = claimed.size() > 32;
  for (const c10::IValue& v : outputs) {
    if (v.isTensor() && v.toTensor().defined() && v.toTensor().grad_fn()) {
      todo.push_back(v.toTensor().grad_fn().get());
    }
  }
  while (!todo.empty()) {
    torch::autograd::Node* node = todo.back();
    todo.pop_back();
    if (!std::binary_search(claimed.begin(), claimed.end(), node->sequence_nr())) continue;
    if (hashed ? !many.insert(node).second : std::find(seen.begin(), seen.end(), node) != seen.end()) continue;
    if (!hashed) seen.push_back(node);
    node->add_post_hook(std::make_unique<GradOutHook>(node->sequence_nr()));
    s.links().markHooked(thread, node->sequence_nr());
    for (const auto& edge : node->next_edges()) {
      if (edge.function) todo.push_back(edge.function.get());
    }
  }
}

// ACC_GRADS: one record per parameter and optimizer step, named after the
// parameter, with its gradient as input 0; every filter but the ranks passes
// it (python_hooks.h hands it over through an aten::alias op).
[[gnu::noinline]] void recordGradient(Session& s, const at::RecordFunction& fn, const std::string& parameter) {
  auto r = std::make_unique<CapturedOp>();
  r->index = s.nextIndex();
  r->name = "grad::" + parameter;
  r->op = format::kGradientOp;
  r->pass = Pass::Forward;
  r->step = s.step();
  r->thread = compat::currentThreadId();
  r->start_ns = r->end_ns = nowNs();
  r->has_module = true;
  const size_t dot = parameter.rfind('.');
  r->module = dot == std::string::npos ? std::string() : parameter.substr(0, dot);
  c10::ArrayRef<const c10::IValue> inputs = fn.inputs();
  captureAll(s, inputs.slice(0, std::min<size_t>(inputs.size(), 1)), Role::Input, *r);
  emitRecord(s, std::move(r));
}

// Top-level ops are those user code called: forward ops outside any other
// op and outside the engine's own work, and autograd nodes. Collectives are
// named wherever they run (DDP's all-reduce runs inside the engine's work,
// in a gradient hook).
bool isNamed(Session& s, const ThreadState& tls, bool backward, bool collective) {
  return s.config().nested || (tls.depth == 0 && (backward || tls.engine_depth == 0)) || collective;
}

// `collective`: a forward c10d:: op (isCollective).
std::unique_ptr<OpContext> enter(Session& s, bool backward, bool collective) {
  auto ctx = std::make_unique<OpContext>();
  ctx->entered = true;
  ThreadState& tls = threadState();
  ctx->top_level_forward = !backward && tls.depth == 0 && tls.engine_depth == 0;
  ctx->collective = collective;
  ctx->named = isNamed(s, tls, backward, collective);
  ++tls.depth;
  return ctx;
}

std::string& appendNumber(std::string& out, uint64_t n) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, n).ptr;
  return out.append(digits, static_cast<size_t>(end - digits));
}

// {op}.{n}.{pass} into `out`, replacing what it held (in its buffer):
// sized once and copied in, where an assign and four appends each checked
// and grew the string (about 360 instructions a record on the LM).
void recordNameInto(std::string& out, std::string_view op, uint64_t n, std::string_view pass) {
  char digits[24];
  const size_t count = static_cast<size_t>(std::to_chars(digits, digits + sizeof digits, n).ptr - digits);
  out.resize(op.size() + count + pass.size() + 2);
  char* p = out.data();
  std::memcpy(p, op.data(), op.size());
  p += op.size();
  *p++ = '.';
  std::memcpy(p, digits, count);
  p += count;
  *p++ = '.';
  std::memcpy(p, pass.data(), pass.size());
}

void forwardNameInto(std::string& out, std::string_view op, uint64_t n) { recordNameInto(out, op, n, "fwd"); }

std::string forwardName(std::string_view op, uint64_t n) {
  std::string name;
  forwardNameInto(name, op, n);
  return name;
}

void startForward(Session& s, const at::RecordFunction& fn, OpContext& ctx) {
  ctx.thread = compat::currentThreadId();
  ctx.seq_begin = compat::peekSequenceNr();
  ctx.forward = true;
  ctx.step = s.step();
  // Collectives count apart, so that the ops of a distributed run are
  // named as those of a run on one process.
  ctx.number = ctx.collective ? s.nextCollectiveNumber() : s.nextForwardNumber();
  const std::string_view op = fn.name();
  s.counts().ops_seen.fetch_add(1, std::memory_order_relaxed);
  // The name is built before the selector only for ACC_OP_RANGE, which
  // matches it; otherwise only for the ops that are recorded, in their
  // record's buffer.
  const std::string name = s.selector().matchesNames() ? forwardName(op, ctx.number) : std::string();
  const std::string& module = ModulePaths::current();
  if (!s.selector().select(name, op, "", false, ctx.step, module)) {
    s.counts().skipped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  std::string autocast = s.numerics().onRecordedOp();
  ctx.record = newRecord(s, name, op, Pass::Forward, ctx.number, ctx.step, &module);
  if (name.empty()) forwardNameInto(ctx.record->name, op, ctx.number);
  if (!autocast.empty()) {
    ctx.record->has_autocast = true;
    ctx.record->autocast = std::move(autocast);
  }
  ctx.record->sequence_nr = fn.seqNr();
  if (s.config().level >= 2 || ctx.record->hold) {
    // Replay (replay/) needs the exact overload; its lookup copies two
    // strings, so only level 2, which records the data replay needs too,
    // and the records the watch or ACC_REFERENCE may write at level 2.
    if (auto name = fn.operator_name()) {
      ctx.record->has_overload = true;
      ctx.record->overload = name->overload_name;
    }
  }
  // Inputs are read now, before an in-place op overwrites them.
  c10::ArrayRef<const c10::IValue> inputs = fn.inputs();
  if (s.config().inputs) {
    // Level 2: what the arguments an op writes hold now, for its outputs'
    // deltas. Not for an op that fills its output with one value
    // (zero_grad's zero_): a constant stores smaller than any delta, and the
    // copy of every gradient would be wasted.
    const bool deltas = s.config().level >= 2 && s.contents() != nullptr && !ctx.collective && !filledWith(*ctx.record);
    const OpWrites* writes = deltas ? &opWrites(fn) : nullptr;
    captureAll(s, inputs, Role::Input, *ctx.record, true, ctx.collective && fillsArgument0(op), writes);
  }
  if (ctx.collective && !inputs.empty()) ctx.filled = inputs[0];
  if (Watch* watch = s.watch()) watch->noteOverwrittenInputs(*ctx.record);
  if (Reference* reference = s.reference()) {
    // An op that fills its output with one value (zero_grad's zero_) needs
    // no copy of what it overwrites: replay does not read it. (Names are
    // compared only for in-place ops, whose names end in '_'.)
    const bool fills = !op.empty() && op.back() == '_' && filledWith(*ctx.record);
    if (!fills) reference->noteOverwrittenInputs(*ctx.record);
  }
}

// A collective's results (its tensor outputs, or the argument it fills when
// it returns only its work) are captured once its work has completed.
[[gnu::noinline]] void endCollective(Session& s, const at::RecordFunction& fn, OpContext& ctx) {
  std::vector<c10::IValue> results;
  for (const c10::IValue& v : fn.outputs()) {
    if (v.isTensor() || v.isTensorList() || v.isList()) results.push_back(v);
  }
  if (results.empty() && (ctx.filled.isTensor() || ctx.filled.isTensorList() || ctx.filled.isList())) {
    results.push_back(ctx.filled);
  }
  ctx.filled = c10::IValue();
  // Written behind the version counters: later reads are not references
  // to what these storages held before.
  if (ContentStore* contents = s.contents()) {
    for (const c10::IValue& v : results) {
      if (v.isTensor()) contents->writtenUnseen(v.toTensor());
      if (v.isTensorList()) {
        for (const at::Tensor& t : v.toTensorVector()) contents->writtenUnseen(t);
      }
    }
  }
  auto pending = std::make_shared<std::unique_ptr<CapturedOp>>(std::move(ctx.record));
  auto complete = [&s, pending, results = std::move(results)] {
    std::unique_ptr<CapturedOp> record = std::move(*pending);
    if (!record) return;
    try {
      if (s.config().outputs) {
        captureAll(s, c10::ArrayRef<const c10::IValue>(results.data(), results.size()), Role::Output, *record,
                   /*dedup=*/false);
      }
      record->end_ns = nowNs();
      finishRecord(s, std::move(record));
    } catch (...) {
      s.counts().capture_errors.fetch_add(1, std::memory_order_relaxed);
    }
  };
  s.counts().collectives_pending.fetch_add(1, std::memory_order_relaxed);
  // Counted pending until its record is queued: Session::stop() waits for
  // that, and one completing after the session stopped stays counted as
  // unfinished in the manifest instead of vanishing.
  auto done = [&s, complete] {
    if (Session::active() != &s) return;
    complete();
    s.counts().collectives_pending.fetch_sub(1, std::memory_order_relaxed);
  };
  if (!whenComplete(fn.outputs(), done)) {
    // No work to wait for (or no future to wait with): as good as now.
    s.counts().collectives_pending.fetch_sub(1, std::memory_order_relaxed);
    complete();
  }
}

void endForward(Session& s, const at::RecordFunction& fn, OpContext& ctx) {
  const uint64_t seq_end = compat::peekSequenceNr();
  if (seq_end > ctx.seq_begin) {
    // Only ops that made autograd nodes need a link for their backward.
    auto op = std::make_shared<ForwardOp>(fn.name(), ctx.number, ctx.step, ModulePaths::current());
    auto claimed = s.links().claim(ctx.thread, ctx.seq_begin, seq_end, op);
    if (!claimed.empty() && s.config().records(env::Passes::Backward) &&
        s.selector().stepSelected(ctx.step)) {
      hookNodes(s, fn.outputs(), ctx.thread, claimed);
    }
  }
  if (!ctx.record) return;
  if (ctx.collective) {
    endCollective(s, fn, ctx);
    return;
  }
  if (s.config().outputs) {
    const std::vector<c10::IValue>& outputs = fn.outputs();
    captureAll(s, c10::ArrayRef<const c10::IValue>(outputs.data(), outputs.size()), Role::Output, *ctx.record);
  }
  ctx.record->delta_bases.clear();  // their copies are not the writer's to hold
  ctx.record->end_ns = nowNs();
  finishRecord(s, std::move(ctx.record));
}

void startBackward(Session& s, const at::RecordFunction& fn, OpContext& ctx) {
  const char* node = fn.name();
  if (isNotAnOp(node)) return;
  const uint64_t seq = static_cast<uint64_t>(fn.seqNr());
  auto link = s.links().take(fn.forwardThreadId(), seq);
  // Built in this thread's buffers, kept from node to node.
  ThreadState& tls = threadState();
  std::string& name = tls.name;
  std::string& forward_name = tls.forward_name;
  std::string_view op;
  uint64_t n;
  uint32_t k = 1;  // the forward op's k-th node: .bwd.k from the second on
  const std::string* module = nullptr;
  forward_name.clear();
  if (link.op) {
    module = &link.op->module;
    op = link.op->op;
    n = link.op->number;
    k = ++link.op->backward_nodes;
    forwardNameInto(forward_name, op, n);
  } else {
    op = node;
    n = s.nextUnlinkedNumber();
  }
  recordNameInto(name, op, n, "bwd");
  if (k > 1) appendNumber(name.append("."), k);
  const int64_t step = s.step();
  s.counts().ops_seen.fetch_add(1, std::memory_order_relaxed);
  if (!s.selector().select(name, op, node, true, step, module != nullptr ? *module : std::string_view())) {
    s.counts().skipped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  ctx.record = newRecord(s, name, op, Pass::Backward, n, step, module);
  ctx.record->grad_fn.assign(node);
  ctx.record->forward_name.assign(forward_name);
  ctx.record->sequence_nr = fn.seqNr();
  ctx.hooked = link.hooked;
  ctx.backward_seq = seq;
  // Gradients flowing in are those of the forward op's outputs.
  if (s.config().outputs) captureAll(s, fn.inputs(), Role::GradIn, *ctx.record);
}

void endBackward(Session& s, OpContext& ctx) {
  if (!ctx.record) return;
  ctx.record->end_ns = nowNs();
  // Gradients flowing out (those of the forward op's inputs) arrive in the
  // node's post hook, right after this end.
  if (ctx.hooked && s.config().inputs) {
    ThreadState& tls = threadState();
    tls.pending = std::move(ctx.record);
    tls.pending_seq = ctx.backward_seq;
  } else {
    finishRecord(s, std::move(ctx.record));
  }
}

// A forward op that is neither named (isNamed) nor watched by anything at
// its start or end: nested in another op or in the engine's own work, with
// no uninitialized storage pending (noteWrites), no random tape and no
// override. Most ops the observer sees are such (aten::linear's t and
// addmm, a kernel's empty: about six in seven on the LM, a few thousand a
// step), and they get no context and are not counted in the thread's
// depth: what runs inside them is inside the op or engine scope that made
// them unnamed, whose count says so. (A context of their own, even a flag
// from a per-thread pool, cost each a few hundred instructions, four
// thread-local lookups among them.) Only a top-level op adds uninitialized
// storage, so none appears inside such an op on its own thread; one added
// by another thread meanwhile makes the ops inside counted, which changes
// no decision (they stay unnamed and not top-level).
bool nestedOnly(Session& s, const ThreadState& tls, bool collective) {
  return !isNamed(s, tls, /*backward=*/false, collective) && s.overrides() == nullptr && s.random() == nullptr &&
         s.uninitialized().empty();
}

// Whether an ATen op inside another op on this thread is nestedOnly() and
// needs nothing of beforeOp() (no device tensor waits for its statistics)
// nor of ACC_GRADS's hand-over: onStart lets it go before anything else,
// name comparisons included (a few thousand callbacks a step on the
// transformer LM: 0.19 M instructions a step less, about 60 each).
bool nestedUnwatched(Session& s, const ThreadState& tls) {
  if (tls.depth == 0 || tls.scope_started || s.config().grads) return false;
  StatsBatch* batch = s.statsBatch();
  return (batch == nullptr || batch->idle()) && nestedOnly(s, tls, /*collective=*/false);
}

// Every forward op, recorded or not (a nested op may write what an outer op
// only reads), after its own inputs joined the batch: device tensors it is
// about to write are copied first; a collective writes behind the
// dispatcher, so the batch runs before it.
void beforeOp(Session& s, const at::RecordFunction& fn, bool collective) {
  StatsBatch* batch = s.statsBatch();
  if (batch == nullptr) return;
  try {
    if (collective) batch->flush();
    else batch->beforeOp(fn);
  } catch (...) {
    s.counts().capture_errors.fetch_add(1, std::memory_order_relaxed);
  }
}

std::unique_ptr<at::ObserverContext> onStart(const at::RecordFunction& fn) {
  Session* s = Session::active();
  ThreadState* state = threadStateIfAlive();
  if (s == nullptr || state == nullptr) return nullptr;
  ThreadState& tls = *state;
  const at::RecordScope scope = fn.scope();
  if (scope == at::RecordScope::FUNCTION && nestedUnwatched(*s, tls) && isAtenOp(fn.name())) return nullptr;
  PythonHooks::instance().tryInstall(s->config().quiet);
  const char* name = fn.name();
  if (scope == at::RecordScope::USER_SCOPE) {
    tls.scope_started = true;
    if (std::strncmp(name, "Optimizer.step#", 15) != 0) return nullptr;
    auto ctx = std::make_unique<OpContext>();
    ctx->optimizer_step = true;
    // Before the optimizer reads them: the gradients the step uses.
    if (s->config().grads) PythonHooks::instance().handOverGradients();
    return ctx;
  }
  if (s->config().grads && scope == at::RecordScope::FUNCTION) {
    std::string& gradient = PythonHooks::pendingGradient();
    if (!gradient.empty()) {
      try {
        recordGradient(*s, fn, gradient);
      } catch (...) {
        s->counts().capture_errors.fetch_add(1, std::memory_order_relaxed);
      }
      gradient.clear();
      return nullptr;  // the hand-over's own op: no record, no number
    }
  }
  if (scope != at::RecordScope::FUNCTION && scope != at::RecordScope::BACKWARD_FUNCTION) {
    return nullptr;
  }
  if (tls.scope_started) {
    tls.scope_started = false;
    if (isScopeHandle(fn)) return nullptr;
  }
  if (!isAtenOp(name)) {
    if (isProfilerEvent(name)) return nullptr;
    if (isCompileScope(name)) {
      if (OpOverride* o = s->overrides()) o->noteCompiled();
      // Compiled kernels write memory without the dispatcher seeing it: the
      // device tensors waiting for their statistics are summarised first.
      if (StatsBatch* batch = s->statsBatch()) batch->flush();
      return nullptr;
    }
    if (isEngineScope(name)) {
      auto ctx = std::make_unique<OpContext>();
      ctx->engine_scope = true;
      ++tls.engine_depth;
      return ctx;
    }
  }
  const bool backward = scope == at::RecordScope::BACKWARD_FUNCTION;
  const bool collective = !backward && isCollective(name);
  if (backward) {
    flushPending(*s);
  } else if (nestedOnly(*s, tls, collective)) {
    beforeOp(*s, fn, /*collective=*/false);
    return nullptr;
  }
  auto ctx = enter(*s, backward, collective);
  // First, before anything reads them: an in-place op's inputs as they are.
  if (OpOverride* o = s->overrides(); o != nullptr && !backward) ctx->override_call = o->start(fn, s->step());
  RandomTape* tape = s->random();
  try {
    if (!backward) {
      noteWrites(*s, fn, *ctx);
      noteVersions(*s, fn, *ctx);
    }
    if (tape != nullptr) {
      if (tls.depth == 1) RandomTape::outerStarted(name);
      if (!backward) ctx->random = tape->started(fn);
    }
  } catch (...) {
    s->counts().capture_errors.fetch_add(1, std::memory_order_relaxed);
  }
  if (ctx->named) {
    try {
      if (backward) startBackward(*s, fn, *ctx);
      else startForward(*s, fn, *ctx);
      if (tape != nullptr && !backward && tls.depth == 1) RandomTape::outerNumbered(ctx->number);
    } catch (...) {
      // acc must never fail the op it observes.
      s->counts().capture_errors.fetch_add(1, std::memory_order_relaxed);
      ctx->record.reset();
    }
  }
  if (!backward) beforeOp(*s, fn, ctx->collective);
  return ctx;
}

void onEnd(const at::RecordFunction& fn, at::ObserverContext* base) {
  if (base == nullptr) return;
  ThreadState* state = threadStateIfAlive();
  if (state == nullptr) return;
  ThreadState& tls = *state;
  auto* ctx = static_cast<OpContext*>(base);
  if (ctx->entered) --tls.depth;
  if (ctx->engine_scope) --tls.engine_depth;
  Session* s = Session::active();
  if (s == nullptr) return;
  try {
    // The backward pass is over (or a node threw and unwound it): a node
    // whose post hook never ran is recorded with what it has.
    if (ctx->engine_scope && tls.engine_depth == 0) flushPending(*s);
    if (ctx->optimizer_step) {
      s->advanceStep();
    } else if (ctx->named && fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
      endBackward(*s, *ctx);
    } else if (ctx->entered && fn.scope() == at::RecordScope::FUNCTION) {
      // Before anything reads its outputs: records hold what the program
      // goes on with.
      if (ctx->override_call) {
        s->overrides()->finish(fn, *ctx->override_call);
        ctx->override_call.reset();
      }
      trackUninitialized(*s, fn, *ctx);
      checkVersions(*s, *ctx);
      // Before its outputs are recorded: a replayed draw is what the
      // program goes on with.
      if (ctx->random.kind != RandomKind::None) s->random()->ended(fn, ctx->random, s->step());
      if (ctx->forward) endForward(*s, fn, *ctx);
    }
  } catch (...) {
    s->counts().capture_errors.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace

void install() {
  g_handle = at::addGlobalCallback(at::RecordFunctionCallback(onStart, onEnd)
                                       .needsInputs(true)
                                       .needsOutputs(true)
                                       .scopes({at::RecordScope::FUNCTION,
                                                at::RecordScope::BACKWARD_FUNCTION,
                                                at::RecordScope::USER_SCOPE}));
}

void uninstall() {
  if (g_handle != 0) at::removeCallback(g_handle);
  g_handle = 0;
}

}  // namespace acc::recorder::observer
