// SqliteStorage: the reapers' sweeps (expired leases; silent or dead containers).
// Each looks with a cheap read on a read-only connection first, so an idle
// pool costs the writer nothing, and then writes one bounded sweep in a
// transaction of its own (a solo job: never inside a claim's group).
#include <algorithm>
#include <string>

#include "base/clock.h"
#include "base/json_string.h"
#include "store/sqlite/claim_selector.h"
#include "store/sqlite/history_sql.h"
#include "store/sqlite/lifecycle_sql.h"
#include "store/sqlite/release.h"
#include "store/sqlite/rows.h"
#include "store/sqlite/sqlite_storage.h"

namespace store {
namespace {

// One reaper statement (?1 cutoff, ?2 limit, ?3 now: the time of death;
// kReapPicked also ?4 and ?5, the held pools): the containers it marked dead
// appended to *dead, from its RETURNING rows.
Status Reap(Db* db, const char* statement, int64_t cutoff, int64_t limit, const HeldPools* held,
            std::vector<DeadContainer>* dead, int64_t* sessions = nullptr) {
  StatementRef q;
  RETURN_IF_ERROR(db->Cached(statement, &q));
  const int64_t now = base::NowMs();
  q->Bind(1, cutoff);
  q->Bind(2, limit);
  q->Bind(3, now);
  if (held != nullptr) {
    std::string pools = "[";
    for (const auto& [region, pool] : held->pools) {
      if (pools.size() > 1) pools += ',';
      pools += '[';
      base::AppendJsonString(region, &pools);
      pools += ',';
      base::AppendJsonString(pool, &pools);
      pools += ']';
    }
    pools += ']';
    q->Bind(4, held->cutoff_ms);
    q->Bind(5, pools);
  }
  const size_t first = dead->size();
  for (;;) {
    bool row = false;
    RETURN_IF_ERROR(q->Step(&row));
    if (!row) break;
    dead->push_back({q->ColumnString(0), q->ColumnString(1), q->ColumnString(2),
                     now - q->ColumnInt64(3), q->ColumnInt64(4) == 0});
    if (sessions != nullptr) *sessions += q->ColumnInt64(5);  // kReapPicked: sessions it held
  }
  // Dead, so their attribute rows leave the selectors' walk.
  for (size_t i = first; i < dead->size(); ++i) {
    RETURN_IF_ERROR(SyncAttributesOpen(db, (*dead)[i].id));
  }
  return Status::Ok();
}

}  // namespace

Status SqliteStorage::SweepExpiredLeases(int partition, int max_rows, int64_t* ended) {
  *ended = 0;
  Shard* shard = shards_[static_cast<size_t>(partition)];
  RETURN_IF_ERROR(ApplyClockShift(partition));
  bool any = false;
  RETURN_IF_ERROR(ReadAtShardNow(
      partition, [&](Db* db, int64_t now) { return AnyRow(db, sql::kAnyExpired, &any, now); }));
  if (!any) return Status::Ok();
  Status s = shard->writer->RunSync(
      [&](Db* db) {
        return EndExpiredSessions(db, ShardNow(partition), static_cast<int64_t>(max_rows), ended);
      },
      /*solo=*/true);
  if (!s.ok()) *ended = 0;  // rolled back
  return s;
}

Status SqliteStorage::SweepSilentContainers(int partition,
                                            const std::function<int64_t()>& cutoff_ms,
                                            const HeldPools& held, int max_rows,
                                            SilenceSweep* sweep) {
  *sweep = SilenceSweep{};
  Shard* shard = shards_[static_cast<size_t>(partition)];
  // The cutoff is read on this node's wall clock: a step not yet applied to
  // the rows is taken off it (ShardCutoff), and applied first.
  RETURN_IF_ERROR(ApplyClockShift(partition));
  bool any = false;
  int64_t cutoff = 0;
  RETURN_IF_ERROR(ShardCutoff(partition, cutoff_ms, &cutoff));
  RETURN_IF_ERROR(shard->reads->With([&](Db* db) {
    RETURN_IF_ERROR(AnyRow(db, sql::kAnySilent, &any, cutoff));
    return any ? Status::Ok() : AnyRow(db, sql::kAnyDeadReported, &any);
  }));
  if (!any) return Status::Ok();
  // Held containers first: their sessions end (the holder's next session
  // call answers 410 container_dead). The cutoff is taken again at write time.
  Status s = shard->writer->RunSync(
      [&](Db* db) {
        *sweep = SilenceSweep{};
        RETURN_IF_ERROR(ShardCutoff(partition, cutoff_ms, &cutoff));
        RETURN_IF_ERROR(Reap(db, sql::kReapPicked, cutoff, max_rows, &held, &sweep->dead,
                             &sweep->sessions_ended));
        sweep->held_dead = static_cast<int64_t>(sweep->dead.size());
        if (sweep->held_dead >= max_rows) return Status::Ok();
        RETURN_IF_ERROR(Reap(db, sql::kReapUnpicked, cutoff, max_rows - sweep->held_dead,
                             nullptr, &sweep->dead));
        sweep->marked_dead = static_cast<int64_t>(sweep->dead.size()) - sweep->held_dead;
        return Status::Ok();
      },
      /*solo=*/true);
  if (!s.ok()) *sweep = SilenceSweep{};  // rolled back
  return s;
}

Status SqliteStorage::CountSilent(int64_t cutoff_ms, std::vector<PoolSilence>* silent) {
  silent->clear();
  for (Shard* shard : shards_) {
    RETURN_IF_ERROR(shard->reads->With([&](Db* db) {
      StatementRef q;
      RETURN_IF_ERROR(db->Cached(sql::kCountSilent, &q));
      q->Bind(1, cutoff_ms);
      for (;;) {
        bool row = false;
        RETURN_IF_ERROR(q->Step(&row));
        if (!row) return Status::Ok();
        silent->push_back({q->ColumnString(0), q->ColumnString(1), q->ColumnInt64(2)});
      }
    }));
  }
  return Status::Ok();
}

Status SqliteStorage::PruneSessionHistory(int partition, int64_t history_ms,
                                          int64_t max_history_rows, int max_rows,
                                          int64_t* pruned) {
  *pruned = 0;
  Shard* shard = shards_[static_cast<size_t>(partition)];
  // The history keeps the wall clock's instants (not shifted by its steps):
  // a step only moves the end of a retention of hours by as much.
  const int64_t before = base::NowMs() - history_ms;
  const int64_t keep = std::max<int64_t>(1, max_history_rows / static_cast<int64_t>(shards_.size()));
  bool any = false;
  RETURN_IF_ERROR(shard->reads->With(
      [&](Db* db) { return AnyRow(db, sql::kAnyHistoryToPrune, &any, before, keep); }));
  if (!any) return Status::Ok();
  Status s = shard->writer->RunSync(
      [&](Db* db) {
        *pruned = 0;
        for (const char* prune : {sql::kPruneHistoryOld, sql::kPruneHistoryOver}) {
          if (*pruned >= max_rows) break;
          StatementRef q;
          RETURN_IF_ERROR(db->Cached(prune, &q));
          q->Bind(1, before);
          q->Bind(2, keep);
          q->Bind(3, max_rows - *pruned);
          RETURN_IF_ERROR(q->Run());
          *pruned += db->Changes();
        }
        return Status::Ok();
      },
      /*solo=*/true);
  if (!s.ok()) *pruned = 0;  // rolled back
  return s;
}

}  // namespace store
