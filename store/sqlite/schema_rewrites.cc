#include "store/sqlite/schema_rewrites.h"

#include <cstdint>
#include <string>
#include <string_view>

#include "store/sqlite/events_sql.h"

namespace store {
namespace {

// Replaces `from` by `to` in the CREATE text of `table`, SQLite's documented
// procedure for a change that leaves the rows' format as it is (ALTER
// TABLE, "Making Other Kinds Of Table Schema Changes"): sqlite_schema edited
// with writable_schema on and schema_version bumped, in the migration's
// transaction, so the connection reads the new text. *rewritten: whether
// the table's text held `from`.
Status RewriteTableSql(Db* db, std::string_view table, std::string_view from,
                       std::string_view to, bool* rewritten) {
  *rewritten = false;
  Status s;
  int64_t schema_version = 0;
  {
    StatementRef q;
    RETURN_IF_ERROR(db->Cached("PRAGMA schema_version", &q));
    bool row = false;
    RETURN_IF_ERROR(q->Step(&row));
    if (!row) return Status::Corruption("PRAGMA schema_version returned no row");
    schema_version = q->ColumnInt64(0);
  }
  RETURN_IF_ERROR(db->Exec("PRAGMA writable_schema = ON"));
  {
    Statement update;
    s = db->Prepare(
        "UPDATE sqlite_schema SET sql = replace(sql, ?1, ?2) "
        "WHERE type = 'table' AND name = ?3 AND instr(sql, ?1) > 0",
        &update);
    if (s.ok()) {
      update.Bind(1, from);
      update.Bind(2, to);
      update.Bind(3, table);
      s = update.Run();
      *rewritten = s.ok() && db->Changes() == 1;
    }
  }
  if (s.ok()) s = db->Exec("PRAGMA schema_version = " + std::to_string(schema_version + 1));
  Status off = db->Exec("PRAGMA writable_schema = OFF");
  return s.ok() ? off : s;
}

// Version 3: the status CHECK of version 1, the same set of values written
// with OR instead of IN. SQLite evaluates `x IN (four constants)` by building
// a temporary B-tree each time the statement runs, so every claim, release
// and heartbeat that changed status paid for opening one (EXPLAIN shows the
// OpenEphemeral; callgrind put the temporary B-trees at a third of the
// writer's instructions). No row is read: the values allowed are the same.
// A version 2 binary reads and writes such a file unchanged.
constexpr char kStatusCheckIn[] =
    "CHECK (status IN ('available', 'picked', 'draining', 'dead'))";
constexpr char kStatusCheckOr[] =
    "CHECK (status = 'available' OR status = 'picked' OR status = 'draining' OR "
    "status = 'dead')";

}  // namespace

Status RewriteStatusCheck(Db* db) {
  bool rewritten = false;  // a file without the IN form has nothing to rewrite
  return RewriteTableSql(db, "containers", kStatusCheckIn, kStatusCheckOr, &rewritten);
}

// Version 17: events.seq without AUTOINCREMENT (store/sqlite/events_sql.h
// says why). The rows' format is the same, so the table's text is edited
// (RewriteTableSql) and its sqlite_sequence row goes, no row is copied. A
// log pruned to nothing keeps its high-water mark as one row at the floor,
// which no reader is served (a read is of the seqs after a cursor at or
// above the floor), so that the next event's seq still comes after it.
Status DropEventsAutoincrement(Db* db) {
  bool rewritten = false;
  RETURN_IF_ERROR(RewriteTableSql(db, "events", EDGEALLOC_SQLITE_EVENTS_SEQ " AUTOINCREMENT",
                                  EDGEALLOC_SQLITE_EVENTS_SEQ, &rewritten));
  if (!rewritten) return Status::Corruption("the events table's text is not version 14's");
  return db->Exec(R"sql(
UPDATE event_floor
   SET seq = max(seq, coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0))
 WHERE only_row = 1 AND NOT EXISTS (SELECT 1 FROM events);
INSERT INTO events (seq, at_ms, type)
  SELECT seq, )sql" EDGEALLOC_SQLITE_NOW_MS R"sql(, 'log.floor' FROM event_floor
  WHERE only_row = 1 AND seq > 0 AND NOT EXISTS (SELECT 1 FROM events);
DELETE FROM sqlite_sequence WHERE name = 'events';
)sql");
}

}  // namespace store
