// What waiting claims ask of pools (Storage::ProbePools), on the reader
// connections: never the write path.
#include <string>
#include <vector>

#include "base/clock.h"
#include "store/sqlite/lifecycle_sql.h"
#include "store/sqlite/shard.h"
#include "store/sqlite/sqlite_storage.h"

namespace store {

Status SqliteStorage::ProbePools(std::vector<PoolProbe>* pools) {
  const int64_t healthy_since = base::NowMs() - policy_.dead_after_ms;
  for (PoolProbe& p : *pools) {
    Shard* shard = shards_[static_cast<size_t>(map_.ShardOf(p.region))];
    RETURN_IF_ERROR(shard->reads->With([&](Db* db) {
      StatementRef q;
      RETURN_IF_ERROR(db->Cached(sql::kProbePool, &q));
      q->Bind(1, p.region);
      q->Bind(2, p.pool);
      q->Bind(3, healthy_since);
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
