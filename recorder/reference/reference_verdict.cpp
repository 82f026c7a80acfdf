#include "recorder/reference/reference_verdict.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>

extern char** environ;

namespace acc::recorder {
namespace {

// How long the check may take before it is stopped: the program has ended
// and its user waits.
constexpr int kCheckSeconds = 300;

std::string parentOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool executable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

std::string number(const nlohmann::json& v) {
  if (!v.is_number()) return "?";
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", v.get<double>());
  return text;
}

// Runs `acc-analyzer check DIR -o OUT` without acc preloaded (its replay
// workers load torch) and without ACC_* settings; its output goes to
// OUT/check.log. Returns its exit status, -1 when it could not run or ran
// past kCheckSeconds.
int runCheck(const std::string& analyzer, const std::string& dir, const std::string& out) {
  ::mkdir(out.c_str(), 0755);
  const std::string log = out + "/check.log";
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, "LD_PRELOAD=", 11) == 0 || std::strncmp(*e, "ACC_", 4) == 0) continue;
    env.emplace_back(*e);
  }
  std::vector<char*> envp;
  for (std::string& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = {analyzer, "check", dir, "-o", out};
  std::vector<char*> argv;
  for (std::string& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, analyzer.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return -1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kCheckSeconds);
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0) return -1;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

std::string analyzerBeside() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&analyzerBeside), &info) == 0 || info.dli_fname == nullptr) return "";
  const std::string lib = parentOf(info.dli_fname);
  for (const std::string& candidate : {lib + "/../bin/acc-analyzer", lib + "/../../bin/acc-analyzer"}) {
    if (executable(candidate)) return candidate;
  }
  return "";
}

std::vector<std::string> referenceVerdict(const nlohmann::json& reference, const std::string& dir,
                                          const std::string& reference_dir, bool replay) {
  const std::string prefix = "acc: ACC_REFERENCE: ";
  const nlohmann::json counts = reference.value("counts", nlohmann::json::object());
  const nlohmann::json finds = reference.value("finds", nlohmann::json::array());
  const uint64_t judged = counts.value("judged", uint64_t(0)), unmatched = counts.value("unmatched", uint64_t(0));
  const uint64_t failing = counts.value("failing", uint64_t(0));
  const std::string unmatched_text =
      unmatched == 0 ? "" : "; " + std::to_string(unmatched) + " records had no counterpart in the reference";
  if (finds.empty()) {
    std::string line = prefix + "no origin of a divergence in the " + std::to_string(judged) +
                       " records judged against " + reference_dir;
    if (failing > 0) {
      line += "; " + std::to_string(failing) + " differ beyond compare's thresholds where their inputs already "
              "differed (first: " + counts.value("first_failing", std::string()) + ")";
    }
    return {line + unmatched_text};
  }
  // The first origin; without one, the first record statistics could not
  // judge (replay judges it).
  nlohmann::json first = finds[0];
  for (const nlohmann::json& f : finds) {
    if (f.value("kind", std::string()) == "origin") {
      first = f;
      break;
    }
  }
  const bool origin = first.value("kind", std::string()) == "origin";
  const std::string record = first.value("record", std::string());
  // The recording, not the rank directory, where the reference is one too.
  const std::string recording = ::access((reference_dir + "/records.acc").c_str(), F_OK) == 0 ? dir : parentOf(dir);
  std::vector<std::string> lines;
  const std::string what = record + " (step " + std::to_string(first.value("step", int64_t(0))) +
                           "), outputs off by " + number(first["output_error"]) + " where its inputs are off by " +
                           number(first["input_error"]);
  const std::string judged_text = "; " + std::to_string(judged) + " records judged" +
                                  (unmatched == 0 ? "" : ", " + std::to_string(unmatched) +
                                                             " without a counterpart in the reference");
  if (origin) {
    const uint64_t more = counts.value("origins", uint64_t(1)) - 1;
    lines.push_back(prefix + "the first origin of a divergence: " + what +
                    (more == 0 ? "" : "; " + std::to_string(more) + " later records are origins too") + judged_text);
  } else {
    lines.push_back(prefix + "no origin of a divergence; statistics could not tell a wrong kernel from "
                    "amplification in " + std::to_string(counts.value("undecided", uint64_t(0))) +
                    " records, the first: " + what + judged_text);
  }
  const std::string analyzer = analyzerBeside();
  const std::string out = dir + "/reference_check";
  const std::string check = (analyzer.empty() ? std::string("acc-analyzer") : analyzer) + " check " + dir;
  if (!first.value("tensors_held", false)) {
    lines.push_back(prefix + "its inputs were not captured (see its find line): replay cannot judge its kernel; "
                    "re-record around it at level 2");
  } else if (!replay || analyzer.empty()) {
    lines.push_back(prefix + "replay its kernel on the inputs it captured: " + check);
  } else {
    const int status = runCheck(analyzer, dir, out);
    nlohmann::json summary;
    try {
      std::ifstream in(out + "/summary.json");
      if (in) summary = nlohmann::json::parse(in);
    } catch (const std::exception&) {
      summary = nullptr;
    }
    const nlohmann::json divergence =
        summary.is_object() ? summary.value("first_divergence", nlohmann::json()) : nlohmann::json();
    if (status == 1 && divergence.is_object()) {
      const nlohmann::json r = divergence.value("replay", nlohmann::json::object());
      const std::string name = divergence.value("name", std::string());
      lines.push_back(prefix + "replay on the captured inputs: WRONG KERNEL: " + name +
                      (name == record ? "" : " (captured around the find)") + " is off by " +
                      number(r["error_dir1"]) + " from float64 where the CPU kernel in the same dtypes is off by " +
                      number(r["cpu_kernel_error"]) + " (" + out + ")");
    } else if (status == 0) {
      lines.push_back(prefix + "replay on the captured inputs reproduces what this run's kernels made" +
                      (origin ? ": the difference is not this run's kernel; the reference's may be the one that differs"
                              : ": the difference is its inputs' amplified, not a wrong kernel") +
                      " (" + out + ")");
    } else {
      lines.push_back(prefix + "replay could not run (" + out + "/check.log); run: " + check);
    }
  }
  lines.push_back(prefix + "report: acc-analyzer compare " + reference_dir + " " + recording);
  return lines;
}

}  // namespace acc::recorder
