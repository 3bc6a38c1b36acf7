// What the writer core (store/group_writer.h) does when its engine throws:
// each hook of an engine with no database made to throw in turn (a real
// engine throws there only on bad_alloc or a bug, which no test can call up
// at will; tests/store/postgres/pg_writer_faults_test.cc throws through the
// PostgreSQL writer's own seams). The process must live, the group in hand
// be answered, and the writer go on serving.
#include "store/group_writer.h"

#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>

// The core's members, for its instantiation on a job of no connection here.
#include "store/group_writer_impl.h"

namespace {

// Jobs of an engine with no connection.
using Job = store::JobOn<void>;
using store::Status;

// An engine whose hooks named in `throwing` each throw once.
class ThrowingWriter final : public store::GroupWriter<Job> {
 public:
  explicit ThrowingWriter(std::set<std::string> throwing)
      : GroupWriter("throwing writer", {}), throwing_(std::move(throwing)) {}
  ~ThrowingWriter() override { Stop(); }

  std::atomic<int> probes{0};
  std::atomic<int> after_throw{0};

 private:
  // Touched on the writer thread only.
  void MaybeThrow(const std::string& hook) {
    if (throwing_.erase(hook) > 0) throw std::out_of_range(hook + " went wrong");
  }
  Status Begin(std::span<Job*>*, Run, bool* again) override {
    *again = false;
    MaybeThrow("Begin");
    return Status::Ok();
  }
  bool first_run_savepoints() const override { return true; }
  Status Savepoint() override {
    MaybeThrow("Savepoint");
    return Status::Ok();
  }
  Status EndSavepoint(bool) override { return Status::Ok(); }
  Status Apply(Job*, size_t) override { return Status::Ok(); }
  bool TransactionLost(const Status&) override { return false; }
  Status Commit() override {
    MaybeThrow("Commit");
    return Status::Ok();
  }
  Status Rollback() override {
    MaybeThrow("Rollback");
    return Status::Ok();
  }
  int64_t probe_interval_ms() const override { return 10; }
  void Probe() override {
    ++probes;
    MaybeThrow("Probe");
  }
  void AfterThrow() override { ++after_throw; }

  std::set<std::string> throwing_;
};

class ReplyJob final : public Job {
 public:
  explicit ReplyJob(std::promise<Status>* done) : done_(done) {}
  Status Apply(void*) override { return Status::Ok(); }
  void Done(Status status) override { done_->set_value(std::move(status)); }

 private:
  std::promise<Status>* done_;
};

// Submits a job and waits for its answer (bounded: a writer that died
// answers nothing).
Status RunOne(ThrowingWriter* writer) {
  std::promise<Status> done;
  std::future<Status> answer = done.get_future();
  REQUIRE(writer->Submit(std::make_unique<ReplyJob>(&done)));
  REQUIRE(answer.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  return answer.get();
}

}  // namespace

TEST_CASE("group writer: an exception from the engine fails its group, never the process") {
  const std::string hook = GENERATE(as<std::string>{}, "Begin", "Savepoint", "Commit");
  INFO("throws: " << hook);
  ThrowingWriter writer({hook, "Rollback"});
  writer.Start();
  const Status failed = RunOne(&writer);
  CHECK(failed.IsIOError());
  CHECK_THAT(failed.message(), Catch::Contains(hook + " went wrong"));
  // A COMMIT that threw may have been sent: its outcome is unknown. Before
  // it, nothing was written.
  CHECK(store::IsCommitOutcomeUnknown(failed) == (hook == "Commit"));
  // The group failed, so ROLLBACK ran, and threw too: caught as well.
  CHECK(writer.after_throw.load() == (hook == "Commit" ? 1 : 2));
  CHECK(writer.stats().writer_exceptions.load() == (hook == "Commit" ? 1u : 2u));
  CHECK(writer.stats().transactions_lost.load() == 1);
  // The writer goes on.
  CHECK(RunOne(&writer).ok());
  CHECK(writer.stats().transactions.load() == 1);
}

TEST_CASE("group writer: an idle probe that throws is caught, and probing goes on") {
  ThrowingWriter writer({"Probe"});
  writer.Start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (writer.probes.load() < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(writer.probes.load() >= 3);  // it threw on the first, and probed again
  CHECK(writer.stats().writer_exceptions.load() == 1);
  CHECK(writer.after_throw.load() == 1);
  CHECK(RunOne(&writer).ok());
}
