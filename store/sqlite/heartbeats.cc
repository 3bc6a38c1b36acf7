// SqliteStorage: writing heartbeat batches, and which shard a heartbeat goes to.
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "store/heartbeat_job.h"
#include "store/sqlite/lifecycle_sql.h"
#include "store/sqlite/sqlite_storage.h"

namespace store {
namespace {

// Binds a row to kHeartbeatPlain's or kHeartbeatReport's parameters.
void BindRow(Statement* stmt, const HeartbeatRow& row, const char* state) {
  stmt->Bind(1, row.container_id);
  stmt->Bind(2, row.accepted_ms);
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

  Status Apply(Db* db) override {
    *result_ = HeartbeatWriteResult{};
    StatementRef plain, report, stale;
    RETURN_IF_ERROR(db->Cached(sql::kHeartbeatPlain, &plain));
    RETURN_IF_ERROR(db->Cached(sql::kHeartbeatReport, &report));
    RETURN_IF_ERROR(db->Cached(sql::kHeartbeatStale, &stale));
    for (size_t i = 0; i < rows_->size(); ++i) {
      const HeartbeatRow& row = (*rows_)[i];
      RETURN_IF_ERROR(WriteRow(i, /*skip_plain=*/false, [&](HeartbeatStatement which,
                                                            bool* changed) {
        Statement* stmt = which == HeartbeatStatement::kPlain    ? &*plain
                          : which == HeartbeatStatement::kReport ? &*report
                                                                 : &*stale;
        stmt->Reset();
        if (which == HeartbeatStatement::kStale) {
          stmt->Bind(1, row.container_id);
          stmt->Bind(2, row.accepted_ms);
        } else {
          BindRow(stmt, row, ReportedStateName(row.state));
        }
        RETURN_IF_ERROR(stmt->Run());
        *changed = db->Changes() > 0;
        return Status::Ok();
      }));
    }
    return Status::Ok();
  }

  bool solo() const override { return rows_->size() > SqliteStorage::kMaxRidingRows; }
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
  Status s = WriteHeartbeatBatch<SqliteHeartbeatJob>(
      rows, result,
      [shard](std::unique_ptr<SqliteHeartbeatJob> job) {
        return shard->writer->Submit(std::move(job));
      },
      [shard] { return shard->writer->Refusal("the write queue of " + shard->path); });
  if (s.ok() && map_.shards() > 1) {
    // Removed since its shard was cached: look again next time.
    for (size_t i : result->unknown) ForgetCachedShard(rows[i].container_id);
  }
  return s;
}

}  // namespace store
