#include "analyzer/judge/replay_inputs.h"

#include <cstring>
#include <map>

namespace acc::analyzer {
namespace {

using format::Role;

bool consumed(const format::OpRecord& r, const format::Tensor& t) {
  return r.pass == format::Pass::Forward ? t.role == Role::Input : t.role == Role::GradIn;
}

// The record with its produced tensors only (`produced`), or with its
// consumed tensors and the produced ones' metadata (what replay must make).
format::OpRecord keep(const format::OpRecord& r, bool produced) {
  format::OpRecord out = r;
  out.tensors.clear();
  for (const format::Tensor& t : r.tensors) {
    if (produced ? produces(r, t) : consumed(r, t)) {
      out.tensors.push_back(t);
    } else if (!produced && produces(r, t)) {
      format::Tensor meta = t;
      meta.has_data = meta.data_in_stream = false;
      meta.data.clear();
      meta.data_size = 0;
      out.tensors.push_back(std::move(meta));
    }
  }
  return out;
}

// Why the values replay needs are not in the record, or "".
std::string missingValues(const format::OpRecord& r) {
  for (const format::Tensor& t : r.tensors) {
    if (!consumed(r, t)) continue;
    if (t.uninitialized) return "an input holds uninitialized memory (not recorded)";
    if (!t.has_data) return "its inputs were recorded without their values (replay needs ACC_LEVEL=2)";
  }
  return "";
}

}  // namespace

bool produces(const format::OpRecord& r, const format::Tensor& t) {
  return r.pass == format::Pass::Forward ? t.role == Role::Output : t.role == Role::GradOut;
}

ReadDamage forEachReplayItem(const RankRecording& rank, const std::function<bool(const format::OpRecord&)>& want,
                             const std::function<void(ReplayItem&&)>& take,
                             std::map<uint64_t, format::StackRecord>* stacks) {
  // Forward records' metadata, for the backward records after them (the
  // current and the previous step: backward runs in its forward's step).
  std::map<std::pair<int64_t, std::string>, format::OpRecord> forward;
  int64_t step = INT64_MIN;
  return forEachRecord(recordsFile(rank), [&](const RawRecord& raw) {
    if (raw.kind == format::RecordKind::Stack && stacks) {
      format::StackRecord st = format::decodeStack(raw.body);
      (*stacks)[st.id] = std::move(st);
    }
    if (raw.kind != format::RecordKind::Op) return;
    format::OpRecord meta = raw.decodeOp(false);
    if (meta.step != step) {
      for (auto it = forward.begin(); it != forward.end();) {
        it = it->first.first < meta.step - 1 ? forward.erase(it) : std::next(it);
      }
      step = meta.step;
    }
    if (meta.pass == format::Pass::Forward) {
      // ACC_REFERENCE's copy of a backward find's forward op, written with
      // its inputs' values after the op itself (format::kCapturedSuffix).
      std::string name = meta.name;
      if (format::isCapturedForward(name)) name.resize(name.size() - std::strlen(format::kCapturedSuffix));
      forward[{meta.step, std::move(name)}] = meta;
    }
    if (!want(meta)) return;
    format::OpRecord full = raw.decodeOp(true);
    ReplayItem item;
    item.index = full.index;
    item.recorded = keep(full, true);
    format::OpRecord inputs = keep(full, false);
    if (full.pass == format::Pass::Backward) {
      auto f = forward.find({full.step, full.forward_name});
      const size_t k = full.name.rfind(".bwd.");
      if (full.forward_name.empty() || f == forward.end()) {
        item.not_replayable = "its forward op was not recorded";
      } else if (k != std::string::npos) {
        item.not_replayable = "one of several autograd nodes of a composite op (" + full.grad_fn + ")";
        item.sums = replaySums(inputs, item.recorded);
      } else {
        if (f->second.stack_id) item.recorded.stack_id = f->second.stack_id;
        format::OpRecord fwd = keep(f->second, false);
        raw.loadData(fwd);
        item.not_replayable = missingValues(fwd);
        item.request.records.push_back(std::move(fwd));
      }
    }
    if (item.not_replayable.empty()) item.not_replayable = missingValues(inputs);
    // A backward record's products are its forward op's (e.g. linear's).
    const format::OpRecord& op = item.request.records.empty() ? inputs : item.request.records.front();
    item.precision = allowedPrecision(rank.manifest, op.op, offCpu(full) || offCpu(op));
    item.request.reduced_mantissa = static_cast<uint8_t>(item.precision.mantissa_bits);
    item.request.records.push_back(std::move(inputs));
    if (!item.not_replayable.empty()) item.request = replay::Request();
    take(std::move(item));
  });
}

}  // namespace acc::analyzer
