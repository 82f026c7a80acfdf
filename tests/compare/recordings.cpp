#include "tests/compare/recordings.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <stdexcept>

namespace acc::test {
namespace fs = std::filesystem;
namespace {

struct Spec {
  const char* name;
  std::map<std::string, std::string> env;
};

Spec spec(Variant v) {
  const std::string lib = ACC_WRONG_GELU_LIB;
  switch (v) {
    case Variant::Reference: return {"reference", {{"ACC_LEVEL", "2"}, {"ACC_STACK", "python"}}};
    case Variant::ReferenceAgain: return {"reference_again", {{"ACC_LEVEL", "2"}, {"ACC_STACK", "python"}}};
    case Variant::WrongForward:
      return {"wrong_forward", {{"ACC_LEVEL", "2"}, {"WRONG_GELU_LIB", lib}, {"WRONG_GELU", "fwd"}}};
    case Variant::WrongBackward:
      return {"wrong_backward", {{"ACC_LEVEL", "2"}, {"WRONG_GELU_LIB", lib}, {"WRONG_GELU", "bwd"}}};
    case Variant::Float64: return {"float64", {{"ACC_LEVEL", "2"}, {"GELU_DTYPE", "float64"}}};
    case Variant::ExtraOp: return {"extra_op", {{"ACC_LEVEL", "2"}, {"GELU_EXTRA_OP", "1"}}};
    case Variant::ReferenceLevel1: return {"reference_level1", {{"ACC_LEVEL", "1"}, {"ACC_STACK", "python"}}};
    case Variant::WrongForwardLevel1:
      return {"wrong_forward_level1", {{"ACC_LEVEL", "1"}, {"WRONG_GELU_LIB", lib}, {"WRONG_GELU", "fwd"}}};
  }
  throw std::logic_error("unknown variant");
}

// Identifies what a recording depends on: the libraries and the script.
std::string fingerprint(const std::string& script = testScript("gelu_mlp.py")) {
  uint64_t h = 1469598103934665603ULL;
  auto add = [&](const std::string& s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  };
  for (const std::string& path : {libDir() + "/libacc.so", libDir() + "/libacc_core.so",
                                  std::string(ACC_WRONG_GELU_LIB), libDir() + "/libacc_testdev.so", script}) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) throw std::runtime_error(path + " is missing: build first");
    add(path + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
        std::to_string(st.st_mtim.tv_nsec));
  }
  add(readFile(script));
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

class FileLock {
 public:
  explicit FileLock(const std::string& path) : fd_(::open(path.c_str(), O_RDWR | O_CREAT, 0644)) {
    if (fd_ < 0 || ::flock(fd_, LOCK_EX) != 0) throw std::runtime_error("cannot lock " + path);
  }
  ~FileLock() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }

 private:
  int fd_;
};

}  // namespace

std::string recording(Variant v) {
  const Spec s = spec(v);
  return cachedRecording(s.name, testScript("gelu_mlp.py"), s.env);
}

std::string cachedRecording(const std::string& name, const std::string& script,
                            std::map<std::string, std::string> env) {
  const std::string cache = ACC_COMPARE_CACHE;
  fs::create_directories(cache);
  const std::string dir = cache + "/" + name + "-" + fingerprint(script);
  FileLock lock(cache + "/.lock");
  if (fs::exists(dir + "/rank0/records.acc")) return dir;
  // Out-of-date recordings of this variant go first.
  for (const auto& entry : fs::directory_iterator(cache)) {
    if (entry.path().filename().string().rfind(name + "-", 0) == 0) fs::remove_all(entry.path());
  }
  const std::string tmp = dir + ".tmp";
  fs::remove_all(tmp);
  env["ACC_QUIET"] = "1";
  RunResult r = recordPython(script, tmp, env);
  if (r.exit_code != 0 || !fs::exists(tmp + "/rank0/records.acc")) {
    throw std::runtime_error("recording " + name + " failed (exit " + std::to_string(r.exit_code) + "): " + r.err);
  }
  fs::rename(tmp, dir);
  return dir;
}

}  // namespace acc::test

namespace acc::test {

Analysis analyze(const std::vector<std::string>& args, const std::string& out) {
  Analysis a;
  std::vector<std::string> argv = args;
  argv.insert(argv.end(), {"-o", out});
  a.run = analyzer(argv);
  if (exists(out + "/summary.json")) a.summary = nlohmann::json::parse(readFile(out + "/summary.json"));
  return a;
}

std::string benignRun(const std::string& name, const std::string& level, std::map<std::string, std::string> env) {
  env["ACC_LEVEL"] = level;
  if (env.count("DEVICE")) env["TESTDEV_LIB"] = ACC_TESTDEV_LIB;
  return cachedRecording("benign_" + name + "_l" + level, testScript("benign_train.py"), env);
}

std::vector<double> losses(const RunResult& r) {
  std::vector<double> out;
  for (const std::string& line : lossLines(r.out)) {
    const size_t at = line.find(" loss ");
    if (at != std::string::npos) out.push_back(std::strtod(line.c_str() + at + 6, nullptr));
  }
  return out;
}

double largestDifference(const std::vector<double>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double d = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

}  // namespace acc::test
