#include "store/postgres/capacity_reader.h"

#include "store/postgres/container_sql.h"
#include "store/postgres/readers.h"
#include "store/postgres/rows.h"

namespace store {

Status PgCapacityReader::Read(CapacityRead* read, bool* unchanged) {
  *unchanged = false;  // PostgreSQL has no cheap "nothing committed since" test
  read->counts.clear();
  read->drained_ids.clear();
  if (!counts_all_) return Status::Ok();
  if (conn_ == nullptr || !conn_->ok()) {
    conn_.reset();
    RETURN_IF_ERROR(ConnectReader(uri_, "edgealloc-mirror", &conn_, fence_));
    // A read that waits on a lock (a migration) gives up, as SQLite's does.
    RETURN_IF_ERROR(conn_->Exec("SET lock_timeout = " + std::to_string(busy_timeout_ms_)));
  }
  // One snapshot for both statements, so that the drained ids are those of
  // the counts.
  RETURN_IF_ERROR(conn_->Exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"));
  PgResult counts, ids;
  Status s = conn_->Run(pgsql::kCapacityCounts, {}, &counts);
  if (s.ok()) s = conn_->Run(pgsql::kDrainedIds, {}, &ids);
  Status end = conn_->Exec(s.ok() ? "COMMIT" : "ROLLBACK");
  RETURN_IF_ERROR(s);
  RETURN_IF_ERROR(end);
  read->counts.assign(static_cast<size_t>(counts.rows()), CapacityCount{});
  for (int i = 0; i < counts.rows(); ++i) {
    ReadRow(kCapacityColumns, PgCells(counts, i), &read->counts[i]);
  }
  for (int i = 0; i < ids.rows(); ++i) read->drained_ids.emplace_back(ids.Text(i, 0));
  return Status::Ok();
}

}  // namespace store
