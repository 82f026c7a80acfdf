#include "analyzer/read/recording_notes.h"

#include "analyzer/read/json_fields.h"

#include <cstdint>

namespace acc::analyzer {
namespace {

std::string signalText(const nlohmann::json& s) {
  const std::string name = textField(s, "name");
  return "signal " + std::to_string(intField(s, "number")) + (name.empty() ? "" : " (" + name + ")") + " at step " +
         std::to_string(intField(s, "step")) + ", " + textField(s, "time", "?");
}

}  // namespace

std::vector<std::string> recordingNotes(const nlohmann::json& m) {
  std::vector<std::string> notes;
  if (!m.is_object() || m.empty()) return notes;  // no manifest: the reader says so
  const std::string status = textField(m, "status");
  const nlohmann::json& signal = objectField(m, "signal");
  const bool signalled = !signal.empty();
  if (status == "running") {
    notes.push_back("the recording process did not finish (its manifest still says \"running\", last written " +
                    textField(m, "updated_time", textField(m, "start_time", "?")) +
                    "): it was killed (SIGKILL, out of memory), crashed, or is still running; its counts are from "
                    "then");
  } else if (status == "terminated" && signalled) {
    notes.push_back("terminated by " + signalText(signal) + "; the records queued by then were written");
  } else if (signalled) {
    notes.push_back("received " + signalText(signal) + "; the program's own handler ran and the run went on to exit");
  }
  const nlohmann::json& counts = objectField(m, "counts");
  if (const uint64_t lost = countField(counts, "lost_io")) {
    const std::string why = textField(m, "io_error");
    notes.push_back(std::to_string(lost) + " record(s) lost: " + (why.empty() ? "they could not be written" : why));
  }
  if (const uint64_t dropped = countField(counts, "dropped")) {
    const bool drop_mode = textField(objectField(m, "config"), "on_full") == "drop";
    notes.push_back(std::to_string(dropped) + " record(s) dropped" +
                    (drop_mode ? " (the writer's queue was full and ACC_ON_FULL=drop)"
                               : " (submitted after the recording had stopped)"));
  }
  const nlohmann::json& override_ = objectField(m, "override");
  if (!override_.empty()) {
    std::string ops;
    for (const nlohmann::json& op : override_.value("ops", nlohmann::json::array())) {
      ops += (ops.empty() ? "" : ", ") + textField(op, "op") + " (" + std::to_string(countField(op, "calls")) + " calls)";
    }
    notes.push_back("recorded with ACC_OVERRIDE: " + ops +
                    " computed in float64 on the CPU, so its numbers there are not the program's own");
  }
  if (const uint64_t stacks = countField(counts, "stacks_lost")) {
    notes.push_back(std::to_string(stacks) + " call stack record(s) lost (their ops show no stack)");
  }
  return notes;
}

std::set<std::string> referenceFinds(const nlohmann::json& m) {
  std::set<std::string> names;
  if (!m.is_object()) return names;
  const nlohmann::json& reference = objectField(m, "reference");
  const nlohmann::json& finds = reference.value("finds", nlohmann::json::array());
  for (const nlohmann::json& f : finds) {
    if (f.is_object() && f.value("tensors_held", false)) names.insert(textField(f, "record"));
  }
  return names;
}

std::vector<std::string> recordingNotes(const std::vector<RankRecording>& ranks) {
  std::vector<std::string> out;
  for (const RankRecording& r : ranks) {
    for (const std::string& n : recordingNotes(r.manifest)) out.push_back(r.dir + ": " + n);
  }
  return out;
}

}  // namespace acc::analyzer
