#include "analyzer/read/record_search.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "analyzer/common/text.h"

namespace acc::analyzer {
namespace {

constexpr size_t kMaxSuggestions = 10;

}  // namespace

std::string opPrefix(const std::string& name) {
  for (size_t i = 0; i + 1 < name.size(); ++i) {
    if (name[i] == '.' && std::isdigit(static_cast<unsigned char>(name[i + 1]))) return name.substr(0, i);
  }
  return name;
}

RecordSearch::RecordSearch(std::string name, std::optional<int64_t> step)
    : name_(std::move(name)), prefix_(opPrefix(name_)), step_(step) {}

bool RecordSearch::wants(const format::OpRecord& r) {
  if (r.name != name_) {
    suggest(r);
    return false;
  }
  steps_.insert(r.step);
  return (!step_ || *step_ == r.step) && (!found_ || r.index < found_->index);
}

void RecordSearch::visit(format::OpRecord&& r) {
  if (wants(r)) take(std::move(r));
}

void RecordSearch::suggest(const format::OpRecord& r) {
  if (opPrefix(r.name) == prefix_) {
    if (same_op_.size() < 2000) same_op_.insert(r.name);
  } else if (similar_.size() < kMaxSuggestions &&
             lowerCase(r.name).find(lowerCase(prefix_.substr(prefix_.rfind(':') + 1))) != std::string::npos) {
    similar_.insert(r.name);
  }
}

// Up to kMaxSuggestions names, those with the op number nearest NAME's first.
std::vector<std::string> RecordSearch::suggestions() const {
  std::vector<std::string> names(same_op_.begin(), same_op_.end());
  if (names.empty()) names.assign(similar_.begin(), similar_.end());
  long long wanted = std::atoll(name_.c_str() + std::min(name_.size(), prefix_.size() + 1));
  auto distance = [&](const std::string& n) {
    return std::llabs(std::atoll(n.c_str() + std::min(n.size(), prefix_.size() + 1)) - wanted);
  };
  std::stable_sort(names.begin(), names.end(),
                   [&](const std::string& a, const std::string& b) { return distance(a) < distance(b); });
  if (names.size() > kMaxSuggestions) names.resize(kMaxSuggestions);
  return names;
}

std::string RecordSearch::notFound(const std::string& command, const std::string& dir,
                                   std::optional<int64_t> rank) const {
  std::string s = "acc-analyzer " + command + ": no record named " + name_;
  if (step_ && !steps_.empty()) s += " in step " + std::to_string(*step_);
  if (rank) s += " in rank " + std::to_string(*rank);
  s += " in " + dir + "\n";
  if (step_ && !steps_.empty()) {
    s += "  it occurs in step(s):";
    for (int64_t st : steps_) s += " " + std::to_string(st);
    s += "\n";
  } else if (std::vector<std::string> close = suggestions(); !close.empty()) {
    s += "  did you mean:";
    for (const std::string& n : close) s += " " + n;
    s += "\n";
  } else {
    s += "  (`acc-analyzer list " + dir + "` prints every name)\n";
  }
  return s;
}

}  // namespace acc::analyzer
