#include "analyzer/compare/scan.h"

#include <cstdint>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

namespace acc::analyzer {
namespace {

uint64_t expectedRecords(const RankRecording& r);

void scanRank(ScannedRank& s, std::string& problem, std::atomic<uint64_t>& scanned) {
  s.records.reserve(expectedRecords(s.rank));  // no doubling beyond what a long run needs
  try {
    ReadDamage damage = readRecords(
        s.rank, ReadOptions{},
        [&](format::OpRecord&& r) {
          s.records.push_back(recordMeta(r));
          scanned.fetch_add(1, std::memory_order_relaxed);
        },
        s.stacks);
    if (damage.any()) problem = damage.describe(s.rank.dir + "/records.acc");
  } catch (const InputError& e) {
    problem = std::string(e.what()) + " (rank " + std::to_string(s.rank.rank) + " not compared)";
    s.readable = false;
  }
  std::stable_sort(s.records.begin(), s.records.end(),
                   [](const RecordMeta& a, const RecordMeta& b) { return a.index < b.index; });
}

std::vector<ScannedRank> open(const std::string& dir) {
  std::vector<ScannedRank> out;
  for (RankRecording& rank : openRecording(dir)) {
    ScannedRank s;
    s.rank = std::move(rank);
    out.push_back(std::move(s));
  }
  return out;
}

uint64_t expectedRecords(const RankRecording& r) {
  const nlohmann::json& m = r.manifest;
  if (m.contains("counts") && m["counts"].is_object() && m["counts"].contains("recorded") &&
      m["counts"]["recorded"].is_number_unsigned()) {
    return m["counts"]["recorded"].get<uint64_t>();
  }
  return 0;
}

// Decompression dominates: one thread per records file, at most one per core.
void scanAll(std::vector<ScannedRank*> ranks, std::vector<std::string>& problems,
             const std::function<void(uint64_t, uint64_t)>& tick) {
  std::vector<std::string> found(ranks.size());
  uint64_t expected = 0;
  for (ScannedRank* r : ranks) expected += expectedRecords(r->rank);
  const size_t threads = std::max<size_t>(1, std::min<size_t>(ranks.size(), std::thread::hardware_concurrency()));
  std::atomic<size_t> next{0}, finished{0};
  std::atomic<uint64_t> scanned{0};
  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (size_t i; (i = next++) < ranks.size();) scanRank(*ranks[i], found[i], scanned);
      ++finished;
    });
  }
  while (finished < threads) {
    if (tick) tick(scanned.load(), expected);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (std::thread& t : pool) t.join();
  for (std::string& p : found) {
    if (!p.empty()) problems.push_back(std::move(p));
  }
}

}  // namespace

std::vector<ScannedRank> scanRecording(const std::string& dir, std::vector<std::string>& problems) {
  std::vector<ScannedRank> out = open(dir);
  std::vector<ScannedRank*> ranks;
  for (ScannedRank& s : out) ranks.push_back(&s);
  scanAll(ranks, problems, nullptr);
  return out;
}

void scanRecordings(const std::string& dir0, const std::string& dir1, std::vector<ScannedRank>& side0,
                    std::vector<ScannedRank>& side1, std::vector<std::string>& problems,
                    const std::function<void(uint64_t, uint64_t)>& tick) {
  side0 = open(dir0);
  side1 = open(dir1);
  std::vector<ScannedRank*> ranks;
  for (ScannedRank& s : side0) ranks.push_back(&s);
  for (ScannedRank& s : side1) ranks.push_back(&s);
  scanAll(ranks, problems, tick);
}

}  // namespace acc::analyzer
