// SqliteStorage: the nodes' published claim counts, in the first shard's
// file (one file holds a fleet's; the other shards' tables stay empty).
// Publishing is a solo job of that shard's writer, never in a claim's group;
// reading is on its read-only connections.
#include <string>
#include <vector>

#include "base/clock.h"
#include "store/sqlite/claim_count_sql.h"
#include "store/sqlite/sqlite_storage.h"

namespace store {

Status SqliteStorage::PublishClaimCounts(const std::string& node_id,
                                         const std::vector<PoolClaimTally>& counts,
                                         int64_t prune_after_ms, int max_pruned) {
  const int64_t now = base::NowMs();
  return shards_[0]->writer->RunSync(
      [&](Db* db) {
        for (const PoolClaimTally& c : counts) {
          StatementRef q;
          RETURN_IF_ERROR(db->Cached(sql::kPublishClaimCount, &q));
          q->Bind(1, node_id);
          q->Bind(2, c.region);
          q->Bind(3, c.pool);
          q->Bind(4, c.ok);
          q->Bind(5, c.no_capacity);
          q->Bind(6, now);
          RETURN_IF_ERROR(q->Run());
        }
        StatementRef prune;
        RETURN_IF_ERROR(db->Cached(sql::kPruneClaimCounts, &prune));
        prune->Bind(1, now - prune_after_ms);
        prune->Bind(2, static_cast<int64_t>(max_pruned));
        return prune->Run();
      },
      /*solo=*/true);
}

Status SqliteStorage::ReadFleetClaimCounts(int64_t window_ms, FleetClaimCounts* fleet) {
  *fleet = FleetClaimCounts{};
  const int64_t since = base::NowMs() - window_ms;
  return shards_[0]->reads->With([&](Db* db) {
    StatementRef sums;
    RETURN_IF_ERROR(db->Cached(sql::kSumClaimCounts, &sums));
    sums->Bind(1, since);
    for (bool row = true;;) {
      RETURN_IF_ERROR(sums->Step(&row));
      if (!row) break;
      fleet->pools.push_back({sums->ColumnString(0), sums->ColumnString(1),
                              sums->ColumnInt64(2), sums->ColumnInt64(3)});
    }
    StatementRef nodes;
    RETURN_IF_ERROR(db->Cached(sql::kCountClaimNodes, &nodes));
    nodes->Bind(1, since);
    bool row = false;
    RETURN_IF_ERROR(nodes->Step(&row));
    fleet->nodes = row ? nodes->ColumnInt64(0) : 0;
    return Status::Ok();
  });
}

}  // namespace store
