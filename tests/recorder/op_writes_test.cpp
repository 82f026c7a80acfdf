// opWrites() as the observer and the statistics batch call it: from inside
// torch's callbacks, op after op, on more than one thread. Overloads of one
// op share its name (aten::add, aten::add.out) and must not share answers.
#include "recorder/observe/op_writes.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <ATen/record_function.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace acc::recorder {
namespace {

struct Seen {
  std::string name;
  size_t inputs = 0;
  bool known = false;
  std::vector<uint16_t> written;
};

thread_local std::vector<Seen>* seen = nullptr;

std::unique_ptr<at::ObserverContext> onStart(const at::RecordFunction& fn) {
  if (seen == nullptr) return nullptr;
  const OpWrites& w = opWrites(fn);
  seen->push_back({fn.name(), fn.inputs().size(), w.known, w.written});
  return nullptr;
}

// Runs add, add.out and add_ `rounds` times under a callback of this thread.
std::vector<Seen> observe(int rounds) {
  std::vector<Seen> out;
  seen = &out;
  auto handle = at::addThreadLocalCallback(
      at::RecordFunctionCallback(onStart).needsInputs(true).scopes({at::RecordScope::FUNCTION}));
  {
    at::RecordFunctionGuard enable(true);
    at::NoGradGuard no_grad;
    at::Tensor a = at::ones({4}), b = at::ones({4}), c = at::empty({4});
    for (int i = 0; i < rounds; ++i) {
      at::add(a, b);
      at::add_out(c, a, b);
      a.add_(b);
    }
  }
  at::removeCallback(handle);
  seen = nullptr;
  return out;
}

void expectWrites(const std::vector<Seen>& calls, int rounds) {
  int plain = 0, out = 0, in_place = 0;
  for (const Seen& s : calls) {
    if (s.name == "aten::add" && s.inputs == 3) {
      ++plain;
      EXPECT_TRUE(s.known);
      EXPECT_TRUE(s.written.empty()) << "aten::add.Tensor writes nothing";
    } else if (s.name == "aten::add" && s.inputs == 4) {
      ++out;
      EXPECT_EQ(s.written, std::vector<uint16_t>{3}) << "aten::add.out writes out, its fourth argument";
    } else if (s.name == "aten::add_") {
      ++in_place;
      EXPECT_EQ(s.written, std::vector<uint16_t>{0}) << "aten::add_ writes self";
    }
  }
  EXPECT_EQ(plain, rounds);
  EXPECT_EQ(out, rounds);
  EXPECT_EQ(in_place, rounds);
}

TEST(OpWrites, OverloadsSharingANameKeepTheirOwnAnswersOpAfterOp) {
  expectWrites(observe(5), 5);
  // Another thread finds them in the shared map, then in its own cache.
  std::vector<Seen> other;
  std::thread([&] { other = observe(3); }).join();
  expectWrites(other, 3);
  expectWrites(observe(2), 2);
}

}  // namespace
}  // namespace acc::recorder
