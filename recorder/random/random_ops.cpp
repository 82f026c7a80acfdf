#include "recorder/random/random_ops.h"

#include <ATen/core/dispatch/Dispatcher.h>

#include <string>
#include <unordered_map>

namespace acc::recorder {
namespace {

bool tagged(const at::RecordFunction& fn) {
  auto name = fn.operator_name();
  if (!name) return false;
  auto handle = c10::Dispatcher::singleton().findOp(*name);
  return handle && handle->hasTag(at::Tag::nondeterministic_seeded);
}

RandomKind classify(const at::RecordFunction& fn) {
  const RandomKind kind = format::randomKindOf(fn.name());
  if (kind != RandomKind::None) return kind;
  // A tagged op not listed: a kernel acc does not know how to replay.
  return std::string_view(fn.name()).substr(0, 6) == "aten::" && tagged(fn) ? RandomKind::Opaque : RandomKind::None;
}

}  // namespace

bool drawsNothing(const at::RecordFunction& fn) {
  auto schema = fn.operator_schema();  // a copy: Opaque ops are rare
  if (!schema) return false;
  c10::ArrayRef<const c10::IValue> inputs = fn.inputs();
  const auto& args = schema->arguments();
  for (size_t i = 0; i < args.size() && i < inputs.size(); ++i) {
    const std::string& name = args[i].name();
    if (name == "dropout_p" && inputs[i].isDouble() && inputs[i].toDouble() == 0) return true;
    if ((name == "train" || name == "training") && inputs[i].isBool() && !inputs[i].toBool()) return true;
  }
  return false;
}

RandomKind randomKind(const at::RecordFunction& fn) {
  // A dispatcher op's name is its schema's string, the same address for the
  // life of the process; other events may name themselves with a string of
  // their own, so a hit is confirmed by its text and the cache is bounded.
  struct Known {
    std::string name;
    RandomKind kind;
  };
  thread_local std::unordered_map<const char*, Known> known;
  const char* name = fn.name();
  auto it = known.find(name);
  if (it != known.end() && it->second.name == name) return it->second.kind;
  if (known.size() >= 4096) known.clear();
  RandomKind kind = classify(fn);
  known[name] = Known{name, kind};
  return kind;
}

}  // namespace acc::recorder
