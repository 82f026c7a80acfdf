#include "analyzer/common/result.h"

#include <stdexcept>

#include "analyzer/compare/record_spill.h"

namespace acc::analyzer {

const char* verdictName(Verdict v) {
  switch (v) {
    case Verdict::Pass: return "pass";
    case Verdict::Warn: return "warn";
    case Verdict::Fail: return "fail";
  }
  return "?";
}

const char* replayStateName(ReplayState s) {
  switch (s) {
    case ReplayState::NotTried: return "";
    case ReplayState::Confirmed: return "confirmed";
    case ReplayState::Amplifies: return "amplifies";
    case ReplayState::Reproduced: return "reproduced";
    case ReplayState::NotReplayable: return "not replayable";
    case ReplayState::MayAmplify: return "may amplify";
  }
  return "?";
}

const RecordComparison* CompareResult::firstOrigin() const {
  return origins.empty() ? nullptr : &recordAt(*this, origins.front());
}

size_t recordCount(const CompareResult& r) { return r.spill ? r.spill->size() : r.records.size(); }

const RecordComparison& recordAt(const CompareResult& r, size_t position) {
  if (!r.spill) return r.records.at(position);
  auto it = r.kept.find(position);
  if (it == r.kept.end()) throw std::logic_error("record " + std::to_string(position) + " is spilled and was not kept");
  return it->second;
}

bool isDtypeCast(const UnmatchedRecord& u) {
  if (u.grad_fn == "ToCopyBackward0") return true;
  return u.grad_fn.empty() && (u.op == "aten::to" || u.op == "aten::_to_copy" || u.op == "aten::type_as");
}

void forEachRecord(const CompareResult& r, const std::function<void(size_t, const RecordComparison&)>& f) {
  if (!r.spill) {
    for (size_t k = 0; k < r.records.size(); ++k) f(k, r.records[k]);
    return;
  }
  size_t position = 0;
  r.spill->forEach([&](RecordComparison& spilled) {
    const size_t at = position++;
    auto kept = r.kept.find(at);
    RecordComparison& record = kept != r.kept.end() ? (spilled = kept->second) : spilled;
    if (r.keeps) {
      std::vector<TensorPair> pairs;
      for (TensorPair& p : record.tensors) {
        if (r.keeps(p)) pairs.push_back(std::move(p));
      }
      if (pairs.empty()) return;
      record.tensors = std::move(pairs);
    }
    f(at, record);
  });
}

}  // namespace acc::analyzer
