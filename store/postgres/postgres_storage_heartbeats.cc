// PostgresStorage: heartbeat batches, and which partition a heartbeat goes to.
#include <algorithm>
#include <cstddef>
#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "store/heartbeat_job.h"
#include "store/postgres/lane.h"
#include "store/postgres/heartbeat_sql.h"
#include "store/postgres/postgres_storage.h"

namespace store {
namespace {

// A batch of rows as one writer job, riding in the group's transaction; the
// caller waits for Done, so the pointers outlive the job.
class PgHeartbeatJob : public HeartbeatJob<PgJob> {
 public:
  using HeartbeatJob::HeartbeatJob;

  // Locks the batch's rows that are free (kLockHeartbeatRows), sent ahead
  // in the group's pipeline.
  std::optional<PgStatement> First() const override {
    std::vector<std::string> ids;
    std::unordered_set<std::string_view> seen;
    for (const HeartbeatRow& row : *rows_) {
      if (seen.insert(row.container_id).second) ids.push_back(row.container_id);
    }
    return PgStatement{pgsql::kLockHeartbeatRows, {TextArrayParam(ids)}};
  }

  // The writer's measure of the database's clock minus this node's, and its
  // error, read when the job runs (on the writer's thread, which measures it).
  void set_clock(const WriterStats* stats) { clock_ = stats; }

  Status Apply(PgConn* conn) override {
    *result_ = HeartbeatWriteResult{};
    offset_now_ = clock_ == nullptr ? 0
                                    : clock_->clock_offset_ms.load(std::memory_order_relaxed) +
                                          clock_->clock_offset_error_ms.load(std::memory_order_relaxed);
    // Only the rows this transaction holds are written: a row another one
    // holds is skipped (written later), one that is not there is unknown.
    const PgStatement lock = *First();
    PgResult held;
    RETURN_IF_ERROR(conn->Run(lock.sql, lock.params, &held));
    std::unordered_map<std::string_view, bool> found;  // id -> held
    std::unordered_map<std::string_view, std::string_view> region_of;
    for (int k = 0; k < held.rows(); ++k) {
      found[held.Text(k, 0)] = held.Text(k, 1) == "t";
      region_of[held.Text(k, 0)] = held.Text(k, 2);
    }
    NameRegions(&region_of);
    // The rows of containers that appear once in the batch go in one
    // statement; what it leaves (a state change) and the containers that
    // appear more than once go one at a time, in order. The two sets touch
    // different containers, so the batch still ends as its rows would one
    // after another.
    std::unordered_map<std::string_view, int> seen;
    std::vector<size_t> writable;
    for (size_t i = 0; i < rows_->size(); ++i) {
      const auto it = found.find((*rows_)[i].container_id);
      if (it == found.end()) {
        result_->unknown.push_back(i);
      } else if (!it->second) {
        result_->skipped.push_back(i);
      } else {
        ++seen[(*rows_)[i].container_id];
        writable.push_back(i);
      }
    }
    std::vector<size_t> bulk, single;
    for (size_t i : writable) (seen[(*rows_)[i].container_id] == 1 ? bulk : single).push_back(i);
    // What the bulk statement left failed kHeartbeatPlain's very test, so
    // those rows skip that statement.
    std::vector<bool> left_by_bulk(rows_->size(), false);
    if (!bulk.empty()) RETURN_IF_ERROR(WriteBulk(conn, bulk, &single, &left_by_bulk));
    std::sort(single.begin(), single.end());
    for (size_t i : single) RETURN_IF_ERROR(WriteOne(conn, i, left_by_bulk[i]));
    std::sort(result_->unknown.begin(), result_->unknown.end());
    return Status::Ok();
  }

 private:
  // Row i's acceptance on the database's clock: the latest it may have been,
  // by the measure's error (a report accepted right after a death must not
  // look older than it), and never past the statement's now
  // (store/postgres/heartbeat_sql.h).
  int64_t AcceptedOnDbClock(size_t i) const { return (*rows_)[i].accepted_ms + offset_now_; }

  // Names each found container's region once (HeartbeatWriteResult::regions).
  void NameRegions(std::unordered_map<std::string_view, std::string_view>* region_of) {
    for (size_t i = 0; i < rows_->size(); ++i) {
      const auto it = region_of->find((*rows_)[i].container_id);
      if (it == region_of->end()) continue;
      result_->regions.emplace_back(i, std::string(it->second));
      region_of->erase(it);  // once a container
    }
  }

  // Writes indexes' rows in one statement; those it did not take go to *rest.
  Status WriteBulk(PgConn* conn, const std::vector<size_t>& indexes, std::vector<size_t>* rest,
                   std::vector<bool>* left) {
    std::vector<PgParam> ids, ts, loads, states, accepted;
    for (size_t i : indexes) {
      const HeartbeatRow& row = (*rows_)[i];
      const char* state = ReportedStateName(row.state);
      ids.push_back(P(row.container_id));
      ts.push_back(row.ts_ms ? P(*row.ts_ms) : Null());
      loads.push_back(row.load ? P(*row.load) : Null());
      states.push_back(state != nullptr ? P(state) : Null());
      accepted.push_back(P(AcceptedOnDbClock(i)));
    }
    PgResult r;
    RETURN_IF_ERROR(conn->Run(pgsql::kHeartbeatBulk,
                              {ArrayParam(ids), ArrayParam(ts), ArrayParam(loads),
                               ArrayParam(states), ArrayParam(accepted)},
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
                                         state != nullptr ? P(state) : Null(),
                                         P(AcceptedOnDbClock(i))};
    // As on SQLite: the plain statement first (a HOT update: it changes no
    // indexed column).
    return WriteRow(i, skip_plain, [&](HeartbeatStatement which, bool* changed) {
      PgResult r;
      if (which == HeartbeatStatement::kStale) {
        RETURN_IF_ERROR(conn->Run(pgsql::kHeartbeatStale,
                                  {P(row.container_id), P(AcceptedOnDbClock(i))}, &r));
      } else {
        RETURN_IF_ERROR(conn->Run(which == HeartbeatStatement::kPlain ? pgsql::kHeartbeatPlain
                                                                      : pgsql::kHeartbeatReport,
                                  params, &r));
      }
      *changed = r.changed() > 0;
      return Status::Ok();
    });
  }

  const WriterStats* clock_ = nullptr;
  int64_t offset_now_ = 0;  // offset and error as this run of Apply read them
};

}  // namespace

Status PostgresStorage::PartitionOf(const std::string& container_id, int* partition) {
  *partition = LaneOf(container_id, partitions());
  return Status::Ok();
}

Status PostgresStorage::WriteRows(int partition, const std::vector<HeartbeatRow>& rows,
                                  HeartbeatWriteResult* result) {
  PgWriter* writer = writers_[static_cast<size_t>(partition)].get();
  return WriteHeartbeatBatch<PgHeartbeatJob>(
      rows, result,
      [writer](std::unique_ptr<PgHeartbeatJob> job) {
        job->set_clock(&writer->stats());
        return writer->Submit(std::move(job));
      },
      [writer] { return writer->Refusal("the PostgreSQL heartbeat queue"); });
}

void PostgresStorage::EndHeartbeatWrite(int partition, const std::vector<HeartbeatRow>& batch,
                                        size_t taken, const Status& s,
                                        const HeartbeatWriteResult& result) {
  PgWriter* writer = writers_[static_cast<size_t>(partition)].get();
  deferred_[static_cast<size_t>(partition)]->End(
      batch, taken, s, result,
      [writer](uint64_t skipped, int64_t deferred) {
        writer->CountHeartbeatRetries(skipped, deferred);
      });
}

Status PostgresStorage::WriteHeartbeats(int partition, const std::vector<HeartbeatRow>& rows,
                                        HeartbeatWriteResult* result) {
  std::vector<HeartbeatRow> batch;
  (void)deferred_[static_cast<size_t>(partition)]->Begin(/*wait=*/true, &batch);
  const size_t taken = batch.size();
  if (taken == 0) {
    const Status s = WriteRows(partition, rows, result);
    EndHeartbeatWrite(partition, rows, 0, s, *result);
    return s;
  }
  // The rows skipped before go first: they were accepted first.
  batch.insert(batch.end(), rows.begin(), rows.end());
  const Status s = WriteRows(partition, batch, result);
  EndHeartbeatWrite(partition, batch, taken, s, *result);
  // The caller's indexes: the rows taken back are not its.
  const auto mine = [taken](std::vector<size_t>* indexes) {
    std::vector<size_t> kept;
    for (size_t i : *indexes) {
      if (i >= taken) kept.push_back(i - taken);
    }
    *indexes = std::move(kept);
  };
  mine(&result->unknown);
  mine(&result->skipped);
  std::vector<std::pair<size_t, std::string>> regions;
  for (auto& named : result->regions) {
    if (named.first >= taken) regions.emplace_back(named.first - taken, std::move(named.second));
  }
  result->regions = std::move(regions);
  return s;
}

int64_t PostgresStorage::OldestHeldBackMs(int partition) {
  return deferred_[static_cast<size_t>(partition)]->OldestHeldBackMs();
}

void PostgresStorage::FlushDeferredHeartbeats(int partition) {
  // A write under way writes them itself.
  std::vector<HeartbeatRow> batch;
  if (!deferred_[static_cast<size_t>(partition)]->Begin(/*wait=*/false, &batch)) return;
  HeartbeatWriteResult result;
  const Status s = batch.empty() ? Status::Ok() : WriteRows(partition, batch, &result);
  EndHeartbeatWrite(partition, batch, batch.size(), s, result);
}

}  // namespace store
