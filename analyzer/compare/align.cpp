#include "analyzer/compare/align.h"

#include <cstdint>
#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>

#include "analyzer/read/numeric_settings.h"

namespace acc::analyzer {
namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdULL;
}

uint64_t hashString(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

constexpr int kNone = std::numeric_limits<int>::min() / 2;

void alignStep(const std::vector<RecordMeta>& m0, const std::vector<RecordMeta>& m1,
               const std::vector<uint32_t>& a, const std::vector<uint32_t>& b, size_t max_cells,
               Alignment& out) {
  size_t n = a.size(), m = b.size();
  std::vector<char> used0(n, 0), used1(m, 0);
  std::vector<std::pair<uint32_t, uint32_t>> pairs;  // positions in a, b
  // Common prefix and suffix by name: the whole step when nothing differs.
  size_t prefix = 0;
  while (prefix < n && prefix < m && m0[a[prefix]].name == m1[b[prefix]].name) ++prefix;
  size_t suffix = 0;
  while (suffix < n - prefix && suffix < m - prefix &&
         m0[a[n - 1 - suffix]].name == m1[b[m - 1 - suffix]].name) {
    ++suffix;
  }
  for (size_t i = 0; i < prefix; ++i) pairs.push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(i)});
  const size_t n_mid = n - prefix - suffix, m_mid = m - prefix - suffix;
  if (n_mid > 0 && m_mid > 0) {
    auto score = [&](size_t i, size_t j) {
      const RecordMeta& x = m0[a[prefix + i]];
      const RecordMeta& y = m1[b[prefix + j]];
      if (x.op_key != y.op_key || x.op != y.op || x.pass != y.pass) return 0;
      return 2 + (x.shape_key == y.shape_key ? 1 : 0) + (x.name == y.name ? 1 : 0);
    };
    bool banded = false;
    for (auto [i, j] : alignSequences(n_mid, m_mid, score, max_cells, &banded)) {
      pairs.push_back({static_cast<uint32_t>(prefix + i), static_cast<uint32_t>(prefix + j)});
    }
    if (banded) {
      out.notes.push_back("step " + std::to_string(m0[a[0]].step) + ": " + std::to_string(n_mid) + " x " +
                          std::to_string(m_mid) + " differing records aligned within a diagonal band");
    }
  }
  for (size_t k = 0; k < suffix; ++k) {
    pairs.push_back({static_cast<uint32_t>(n - suffix + k), static_cast<uint32_t>(m - suffix + k)});
  }
  for (auto [i, j] : pairs) used0[i] = used1[j] = 1;
  // Records the alignment left over whose names still agree ran in another
  // order (e.g. backward nodes on several threads): pair them by name.
  std::unordered_map<std::string, uint32_t> left1;
  for (size_t j = 0; j < m; ++j) {
    if (!used1[j]) left1.emplace(m1[b[j]].name, static_cast<uint32_t>(j));
  }
  for (size_t i = 0; i < n && !left1.empty(); ++i) {
    if (used0[i]) continue;
    auto it = left1.find(m0[a[i]].name);
    if (it == left1.end() || m1[b[it->second]].op != m0[a[i]].op) continue;
    pairs.push_back({static_cast<uint32_t>(i), it->second});
    used0[i] = used1[it->second] = 1;
    left1.erase(it);
  }
  for (auto [i, j] : pairs) out.pairs.push_back({a[i], b[j]});
  for (size_t i = 0; i < n; ++i) {
    if (!used0[i]) out.only0.push_back(a[i]);
  }
  for (size_t j = 0; j < m; ++j) {
    if (!used1[j]) out.only1.push_back(b[j]);
  }
}

}  // namespace

RecordMeta recordMeta(const format::OpRecord& r) {
  RecordMeta m;
  m.index = r.index;
  m.name = r.name;
  m.op = r.op;
  m.grad_fn = r.grad_fn;
  m.forward_name = r.forward_name;
  m.has_module = r.has_module;
  m.module = r.module;
  m.pass = r.pass;
  m.step = r.step;
  m.stack_id = r.stack_id;
  m.op_key = mix(hashString(r.op), static_cast<uint64_t>(r.pass));
  uint64_t h = 7;
  for (const format::Tensor& t : r.tensors) {
    h = mix(h, static_cast<uint64_t>(t.role));
    h = mix(h, t.position);
    h = mix(h, t.item);
    h = mix(h, t.shape.size());
    for (int64_t d : t.shape) h = mix(h, static_cast<uint64_t>(d));
    m.off_cpu = m.off_cpu || offCpu(t);
    const bool produced = t.role == format::Role::Output || t.role == format::Role::GradOut;
    if (produced && t.has_stats && m.output_checksum == 0) m.output_checksum = t.stats.checksum;
  }
  m.shape_key = h;
  return m;
}

std::vector<std::pair<uint32_t, uint32_t>> alignSequences(size_t n, size_t m,
                                                          const std::function<int(size_t, size_t)>& score,
                                                          size_t max_cells, bool* banded) {
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  if (banded) *banded = false;
  if (n == 0 || m == 0) return pairs;
  // Row i (0..n) covers columns [lo[i], hi[i]] around the diagonal j = i*m/n.
  std::vector<size_t> lo(n + 1), hi(n + 1), offset(n + 2);
  size_t half = m;  // full rows
  if ((n + 1) * (m + 1) > max_cells) {
    half = std::max<size_t>(max_cells / (2 * (n + 1)), m / n + 2);
    if (banded) *banded = true;
  }
  offset[0] = 0;
  for (size_t i = 0; i <= n; ++i) {
    size_t c = static_cast<size_t>(static_cast<double>(i) * static_cast<double>(m) / static_cast<double>(n));
    lo[i] = c > half ? c - half : 0;
    hi[i] = std::min(m, c + half);
    if (i == 0) lo[i] = 0;
    if (i == n) hi[i] = m;
    offset[i + 1] = offset[i] + (hi[i] - lo[i] + 1);
  }
  // back: 0 diagonal (pair), 1 up (skip i), 2 left (skip j).
  std::vector<uint8_t> back(offset[n + 1], 2);
  std::vector<int> prev(m + 1, kNone), cur(m + 1, kNone);
  for (size_t j = lo[0]; j <= hi[0]; ++j) prev[j] = 0;
  for (size_t i = 1; i <= n; ++i) {
    std::fill(cur.begin() + static_cast<long>(lo[i]), cur.begin() + static_cast<long>(hi[i]) + 1, kNone);
    auto inPrev = [&](size_t j) { return j >= lo[i - 1] && j <= hi[i - 1]; };
    for (size_t j = lo[i]; j <= hi[i]; ++j) {
      int best = inPrev(j) ? prev[j] : kNone;
      uint8_t dir = 1;
      if (j > lo[i] && cur[j - 1] > best) {
        best = cur[j - 1];
        dir = 2;
      }
      if (j > 0 && inPrev(j - 1) && prev[j - 1] != kNone) {
        int s = score(i - 1, j - 1);
        if (s > 0 && prev[j - 1] + s >= best) {
          best = prev[j - 1] + s;
          dir = 0;
        }
      }
      cur[j] = best;
      back[offset[i] + (j - lo[i])] = dir;
    }
    // Only the previous row is needed: values outside the band stay unreachable.
    for (size_t j = lo[i - 1]; j <= hi[i - 1]; ++j) prev[j] = kNone;
    for (size_t j = lo[i]; j <= hi[i]; ++j) prev[j] = cur[j];
  }
  size_t i = n, j = m;
  while (i > 0 && j > 0) {
    if (j < lo[i] || j > hi[i]) break;  // cannot happen: the band holds the path
    uint8_t dir = back[offset[i] + (j - lo[i])];
    if (dir == 0) {
      pairs.push_back({static_cast<uint32_t>(i - 1), static_cast<uint32_t>(j - 1)});
      --i;
      --j;
    } else if (dir == 1) {
      --i;
    } else {
      --j;
    }
  }
  std::reverse(pairs.begin(), pairs.end());
  return pairs;
}

Alignment alignRank(const std::vector<RecordMeta>& m0, const std::vector<RecordMeta>& m1, size_t max_cells) {
  std::map<int64_t, std::pair<std::vector<uint32_t>, std::vector<uint32_t>>> steps;
  for (size_t i = 0; i < m0.size(); ++i) steps[m0[i].step].first.push_back(static_cast<uint32_t>(i));
  for (size_t j = 0; j < m1.size(); ++j) steps[m1[j].step].second.push_back(static_cast<uint32_t>(j));
  Alignment out;
  for (auto& [step, ab] : steps) {
    auto& [a, b] = ab;
    if (a.empty() || b.empty()) {
      out.only0.insert(out.only0.end(), a.begin(), a.end());
      out.only1.insert(out.only1.end(), b.begin(), b.end());
      continue;
    }
    alignStep(m0, m1, a, b, max_cells, out);
  }
  std::sort(out.pairs.begin(), out.pairs.end(),
            [&](const AlignedPair& x, const AlignedPair& y) { return m0[x.i0].index < m0[y.i0].index; });
  std::sort(out.only0.begin(), out.only0.end(), [&](uint32_t x, uint32_t y) { return m0[x].index < m0[y].index; });
  std::sort(out.only1.begin(), out.only1.end(), [&](uint32_t x, uint32_t y) { return m1[x].index < m1[y].index; });
  return out;
}

}  // namespace acc::analyzer
