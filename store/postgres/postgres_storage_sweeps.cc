// PostgresStorage: the reapers' sweeps (expired leases; silent or dead
// containers), each a solo job of a writer: a transaction of its own.
#include <functional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "store/postgres/db_clock.h"
#include "store/postgres/postgres_storage.h"
#include "store/postgres/sweep_sql.h"

namespace store {

// A sweep's look at the database's clock, first in its transaction: a step
// no one has shifted for yet is shifted for there (db_clock.h), or the
// sweep waits for the next round, so that no sweep judges a lease or a
// silence by a stepped clock against unshifted rows.
struct PostgresStorage::SweepClock {
  int64_t expected_shifts = 0;
  int64_t shifted = 0;  // by this sweep's transaction, once it commits

  Status Check(PgWriter* writer, DbClockSteps* steps, PgConn* conn) {
    DbClockReading reading;
    Status s = CheckDbClock(conn, steps, &reading, &expected_shifts, &shifted);
    // The offset follows the reading once the rows are in its frame: now,
    // or (shifted here) with this transaction, which the writer commits
    // before its next job stamps a heartbeat.
    if ((s.ok() || s.IsBusy()) && reading.db_ms != 0) writer->NoteClockReading(reading);
    return s;
  }
  void Committed(const Status& s, DbClockSteps* steps) const {
    if (s.ok() && shifted != 0) steps->Applied(expected_shifts, shifted);
  }
};

Status PostgresStorage::SweepExpiredLeases(int partition, int max_rows, int64_t* ended) {
  *ended = 0;
  // Leases are the sessions' and not partitioned: writer 0 sweeps them all.
  if (partition != 0) return Status::Ok();
  int64_t changed = 0;
  SweepClock clock;
  Status s = writers_[0]->RunSync(
      [&](PgConn* conn) {
        RETURN_IF_ERROR(clock.Check(writers_[0].get(), clock_steps_.get(), conn));
        PgResult r;
        RETURN_IF_ERROR(conn->Run(pgsql::kReapExpired.c_str(), {P(int64_t{max_rows})}, &r));
        changed = r.rows() > 0 ? r.Int64(0, 0) : 0;
        return Status::Ok();
      },
      /*solo=*/true);
  clock.Committed(s, clock_steps_.get());
  if (s.ok()) *ended = changed;
  return s;
}

namespace {

// The containers a reaper statement marked dead, from its RETURNING rows.
void AppendDead(const PgResult& r, std::vector<DeadContainer>* dead) {
  for (int i = 0; i < r.rows(); ++i) {
    dead->push_back({r.String(i, 0), r.String(i, 1), r.String(i, 2), r.Int64(i, 3),
                     r.Text(i, 4) != "t"});
  }
}

}  // namespace

Status PostgresStorage::SweepSilentContainers(int partition,
                                              const std::function<int64_t()>& cutoff_ms,
                                              const HeldPools& held, int max_rows,
                                              SilenceSweep* sweep) {
  *sweep = SilenceSweep{};
  // Heartbeats accepted and skipped for a lock are written before silence
  // is judged, and on an idle lane are written at all.
  FlushDeferredHeartbeats(partition);
  SilenceSweep found;
  const int64_t partitions = this->partitions();
  std::vector<std::string> held_regions, held_pools;
  for (const auto& [region, pool] : held.pools) {
    held_regions.push_back(region);
    held_pools.push_back(pool);
  }
  PgWriter* writer = writers_[static_cast<size_t>(partition)].get();
  // And the other nodes' "heard until" of the lane, read by the statements
  // themselves (sweep_sql.h EDGEALLOC_PG_SILENT_BEFORE), so that no report
  // another node accepted and still writes is taken for silence.
  const int64_t dead_after = DeadAfterMs();
  SweepClock clock;
  Status s = writer->RunSync(
      [&](PgConn* conn) {
        found = SilenceSweep{};
        RETURN_IF_ERROR(clock.Check(writer, clock_steps_.get(), conn));
        // The cutoff is on this node's clock; what the database is told is
        // how long before now it lies (dead_after_ms, more while heartbeats
        // this node accepted are still queued: batcher::SilenceCutoff), and
        // the statement counts back from the database's now, so the node's
        // offset from the database cancels out. The cutoff is read before
        // now: the other order would shorten the silence by the time the
        // read took (its locks), and move the cutoff past the lane's oldest
        // heartbeat not yet stored.
        const int64_t cutoff = cutoff_ms();
        const int64_t now = base::NowMs();
        const int64_t silence = now - cutoff;
        PgResult r;
        RETURN_IF_ERROR(conn->Run(pgsql::kReapPicked,
                                  {P(silence), P(int64_t{max_rows}), P(partitions),
                                   P(int64_t{partition}), P(now - held.cutoff_ms),
                                   TextArrayParam(held_regions), TextArrayParam(held_pools),
                                   P(node_id_), P(dead_after)},
                                  &r));
        AppendDead(r, &found.dead);
        found.held_dead = r.rows();
        for (int i = 0; i < r.rows(); ++i) found.sessions_ended += r.Int64(i, 5);  // slot_taken
        if (found.held_dead >= max_rows) return Status::Ok();
        RETURN_IF_ERROR(conn->Run(pgsql::kReapUnpicked,
                                  {P(silence), P(int64_t{max_rows} - found.held_dead),
                                   P(partitions), P(int64_t{partition}), P(node_id_),
                                   P(dead_after)},
                                  &r));
        AppendDead(r, &found.dead);
        found.marked_dead = r.rows();
        return Status::Ok();
      },
      /*solo=*/true);
  clock.Committed(s, clock_steps_.get());
  if (s.ok()) *sweep = found;
  return s;
}

Status PostgresStorage::CountSilent(int64_t cutoff_ms, std::vector<PoolSilence>* silent) {
  silent->clear();
  // A step of the database's clock not yet shifted for would show every
  // container silent (forward) or none (back): the count waits for it.
  if (clock_steps_->pending()) {
    return Status::Busy("a step of the database's clock is still to be shifted for");
  }
  return WithReader([&](PgConn* conn) {
    PgResult r;
    RETURN_IF_ERROR(conn->Run(pgsql::kCountSilent,
                              {P(base::NowMs() - cutoff_ms), P(node_id_), P(DeadAfterMs())}, &r));
    for (int i = 0; i < r.rows(); ++i) {
      silent->push_back({r.String(i, 0), r.String(i, 1), r.Int64(i, 2)});
    }
    return Status::Ok();
  });
}

Status PostgresStorage::PruneSessionHistory(int partition, int64_t history_ms,
                                            int64_t max_history_rows, int max_rows,
                                            int64_t* pruned) {
  return PruneOnFirstWriter(partition, pgsql::kPruneHistory,
                            {P(history_ms), P(max_history_rows), P(int64_t{max_rows})}, pruned);
}

Status PostgresStorage::PruneOnFirstWriter(int partition, const char* statement,
                                           const std::vector<PgParam>& params, int64_t* pruned) {
  *pruned = 0;
  if (partition != 0) return Status::Ok();
  int64_t deleted = 0;
  Status s = writers_[0]->RunSync(
      [&](PgConn* conn) {
        PgResult r;
        RETURN_IF_ERROR(conn->Run(statement, params, &r));
        deleted = r.rows() > 0 ? r.Int64(0, 0) : 0;
        return Status::Ok();
      },
      /*solo=*/true);
  if (s.ok()) *pruned = deleted;
  return s;
}

}  // namespace store
