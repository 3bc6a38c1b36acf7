// PostgresStorage: each node's "heard until" of its lanes, which every
// node's dead-container sweep waits for (sweep_sql.h
// EDGEALLOC_PG_SILENT_BEFORE). Published on a pooled connection, not by the
// lanes' writers, so that a lane whose writes lag (the very case it is for)
// still publishes; with synchronous_commit off, so that a slow fsync does
// not age the row either (a row lost to a crash of the database is
// published again within a reaper's interval).
#include <string>
#include <vector>

#include "store/postgres/postgres_storage.h"
#include "store/postgres/sweep_sql.h"

namespace store {
namespace {

// Rows of nodes silent for this many of their dead_after_ms are deleted (a
// node silent for one is already not waited for); at most kHeardPruneRows
// a publish.
constexpr int64_t kHeardPruneAfterDeadAfters = 10;
constexpr int64_t kHeardPruneRows = 100;

}  // namespace

Status PostgresStorage::PublishHeardUntil(const std::vector<int64_t>& heard_until_ms,
                                          int64_t dead_after_ms) {
  if (dead_after_ms > 0) dead_after_ms_.store(dead_after_ms, std::memory_order_relaxed);
  // On a clock the stored rows are not yet shifted to, the instants would
  // be in the wrong frame: the next publish, after the shift, sends them.
  if (clock_steps_->pending()) return Status::Busy("a step of the database's clock is unshifted");
  std::vector<PgParam> lanes, heard;
  for (size_t p = 0; p < heard_until_ms.size() && p < writers_.size(); ++p) {
    // This node's clock onto the database's, the earliest it may have been
    // (the offset less its error): a report accepted at or after the
    // instant is stamped no earlier (postgres_storage_heartbeats.cc
    // AcceptedOnDbClock).
    const WriterStats& clock = writers_[p]->stats();
    if (clock.clock_offset_known.load(std::memory_order_relaxed) == 0) {
      return Status::Busy("this node's offset from the database's clock is not measured yet");
    }
    const int64_t offset = clock.clock_offset_ms.load(std::memory_order_relaxed) -
                           clock.clock_offset_error_ms.load(std::memory_order_relaxed);
    lanes.push_back(P(static_cast<int64_t>(p)));
    heard.push_back(P(heard_until_ms[p] + offset));
  }
  const int64_t dead_after = DeadAfterMs();
  // Not WithReader, which refuses while a writer cannot reach the database:
  // after an outage a lane's writer may still be reconnecting while this
  // node takes reports again, and a node that stops publishing is, after
  // dead_after_ms, no longer waited for (the reports it holds would count
  // as silence). The reader's own bounds keep a dead link short.
  return readers_.With([&](PgConn* conn) {
    RETURN_IF_ERROR(conn->Exec("BEGIN; SET LOCAL synchronous_commit = off"));
    Status s = conn->Run(pgsql::kPublishHeardUntil,
                         {P(node_id_), P(static_cast<int64_t>(writers_.size())),
                          ArrayParam(lanes), ArrayParam(heard)});
    if (s.ok()) {
      s = conn->Run(pgsql::kPruneHeardUntil,
                    {P(dead_after * kHeardPruneAfterDeadAfters), P(kHeardPruneRows)});
    }
    if (s.ok()) return conn->Exec("COMMIT");
    if (conn->ok()) (void)conn->Exec("ROLLBACK");
    return s;
  });
}

int64_t PostgresStorage::DeadAfterMs() const {
  const int64_t published = dead_after_ms_.load(std::memory_order_relaxed);
  return published > 0 ? published : policy_.dead_after_ms;
}

}  // namespace store
