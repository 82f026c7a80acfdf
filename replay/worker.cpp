// acc-replay: the replay stage's worker. acc-analyzer starts it with
// --worker and sends it recorded ops (replay/protocol.h) on stdin; it runs
// each again on the CPU (replay_op.h) and answers on stdout. It links
// libtorch; the analyzer does not.
#include <ATen/Parallel.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>

#include "replay/protocol.h"
#include "replay/replay_op.h"

namespace {

constexpr const char* kUsage =
    "usage: acc-replay --worker\n"
    "\n"
    "The replay stage of acc-analyzer (check, compare, repro start it): reads\n"
    "recorded ops on stdin and runs each again on the CPU. Not for direct use.\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || std::strcmp(argv[1], "--worker") != 0) {
    std::cerr << kUsage;
    return argc == 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) ? 0 : 2;
  }
  // The answers own stdout: anything else printed (torch's warnings) goes to
  // stderr.
  const int answers = dup(1);
  dup2(2, 1);
  // One op per worker and one thread per op: the analyzer runs one worker
  // per core, and a fixed order of summation makes replays repeatable.
  at::set_num_threads(1);
  std::string message;
  try {
    while (acc::replay::readMessage(0, message)) {
      acc::replay::Outcome outcome;
      try {
        outcome = acc::replay::replayOp(acc::replay::decodeRequest(message));
      } catch (const std::exception& e) {
        outcome.status = acc::replay::Status::Failed;
        outcome.reason = std::string("unreadable request: ") + e.what();
      }
      acc::replay::writeMessage(answers, acc::replay::encodeOutcome(outcome));
    }
  } catch (const std::exception& e) {
    std::cerr << "acc-replay: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
