// PostgresStorage's event log (store/events.h): one stream, read in one
// snapshot with its pruned end; pruned by writer 0.
#include <optional>
#include <utility>
#include <vector>

#include "store/postgres/events_sql.h"
#include "store/postgres/pg_values.h"
#include "store/postgres/postgres_storage.h"

namespace store {
namespace {

Event ReadEventRow(const PgResult& r, int row) {
  Event e;
  e.seq = r.Int64(row, 0);
  e.at_ms = r.Int64(row, 1);
  e.type = r.String(row, 2);
  e.container_id = r.String(row, 3);
  e.session_id = r.String(row, 4);
  e.tenant = r.String(row, 5);
  if (!r.IsNull(row, 6)) e.token = r.Int64(row, 6);
  if (!r.IsNull(row, 7)) e.slot = r.Int64(row, 7);
  e.region = r.String(row, 8);
  e.pool = r.String(row, 9);
  e.end_reason = r.String(row, 10);
  return e;
}

// The floor and the rows in one snapshot (REPEATABLE READ), so that a
// prune between them cannot hide a gap.
Status ReadInSnapshot(PgConn* conn, const EventQuery& query, int64_t after, int64_t* floor,
                      PgResult* rows) {
  RETURN_IF_ERROR(conn->Exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"));
  Status s = [&]() -> Status {
    PgResult f;
    RETURN_IF_ERROR(conn->Run(pgsql::kEventFloor, {}, &f));
    *floor = f.rows() > 0 ? f.Int64(0, 0) : 0;
    if (after < *floor) return Status::Ok();
    return conn->Run(pgsql::kReadEvents, {P(after), P(EventExamineBound(query.limit))}, rows);
  }();
  const Status end = conn->Exec(s.ok() ? "COMMIT" : "ROLLBACK");
  return s.ok() ? end : s;
}

}  // namespace

Status PostgresStorage::ReadEvents(const EventQuery& query, const EventCursor& after,
                                   EventPage* page) {
  *page = EventPage{};
  page->next = after;
  const int64_t from = after.seqs.empty() ? 0 : after.seqs[0];
  int64_t floor = 0;
  PgResult rows;
  RETURN_IF_ERROR(
      WithReader([&](PgConn* conn) { return ReadInSnapshot(conn, query, from, &floor, &rows); }));
  if (from < floor) {
    page->expired = true;
    page->oldest.seqs = {floor};
    return Status::Ok();
  }
  for (int i = 0; i < rows.rows(); ++i) {
    page->next.seqs[0] = rows.Int64(i, 0);
    const auto tenant = rows.IsNull(i, 5) ? std::nullopt : std::optional(rows.Text(i, 5));
    if (!query.Keeps(tenant, rows.Text(i, 2))) continue;
    page->events.push_back(ReadEventRow(rows, i));
    if (static_cast<int>(page->events.size()) >= query.limit) break;
  }
  return Status::Ok();
}

Status PostgresStorage::PruneEvents(int partition, int64_t retention_ms, int max_rows,
                                    int64_t* pruned) {
  return PruneOnFirstWriter(partition, pgsql::kPruneEvents,
                            {P(retention_ms), P(int64_t{max_rows})}, pruned);
}

}  // namespace store
