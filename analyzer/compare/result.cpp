#include "analyzer/compare/result.h"

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

}  // namespace acc::analyzer
