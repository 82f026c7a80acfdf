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

}  // namespace acc::analyzer
