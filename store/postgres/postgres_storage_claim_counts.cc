// PostgresStorage: the nodes' published claim counts, and the tenants'
// limits each applies. Publishing is a solo
// job of writer 0 (one upsert and one bounded prune, never in a claim's
// group); reading is one pooled read connection's.
#include <string>
#include <vector>

#include "store/postgres/claim_count_sql.h"
#include "store/postgres/postgres_storage.h"

namespace store {

Status PostgresStorage::PublishClaimCounts(const std::string& node_id,
                                           const std::vector<PoolClaimTally>& counts,
                                           int64_t prune_after_ms, int max_pruned) {
  std::vector<std::string> regions, pools;
  std::vector<PgParam> ok, no_capacity;
  for (const PoolClaimTally& c : counts) {
    regions.push_back(c.region);
    pools.push_back(c.pool);
    ok.push_back(P(c.ok));
    no_capacity.push_back(P(c.no_capacity));
  }
  return writers_[0]->RunSync(
      [&](PgConn* conn) {
        RETURN_IF_ERROR(conn->Run(pgsql::kPublishClaimCounts,
                                  {P(node_id), TextArrayParam(regions), TextArrayParam(pools),
                                   ArrayParam(ok), ArrayParam(no_capacity)}));
        return conn->Run(pgsql::kPruneClaimCounts,
                         {P(prune_after_ms), P(int64_t{max_pruned})});
      },
      /*solo=*/true);
}

Status PostgresStorage::ReadFleetClaimCounts(int64_t window_ms, FleetClaimCounts* fleet) {
  *fleet = FleetClaimCounts{};
  return WithReader([&](PgConn* conn) {
    fleet->pools.clear();  // a retried read starts afresh
    PgResult sums, nodes;
    RETURN_IF_ERROR(conn->Run(pgsql::kSumClaimCounts, {P(window_ms)}, &sums));
    RETURN_IF_ERROR(conn->Run(pgsql::kCountClaimNodes, {P(window_ms)}, &nodes));
    for (int i = 0; i < sums.rows(); ++i) {
      fleet->pools.push_back(
          {sums.String(i, 0), sums.String(i, 1), sums.Int64(i, 2), sums.Int64(i, 3)});
    }
    fleet->nodes = nodes.rows() == 1 ? nodes.Int64(0, 0) : 0;
    return Status::Ok();
  });
}

Status PostgresStorage::PublishTenantLimits(const std::string& node_id,
                                            const std::vector<TenantLimitsDigest>& mine,
                                            int64_t window_ms,
                                            std::vector<TenantLimitsDigest>* fleet) {
  std::vector<std::string> tenants, digests;
  for (const TenantLimitsDigest& d : mine) {
    tenants.push_back(d.tenant);
    digests.push_back(d.digest);
  }
  std::vector<TenantLimitsDigest> read;
  Status s = writers_[0]->RunSync(
      [&](PgConn* conn) {
        read.clear();
        RETURN_IF_ERROR(conn->Run(pgsql::kDropTenantLimits, {P(node_id), TextArrayParam(tenants)}));
        RETURN_IF_ERROR(conn->Run(pgsql::kPublishTenantLimits,
                                  {P(node_id), TextArrayParam(tenants), TextArrayParam(digests)}));
        RETURN_IF_ERROR(conn->Run(pgsql::kPruneTenantLimits, {P(window_ms)}));
        PgResult r;
        RETURN_IF_ERROR(conn->Run(pgsql::kReadTenantLimits, {P(window_ms)}, &r));
        for (int i = 0; i < r.rows(); ++i) {
          read.push_back({r.String(i, 0), r.String(i, 1), r.String(i, 2)});
        }
        return Status::Ok();
      },
      /*solo=*/true);
  if (s.ok()) *fleet = std::move(read);
  return s;
}

}  // namespace store
