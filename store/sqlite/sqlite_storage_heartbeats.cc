// SqliteStorage: writing heartbeat batches, and which shard a heartbeat goes to.
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "store/clock_steps.h"
#include "store/heartbeat_job.h"
#include "store/sqlite/claim_selector.h"
#include "store/sqlite/heartbeat_sql.h"
#include "store/sqlite/sqlite_storage.h"

namespace store {
namespace {

// Binds a row to kHeartbeatPlain's or kHeartbeatReport's parameters, its
// liveness at `accepted_ms`.
void BindRow(Statement* stmt, const HeartbeatRow& row, int64_t accepted_ms, const char* state) {
  stmt->Bind(1, row.container_id);
  stmt->Bind(2, accepted_ms);
  if (row.ts_ms) {
    stmt->Bind(3, *row.ts_ms);
  } else {
    stmt->BindNull(3);
  }
  if (row.load) {
    stmt->Bind(4, *row.load);
  } else {
    stmt->BindNull(4);
  }
  if (state != nullptr) {
    stmt->Bind(5, state);
  } else {
    stmt->BindNull(5);
  }
}

// A batch of rows as one job of the shard's Writer. A batch of at most
// kMaxRidingRows rides in the group commit beside the claims, under a
// SAVEPOINT of its own: its rows commit or fail whole and share the group's
// fsync (a solo batch made every claim queued behind it wait for its rows
// and a whole extra fsync; the Writer is one thread either way). A larger
// batch stays solo. The caller owns rows, result and promise and waits for
// Done, so the pointers outlive the job.
class SqliteHeartbeatJob : public HeartbeatJob<WriteJob> {
 public:
  using HeartbeatJob::HeartbeatJob;

  // The shard's clock (SqliteStorage::ShardNow), read at the write.
  void set_clock(std::function<int64_t()> now) { now_ = std::move(now); }

  Status Apply(Db* db) override {
    *result_ = HeartbeatWriteResult{};
    // A row stamped further ahead of the clock than a step's tolerance was
    // accepted before a backward step: its liveness is now, not a future
    // that would keep a silent container alive for as long as the step.
    const int64_t now = now_();
    StatementRef plain, report, stale;
    RETURN_IF_ERROR(db->Cached(sql::kHeartbeatPlain, &plain));
    RETURN_IF_ERROR(db->Cached(sql::kHeartbeatReport, &report));
    RETURN_IF_ERROR(db->Cached(sql::kHeartbeatStale, &stale));
    std::unordered_set<std::string_view> named;
    for (size_t i = 0; i < rows_->size(); ++i) {
      const HeartbeatRow& row = (*rows_)[i];
      const int64_t accepted_ms =
          row.accepted_ms > now + kClockStepToleranceMs ? now : row.accepted_ms;
      RETURN_IF_ERROR(WriteRow(i, /*skip_plain=*/false, [&](HeartbeatStatement which,
                                                            bool* changed) {
        Statement* stmt = which == HeartbeatStatement::kPlain    ? &*plain
                          : which == HeartbeatStatement::kReport ? &*report
                                                                 : &*stale;
        stmt->Reset();
        if (which == HeartbeatStatement::kStale) {
          stmt->Bind(1, row.container_id);
          stmt->Bind(2, accepted_ms);
        } else {
          BindRow(stmt, row, accepted_ms, ReportedStateName(row.state));
        }
        RETURN_IF_ERROR(stmt->Run());
        *changed = db->Changes() > 0;
        // A report may change the status (the others never write it).
        if (which == HeartbeatStatement::kReport && *changed) {
          return SyncAttributesOpen(db, row.container_id);
        }
        return Status::Ok();
      }));
      if (row.learn_region && named.insert(row.container_id).second) {
        RETURN_IF_ERROR(NameRegion(db, i));
      }
    }
    return Status::Ok();
  }

  // Names row i's container's region, if it is there
  // (HeartbeatWriteResult::regions).
  Status NameRegion(Db* db, size_t i) {
    StatementRef region;
    RETURN_IF_ERROR(db->Cached(sql::kHeartbeatRegion, &region));
    region->Bind(1, (*rows_)[i].container_id);
    bool has_row = false;
    RETURN_IF_ERROR(region->Step(&has_row));
    if (has_row) result_->regions.emplace_back(i, region->ColumnString(0));
    return Status::Ok();
  }

  bool solo() const override { return rows_->size() > SqliteStorage::kMaxRidingRows; }

 private:
  std::function<int64_t()> now_;
};

}  // namespace

Status SqliteStorage::PartitionOf(const std::string& container_id, int* partition) {
  if (map_.shards() == 1) {
    // One shard: an unknown id is found, counted and dropped at write time.
    *partition = 0;
    return Status::Ok();
  }
  return FindShard(container_id, /*cached=*/true, partition);
}

Status SqliteStorage::WriteHeartbeats(int partition, const std::vector<HeartbeatRow>& rows,
                                      HeartbeatWriteResult* result) {
  Shard* shard = shards_[static_cast<size_t>(partition)];
  // The rows were stamped on this node's wall clock: a step found since is
  // applied to the stored ones first.
  RETURN_IF_ERROR(ApplyClockShift(partition));
  Status s = WriteHeartbeatBatch<SqliteHeartbeatJob>(
      rows, result,
      [this, shard, partition](std::unique_ptr<SqliteHeartbeatJob> job) {
        job->set_clock([this, partition] { return ShardNow(partition); });
        return shard->writer->Submit(std::move(job));
      },
      [shard] { return shard->writer->Refusal("the write queue of " + shard->path); });
  if (s.ok() && map_.shards() > 1) {
    // Removed since its shard was cached: look again next time.
    for (size_t i : result->unknown) shard_of_id_.Forget(rows[i].container_id);
  }
  return s;
}

}  // namespace store
