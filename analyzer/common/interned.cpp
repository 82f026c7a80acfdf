#include "analyzer/common/interned.h"

#include <memory>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

namespace acc::analyzer {
namespace {

// Strings by id in blocks that never move, so that str() reads without a
// lock: an id reaches another thread only through some synchronisation,
// which also publishes the block and string it names.
constexpr uint32_t kBlockBits = 12;
constexpr uint32_t kBlocks = 1u << 16;  // 2^28 strings

struct Pool {
  std::mutex mutex;
  std::unordered_map<std::string_view, uint32_t> ids;  // views into the blocks
  std::unique_ptr<std::string[]> blocks[kBlocks];
  uint32_t count = 0;

  Pool() { add(""); }
  uint32_t add(std::string_view s) {
    const uint32_t id = count;
    if ((id >> kBlockBits) >= kBlocks) throw std::length_error("more distinct names than compare can hold");
    std::unique_ptr<std::string[]>& block = blocks[id >> kBlockBits];
    if (!block) block = std::make_unique<std::string[]>(size_t(1) << kBlockBits);
    std::string& slot = block[id & ((1u << kBlockBits) - 1)];
    slot = std::string(s);
    ids.emplace(std::string_view(slot), id);
    ++count;
    return id;
  }
};

// Never freed: interned strings live as long as the process.
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

}  // namespace

Interned::Interned(std::string_view s) {
  if (s.empty()) return;
  Pool& p = pool();
  std::lock_guard<std::mutex> lock(p.mutex);
  auto it = p.ids.find(s);
  id_ = it != p.ids.end() ? it->second : p.add(s);
}

const std::string& Interned::str() const {
  const Pool& p = pool();
  return p.blocks[id_ >> kBlockBits][id_ & ((1u << kBlockBits) - 1)];
}

}  // namespace acc::analyzer
