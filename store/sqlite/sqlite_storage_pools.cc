// SqliteStorage: what waiting claims ask of pools (Storage::ProbePools), on
// the reader connections: never the write path.
#include <string>
#include <vector>

#include "store/sqlite/lifecycle_sql.h"
#include "store/sqlite/shard.h"
#include "store/sqlite/sqlite_storage.h"

namespace store {

Status SqliteStorage::ProbePools(std::vector<PoolProbe>* pools) {
  for (PoolProbe& p : *pools) {
    RETURN_IF_ERROR(ReadAtShardNow(map_.ShardOf(p.region), [&](Db* db, int64_t now) {
      StatementRef q;
      RETURN_IF_ERROR(db->Cached(sql::kProbePool, &q));
      q->Bind(1, p.region);
      q->Bind(2, p.pool);
      q->Bind(3, now - policy_.dead_after_ms);
      bool row = false;
      RETURN_IF_ERROR(q->Step(&row));
      p.registered = row && q->ColumnInt64(0) != 0;
      p.claimable = row && q->ColumnInt64(1) != 0;
      return Status::Ok();
    }));
  }
  return Status::Ok();
}

}  // namespace store
