#include "store/postgres/capacity_reader.h"

#include "store/postgres/container_sql.h"
#include "store/postgres/readers.h"
#include "store/postgres/rows.h"

namespace store {

Status PgCapacityReader::Read(std::vector<CapacityCount>* counts, bool* unchanged) {
  *unchanged = false;  // PostgreSQL has no cheap "nothing committed since" test
  if (!counts_all_) {
    counts->clear();
    return Status::Ok();
  }
  if (conn_ == nullptr || !conn_->ok()) {
    conn_.reset();
    RETURN_IF_ERROR(ConnectReader(uri_, "edgealloc-mirror", &conn_));
    // A read that waits on a lock (a migration) gives up, as SQLite's does.
    RETURN_IF_ERROR(conn_->Exec("SET lock_timeout = " + std::to_string(busy_timeout_ms_)));
  }
  PgResult r;
  RETURN_IF_ERROR(conn_->Run(pgsql::kCapacityCounts, {}, &r));
  counts->assign(static_cast<size_t>(r.rows()), CapacityCount{});
  for (int i = 0; i < r.rows(); ++i) ReadRow(kCapacityColumns, PgCells(r, i), &(*counts)[i]);
  return Status::Ok();
}

}  // namespace store
