// SqliteStorage: writing heartbeat batches, and which shard a heartbeat goes to.
#include <future>
#include <memory>
#include <string>
#include <vector>

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
class HeartbeatJob : public WriteJob {
 public:
  HeartbeatJob(const std::vector<HeartbeatRow>* rows, HeartbeatWriteResult* result,
               std::promise<Status>* done)
      : rows_(rows), result_(result), done_(done) {}

  Status Apply(Db* db) override {
    *result_ = HeartbeatWriteResult{};
    StatementRef plain, report, stale;
    RETURN_IF_ERROR(db->Cached(sql::kHeartbeatPlain, &plain));
    RETURN_IF_ERROR(db->Cached(sql::kHeartbeatReport, &report));
    RETURN_IF_ERROR(db->Cached(sql::kHeartbeatStale, &stale));
    for (size_t i = 0; i < rows_->size(); ++i) {
      const HeartbeatRow& row = (*rows_)[i];
      const char* state = ReportedStateName(row.state);
      // The plain statement first; a state it did not find already held
      // goes through the report statement (lifecycle_sql.h).
      bool changed = false;
      for (Statement* stmt : {&*plain, &*report}) {
        stmt->Reset();
        BindRow(stmt, row, state);
        RETURN_IF_ERROR(stmt->Run());
        changed = db->Changes() > 0;
        if (changed || state == nullptr) break;
      }
      if (changed) {
        ++result_->written;
        continue;
      }
      // Older than the stored report, or not in this shard.
      stale->Reset();
      stale->Bind(1, row.container_id);
      stale->Bind(2, row.accepted_ms);
      RETURN_IF_ERROR(stale->Run());
      if (db->Changes() > 0) {
        ++result_->written;
        ++result_->stale;
      } else {
        result_->unknown.push_back(i);
      }
    }
    return Status::Ok();
  }

  void Done(Status status) override { done_->set_value(std::move(status)); }
  bool solo() const override { return rows_->size() > SqliteStorage::kMaxRidingRows; }

 private:
  const std::vector<HeartbeatRow>* rows_;
  HeartbeatWriteResult* result_;
  std::promise<Status>* done_;
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
  std::promise<Status> done;
  std::future<Status> outcome = done.get_future();
  if (!shard->writer->Submit(std::make_unique<HeartbeatJob>(&rows, result, &done))) {
    return Status::Busy("writer of " + shard->path + " is full or stopping");
  }
  Status s = outcome.get();
  if (s.ok() && map_.shards() > 1) {
    // Removed since its shard was cached: look again next time.
    for (size_t i : result->unknown) ForgetCachedShard(rows[i].container_id);
  }
  return s;
}

}  // namespace store
