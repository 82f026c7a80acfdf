#include "analyzer/content_table.h"

namespace acc::analyzer {

uint64_t ContentTable::resolve(format::OpRecord& r) {
  uint64_t unknown = 0;
  for (format::Tensor& t : r.tensors) {
    if (t.content == 0) continue;
    if (!t.content_ref) {
      Content& c = contents_[t.content];
      c.has_stats = t.has_stats;
      c.stats = t.stats;
      c.has_data = t.has_data;
      c.data_in_stream = t.data_in_stream;
      c.data_offset = t.data_offset;
      c.data_size = t.has_data ? t.data_size : 0;
      continue;
    }
    t.content_ref = false;
    auto it = contents_.find(t.content);
    if (it == contents_.end()) {
      ++unknown;
      t.has_stats = false;
      t.has_data = false;
      t.data_in_stream = false;
      continue;
    }
    const Content& c = it->second;
    t.has_stats = t.has_stats && c.has_stats;
    if (t.has_stats) t.stats = c.stats;
    t.has_data = t.has_data && c.has_data;
    t.data_in_stream = t.has_data && c.data_in_stream;
    t.data_offset = t.has_data ? c.data_offset : 0;
    t.data_size = t.has_data ? c.data_size : 0;
  }
  return unknown;
}

}  // namespace acc::analyzer
