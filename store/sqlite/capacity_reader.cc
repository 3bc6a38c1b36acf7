#include "store/sqlite/capacity_reader.h"

#include <utility>

#include "store/sqlite/lifecycle_sql.h"
#include "store/sqlite/rows.h"

namespace store {

SqliteCapacityReader::SqliteCapacityReader(std::string path, int busy_timeout_ms)
    : path_(std::move(path)), busy_timeout_ms_(busy_timeout_ms) {}

Status SqliteCapacityReader::Read(std::vector<CapacityCount>* counts, bool* unchanged) {
  Status s = ReadOpen(counts, unchanged);
  if (!s.ok()) {
    // After an I/O error or a replaced file, a fresh connection is the
    // cheapest way back (and its data_version starts over).
    db_.reset();
    data_version_ = -1;
  }
  return s;
}

Status SqliteCapacityReader::ReadOpen(std::vector<CapacityCount>* counts, bool* unchanged) {
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
  counts->clear();
  {
    StatementRef q;
    RETURN_IF_ERROR(db_->Cached(sql::kCapacityCounts, &q));
    for (;;) {
      bool row = false;
      RETURN_IF_ERROR(q->Step(&row));  // the StatementRef resets, ending the read
      if (!row) break;
      ReadRow(kCapacityColumns, SqliteCells(*q), &counts->emplace_back());
    }
  }
  data_version_ = version;
  return Status::Ok();
}

}  // namespace store
