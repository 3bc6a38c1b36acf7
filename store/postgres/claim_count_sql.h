#ifndef EDGEALLOC_STORE_POSTGRES_CLAIM_COUNT_SQL_H_
#define EDGEALLOC_STORE_POSTGRES_CLAIM_COUNT_SQL_H_

#include "store/postgres/lifecycle_sql.h"

// The statements of the nodes' published claim counts (node_claim_counts,
// schema_sql.h kNodeClaimCounts; Storage::PublishClaimCounts and
// ReadFleetClaimCounts), as store/sqlite/claim_count_sql.h in PostgreSQL's
// dialect. Rows are stamped and aged by the database's clock, so nodes'
// clocks that disagree still agree on which nodes are in the window.

namespace store::pgsql {

// $1 node, $2 regions, $3 pools, $4 ok, $5 no_capacity (arrays, one a pool).
inline constexpr char kPublishClaimCounts[] =
    "INSERT INTO node_claim_counts (node_id, region, pool, ok, no_capacity, updated_ms) "
    "SELECT $1, u.region, u.pool, u.ok, u.no_capacity, " EDGEALLOC_PG_NOW_MS " "
    "FROM unnest($2::text[], $3::text[], $4::bigint[], $5::bigint[]) "
    "AS u(region, pool, ok, no_capacity) "
    "ON CONFLICT (node_id, region, pool) DO UPDATE SET "
    "ok = excluded.ok, no_capacity = excluded.no_capacity, updated_ms = excluded.updated_ms";
// $1 silent for longer than this (ms), $2 at most this many rows.
inline constexpr char kPruneClaimCounts[] =
    "DELETE FROM node_claim_counts WHERE ctid = ANY (ARRAY(SELECT ctid FROM node_claim_counts "
    "WHERE updated_ms < " EDGEALLOC_PG_NOW_MS " - $1 LIMIT $2))";
// $1 published within this (ms).
inline constexpr char kSumClaimCounts[] =
    "SELECT region, pool, sum(ok)::bigint, sum(no_capacity)::bigint FROM node_claim_counts "
    "WHERE updated_ms >= " EDGEALLOC_PG_NOW_MS " - $1 "
    "GROUP BY region, pool ORDER BY region COLLATE \"C\", pool COLLATE \"C\"";
inline constexpr char kCountClaimNodes[] =
    "SELECT count(DISTINCT node_id) FROM node_claim_counts "
    "WHERE updated_ms >= " EDGEALLOC_PG_NOW_MS " - $1";

// The tenants' limits each node applies (schema_sql.h kNodeTenantLimits;
// Storage::PublishTenantLimits): a node's rows replaced by its publish,
// silent nodes' pruned, the fresh ones read back.
//   $1 node $2 tenants $3 digests (arrays, one a tenant)
inline constexpr char kDropTenantLimits[] =
    "DELETE FROM node_tenant_limits WHERE node_id = $1 AND NOT tenant = ANY($2::text[])";
inline constexpr char kPublishTenantLimits[] =
    "INSERT INTO node_tenant_limits (node_id, tenant, digest, updated_ms) "
    "SELECT $1, u.tenant, u.digest, " EDGEALLOC_PG_NOW_MS " "
    "FROM unnest($2::text[], $3::text[]) AS u(tenant, digest) "
    "ON CONFLICT (node_id, tenant) DO UPDATE SET "
    "digest = excluded.digest, updated_ms = excluded.updated_ms";
//   $1 silent for longer than this (ms)
inline constexpr char kPruneTenantLimits[] =
    "DELETE FROM node_tenant_limits WHERE updated_ms < " EDGEALLOC_PG_NOW_MS " - $1";
inline constexpr char kReadTenantLimits[] =
    "SELECT node_id, tenant, digest FROM node_tenant_limits "
    "WHERE updated_ms >= " EDGEALLOC_PG_NOW_MS " - $1 "
    "ORDER BY tenant COLLATE \"C\", node_id COLLATE \"C\"";

}  // namespace store::pgsql

#endif  // EDGEALLOC_STORE_POSTGRES_CLAIM_COUNT_SQL_H_
