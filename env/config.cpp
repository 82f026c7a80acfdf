#include "env/config.h"

#include <cstdint>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <utility>
#include <vector>

#include <dirent.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

extern char** environ;

namespace acc::env {
namespace {

// Names the recorder ignores but the project's scripts and CMake read
// (README): no warning when set. CI exports ACC_DEBUG_INFO and
// ACC_UNITY_BUILD to every program it runs.
constexpr const char* kScriptVariables[] = {"ACC_PYTHON",     "ACC_BUILD_DIR",   "ACC_CMAKE_ARGS", "ACC_BUILD_TARGETS",
                                            "ACC_DEBUG_INFO", "ACC_UNITY_BUILD"};

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    size_t pos = s.find(sep, start);
    parts.push_back(trim(s.substr(start, pos - start)));
    if (pos == std::string::npos) return parts;
    start = pos + 1;
  }
}

std::optional<int64_t> parseInt(const std::string& text, int64_t min, int64_t max) {
  if (text.empty()) return std::nullopt;
  for (size_t i = 0; i < text.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i])) && !(i == 0 && text[i] == '-')) {
      return std::nullopt;
    }
  }
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < min || v > max) return std::nullopt;
  return v;
}

std::optional<bool> parseBool(const std::string& text) {
  std::string t = lower(text);
  if (t == "1" || t == "true" || t == "yes" || t == "on") return true;
  if (t == "0" || t == "false" || t == "no" || t == "off") return false;
  return std::nullopt;
}

// "3", "3-5", "5000-" (open), "0-30000:1000" and "100-:50" (strides).
std::optional<StepSet> parseSteps(const std::string& text) {
  StepSet set;
  for (const std::string& item : split(text, ',')) {
    StepRange r;
    std::string span = item;
    if (const size_t colon = item.find(':'); colon != std::string::npos) {
      auto stride = parseInt(item.substr(colon + 1), 1, INT64_MAX);
      if (!stride) return std::nullopt;
      r.stride = *stride;
      span = item.substr(0, colon);
    }
    const size_t dash = span.find('-');
    auto first = parseInt(span.substr(0, dash), 0, INT64_MAX);
    if (!first) return std::nullopt;
    r.first = *first;
    if (dash == std::string::npos) {
      if (r.stride != 1) return std::nullopt;  // a stride needs a range
      r.last = r.first;
    } else if (dash + 1 < span.size()) {
      auto last = parseInt(span.substr(dash + 1), 0, INT64_MAX);
      if (!last || *last < r.first) return std::nullopt;
      r.last = *last;
    }
    set.ranges.push_back(r);
  }
  return set;
}

// "aten::gelu", "gelu" (aten's), "aten::add.Tensor" (one overload), each
// optionally "@3", "@3-5" or "@3-" (one step range, no strides).
std::optional<OverrideOp> parseOverride(const std::string& item) {
  OverrideOp o;
  std::string name = item;
  if (const size_t at = item.find('@'); at != std::string::npos) {
    const std::string steps = item.substr(at + 1);
    auto set = parseSteps(steps);
    if (!set || steps.find(':') != std::string::npos) return std::nullopt;
    o.steps = *set;
    name = item.substr(0, at);
  }
  if (name.find("::") == std::string::npos) name = "aten::" + name;
  const size_t colons = name.find("::");
  const size_t dot = name.find('.', colons);
  o.op = name.substr(0, dot);
  if (dot != std::string::npos) o.overload = name.substr(dot + 1);
  auto identifier = [](const std::string& s) {
    return !s.empty() && !std::isdigit(static_cast<unsigned char>(s[0])) &&
           std::all_of(s.begin(), s.end(), [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; });
  };
  if (!identifier(o.op.substr(0, colons)) || !identifier(o.op.substr(colons + 2))) return std::nullopt;
  if (dot != std::string::npos && !identifier(o.overload)) return std::nullopt;
  return o;
}

// A record name is `{op}.{n}.{fwd|bwd}`, optionally with a `.{k}` suffix for
// the k-th backward node of one forward op.
bool looksLikeRecordName(const std::string& name) {
  size_t pass = name.rfind(".fwd");
  if (pass == std::string::npos) pass = name.rfind(".bwd");
  if (pass == std::string::npos || pass == 0) return false;
  std::string tail = name.substr(pass + 4);
  if (!tail.empty() && (tail[0] != '.' || !parseInt(tail.substr(1), 2, INT64_MAX))) return false;
  size_t dot = name.rfind('.', pass - 1);
  return dot != std::string::npos && dot > 0 &&
         parseInt(name.substr(dot + 1, pass - dot - 1), 0, INT64_MAX).has_value();
}

bool isFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// A recording made with ACC_RANDOM=save: a rank directory holding
// random.acc, or a directory of rank*/ subdirectories one of which does.
}  // namespace

std::string rankFile(const std::string& dir, int64_t rank, const char* file) {
  for (const std::string& candidate : {dir + "/rank" + std::to_string(rank) + "/" + file, dir + "/" + file}) {
    if (std::FILE* f = std::fopen(candidate.c_str(), "rb")) {
      std::fclose(f);
      return candidate;
    }
  }
  return "";
}

bool holdsRankFile(const std::string& dir, const char* file) {
  if (isFile(dir + "/" + file)) return true;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return false;
  bool found = false;
  while (dirent* e = ::readdir(d)) {
    if (std::strncmp(e->d_name, "rank", 4) == 0 && isFile(dir + "/" + e->d_name + "/" + file)) {
      found = true;
      break;
    }
  }
  ::closedir(d);
  return found;
}

namespace {

bool sameDirectory(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

class Parser {
 public:
  Parser(const Lookup& lookup, ParseResult& result) : lookup_(lookup), result_(result) {}

  // Calls `apply` with the trimmed value when the variable is set; records
  // the standard error line when `apply` rejects it.
  template <typename Apply>
  void field(const char* name, Apply apply) {
    const char* raw = lookup_(name);
    if (raw == nullptr) return;
    std::string value = trim(raw);
    if (!apply(value)) {
      result_.errors.push_back(std::string("acc: ") + name + "=\"" + raw +
                               "\" is invalid; allowed: " + allowedFor(name));
    }
  }

 private:
  static std::string allowedFor(const char* name) {
    for (const Variable& v : variables()) {
      if (std::strcmp(v.name, name) == 0) return v.allowed;
    }
    return "?";
  }

  const Lookup& lookup_;
  ParseResult& result_;
};

}  // namespace

std::string OverrideOp::text() const {
  std::string t = overload.empty() ? op : op + "." + overload;
  if (steps.all()) return t;
  const StepRange& r = steps.ranges.front();
  t += "@" + std::to_string(r.first);
  if (r.last == INT64_MAX) return t + "-";
  return r.last == r.first ? t : t + "-" + std::to_string(r.last);
}

bool StepSet::contains(int64_t step) const {
  if (ranges.empty()) return true;
  for (const StepRange& r : ranges) {
    if (step >= r.first && step <= r.last && (step - r.first) % r.stride == 0) return true;
  }
  return false;
}

int64_t StepSet::last() const {
  if (ranges.empty()) return INT64_MAX;
  int64_t last = 0;
  for (const StepRange& r : ranges) last = std::max(last, r.last);
  return last;
}

int dataThreadsFor(int cpus) { return cpus <= 2 ? 1 : 2; }

int usableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

const std::vector<Variable>& variables() {
  static const std::vector<Variable> table = {
      {"ACC_ENABLE", "1", "0 or 1 (also true/false, yes/no, on/off)"},
      {"ACC_OUTPUT_DIR", "./acc_record", "a writable directory path (created if missing)"},
      {"ACC_LEVEL", "1", "0 (metadata), 1 (plus statistics) or 2 (plus full tensor data)"},
      {"ACC_INPUTS", "1", "0 or 1"},
      {"ACC_OUTPUTS", "1", "0 or 1"},
      {"ACC_PASSES", "fwd,bwd", "fwd, bwd or fwd,bwd"},
      {"ACC_OP_RANGE", "(all)", "START,END record names like aten::conv2d.6.fwd; either may be empty"},
      {"ACC_OP_LIST", "(all)", "comma-separated op name substrings, case-insensitive, e.g. relu,conv"},
      {"ACC_MODULES", "(all)", "comma-separated module paths, e.g. enc.layers.0,head: only ops inside them (and their submodules)"},
      {"ACC_SKIP", "0", "an integer N >= 0: record one op, then skip N"},
      {"ACC_STEPS", "(all)", "comma-separated steps, inclusive ranges, open ranges and strides, e.g. 0,3-5,5000- or 0-30000:1000"},
      {"ACC_RANKS", "(all)", "comma-separated ranks, e.g. 0,2"},
      {"ACC_STACK", "none", "none, python, native or both"},
      {"ACC_NESTED", "0", "0 (top-level ops only) or 1 (every op)"},
      {"ACC_DEDUP", "1", "0 or 1: 1 records each tensor content once and refers to it after"},
      {"ACC_BUFFER_MB", "256", "an integer 1..65536: MiB of records in flight to the writer"},
      {"ACC_DEVICE_BATCH", "512", "an integer 1..65536: device tensors whose statistics are computed together (1: each alone)"},
      {"ACC_RECORD_BATCH", "8", "an integer 1..64: op records a thread hands to the writer together (1: each alone)"},
      {"ACC_ZSTD_LEVEL", "1", "an integer 1..19: zstd level of record frames"},
      {"ACC_DATA_ZSTD_LEVEL", "-100", "an integer -100..19 except 0: zstd level of tensor data (higher: slower, a little smaller)"},
      {"ACC_FRAME_KB", "1024", "an integer 16..65536: uncompressed KiB per frame"},
      {"ACC_DATA_THREADS", "auto", "auto or an integer 1..64: threads compressing tensor data (level 2), the writer's own included; auto: 1 where the process may run on 2 CPUs or fewer, else 2"},
      {"ACC_ON_FULL", "wait", "wait (the op waits for the writer) or drop (count and drop)"},
      {"ACC_QUIET", "0", "0 or 1: 1 silences the start and end lines on stderr"},
      {"ACC_GRADS", "0", "0 or 1: 1 records each parameter's gradient at every optimizer step (grad::{parameter})"},
      {"ACC_WATCH", "off", "off or naninf: naninf watches every op and writes only the first that makes a NaN or infinity from finite inputs"},
      {"ACC_WATCH_CONTEXT", "64", "an integer 0..100000: ops before the watch's find whose metadata is written with it"},
      {"ACC_WATCH_ABORT", "0", "0 or 1: 1 stops the program (exit status 3) once the watch has found and written its op"},
      {"ACC_RANDOM", "off", "off, save (store what random ops draw) or the directory of a recording made with ACC_RANDOM=save (replay its draws here: changes this run's numbers on purpose)"},
      {"ACC_OVERRIDE", "(none)", "comma-separated ops, each optionally @STEPS (3, 3-5, 3-), e.g. aten::gelu,aten::gelu_backward@2-4: computed in float64 on the CPU and handed back in the op's dtype and device (changes this run's numbers on purpose)"},
      {"ACC_REFERENCE", "(none)", "the directory of a recording of the same program (any level, same ranks): each record is judged against it as it is made, and the first origins are written at level 2"},
      {"ACC_REFERENCE_CONTEXT", "3", "an integer 0..1000: ops before and after each ACC_REFERENCE find written at level 2 with it"},
      {"ACC_REFERENCE_MAX", "1", "an integer 1..1000: ACC_REFERENCE finds written at level 2"},
      {"ACC_REFERENCE_THRESHOLDS", "(none)", "compare's threshold options that ACC_REFERENCE judges with (none: compare's defaults), e.g. --fail-rel-l2 bf16=0.02,fp32=1e-4 --small 1e-6"},
      {"ACC_EAGER", "0", "0 or 1: 1 turns torch.compile off for the run, so every op is recorded"},
  };
  return table;
}

ParseResult parse(const Lookup& lookup, char** environment) {
  ParseResult result;
  Config& c = result.config;
  Parser p(lookup, result);

  auto boolean = [](bool& out) {
    return [&out](const std::string& v) {
      auto b = parseBool(v);
      if (b) out = *b;
      return b.has_value();
    };
  };
  auto integer = [](auto& out, int64_t min, int64_t max) {
    return [&out, min, max](const std::string& v) {
      auto i = parseInt(v, min, max);
      if (i) out = static_cast<std::remove_reference_t<decltype(out)>>(*i);
      return i.has_value();
    };
  };
  // One of some names (any case), each standing for a value of `out`'s enum.
  auto oneOf = [](auto& out, std::initializer_list<std::pair<const char*, std::remove_reference_t<decltype(out)>>> names) {
    return [&out, choices = std::vector(names)](const std::string& v) {
      const std::string m = lower(v);
      for (const auto& [name, value] : choices) {
        if (m == name) {
          out = value;
          return true;
        }
      }
      return false;
    };
  };

  p.field("ACC_ENABLE", boolean(c.enabled));
  p.field("ACC_OUTPUT_DIR", [&](const std::string& v) {
    if (v.empty()) return false;
    c.output_dir = v;
    return true;
  });
  p.field("ACC_LEVEL", integer(c.level, 0, 2));
  p.field("ACC_INPUTS", boolean(c.inputs));
  p.field("ACC_OUTPUTS", boolean(c.outputs));
  p.field("ACC_PASSES", [&](const std::string& v) {
    uint8_t bits = 0;
    for (const std::string& part : split(lower(v), ',')) {
      if (part == "fwd") bits |= 1;
      else if (part == "bwd") bits |= 2;
      else return false;
    }
    c.passes = static_cast<Passes>(bits);
    return true;
  });
  p.field("ACC_OP_RANGE", [&](const std::string& v) {
    auto parts = split(v, ',');
    if (parts.size() != 2) return false;
    for (const std::string& name : parts) {
      if (!name.empty() && !looksLikeRecordName(name)) return false;
    }
    c.range_start = parts[0];
    c.range_end = parts[1];
    return true;
  });
  p.field("ACC_OP_LIST", [&](const std::string& v) {
    c.op_list.clear();
    for (const std::string& part : split(lower(v), ',')) {
      if (part.empty()) return false;
      c.op_list.push_back(part);
    }
    return true;
  });
  p.field("ACC_MODULES", [&](const std::string& v) {
    c.modules.clear();
    for (const std::string& part : split(v, ',')) {
      // Attribute paths: dot-separated names, no empty component.
      if (part.empty() || part.front() == '.' || part.back() == '.' || part.find("..") != std::string::npos ||
          part.find_first_of(" \t") != std::string::npos) {
        return false;
      }
      c.modules.push_back(part);
    }
    return true;
  });
  p.field("ACC_SKIP", integer(c.skip, 0, INT64_MAX));
  p.field("ACC_STEPS", [&](const std::string& v) {
    auto steps = parseSteps(v);
    if (steps) c.steps = *steps;
    return steps.has_value();
  });
  p.field("ACC_RANKS", [&](const std::string& v) {
    c.ranks.clear();
    for (const std::string& part : split(v, ',')) {
      auto r = parseInt(part, 0, INT32_MAX);
      if (!r) return false;
      c.ranks.push_back(*r);
    }
    return true;
  });
  p.field("ACC_STACK", oneOf(c.stack, {{"none", StackMode::None},
                                        {"python", StackMode::Python},
                                        {"native", StackMode::Native},
                                        {"both", StackMode::Both}}));
  p.field("ACC_NESTED", boolean(c.nested));
  p.field("ACC_DEDUP", boolean(c.dedup));
  p.field("ACC_BUFFER_MB", integer(c.buffer_mb, 1, 65536));
  p.field("ACC_DEVICE_BATCH", integer(c.device_batch, 1, 65536));
  p.field("ACC_RECORD_BATCH", integer(c.record_batch, 1, 64));
  p.field("ACC_ZSTD_LEVEL", integer(c.zstd_level, 1, 19));
  p.field("ACC_DATA_ZSTD_LEVEL", [&](const std::string& v) {
    auto level = parseInt(v, -100, 19);  // zstd reads 0 as its default level (3): ask for 3
    if (!level || *level == 0) return false;
    c.data_zstd_level = static_cast<int>(*level);
    return true;
  });
  p.field("ACC_FRAME_KB", integer(c.frame_kb, 16, 65536));
  p.field("ACC_DATA_THREADS", [&, threads = integer(c.data_threads, 1, 64)](const std::string& v) {
    if (lower(v) != "auto") return threads(v);
    c.data_threads = dataThreadsFor(usableCpus());
    return true;
  });
  p.field("ACC_ON_FULL", oneOf(c.on_full, {{"wait", OnFull::Wait}, {"drop", OnFull::Drop}}));
  p.field("ACC_QUIET", boolean(c.quiet));
  p.field("ACC_EAGER", boolean(c.eager));
  p.field("ACC_GRADS", boolean(c.grads));
  p.field("ACC_WATCH", oneOf(c.watch, {{"off", Watch::Off}, {"naninf", Watch::NanInf}}));
  const size_t errors_before_watch = result.errors.size();
  p.field("ACC_WATCH_CONTEXT", integer(c.watch_context, 0, 100000));
  p.field("ACC_WATCH_ABORT", boolean(c.watch_abort));
  // The watch reads every op's inputs and outputs and writes nothing but
  // its find: settings that contradict that are refused, not ignored (a
  // value already refused above is not refused twice).
  auto conflict = [&](const char* name, const char* why) {
    result.errors.push_back(std::string("acc: ") + name + " cannot be combined with ACC_WATCH=naninf (" + why + ")");
  };
  if (c.watch == Watch::NanInf) {
    if (!c.inputs) conflict("ACC_INPUTS=0", "the watch checks every op's inputs");
    if (!c.outputs) conflict("ACC_OUTPUTS=0", "the watch checks every op's outputs");
    if (c.grads) conflict("ACC_GRADS=1", "the watch writes nothing until it finds its op");
  } else if (result.errors.size() == errors_before_watch) {
    const char* set = lookup("ACC_WATCH_ABORT") != nullptr    ? "ACC_WATCH_ABORT"
                      : lookup("ACC_WATCH_CONTEXT") != nullptr ? "ACC_WATCH_CONTEXT"
                                                               : nullptr;
    if (set != nullptr) result.errors.push_back(std::string("acc: ") + set + " is set but ACC_WATCH is not naninf; allowed: set ACC_WATCH=naninf with it, or unset it");
  }

  p.field("ACC_RANDOM", [&](const std::string& v) {
    const std::string m = lower(v);
    if (m == "off" || m == "save") {
      c.random = m == "off" ? Random::Off : Random::Save;
      return true;
    }
    if (v.empty() || !holdsRankFile(v, kRandomFile)) return false;
    c.random = Random::Replay;
    c.random_source = v;
    return true;
  });
  // The source's records would be overwritten by this run's (its rank
  // directory or the recording holding it).
  if (c.random == Random::Replay &&
      (sameDirectory(c.random_source, c.output_dir) || sameDirectory(c.random_source + "/..", c.output_dir))) {
    result.errors.push_back("acc: ACC_RANDOM=\"" + c.random_source +
                            "\" is ACC_OUTPUT_DIR itself or inside it, which this run overwrites; allowed: another recording's directory");
  }

  p.field("ACC_OVERRIDE", [&](const std::string& v) {
    c.overrides.clear();
    for (const std::string& item : split(v, ',')) {
      auto op = parseOverride(trim(item));
      if (!op) return false;
      c.overrides.push_back(std::move(*op));
    }
    return !c.overrides.empty();
  });

  const size_t errors_before_reference = result.errors.size();
  p.field("ACC_REFERENCE", [&](const std::string& v) {
    if (v.empty() || !holdsRankFile(v, kRecordsFile)) return false;
    c.reference = v;
    return true;
  });
  p.field("ACC_REFERENCE_CONTEXT", integer(c.reference_context, 0, 1000));
  p.field("ACC_REFERENCE_MAX", integer(c.reference_max, 1, 1000));
  // Checked against compare's options when the session starts (env/ knows
  // nothing of the analyzer's thresholds).
  p.field("ACC_REFERENCE_THRESHOLDS", [&](const std::string& v) {
    c.reference_thresholds = v;
    return !v.empty();
  });
  if (!c.reference.empty() &&
      (sameDirectory(c.reference, c.output_dir) || sameDirectory(c.reference + "/..", c.output_dir))) {
    result.errors.push_back("acc: ACC_REFERENCE=\"" + c.reference +
                            "\" is ACC_OUTPUT_DIR itself or inside it, which this run overwrites; allowed: another recording's directory");
  }
  if (!c.reference.empty() && c.level == 0) {
    result.errors.push_back("acc: ACC_REFERENCE cannot be combined with ACC_LEVEL=0 (records are judged on their statistics); allowed: ACC_LEVEL=1 or 2");
  }
  if (!c.reference.empty() && !c.outputs) {
    result.errors.push_back("acc: ACC_REFERENCE cannot be combined with ACC_OUTPUTS=0 (records are judged on their outputs); allowed: ACC_OUTPUTS=1");
  }
  if (!c.reference.empty() && c.watch == Watch::NanInf) {
    result.errors.push_back("acc: ACC_REFERENCE cannot be combined with ACC_WATCH=naninf (each writes only its own finds); allowed: one of them");
  }
  if (c.reference.empty() && result.errors.size() == errors_before_reference) {
    const char* set = lookup("ACC_REFERENCE_MAX") != nullptr          ? "ACC_REFERENCE_MAX"
                      : lookup("ACC_REFERENCE_CONTEXT") != nullptr    ? "ACC_REFERENCE_CONTEXT"
                      : lookup("ACC_REFERENCE_THRESHOLDS") != nullptr ? "ACC_REFERENCE_THRESHOLDS"
                                                                      : nullptr;
    if (set != nullptr) result.errors.push_back(std::string("acc: ") + set + " is set but ACC_REFERENCE is not; allowed: set ACC_REFERENCE=DIR with it, or unset it");
  }

  for (char** e = environment; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, "ACC_", 4) != 0) continue;
    std::string name(*e, std::strcspn(*e, "="));
    bool known = std::any_of(variables().begin(), variables().end(),
                             [&](const Variable& v) { return name == v.name; }) ||
                 std::any_of(std::begin(kScriptVariables), std::end(kScriptVariables),
                             [&](const char* n) { return name == n; });
    if (!known) {
      result.warnings.push_back("acc: unknown variable " + name +
                                " ignored (see README for the ACC_* variables)");
    }
  }
  return result;
}

ParseResult parseProcessEnvironment() {
  return parse([](const char* name) { return std::getenv(name); }, environ);
}

int64_t processRank(const Lookup& lookup) {
  const char* rank = lookup("RANK");
  if (rank == nullptr) return 0;
  return parseInt(trim(rank), 0, INT32_MAX).value_or(0);
}

const char* passesName(Passes passes) {
  switch (passes) {
    case Passes::Forward: return "fwd";
    case Passes::Backward: return "bwd";
    case Passes::Both: return "fwd,bwd";
  }
  return "?";
}

const char* watchName(Watch watch) { return watch == Watch::NanInf ? "naninf" : "off"; }

const char* randomName(Random random) {
  switch (random) {
    case Random::Off: return "off";
    case Random::Save: return "save";
    case Random::Replay: return "replay";
  }
  return "?";
}

const char* stackModeName(StackMode mode) {
  switch (mode) {
    case StackMode::None: return "none";
    case StackMode::Python: return "python";
    case StackMode::Native: return "native";
    case StackMode::Both: return "both";
  }
  return "?";
}

}  // namespace acc::env
