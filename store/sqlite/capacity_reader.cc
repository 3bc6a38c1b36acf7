#include "store/sqlite/capacity_reader.h"

#include <utility>

#include "store/sqlite/lifecycle_sql.h"
#include "store/sqlite/rows.h"

namespace store {

SqliteCapacityReader::SqliteCapacityReader(std::string path, int busy_timeout_ms)
    : path_(std::move(path)), busy_timeout_ms_(busy_timeout_ms) {}

Status SqliteCapacityReader::Read(CapacityRead* read, bool* unchanged) {
  Status s = ReadOpen(read, unchanged);
  if (!s.ok()) {
    // After an I/O error or a replaced file, a fresh connection is the
    // cheapest way back (and its data_version starts over).
    db_.reset();
    data_version_ = -1;
  }
  return s;
}

Status SqliteCapacityReader::ReadOpen(CapacityRead* read, bool* unchanged) {
  *unchanged = false;
  if (db_ == nullptr) {
    DbOptions options;
    options.read_only = true;
    options.busy_timeout_ms = busy_timeout_ms_;
    options.program = "edgealloc-mirror";
    RETURN_IF_ERROR(Db::Open(path_, options, &db_));
  }
  // data_version changes whenever another connection commits to the file
  // (this one never writes): the same value as at the last read means
  // nothing was committed since that read began.
  int64_t version = -1;
  {
    StatementRef q;
    RETURN_IF_ERROR(db_->Cached("PRAGMA data_version", &q));
    bool row = false;
    RETURN_IF_ERROR(q->Step(&row));
    if (row) version = q->ColumnInt64(0);
  }
  if (version >= 0 && version == data_version_) {
    *unchanged = true;
    return Status::Ok();
  }
  read->counts.clear();
  read->drained_ids.clear();
  // One read transaction for both statements, so that the drained ids are
  // those of the counts.
  RETURN_IF_ERROR(db_->Exec("BEGIN"));
  Status s = ReadRows(read);
  Status end = db_->Exec(s.ok() ? "COMMIT" : "ROLLBACK");
  RETURN_IF_ERROR(s);
  RETURN_IF_ERROR(end);
  data_version_ = version;
  return Status::Ok();
}

Status SqliteCapacityReader::ReadRows(CapacityRead* read) {
  {
    StatementRef q;
    RETURN_IF_ERROR(db_->Cached(sql::kCapacityCounts, &q));
    for (;;) {
      bool row = false;
      RETURN_IF_ERROR(q->Step(&row));  // the StatementRef resets, ending the statement
      if (!row) break;
      ReadRow(kCapacityColumns, SqliteCells(*q), &read->counts.emplace_back());
    }
  }
  StatementRef q;
  RETURN_IF_ERROR(db_->Cached(sql::kDrainedIds, &q));
  for (;;) {
    bool row = false;
    RETURN_IF_ERROR(q->Step(&row));
    if (!row) return Status::Ok();
    read->drained_ids.push_back(q->ColumnString(0));
  }
}

}  // namespace store
