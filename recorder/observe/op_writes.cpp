#include "recorder/observe/op_writes.h"

#include <ATen/core/function_schema.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "format/record.h"
#include "recorder/per_thread.h"

namespace acc::recorder {
namespace {

// Arguments ops write without their schema saying so, and without moving
// the version counter: torch 1.13's batch norms (native_batch_norm,
// cudnn_batch_norm, ...) update their running statistics in place.
bool writesUnannounced(const std::string& argument) {
  return argument == "running_mean" || argument == "running_var";
}

struct Entry {
  std::string name;  // checked on each hit: the key is an address
  OpWrites writes;
};

// Keyed by the op's name as RecordFunction holds it: for a dispatcher op a
// pointer into its schema, one per overload for as long as the op is
// registered. Named scopes hold their own strings and are not cached.
struct Cache {
  std::shared_mutex mutex;
  std::unordered_map<const char*, std::unique_ptr<Entry>> entries;
  std::vector<std::unique_ptr<Entry>> replaced;  // kept: other threads may still read them
};

Cache& cache() {
  static Cache* const c = new Cache;  // never destroyed: ops run until the process ends
  return *c;
}

const OpWrites kUnknown{};

}  // namespace

const OpWrites& opWrites(const at::RecordFunction& fn) {
  const char* name = fn.name();
  // This thread's recent lookups, in front of the shared map: on a device
  // every op asks (StatsBatch::beforeOp), and the map's lock and hash cost
  // several times what a hit here does. Keyed by the address as the map is
  // (overloads may share a name), the name checked as the map checks it;
  // entries are never freed. On the heap (per_thread.h): 1 KB.
  constexpr size_t kRecent = 64;
  struct Recent {
    const char* key = nullptr;
    const Entry* entry = nullptr;
  };
  struct RecentTable {
    Recent slots[kRecent];
  };
  RecentTable* recent = PerThread<RecentTable>::get();
  Recent spare;  // a thread at its exit: no table
  Recent& mine = recent != nullptr ? recent->slots[(reinterpret_cast<uintptr_t>(name) >> 3) % kRecent] : spare;
  if (mine.key == name && std::strcmp(mine.entry->name.c_str(), name) == 0) return mine.entry->writes;
  Cache& c = cache();
  {
    std::shared_lock<std::shared_mutex> lock(c.mutex);
    auto it = c.entries.find(name);
    if (it != c.entries.end() && std::strcmp(it->second->name.c_str(), name) == 0) {
      mine = {name, it->second.get()};
      return mine.entry->writes;
    }
  }
  const auto schema = fn.operator_schema();
  if (!schema) return kUnknown;
  auto e = std::make_unique<Entry>();
  e->name = name;
  e->writes.known = true;
  const auto& args = schema->arguments();
  for (size_t i = 0; i < args.size(); ++i) {
    const bool announced = args[i].alias_info() != nullptr && args[i].alias_info()->isWrite();
    const bool unannounced = !announced && writesUnannounced(args[i].name());
    if (announced || unannounced) e->writes.written.push_back(static_cast<uint16_t>(i));
    e->writes.unannounced = e->writes.unannounced || unannounced;
  }
  std::unique_lock<std::shared_mutex> lock(c.mutex);
  std::unique_ptr<Entry>& slot = c.entries[name];
  if (!slot || slot->name != e->name) {
    if (slot) c.replaced.push_back(std::move(slot));  // an op registered again at this address
    slot = std::move(e);
  }  // else another thread was first
  mine = {name, slot.get()};
  return slot->writes;
}

bool writesInPlace(std::string_view op) { return !op.empty() && op.back() == '_'; }

bool replacesArgument0(std::string_view op) {
  static const char* const kOps[] = {"aten::copy_",    "aten::fill_",        "aten::zero_",
                                     "aten::uniform_", "aten::normal_",      "aten::bernoulli_",
                                     "aten::random_",  "aten::exponential_", "aten::geometric_",
                                     "aten::cauchy_",  "aten::log_normal_",  "aten::set_",
                                     "aten::resize_"};
  for (const char* name : kOps) {
    if (op == name) return true;
  }
  return false;
}

std::optional<double> filledWith(const format::OpRecord& r) {
  // string_views: a name of another length is told apart without reading
  // it (every recorded op asks, at level 0 too).
  static constexpr std::string_view kZeros[] = {"aten::zero_", "aten::zeros", "aten::zeros_like", "aten::new_zeros"};
  static constexpr std::string_view kOnes[] = {"aten::ones", "aten::ones_like", "aten::new_ones"};
  constexpr std::string_view kFill = "aten::fill_";
  const std::string_view op = r.op;
  for (std::string_view name : kZeros) {
    if (op == name) return 0.0;
  }
  for (std::string_view name : kOnes) {
    if (op == name) return 1.0;
  }
  if (op != kFill) return std::nullopt;
  if (r.has_overload && r.overload != "Scalar") return std::nullopt;
  // fill_(self, value): the value's text when it is a number (fill_.Tensor
  // passes a tensor, which has none).
  for (const format::Scalar& a : r.scalars) {
    if (a.position != 1 || a.value.empty()) continue;
    if (a.value == "True") return 1.0;
    if (a.value == "False") return 0.0;
    char* end = nullptr;
    const double v = std::strtod(a.value.c_str(), &end);
    if (end != nullptr && *end == '\0') return v;
  }
  return std::nullopt;
}

}  // namespace acc::recorder
