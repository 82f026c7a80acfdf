#include "analyzer/compare/progress.h"

#include <unistd.h>

#include <algorithm>
#include <string>

#include "analyzer/common/text.h"

namespace acc::analyzer {
namespace {

constexpr double kBarAfter = 0.5;     // seconds before a bar appears
constexpr double kLineAfter = 5.0;    // ... before the first progress line (no terminal)
constexpr double kLineEvery = 5.0;

}  // namespace

ProgressReporter::ProgressReporter(std::FILE* out, const char* command, bool lines)
    : ProgressReporter(out, isatty(fileno(out)) != 0, command) {
  silent_ = !terminal_ && !lines;
}
ProgressReporter::ProgressReporter(std::FILE* out, bool terminal, const char* command)
    : out_(out), terminal_(terminal), command_(command) {}

void ProgressReporter::update(const CompareProgress& p) {
  if (silent_) return;
  char text[160];
  double fraction;
  if (p.writing) {
    fraction = p.pairs_total ? static_cast<double>(p.pairs_done) / static_cast<double>(p.pairs_total) : 1.0;
    std::snprintf(text, sizeof text, "writing reports  %llu/%llu", static_cast<unsigned long long>(p.pairs_done),
                  static_cast<unsigned long long>(p.pairs_total));
  } else {
    const bool by_bytes = p.bytes_total > 0 || p.bytes_done > 0;  // tensor data (level 2)
    const double done = p.bytes_total > 0 ? static_cast<double>(p.bytes_done) : static_cast<double>(p.pairs_done);
    const double total = p.bytes_total > 0 ? static_cast<double>(p.bytes_total) : static_cast<double>(p.pairs_total);
    fraction = total > 0 ? std::min(1.0, done / total) : 1.0;
    const double seconds = p.seconds > 0 ? p.seconds : 0;
    if (by_bytes) {
      std::snprintf(text, sizeof text, "%s  %llu/%llu records  %s  %s/s", p.action,
                    static_cast<unsigned long long>(p.pairs_done), static_cast<unsigned long long>(p.pairs_total),
                    bytesText(static_cast<double>(p.bytes_done)).c_str(),
                    bytesText(seconds > 0 ? static_cast<double>(p.bytes_done) / seconds : 0).c_str());
    } else {
      // Statistics only (level 0 and 1): no tensor data, records per second.
      std::snprintf(text, sizeof text, "%s  %llu/%llu records  %.0f records/s", p.action,
                    static_cast<unsigned long long>(p.pairs_done), static_cast<unsigned long long>(p.pairs_total),
                    seconds > 0 ? static_cast<double>(p.pairs_done) / seconds : 0.0);
    }
  }
  if (terminal_) {
    if (p.seconds < kBarAfter || p.seconds - last_ < 0.1) return;
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(fraction * kWidth);
    std::string bar(static_cast<size_t>(filled), '#');
    bar.append(static_cast<size_t>(kWidth - filled), '.');
    std::fprintf(out_, "\r\033[K[%s] %3.0f%%  %s", bar.c_str(), fraction * 100, text);
    std::fflush(out_);
    shown_ = true;
  } else {
    if (p.seconds < kLineAfter || (shown_ && p.seconds - last_ < kLineEvery)) return;
    std::fprintf(out_, "acc-analyzer %s: %3.0f%%  %s\n", command_, fraction * 100, text);
    std::fflush(out_);
    shown_ = true;
  }
  last_ = p.seconds;
}

void ProgressReporter::finish() {
  if (terminal_ && shown_) {
    std::fprintf(out_, "\r\033[K");
    std::fflush(out_);
  }
  shown_ = false;
}

}  // namespace acc::analyzer
