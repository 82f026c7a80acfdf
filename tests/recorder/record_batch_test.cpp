// Per-thread batches of op records (recorder/write/record_batch.h): every
// record reaches the file once, each thread's in its order; a batch is
// handed over before what its thread or another hands over after it; a
// content in a batch is referable to other threads only once the batch is
// queued; drops count each record; a forked child leaves its parent's
// batches alone.
#include "recorder/write/record_batch.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <csignal>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "format/frame.h"
#include "format/record.h"
#include "tests/recorder/read_ops.h"

#include "tests/temp_dir.h"

namespace acc::recorder {
namespace {

namespace fs = std::filesystem;

// Batches belong to threads, and a thread's outlives a RecordBatches made
// for one test: every thread that takes one here ends within its test
// (onThread), the test's own never does.
void onThread(const std::function<void()>& f) { std::thread(f).join(); }

// A record as newRecord makes it: in the calling thread's batch, or in
// none (`batches` null: a record that refers only to queued contents).
std::unique_ptr<CapturedOp> op(RecordBatches* batches, uint64_t index, uint64_t thread) {
  auto r = std::make_unique<CapturedOp>();
  r->batch = batches != nullptr ? batches->mine() : nullptr;
  r->index = index;
  r->op = "aten::add";
  r->name = "aten::add." + std::to_string(index) + ".fwd";
  r->thread = thread;
  return r;
}

// A thread that takes records 0..n-1 into its batch, runs `then` there and
// stays, alive, until released (or the object goes): a thread whose batch
// others must hand over.
class BatchHolder {
 public:
  BatchHolder(RecordBatches& batches, uint64_t n, uint64_t thread, std::function<void()> then = [] {})
      : thread_([&batches, n, thread, then, this] {
          for (uint64_t i = 0; i < n; ++i) {
            std::unique_ptr<CapturedOp> r = op(&batches, i, thread);
            EXPECT_TRUE(batches.take(r));
          }
          then();
          taken_.set_value();
          release_.get_future().wait();
        }) {
    taken_.get_future().wait();
  }
  ~BatchHolder() { release(); }
  // Its thread ends, handing over what its batch still holds.
  void release() {
    if (!thread_.joinable()) return;
    release_.set_value();
    thread_.join();
  }

 private:
  std::promise<void> taken_, release_;
  std::thread thread_;  // last: started once the promises are there
};

// (thread, index) of the file's op records, in file order.
std::vector<std::pair<uint64_t, uint64_t>> fileOrder(const std::string& path) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  format::FrameReader reader(path);
  forEachOp(reader, [&](const format::OpRecord& r) { out.emplace_back(r.thread, r.index); });
  return out;
}

// Hands `r` over alone, as emitRecord does what no batch takes.
bool submitAlone(Writer& writer, const CapturedOp& r) {
  std::string bytes;
  format::encode(r, bytes);
  format::appendData(r, bytes);
  return writer.submit(std::move(bytes));
}

std::vector<uint64_t> indices(const std::string& path) {
  std::vector<uint64_t> out;
  for (const auto& [thread, index] : fileOrder(path)) out.push_back(index);
  return out;
}

class RecordBatchTest : public ::testing::Test {
 protected:
  test::TempDir tmp_{"acc_record_batch_test"};
  fs::path dir_{tmp_.path()};
  std::string path_ = (dir_ / "records.acc").string();
};

TEST_F(RecordBatchTest, EveryThreadsRecordsArriveOnceAndInOrder) {
  Writer writer(path_, env::Config{});
  RecordBatches batches(writer, nullptr, 8);
  constexpr uint64_t kThreads = 4, kPerThread = 50;  // not a multiple of 8: exits hand the rest over
  std::vector<std::thread> threads;
  for (uint64_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < kPerThread; ++i) {
        std::unique_ptr<CapturedOp> r = op(&batches, i, t);
        EXPECT_TRUE(batches.take(r));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  writer.stop();
  EXPECT_EQ(writer.counts().records_written, kThreads * kPerThread);
  EXPECT_EQ(writer.counts().records_dropped, 0u);
  std::vector<uint64_t> next(kThreads, 0);
  const auto order = fileOrder(path_);
  ASSERT_EQ(order.size(), kThreads * kPerThread);
  for (const auto& [thread, index] : order) {
    ASSERT_LT(thread, kThreads);
    EXPECT_EQ(index, next[thread]++) << "thread " << thread;
  }
}

TEST_F(RecordBatchTest, SizeOneLeavesEveryRecordToTheCaller) {
  Writer writer(path_, env::Config{});
  RecordBatches batches(writer, nullptr, 1);
  EXPECT_EQ(batches.mine(), nullptr);
  std::unique_ptr<CapturedOp> r = op(&batches, 0, 0);
  EXPECT_FALSE(batches.take(r));
  EXPECT_NE(r, nullptr);
}

// A record with values still on a device, or with level 2's bytes, goes
// alone; its thread's batch first.
TEST_F(RecordBatchTest, RecordsThatGoAloneComeAfterTheirThreadsBatch) {
  Writer writer(path_, env::Config{});
  RecordBatches batches(writer, nullptr, 8);
  onThread([&] {
    for (uint64_t i = 0; i < 3; ++i) {
      std::unique_ptr<CapturedOp> r = op(&batches, i, 0);
      ASSERT_TRUE(batches.take(r));
    }
    std::unique_ptr<CapturedOp> with_bytes = op(&batches, 3, 0);
    format::Tensor t;
    t.has_data = true;
    t.data = "1234";
    with_bytes->tensors.push_back(t);
    EXPECT_FALSE(batches.take(with_bytes));
    batches.handOverBefore(*with_bytes);
    EXPECT_TRUE(submitAlone(writer, *with_bytes));
  });
  writer.stop();
  EXPECT_EQ(indices(path_), (std::vector<uint64_t>{0, 1, 2, 3}));
}

// A step's end and Session::stop hand over the batches of threads that
// are not recording just then.
TEST_F(RecordBatchTest, HandOverAllTakesOtherThreadsBatches) {
  Writer writer(path_, env::Config{});
  RecordBatches batches(writer, nullptr, 8);
  BatchHolder other(batches, 3, 1);
  batches.handOverAll();
  EXPECT_TRUE(submitAlone(writer, *op(nullptr, 100, 0)));
  other.release();
  writer.stop();
  EXPECT_EQ(indices(path_), (std::vector<uint64_t>{0, 1, 2, 100}));
}

// A collective's record completes on its backend's thread, the watch's
// finds on whichever thread finds them: such a record may refer to
// contents of the batch of the thread that captured it, handed over first.
TEST_F(RecordBatchTest, ARecordHandedOverByAnotherThreadComesAfterTheBatchItWasCapturedIn) {
  Writer writer(path_, env::Config{});
  RecordBatches batches(writer, nullptr, 8);
  std::unique_ptr<CapturedOp> r;
  BatchHolder capturer(batches, 3, 1, [&] { r = op(&batches, 3, 1); });
  onThread([&] {
    EXPECT_FALSE(batches.take(r));  // not this thread's
    batches.handOverBefore(*r);
    EXPECT_TRUE(submitAlone(writer, *r));
  });
  capturer.release();
  writer.stop();
  EXPECT_EQ(indices(path_), (std::vector<uint64_t>{0, 1, 2, 3}));
}

TEST_F(RecordBatchTest, ABatchRefusedAfterStopCountsEachOfItsRecords) {
  Writer writer(path_, env::Config{});
  RecordBatches batches(writer, nullptr, 8);
  BatchHolder taker(batches, 5, 0);
  writer.stop();
  batches.handOverAll();
  taker.release();  // its batch is empty now: nothing more counted
  EXPECT_EQ(writer.counts().records_dropped, 5u);
  EXPECT_EQ(writer.counts().records_written, 0u);
  EXPECT_TRUE(fileOrder(path_).empty());
}

TEST_F(RecordBatchTest, AContentInABatchIsReferableToOtherThreadsOnceTheBatchIsQueued) {
  Writer writer(path_, env::Config{});
  ContentStore store;
  RecordBatches batches(writer, &store, 8);
  const at::Tensor x = at::rand({64});
  std::promise<uint64_t> defined;
  std::promise<void> checked, queued;
  std::thread definer([&] {
    std::unique_ptr<CapturedOp> r = op(&batches, 0, 1);
    const ContentStore::Content c = store.identify(x, r->contents, &r->batch->clock);
    ASSERT_TRUE(batches.take(r));
    // Its own thread refers to it at once: its records keep their order.
    std::unique_ptr<CapturedOp> next = op(&batches, 1, 1);
    const ContentStore::Content again = store.identify(x, next->contents, &next->batch->clock);
    EXPECT_TRUE(again.ref);
    EXPECT_EQ(again.id, c.id);
    ASSERT_TRUE(batches.take(next));
    defined.set_value(c.id);
    checked.get_future().wait();
  });
  const uint64_t id = defined.get_future().get();
  // This thread has no batch: it refers to queued contents only, as any
  // thread but the definer's.
  std::vector<ContentStore::Pending> pending;
  ContentStore::Content seen = store.identify(x, pending, nullptr);
  EXPECT_FALSE(seen.ref);  // its definition is not queued yet
  EXPECT_NE(seen.id, id);
  batches.handOverAll();
  std::vector<ContentStore::Pending> later;
  seen = store.identify(x, later, nullptr);
  EXPECT_TRUE(seen.ref);
  EXPECT_EQ(seen.id, id);
  checked.set_value();
  definer.join();
}

// A forked child's copy of a writer has no thread: whatever the child hands
// over stays queued. At the child's exit its copy of the parent's batch must
// be left alone (handing it over there would wait forever on this queue,
// or on a lock a parent thread held at the fork); the parent writes it.
TEST_F(RecordBatchTest, AForkedChildLeavesItsParentsBatchAlone) {
  env::Config config;
  config.buffer_mb = 1;
  Writer writer(path_, config);
  RecordBatches batches(writer, nullptr, 8);
  onThread([&] {
    for (uint64_t i = 0; i < 3; ++i) {
      std::unique_ptr<CapturedOp> r = op(&batches, i, 0);
      ASSERT_TRUE(batches.take(r));
    }
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      // Fills the copy's budget: a hand-over now would wait for room.
      auto item = writer.blank();
      item->bytes.assign(2 << 20, '\0');
      writer.submit(std::move(item));
      std::exit(0);  // this thread's thread_local destructors run: the batch's owner among them
    }
    int status = 0;
    pid_t waited = 0;
    for (int i = 0; i < 200 && waited == 0; ++i) {
      waited = ::waitpid(child, &status, WNOHANG);
      if (waited == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (waited == 0) {
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
      FAIL() << "the child did not exit within 10 s";
    }
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  });  // this thread's exit hands its batch over
  writer.stop();
  EXPECT_EQ(fileOrder(path_).size(), 3u);
}

}  // namespace
}  // namespace acc::recorder
