#include "recorder/observe/stack_registry.h"

#define UNW_LOCAL_ONLY
#include <cstdint>
#include <cxxabi.h>
#include <dlfcn.h>
#include <libunwind.h>

#include <cstdio>
#include <cstdlib>

#include "format/record.h"

namespace acc::recorder {
namespace {

constexpr int kMaxNativeFrames = 64;
constexpr size_t kMaxPythonFrames = 64;
// Frames of acc itself (the callback and this capture) are not the user's.
constexpr int kSkippedNativeFrames = 3;

std::string describeNative(void* ip) {
  Dl_info info{};
  char buf[64];
  if (dladdr(ip, &info) == 0 || info.dli_fname == nullptr) {
    std::snprintf(buf, sizeof buf, "%p", ip);
    return buf;
  }
  std::string object = info.dli_fname;
  size_t slash = object.rfind('/');
  if (slash != std::string::npos) object = object.substr(slash + 1);
  std::snprintf(buf, sizeof buf, "+0x%zx",
                static_cast<size_t>(static_cast<char*>(ip) - static_cast<char*>(info.dli_fbase)));
  std::string text = object + buf;
  if (info.dli_sname != nullptr) {
    int status = 0;
    char* demangled = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
    text += " ";
    text += status == 0 && demangled != nullptr ? demangled : info.dli_sname;
    std::free(demangled);
  }
  return text;
}

}  // namespace

StackRegistry::StackRegistry(env::StackMode mode, Emit emit)
    : mode_(mode), emit_(std::move(emit)) {}

uint64_t StackRegistry::distinctStacks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ids_.size();
}

uint64_t StackRegistry::capture() {
  bool want_python = mode_ == env::StackMode::Python || mode_ == env::StackMode::Both;
  bool want_native = mode_ == env::StackMode::Native || mode_ == env::StackMode::Both;
  void* ips[kMaxNativeFrames];
  int native = 0;
  if (want_native) {
    native = unw_backtrace(ips, kMaxNativeFrames);
    native = native > kSkippedNativeFrames ? native : 0;
  }
  void* const* user_ips = ips + (native > 0 ? kSkippedNativeFrames : 0);
  int user_count = native > 0 ? native - kSkippedNativeFrames : 0;
  std::string native_key(reinterpret_cast<const char*>(user_ips),
                         static_cast<size_t>(user_count) * sizeof(void*));

  // Looks the stack up, and on first sight builds and emits its record.
  auto lookup = [&](const std::string& key, const std::vector<PythonFrameKey>* py) -> std::pair<uint64_t, bool> {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = ids_.find(key);
    if (it != ids_.end()) return {it->second, false};
    uint64_t id = ids_.size() + 1;
    ids_.emplace(key, id);
    format::StackRecord record;
    record.id = id;
    if (py != nullptr) {
      for (const PythonFrameKey& f : *py) record.frames.push_back({format::FrameKind::Python, python_.describe(f)});
    }
    for (int i = 0; i < user_count; ++i) {
      record.frames.push_back({format::FrameKind::Native, describeNative(user_ips[i])});
    }
    std::string bytes;
    format::encode(record, bytes);
    emit_(std::move(bytes));
    return {id, true};
  };

  uint64_t id = 0;
  bool visited = false;
  if (want_python) {
    python_.capture(kMaxPythonFrames, [&](const std::vector<PythonFrameKey>& frames) {
      visited = true;
      std::string key;
      for (const PythonFrameKey& f : frames) {
        key.append(reinterpret_cast<const char*>(&f.code), sizeof f.code);
        key.append(reinterpret_cast<const char*>(&f.line), sizeof f.line);
      }
      key += native_key;
      auto [found, is_new] = lookup(key, &frames);
      id = found;
      return is_new;  // a new stack keeps its code objects alive
    });
  }
  if (!visited && user_count > 0) id = lookup(native_key, nullptr).first;
  return id;
}

}  // namespace acc::recorder
