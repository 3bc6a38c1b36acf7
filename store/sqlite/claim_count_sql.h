#ifndef EDGEALLOC_STORE_SQLITE_CLAIM_COUNT_SQL_H_
#define EDGEALLOC_STORE_SQLITE_CLAIM_COUNT_SQL_H_

// The statements of the nodes' published claim counts (node_claim_counts,
// store/sqlite/schema.cc version 9; Storage::PublishClaimCounts and
// ReadFleetClaimCounts), `?N` placeholders. A node's rows are all stamped by
// each publish, so a row's updated_ms is its node's last publish.

namespace store::sql {

// ?1 node, ?2 region, ?3 pool, ?4 ok, ?5 no_capacity, ?6 now.
inline constexpr char kPublishClaimCount[] =
    "INSERT INTO node_claim_counts (node_id, region, pool, ok, no_capacity, updated_ms) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (node_id, region, pool) DO UPDATE SET "
    "ok = excluded.ok, no_capacity = excluded.no_capacity, updated_ms = excluded.updated_ms";
// ?1 silent since, ?2 at most this many rows.
inline constexpr char kPruneClaimCounts[] =
    "DELETE FROM node_claim_counts WHERE rowid IN (SELECT rowid FROM node_claim_counts "
    "WHERE updated_ms < ?1 LIMIT ?2)";
// ?1 published since.
inline constexpr char kSumClaimCounts[] =
    "SELECT region, pool, sum(ok), sum(no_capacity) FROM node_claim_counts "
    "WHERE updated_ms >= ?1 GROUP BY region, pool ORDER BY region, pool";
inline constexpr char kCountClaimNodes[] =
    "SELECT count(DISTINCT node_id) FROM node_claim_counts WHERE updated_ms >= ?1";

}  // namespace store::sql

#endif  // EDGEALLOC_STORE_SQLITE_CLAIM_COUNT_SQL_H_
