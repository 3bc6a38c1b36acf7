// SqliteStorage: the reapers' sweeps (expired leases; silent or dead containers).
// Each looks with a cheap read on a read-only connection first, so an idle
// pool costs the writer nothing, and then writes one bounded sweep in a
// transaction of its own (a solo job: never inside a claim's group).
#include <algorithm>
#include <string>

#include "base/clock.h"
#include "store/sqlite/history_sql.h"
#include "store/sqlite/lifecycle_sql.h"
#include "store/sqlite/rows.h"
#include "store/sqlite/sqlite_storage.h"

namespace store {
namespace {

// One reaper statement (?1 cutoff, ?2 limit, ?3 now: the time of death):
// the containers it marked dead appended to *dead, from its RETURNING rows.
Status Reap(Db* db, const char* statement, int64_t cutoff, int64_t limit,
            std::vector<DeadContainer>* dead) {
  StatementRef q;
  RETURN_IF_ERROR(db->Cached(statement, &q));
  const int64_t now = base::NowMs();
  q->Bind(1, cutoff);
  q->Bind(2, limit);
  q->Bind(3, now);
  for (;;) {
    bool row = false;
    RETURN_IF_ERROR(q->Step(&row));
    if (!row) return Status::Ok();
    dead->push_back({q->ColumnString(0), q->ColumnString(1), q->ColumnString(2),
                     now - q->ColumnInt64(3), q->ColumnInt64(4) == 0});
  }
}

}  // namespace

Status SqliteStorage::SweepExpiredLeases(int partition, int max_rows, int64_t* ended) {
  *ended = 0;
  Shard* shard = shards_[static_cast<size_t>(partition)];
  const int64_t now = base::NowMs();
  bool any = false;
  RETURN_IF_ERROR(
      shard->reads->With([&](Db* db) { return AnyRow(db, sql::kAnyExpired, &any, now); }));
  if (!any) return Status::Ok();
  Status s = shard->writer->RunSync(
      [&](Db* db) {
        StatementRef q;
        RETURN_IF_ERROR(db->Cached(sql::kReapExpired, &q));
        q->Bind(1, now);
        q->Bind(2, static_cast<int64_t>(max_rows));
        RETURN_IF_ERROR(q->Run());
        *ended = db->Changes();
        return Status::Ok();
      },
      /*solo=*/true);
  if (!s.ok()) *ended = 0;  // rolled back
  return s;
}

Status SqliteStorage::SweepSilentContainers(int partition,
                                            const std::function<int64_t()>& cutoff_ms,
                                            int max_rows, SilenceSweep* sweep) {
  *sweep = SilenceSweep{};
  Shard* shard = shards_[static_cast<size_t>(partition)];
  bool any = false;
  RETURN_IF_ERROR(shard->reads->With([&](Db* db) {
    RETURN_IF_ERROR(AnyRow(db, sql::kAnySilent, &any, cutoff_ms()));
    return any ? Status::Ok() : AnyRow(db, sql::kAnyDeadReported, &any);
  }));
  if (!any) return Status::Ok();
  // Held containers first: their sessions end (the holder's next session
  // call answers 410 container_dead). The cutoff is taken again at write time.
  Status s = shard->writer->RunSync(
      [&](Db* db) {
        *sweep = SilenceSweep{};
        const int64_t cutoff = cutoff_ms();
        RETURN_IF_ERROR(Reap(db, sql::kReapPicked, cutoff, max_rows, &sweep->dead));
        sweep->sessions_ended = static_cast<int64_t>(sweep->dead.size());
        if (sweep->sessions_ended >= max_rows) return Status::Ok();
        RETURN_IF_ERROR(Reap(db, sql::kReapUnpicked, cutoff, max_rows - sweep->sessions_ended,
                             &sweep->dead));
        sweep->marked_dead = static_cast<int64_t>(sweep->dead.size()) - sweep->sessions_ended;
        return Status::Ok();
      },
      /*solo=*/true);
  if (!s.ok()) *sweep = SilenceSweep{};  // rolled back
  return s;
}

Status SqliteStorage::PruneSessionHistory(int partition, int64_t history_ms,
                                          int64_t max_history_rows, int max_rows,
                                          int64_t* pruned) {
  *pruned = 0;
  Shard* shard = shards_[static_cast<size_t>(partition)];
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
