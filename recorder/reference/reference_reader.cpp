#include "recorder/reference/reference_reader.h"

#include <functional>
#include <string_view>
#include <utility>

namespace acc::recorder {
namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  // One multiply per word, not eight: every record is hashed twice (as
  // read, as judged). In memory only, never written.
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdULL;
  return h ^ (h >> 33);
}

uint64_t keyOf(uint64_t signature, uint64_t occurrence) { return mix(signature, occurrence + 1); }

}  // namespace

uint64_t alignmentSignature(const format::OpRecord& r) {
  uint64_t h = std::hash<std::string_view>{}(r.op);
  h = mix(h, static_cast<uint64_t>(r.pass));
  for (const format::Tensor& t : r.tensors) {
    h = mix(h, (static_cast<uint64_t>(t.role) << 48) ^ (static_cast<uint64_t>(t.position) << 24) ^ t.item);
    h = mix(h, t.shape.size());
    for (int64_t d : t.shape) h = mix(h, static_cast<uint64_t>(d));
  }
  return h;
}

ReferenceReader::ReferenceReader(const std::string& file) : file_(file) {}

bool ReferenceReader::readNext() {
  while (!ended_) {
    format::RecordKind kind;
    std::string_view body;
    bool more = false;
    try {
      more = cursor_ && cursor_->next(kind, body);
    } catch (const format::FormatError&) {
      ++corrupt_;  // the rest of this frame cannot be delimited
      cursor_.reset();
      continue;
    }
    if (!more) {
      cursor_.reset();
      if (!file_.next(payload_)) {
        ended_ = true;
        return false;
      }
      cursor_.emplace(payload_);
      continue;
    }
    if (kind != format::RecordKind::Op) continue;
    format::OpRecord r;
    try {
      r = format::decodeOp(body, /*with_data=*/false, cursor_->dataOffset());
    } catch (const format::FormatError&) {
      ++corrupt_;
      continue;
    }
    contents_.resolve(r);
    // Judged on statistics: the bytes are not read.
    for (format::Tensor& t : r.tensors) t.has_data = false;
    ++read_;
    last_step_ = std::max(last_step_, r.step);
    Step& step = window_[r.step];
    const uint64_t signature = alignmentSignature(r);
    const uint64_t key = keyOf(signature, step.read[signature]++);
    if (step.records.insert_or_assign(key, std::move(r)).second) ++window_size_;
    return true;
  }
  return false;
}

void ReferenceReader::forgetBefore(int64_t step) {
  while (!window_.empty() && window_.begin()->first < step) {
    unasked_ += window_.begin()->second.records.size();
    window_size_ -= window_.begin()->second.records.size();
    window_.erase(window_.begin());
  }
}

const format::OpRecord* ReferenceReader::find(const format::OpRecord& r) {
  const int64_t step = r.step;
  // The run under test judges a step's records in about the order it made
  // them; what the reference has of two steps ago it will not ask for.
  forgetBefore(step - 1);
  const uint64_t signature = alignmentSignature(r);
  const uint64_t key = keyOf(signature, window_[step].asked[signature]++);
  for (;;) {
    Step& s = window_[step];
    auto it = s.records.find(key);
    if (it != s.records.end()) {
      found_ = std::move(it->second);
      s.records.erase(it);
      --window_size_;
      return &found_;
    }
    if (ended_ || (last_step_ != INT64_MIN && last_step_ > step + 1) || window_size_ >= kMaxWindow) return nullptr;
    if (!readNext()) return nullptr;
  }
}

}  // namespace acc::recorder
