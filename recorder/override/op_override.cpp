#include "recorder/override/op_override.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "format/random_ops.h"
#include "recorder/capture/tensor_capture.h"

namespace acc::recorder {
namespace {

constexpr size_t kMaxNotes = 8;

// Overridden calls in progress on this thread: an op nested inside one is
// not computed again.
thread_local int t_active = 0;

// The float64 call: unseen by the callbacks, out of autograd, below the
// program's dispatch modes (CaptureGuard) and below its autocast, which
// would compute it in bfloat16.
struct ReferenceGuard {
  CaptureGuard capture;
  c10::impl::ExcludeDispatchKeyGuard no_autocast{c10::autocast_dispatch_keyset};
};

at::Tensor toReference(const at::Tensor& t) {
  if (!t.defined()) return t;
  at::ScalarType type = t.scalar_type();
  if (at::isFloatingType(type)) type = at::kDouble;
  else if (at::isComplexType(type)) type = at::kComplexDouble;
  return t.to(at::kCPU, type, /*non_blocking=*/false, /*copy=*/true);
}

bool isScalarTypeArgument(const c10::Argument& arg) {
  c10::TypePtr type = arg.real_type();
  if (auto optional = type->cast<c10::OptionalType>()) type = optional->getElementType();
  return type->kind() == c10::TypeKind::ScalarTypeType;
}

bool takesGenerator(const c10::FunctionSchema& schema) {
  for (const c10::Argument& arg : schema.arguments()) {
    c10::TypePtr type = arg.real_type();
    if (auto optional = type->cast<c10::OptionalType>()) type = optional->getElementType();
    if (type->kind() == c10::TypeKind::GeneratorType) return true;
  }
  return false;
}

// A tensor without memory of its own: torch.compile's fake tensors while it
// traces (the dispatcher shows their ops too), other Python subclasses,
// functionalization's wrappers. Their ops are not computations to redo.
bool withoutMemory(const at::Tensor& t) {
  if (!t.defined()) return false;
  // A functional wrapper over a fake tensor (torch 2.1's AOT tracing) looks
  // like a plain tensor but for its key: its copy reads no memory at all.
  if (t.key_set().has(c10::DispatchKey::Functionalize) || t.unsafeGetTensorImpl()->is_python_dispatch() ||
      !t.has_storage() || t.is_meta()) {
    return true;
  }
  return t.numel() != 0 && t.storage().data() == nullptr;
}

bool anyWithoutMemory(const c10::IValue& v) {
  if (v.isTensor()) return withoutMemory(v.toTensor());
  if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorList()) {
      if (withoutMemory(t)) return true;
    }
  } else if (v.isList()) {
    for (const c10::IValue& e : v.toList()) {
      if (e.isTensor() && withoutMemory(e.toTensor())) return true;
    }
  }
  return false;
}

// One argument as the float64 CPU call takes it.
c10::IValue toReference(const c10::IValue& v, const c10::Argument* arg) {
  if (v.isTensor()) return toReference(v.toTensor());
  if (v.isTensorList()) {
    c10::List<at::Tensor> out;
    for (const at::Tensor& t : v.toTensorList()) out.push_back(toReference(t));
    return out;
  }
  if (v.isList()) {  // Tensor?[] (index's indices) and lists of scalars
    c10::impl::GenericList list = v.toList();
    c10::impl::GenericList out(list.elementType());
    for (const c10::IValue& e : list) out.push_back(e.isTensor() ? c10::IValue(toReference(e.toTensor())) : e);
    return out;
  }
  if (v.isDevice()) return c10::Device(at::kCPU);
  if (v.isInt() && arg != nullptr && isScalarTypeArgument(*arg)) {
    const auto type = static_cast<at::ScalarType>(v.toInt());
    if (at::isFloatingType(type)) return static_cast<int64_t>(at::kDouble);
  }
  return v;
}

std::string shapeText(at::IntArrayRef sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? "," : "") + std::to_string(sizes[i]);
  return s + "]";
}

// The op's output `out` takes `value`'s numbers, in its own dtype and
// device, through an alias with a version counter of its own.
void overwrite(const at::Tensor& out, const at::Tensor& value, size_t index) {
  if (!out.defined() || !value.defined()) return;
  if (!out.sizes().equals(value.sizes())) {
    throw std::runtime_error("output " + std::to_string(index) + " is " + shapeText(out.sizes()) +
                             ", the float64 call gave " + shapeText(value.sizes()));
  }
  out.variable_data().copy_(value);
}

void overwrite(const c10::IValue& out, const c10::IValue& value, size_t index) {
  if (out.isTensor() && value.isTensor()) {
    overwrite(out.toTensor(), value.toTensor(), index);
  } else if (out.isTensorList() && value.isTensorList()) {
    c10::List<at::Tensor> a = out.toTensorList(), b = value.toTensorList();
    if (a.size() != b.size()) throw std::runtime_error("output " + std::to_string(index) + ": lists of other lengths");
    for (size_t i = 0; i < a.size(); ++i) overwrite(a.get(i), b.get(i), index);
  }
}

}  // namespace

OpOverride::Call::Call() { ++t_active; }
OpOverride::Call::~Call() { --t_active; }

OpOverride::OpOverride(std::vector<env::OverrideOp> ops) {
  for (env::OverrideOp& op : ops) {
    auto e = std::make_unique<Entry>();
    e->op = std::move(op);
    entries_.push_back(std::move(e));
  }
}

const OpOverride::Entry* OpOverride::match(const at::RecordFunction& fn, int64_t step, size_t& index) {
  const char* name = fn.name();
  for (size_t i = 0; i < entries_.size(); ++i) {
    Entry& e = *entries_[i];
    if (e.op.op != name || !e.op.steps.contains(step)) continue;
    if (!e.op.overload.empty()) {
      auto op = fn.operator_name();
      if (!op || op->overload_name != e.op.overload) continue;
    }
    if (e.refused.load(std::memory_order_relaxed)) return nullptr;
    index = i;
    return &e;
  }
  return nullptr;
}

std::unique_ptr<OpOverride::Call> OpOverride::start(const at::RecordFunction& fn, int64_t step) {
  // A compiled graph's call as an autograd function: on torch 2.1 the only
  // sign of compiled code the dispatcher shows.
  if (std::strcmp(fn.name(), "CompiledFunction") == 0) noteCompiled();
  if (t_active > 0) return nullptr;
  size_t index = 0;
  const Entry* e = match(fn, step, index);
  if (e == nullptr) return nullptr;
  for (const c10::IValue& v : fn.inputs()) {
    if (anyWithoutMemory(v)) {
      unreal_.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
  }
  auto call = std::make_unique<Call>();
  call->entry = index;
  try {
    auto name = fn.operator_name();
    if (name) call->op = c10::Dispatcher::singleton().findOp(*name);
    if (!call->op) throw std::runtime_error("the dispatcher does not know it");
    const c10::FunctionSchema& schema = call->op->schema();
    if (takesGenerator(schema) || format::randomKindOf(fn.name()) != format::RandomKind::None) {
      if (!entries_[index]->refused.exchange(true)) {
        std::fprintf(stderr, "acc: ACC_OVERRIDE: %s draws random numbers; it is not overridden\n", fn.name());
      }
      return nullptr;
    }
    ReferenceGuard guard;
    const c10::ArrayRef<const c10::IValue> inputs = fn.inputs();
    call->inputs.reserve(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      const c10::Argument* arg = i < schema.arguments().size() ? &schema.arguments()[i] : nullptr;
      call->inputs.push_back(toReference(inputs[i], arg));
    }
  } catch (const std::exception& ex) {
    fail(fn.name(), ex.what());
    return nullptr;
  }
  return call;
}

void OpOverride::finish(const at::RecordFunction& fn, Call& call) {
  try {
    const c10::FunctionSchema& schema = call.op->schema();
    const std::vector<c10::IValue>& outputs = fn.outputs();
    if (outputs.size() != schema.returns().size()) return;  // the op threw: nothing to overwrite
    ReferenceGuard guard;
    // The arguments stay referenced here: an op returning nothing (the
    // in-place _foreach_ ops) hands its results back through them.
    const std::vector<c10::IValue> arguments = call.inputs;
    torch::jit::Stack stack = std::move(call.inputs);
    call.op->callBoxed(stack);
    if (stack.size() != outputs.size()) {
      throw std::runtime_error("the float64 call returned " + std::to_string(stack.size()) + " values, the op " +
                               std::to_string(outputs.size()));
    }
    for (size_t i = 0; i < outputs.size(); ++i) overwrite(outputs[i], stack[i], i);
    if (outputs.empty()) {
      const c10::ArrayRef<const c10::IValue> inputs = fn.inputs();
      for (size_t i = 0; i < schema.arguments().size() && i < inputs.size() && i < arguments.size(); ++i) {
        const c10::AliasInfo* alias = schema.arguments()[i].alias_info();
        if (alias != nullptr && alias->isWrite()) overwrite(inputs[i], arguments[i], i);
      }
    }
    entries_[call.entry]->calls.fetch_add(1, std::memory_order_relaxed);
  } catch (const std::exception& ex) {
    fail(fn.name(), ex.what());
  }
}

void OpOverride::fail(const std::string& op, const std::string& why) {
  errors_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(notes_mutex_);
  if (notes_.size() >= kMaxNotes) return;
  std::string line = op + ": " + why;
  const size_t eol = line.find('\n');  // torch's messages carry their C++ stack after the first line
  if (eol != std::string::npos) line.resize(eol);
  notes_.push_back(line);
  std::fprintf(stderr, "acc: ACC_OVERRIDE: %s; this call is left as the op computed it\n", line.c_str());
}

void OpOverride::noteCompiled() {
  if (compiled_.fetch_add(1, std::memory_order_relaxed) == 0) {
    std::fprintf(stderr,
                 "acc: ACC_OVERRIDE: this program runs torch.compile'd code, whose ops are not dispatched one by one "
                 "and so not overridden; ACC_EAGER=1 runs them op by op\n");
  }
}

std::string OpOverride::describe() const {
  std::string s;
  for (const auto& e : entries_) s += (s.empty() ? "" : ", ") + e->op.text();
  return s;
}

std::string OpOverride::summary() const {
  std::string s = "acc: ACC_OVERRIDE computed in float64 on the CPU:";
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = *entries_[i];
    s += (i ? ", " : " ") + e.op.text() + " " + std::to_string(e.calls.load()) + " calls";
    if (e.refused.load()) s += " (refused: draws random numbers)";
  }
  const uint64_t errors = errors_.load();
  if (errors != 0) s += "; " + std::to_string(errors) + " calls failed and were left as computed";
  return s;
}

nlohmann::json OpOverride::toJson() const {
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& e : entries_) {
    ops.push_back({{"op", e->op.text()}, {"calls", e->calls.load()}, {"refused", e->refused.load()}});
  }
  std::lock_guard<std::mutex> lock(notes_mutex_);
  return {{"ops", ops}, {"failed", errors_.load()}, {"compiled_calls", compiled_.load()},
          {"without_memory", unreal_.load()}, {"notes", notes_}};
}

}  // namespace acc::recorder
