#include "analyzer/recording_notes.h"

#include <cstdint>

namespace acc::analyzer {
namespace {

uint64_t count(const nlohmann::json& counts, const char* key) {
  const auto it = counts.find(key);
  return it != counts.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
}

std::string signalText(const nlohmann::json& s) {
  const std::string name = s.value("name", std::string());
  return "signal " + std::to_string(s.value("number", 0)) + (name.empty() ? "" : " (" + name + ")") +
         " at step " + std::to_string(s.value("step", int64_t{0})) + ", " + s.value("time", std::string("?"));
}

}  // namespace

std::vector<std::string> recordingNotes(const nlohmann::json& m) {
  std::vector<std::string> notes;
  if (!m.is_object() || m.empty()) return notes;  // no manifest: the reader says so
  const std::string status = m.value("status", std::string());
  const nlohmann::json signal = m.value("signal", nlohmann::json());
  if (status == "running") {
    notes.push_back("the recording process did not finish (its manifest still says \"running\", last written " +
                    m.value("updated_time", m.value("start_time", std::string("?"))) +
                    "): it was killed (SIGKILL, out of memory), crashed, or is still running; its counts are from "
                    "then");
  } else if (status == "terminated" && signal.is_object()) {
    notes.push_back("terminated by " + signalText(signal) + "; the records queued by then were written");
  } else if (signal.is_object()) {
    notes.push_back("received " + signalText(signal) + "; the program's own handler ran and the run went on to exit");
  }
  const nlohmann::json counts = m.value("counts", nlohmann::json::object());
  if (const uint64_t lost = count(counts, "lost_io")) {
    const std::string why = m.value("io_error", std::string());
    notes.push_back(std::to_string(lost) + " record(s) lost: " + (why.empty() ? "they could not be written" : why));
  }
  if (const uint64_t dropped = count(counts, "dropped")) {
    const bool drop_mode = m.value("config", nlohmann::json::object()).value("on_full", std::string()) == "drop";
    notes.push_back(std::to_string(dropped) + " record(s) dropped" +
                    (drop_mode ? " (the writer's queue was full and ACC_ON_FULL=drop)"
                               : " (submitted after the recording had stopped)"));
  }
  if (const uint64_t stacks = count(counts, "stacks_lost")) {
    notes.push_back(std::to_string(stacks) + " call stack record(s) lost (their ops show no stack)");
  }
  return notes;
}

std::vector<std::string> recordingNotes(const std::vector<RankRecording>& ranks) {
  std::vector<std::string> out;
  for (const RankRecording& r : ranks) {
    for (const std::string& n : recordingNotes(r.manifest)) out.push_back(r.dir + ": " + n);
  }
  return out;
}

}  // namespace acc::analyzer
