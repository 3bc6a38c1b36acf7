// PostgresStorage: heartbeat batches and the reapers' sweeps.
#include <algorithm>
#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "store/postgres/lane.h"
#include "store/postgres/lifecycle_sql.h"
#include "store/postgres/postgres_storage.h"

namespace store {
namespace {

// A batch of rows as one writer job, riding in the group's transaction; the
// caller waits for Done, so the pointers outlive the job.
class HeartbeatJob : public PgJob {
 public:
  HeartbeatJob(const std::vector<HeartbeatRow>* rows, HeartbeatWriteResult* result,
               std::promise<Status>* done)
      : rows_(rows), result_(result), done_(done) {}

  Status Apply(PgConn* conn) override {
    *result_ = HeartbeatWriteResult{};
    // The rows of containers that appear once in the batch go in one
    // statement; what it leaves (a state change, an unknown id) and the
    // containers that appear more than once go one at a time, in order. The
    // two sets touch different containers, so the batch still ends as its
    // rows would one after another.
    std::unordered_map<std::string_view, int> seen;
    for (const HeartbeatRow& row : *rows_) ++seen[row.container_id];
    std::vector<size_t> bulk, single;
    for (size_t i = 0; i < rows_->size(); ++i) {
      (seen[(*rows_)[i].container_id] == 1 ? bulk : single).push_back(i);
    }
    // What the bulk statement left failed kHeartbeatPlain's very test, so
    // those rows skip that statement.
    std::vector<bool> left_by_bulk(rows_->size(), false);
    if (!bulk.empty()) RETURN_IF_ERROR(WriteBulk(conn, bulk, &single, &left_by_bulk));
    std::sort(single.begin(), single.end());
    for (size_t i : single) RETURN_IF_ERROR(WriteOne(conn, i, left_by_bulk[i]));
    std::sort(result_->unknown.begin(), result_->unknown.end());
    return Status::Ok();
  }
  void Done(Status status) override { done_->set_value(std::move(status)); }
  // Every row of the batch, locked by the writer in id order before any is
  // written, so two nodes' overlapping batches never deadlock.
  void AddRowLocks(std::vector<std::string>* ids, std::vector<std::string>*) const override {
    for (const HeartbeatRow& row : *rows_) ids->push_back(row.container_id);
  }

 private:
  // Writes indexes' rows in one statement; those it did not take go to *rest.
  Status WriteBulk(PgConn* conn, const std::vector<size_t>& indexes, std::vector<size_t>* rest,
                   std::vector<bool>* left) {
    std::vector<PgParam> ids, ts, loads, states;
    for (size_t i : indexes) {
      const HeartbeatRow& row = (*rows_)[i];
      const char* state = ReportedStateName(row.state);
      ids.push_back(P(row.container_id));
      ts.push_back(row.ts_ms ? P(*row.ts_ms) : Null());
      loads.push_back(row.load ? P(*row.load) : Null());
      states.push_back(state != nullptr ? P(state) : Null());
    }
    PgResult r;
    RETURN_IF_ERROR(conn->Run(pgsql::kHeartbeatBulk,
                              {ArrayParam(ids), ArrayParam(ts), ArrayParam(loads),
                               ArrayParam(states)},
                              &r));
    std::unordered_map<std::string_view, bool> taken;  // id -> stale
    for (int k = 0; k < r.rows(); ++k) taken[r.Text(k, 0)] = r.Text(k, 1) == "t";
    for (size_t i : indexes) {
      auto it = taken.find((*rows_)[i].container_id);
      if (it == taken.end()) {
        rest->push_back(i);
        (*left)[i] = true;
        continue;
      }
      ++result_->written;
      if (it->second) ++result_->stale;
    }
    return Status::Ok();
  }

  // `skip_plain`: the row is known to fail kHeartbeatPlain's test.
  Status WriteOne(PgConn* conn, size_t i, bool skip_plain) {
    const HeartbeatRow& row = (*rows_)[i];
    const char* state = ReportedStateName(row.state);
    const std::vector<PgParam> params = {P(row.container_id), row.ts_ms ? P(*row.ts_ms) : Null(),
                                         row.load ? P(*row.load) : Null(),
                                         state != nullptr ? P(state) : Null()};
    // As on SQLite: the plain statement first (a HOT update: it changes no
    // indexed column); a state it did not find held, through the report
    // statement; then liveness alone.
    PgResult r;
    if (!skip_plain) RETURN_IF_ERROR(conn->Run(pgsql::kHeartbeatPlain, params, &r));
    if (r.changed() == 0 && state != nullptr) {
      RETURN_IF_ERROR(conn->Run(pgsql::kHeartbeatReport, params, &r));
    }
    if (r.changed() > 0) {
      ++result_->written;
      return Status::Ok();
    }
    RETURN_IF_ERROR(conn->Run(pgsql::kHeartbeatStale, {P(row.container_id)}, &r));
    if (r.changed() > 0) {
      ++result_->written;
      ++result_->stale;
    } else {
      result_->unknown.push_back(i);
    }
    return Status::Ok();
  }

  const std::vector<HeartbeatRow>* rows_;
  HeartbeatWriteResult* result_;
  std::promise<Status>* done_;
};

}  // namespace

Status PostgresStorage::PartitionOf(const std::string& container_id, int* partition) {
  *partition = LaneOf(container_id, partitions());
  return Status::Ok();
}

Status PostgresStorage::WriteHeartbeats(int partition, const std::vector<HeartbeatRow>& rows,
                                        HeartbeatWriteResult* result) {
  std::promise<Status> done;
  std::future<Status> outcome = done.get_future();
  PgWriter* writer = writers_[static_cast<size_t>(partition)].get();
  if (!writer->Submit(std::make_unique<HeartbeatJob>(&rows, result, &done))) {
    return writer->down()
               ? Status::IOError("unavailable: this node cannot reach PostgreSQL now; retry")
               : Status::Busy("the PostgreSQL write queue is full or stopping");
  }
  return outcome.get();
}

Status PostgresStorage::SweepExpiredLeases(int partition, int max_rows, int64_t* ended) {
  *ended = 0;
  // Leases are the sessions' and not partitioned: writer 0 sweeps them all.
  if (partition != 0) return Status::Ok();
  int64_t changed = 0;
  Status s = writers_[0]->RunSync(
      [&](PgConn* conn) {
        PgResult r;
        RETURN_IF_ERROR(conn->Run(pgsql::kReapExpired, {P(int64_t{max_rows})}, &r));
        changed = r.changed();
        return Status::Ok();
      },
      /*solo=*/true);
  if (s.ok()) *ended = changed;
  return s;
}

Status PostgresStorage::SweepSilentContainers(int partition,
                                              const std::function<int64_t()>& cutoff_ms,
                                              int max_rows, SilenceSweep* sweep) {
  *sweep = SilenceSweep{};
  SilenceSweep found;
  const int64_t partitions = this->partitions();
  Status s = writers_[static_cast<size_t>(partition)]->RunSync(
      [&](PgConn* conn) {
        found = SilenceSweep{};
        // The cutoff is on this node's clock; what the database is told is
        // how long before now it lies (dead_after_ms, more while heartbeats
        // this node accepted are still queued: batcher::SilenceCutoff), and
        // the statement counts back from the database's now, so the node's
        // offset from the database cancels out.
        const int64_t silence = base::NowMs() - cutoff_ms();
        PgResult r;
        RETURN_IF_ERROR(conn->Run(
            pgsql::kReapPicked,
            {P(silence), P(int64_t{max_rows}), P(partitions), P(int64_t{partition})}, &r));
        found.sessions_ended = r.changed();
        if (found.sessions_ended >= max_rows) return Status::Ok();
        RETURN_IF_ERROR(conn->Run(pgsql::kReapUnpicked,
                                  {P(silence), P(int64_t{max_rows} - found.sessions_ended),
                                   P(partitions), P(int64_t{partition})},
                                  &r));
        found.marked_dead = r.changed();
        return Status::Ok();
      },
      /*solo=*/true);
  if (s.ok()) *sweep = found;
  return s;
}

}  // namespace store
