// SqliteStorage's event log (store/events.h): a read of every shard's
// stream, and the prune.
#include <algorithm>
#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "store/sqlite/events_sql.h"
#include "store/sqlite/rows.h"
#include "store/sqlite/sqlite_storage.h"

namespace store {
namespace {

Event ReadEventRow(const Statement& q, int stream) {
  Event e;
  e.seq = q.ColumnInt64(0);
  e.stream = stream;
  e.at_ms = q.ColumnInt64(1);
  e.type = q.ColumnString(2);
  e.container_id = q.ColumnString(3);
  e.session_id = q.ColumnString(4);
  e.tenant = q.ColumnString(5);
  if (!q.ColumnIsNull(6)) e.token = q.ColumnInt64(6);
  if (!q.ColumnIsNull(7)) e.slot = q.ColumnInt64(7);
  e.region = q.ColumnString(8);
  e.pool = q.ColumnString(9);
  e.end_reason = q.ColumnString(10);
  return e;
}

// One shard's events after `after` that `query` keeps, in one read
// transaction with its pruned end (*floor), so a prune between the two
// reads cannot hide a gap. *examined: the last seq examined (else `after`).
Status ReadShardEvents(Db* db, const EventQuery& query, int stream, int64_t after,
                       std::vector<Event>* events, int64_t* floor, int64_t* examined) {
  RETURN_IF_ERROR(db->Exec("BEGIN"));
  Status s = [&]() -> Status {
    StatementRef f;
    RETURN_IF_ERROR(db->Cached(sql::kEventFloor, &f));
    bool row = false;
    RETURN_IF_ERROR(f->Step(&row));
    *floor = row ? f->ColumnInt64(0) : 0;
    *examined = after;
    if (after < *floor) return Status::Ok();
    StatementRef q;
    RETURN_IF_ERROR(db->Cached(sql::kReadEvents, &q));
    q->Bind(1, after);
    q->Bind(2, EventExamineBound(query.limit));
    for (;;) {
      RETURN_IF_ERROR(q->Step(&row));
      if (!row) return Status::Ok();
      *examined = q->ColumnInt64(0);
      const auto tenant = q->ColumnIsNull(5) ? std::nullopt : std::optional(q->ColumnText(5));
      if (!query.Keeps(tenant, q->ColumnText(2))) continue;
      events->push_back(ReadEventRow(*q, stream));
      if (static_cast<int>(events->size()) >= query.limit) return Status::Ok();
    }
  }();
  const Status end = db->Exec(s.ok() ? "COMMIT" : "ROLLBACK");
  return s.ok() ? end : s;
}

}  // namespace

Status SqliteStorage::ReadEvents(const EventQuery& query, const EventCursor& after,
                                 EventPage* page) {
  *page = EventPage{};
  const size_t n = shards_.size();
  std::vector<std::vector<Event>> streams(n);
  std::vector<int64_t> examined(n, 0);
  EventCursor floors;
  floors.seqs.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    RETURN_IF_ERROR(shards_[i]->reads->With([&](Db* db) {
      return ReadShardEvents(db, query, static_cast<int>(i), after.seqs[i], &streams[i],
                             &floors.seqs[i], &examined[i]);
    }));
    if (after.seqs[i] < floors.seqs[i]) page->expired = true;
  }
  if (page->expired) {
    page->next = after;
    page->oldest = floors;
    return Status::Ok();
  }
  MergeEventStreams(std::move(streams), after, examined, query.limit, page);
  return Status::Ok();
}

Status SqliteStorage::PruneEvents(int partition, int64_t retention_ms, int max_rows,
                                  int64_t* pruned) {
  *pruned = 0;
  Shard* shard = shards_[static_cast<size_t>(partition)];
  // Events keep the wall clock's instants, as the history does.
  const int64_t before = base::NowMs() - retention_ms;
  bool any = false;
  RETURN_IF_ERROR(shard->reads->With(
      [&](Db* db) { return AnyRow(db, sql::kAnyEventsToPrune, &any, before); }));
  if (!any) return Status::Ok();
  Status s = shard->writer->RunSync(
      [&](Db* db) {
        *pruned = 0;
        int64_t highest = 0;
        {
          StatementRef q;
          RETURN_IF_ERROR(db->Cached(sql::kPruneEvents, &q));
          q->Bind(1, before);
          q->Bind(2, int64_t{max_rows});
          for (;;) {
            bool row = false;
            RETURN_IF_ERROR(q->Step(&row));
            if (!row) break;
            highest = std::max(highest, q->ColumnInt64(0));
            ++*pruned;
          }
        }
        StatementRef raise;
        RETURN_IF_ERROR(db->Cached(sql::kRaiseEventFloor, &raise));
        raise->Bind(1, highest);
        return raise->Run();
      },
      /*solo=*/true);
  if (!s.ok()) *pruned = 0;  // rolled back
  return s;
}

}  // namespace store
