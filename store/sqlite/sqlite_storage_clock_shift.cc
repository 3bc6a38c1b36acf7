// SqliteStorage: steps of this node's wall clock. SQLite stores instants of
// the wall clock (lease ends, heartbeats) and compares them with it; a step
// (an NTP step, `date -s`, a VM resumed with a stale clock) would end every
// lease early or kill every container at once, or keep dead ones claimable
// for as long as the step. Each step found (store/clock_steps.h) is applied
// to the stored instants in one transaction a shard, so the durations they
// stand for keep their length; decisions made before that read the clock as
// it was before the step (ShardNow).
#include <chrono>
#include <cstdio>
#include <future>
#include <string>
#include <thread>

#include "store/clock_steps.h"
#include "store/sqlite/lifecycle_sql.h"
#include "store/sqlite/sqlite_storage.h"

namespace store {
namespace {

Status RunShift(Db* db, const char* statement, int64_t shift_ms) {
  StatementRef q;
  RETURN_IF_ERROR(db->Cached(statement, &q));
  q->Bind(1, shift_ms);
  return q->Run();
}

std::string Seconds(int64_t ms) {
  char text[32];
  snprintf(text, sizeof text, "%+.3f s", static_cast<double>(ms) / 1e3);
  return text;
}

}  // namespace

// The shift as one solo job of the shard's writer: the writer thread is the
// only one that writes the shard's rows or changes shifted_ms, so its jobs
// always see the two agree. Readers wait out the commit (`shifting` odd).
class SqliteStorage::ClockShiftJob : public WriteJob {
 public:
  ClockShiftJob(ShardClock* clock, std::promise<Status>* done, int64_t* shifted_by)
      : clock_(clock), done_(done), shifted_by_(shifted_by) {}

  Status Apply(Db* db) override {
    if (clock_->shifting.load() % 2 == 0) clock_->shifting.fetch_add(1);
    target_ms_ = WallClockSteps::Process().Read().stepped_ms;
    *shifted_by_ = target_ms_ - clock_->shifted_ms.load();
    if (*shifted_by_ == 0) return Status::Ok();
    RETURN_IF_ERROR(RunShift(db, sql::kShiftLeases, *shifted_by_));
    return RunShift(db, sql::kShiftHeartbeats, *shifted_by_);
  }

  void Done(Status status) override {
    if (status.ok()) {
      clock_->shifted_ms.store(target_ms_);
    } else {
      *shifted_by_ = 0;
    }
    if (clock_->shifting.load() % 2 == 1) clock_->shifting.fetch_add(1);
    done_->set_value(std::move(status));
  }

  bool solo() const override { return true; }

 private:
  ShardClock* const clock_;
  std::promise<Status>* const done_;
  int64_t* const shifted_by_;
  int64_t target_ms_ = 0;
};

int64_t SqliteStorage::ShardNow(int shard) const {
  const WallClockSteps::Reading r = WallClockSteps::Process().Read();
  return r.wall_ms - (r.stepped_ms - clocks_[static_cast<size_t>(shard)]->shifted_ms.load());
}

Status SqliteStorage::ReadAtShardNow(int shard, const std::function<Status(Db*, int64_t)>& read) {
  const ShardClock& clock = *clocks_[static_cast<size_t>(shard)];
  for (;;) {
    const uint64_t before = clock.shifting.load();
    if (before % 2 == 0) {
      const int64_t now = ShardNow(shard);
      Status s = shards_[static_cast<size_t>(shard)]->reads->With(
          [&](Db* db) { return read(db, now); });
      if (clock.shifting.load() == before) return s;
    }
    // A shift is committing: rare, and as long as its transaction.
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

Status SqliteStorage::ApplyClockShift(int shard) {
  ShardClock* clock = clocks_[static_cast<size_t>(shard)].get();
  if (WallClockSteps::Process().Read().stepped_ms == clock->shifted_ms.load()) {
    return Status::Ok();
  }
  std::promise<Status> done;
  std::future<Status> outcome = done.get_future();
  int64_t shifted_by = 0;
  Shard* target = shards_[static_cast<size_t>(shard)];
  auto job = std::make_unique<ClockShiftJob>(clock, &done, &shifted_by);
  if (!target->writer->Submit(std::move(job))) {
    return target->writer->Refusal("the write queue of " + target->path);
  }
  Status s = outcome.get();
  if (s.ok() && shifted_by != 0 && warn_) {
    warn_("the wall clock stepped " + Seconds(shifted_by) +
          " (against the monotonic clock); lease ends and heartbeats in " + target->path +
          " were moved by as much, so leases keep their length and silences their measure");
  }
  return s;
}

Status SqliteStorage::ShardCutoff(int shard, const std::function<int64_t()>& cutoff_ms,
                                  int64_t* cutoff) {
  const int64_t before = WallClockSteps::Process().Read().stepped_ms;
  const int64_t read = cutoff_ms();
  const int64_t after = WallClockSteps::Process().Read().stepped_ms;
  if (before != after) {
    return Status::Busy("the wall clock stepped while the silence cutoff was read; next sweep");
  }
  *cutoff = read - (after - clocks_[static_cast<size_t>(shard)]->shifted_ms.load());
  return Status::Ok();
}

std::optional<uint64_t> SqliteStorage::clock_steps() const {
  return WallClockSteps::Process().steps();
}

}  // namespace store
