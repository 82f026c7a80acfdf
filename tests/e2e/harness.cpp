#include "tests/e2e/harness.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "analyzer/read/recording.h"

extern char** environ;

namespace acc::test {
namespace fs = std::filesystem;

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool exists(const std::string& path) { return fs::exists(path); }

std::vector<std::string> lossLines(const std::string& out) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("step ", 0) == 0) lines.push_back(line.substr(0, line.find(" time ")));
  }
  return lines;
}

std::string withoutAccLines(const std::string& text) {
  std::istringstream in(text);
  std::string out;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("acc: ", 0) != 0) out += line + "\n";
  }
  return out;
}

std::string withoutLogStamps(const std::string& text) {
  static const std::regex stamp(R"(^([IWEF])\d{4} \d{2}:\d{2}:\d{2}\.\d+ +\d+ )", std::regex::multiline);
  return std::regex_replace(text, stamp, "$1 ");
}

std::string majorMinor(const std::string& version) {
  return version.substr(0, version.find('.', version.find('.') + 1));
}

namespace {

// Seconds a child may run before the harness stops it (ACC_TEST_CHILD_TIMEOUT
// overrides): below ctest's 600, so that a hung program fails its test with
// its threads' stacks instead of a bare timeout.
int childTimeoutSeconds() {
  const char* v = std::getenv("ACC_TEST_CHILD_TIMEOUT");
  const int s = v != nullptr ? std::atoi(v) : 0;
  return s > 0 ? s : 400;
}

// Waits for the child to end, up to the timeout; then writes what each of its
// threads is doing (gdb's backtraces where gdb is installed, else each
// thread's name and kernel wait channel) and kills it. Returns that text, or
// "" when the child ended in time. The child is reaped by the caller.
std::string waitOrDump(pid_t pid, const std::string& stacks_path) {
  const int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return "";  // an old kernel: wait without a limit
  pollfd p{fd, POLLIN, 0};
  const int ready = poll(&p, 1, childTimeoutSeconds() * 1000);
  ::close(fd);
  if (ready != 0) return "";
  std::string text = "\nharness: the program ran past " + std::to_string(childTimeoutSeconds()) +
                     " s and was killed; its threads:\n";
  const std::string gdb = "gdb -p " + std::to_string(pid) +
                          " -batch -nx -ex 'thread apply all bt' >" + stacks_path + " 2>&1";
  if (std::system(("command -v gdb >/dev/null 2>&1 && " + gdb).c_str()) == 0) {
    text += readFile(stacks_path);
  } else {
    std::error_code ec;
    for (const auto& t : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
      std::string comm = readFile(t.path() / "comm"), wchan = readFile(t.path() / "wchan");
      if (!comm.empty() && comm.back() == '\n') comm.pop_back();
      text += "  " + t.path().filename().string() + " " + comm + ": " + wchan + "\n";
    }
  }
  kill(pid, SIGKILL);
  return text;
}

}  // namespace

RunResult run(const Command& command) {
  TempDir io;
  const std::string out_path = io / "stdout", err_path = io / "stderr";
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "ACC_", 4) == 0 || std::strncmp(*e, "LD_PRELOAD=", 11) == 0 ||
        std::strncmp(*e, "RANK=", 5) == 0) {
      continue;
    }
    env_strings.emplace_back(*e);
  }
  if (command.preload) {
    env_strings.push_back("LD_PRELOAD=" +
                          (command.preload_lib.empty() ? libDir() + "/libacc.so" : command.preload_lib));
  }
  for (const auto& [k, v] : command.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = command.argv;
  for (std::string& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);

  pid_t pid = fork();
  if (pid == 0) {
    int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, 1);
    dup2(err, 2);
    if (!command.cwd.empty() && chdir(command.cwd.c_str()) != 0) _exit(126);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  const std::string stacks = waitOrDump(pid, io / "stacks");
  int status = 0;
  waitpid(pid, &status, 0);
  RunResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = readFile(out_path);
  r.err = readFile(err_path) + stacks;
  return r;
}

std::string python() {
  std::string p = ACC_TEST_PYTHON;
  if (p.empty()) {
    throw std::runtime_error(
        "no Python interpreter with torch was found at configure time; install python3-torch "
        "or set ACC_PYTHON and re-run cmake");
  }
  return p;
}

std::string example(const std::string& file) { return std::string(ACC_SOURCE_DIR) + "/examples/" + file; }
std::string sourceFile(const std::string& path) { return std::string(ACC_SOURCE_DIR) + "/" + path; }
std::string testScript(const std::string& file) {
  return std::string(ACC_SOURCE_DIR) + "/tests/scripts/" + file;
}

std::string testData(const std::string& path) { return std::string(ACC_SOURCE_DIR) + "/tests/data/" + path; }
std::string libDir() { return ACC_LIB_DIR; }
std::string binDir() { return ACC_BIN_DIR; }

RunResult recordPython(const std::string& script, const std::string& dir,
                       std::map<std::string, std::string> env) {
  env.emplace("ACC_OUTPUT_DIR", dir);
  return run({{python(), script}, env, "", true, ""});
}

RunResult runPythonPlain(const std::string& script, std::map<std::string, std::string> env) {
  return run({{python(), script}, env, "", false, ""});
}

std::vector<const format::OpRecord*> Recording::named(const std::string& prefix) const {
  std::vector<const format::OpRecord*> out;
  for (const auto& r : records) {
    if (r.name.rfind(prefix, 0) == 0) out.push_back(&r);
  }
  return out;
}

const format::OpRecord* Recording::find(const std::string& name) const {
  for (const auto& r : records) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

std::vector<std::string> Recording::names() const {
  std::vector<std::string> out;
  for (const auto& r : records) out.push_back(r.name);
  return out;
}

Recording readRank(const std::string& rank_dir) {
  Recording rec;
  auto ranks = analyzer::openRecording(rank_dir);
  rec.manifest = ranks.at(0).manifest;
  analyzer::ReadOptions options;
  options.with_data = true;
  auto damage = analyzer::readRecords(
      ranks.at(0), options, [&](format::OpRecord&& r) { rec.records.push_back(std::move(r)); }, rec.stacks);
  rec.damaged = damage.any();
  std::stable_sort(rec.records.begin(), rec.records.end(),
                   [](const format::OpRecord& a, const format::OpRecord& b) { return a.index < b.index; });
  return rec;
}

RunResult analyzer(const std::vector<std::string>& args) {
  Command c;
  c.argv = {binDir() + "/acc-analyzer"};
  c.argv.insert(c.argv.end(), args.begin(), args.end());
  c.preload = false;
  return run(c);
}

}  // namespace acc::test
