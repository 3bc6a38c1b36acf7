#ifndef EDGEALLOC_STORE_POSTGRES_CONTAINER_SQL_H_
#define EDGEALLOC_STORE_POSTGRES_CONTAINER_SQL_H_

// The PostgreSQL statements of the containers
// (store/postgres/postgres_storage_containers.cc, postgres_storage_pools.cc,
// capacity_reader.cc): register, read, list, drain, remove, probe, count.

#include "store/postgres/lifecycle_sql.h"
#include "store/postgres/list_sql.h"
#include "store/postgres/selector_sql.h"
#include "store/row_columns.h"
#include "store/sql_text.h"

namespace store::pgsql {

// A page of containers after $1 in id order (byte order, containers_id_c),
// as kListSessions: at most $6 examined, walked as ListWalk with the filters
// (the kept ones up to where the walk stops: the $5-th, limit + 1, or the
// one that brings their bytes to $7; the column after the container true),
// then the last id examined when the walk stopped (that column false, the
// id last).
// An attribute is one key ($8) and its value ($9), as a session list's label.
//   $1 after $2 region $3 pool $4 status $5 limit + 1 $6 examined at most
//   $7 byte budget (0: none) $8 attribute key $9 attribute value
inline constexpr auto kListContainers = Sql(
    "WITH examined AS MATERIALIZED (SELECT ", kContainerColumnList, R"sql(
  FROM container_rows WHERE id COLLATE "C" > $1 ORDER BY id COLLATE "C" LIMIT $6::bigint))sql",
    ListWalk(kContainerTextBytesSql, R"sql(($2::text IS NULL OR region = $2)
        AND ($3::text IS NULL OR pool = $3) AND ($4::text IS NULL OR status = $4)
        AND ($8::text IS NULL OR attributes::jsonb ->> $8 = $9::text))sql",
             R"sql(id COLLATE "C")sql", "$5", "$6", "$7"),
    ListPageRows(kContainerColumnList, kContainerNullList, "$6", "id"));

// Attributes ($8) replace the stored ones whole; NULL keeps them
// (selector_sql.h's kDropAttributes and kCopyAttributes then copy them).
//   $1 id $2 region $3 pool $4 latency_ms $5 data $6 LaneHash(id) $7 slots
//   $8 attributes (or NULL)
inline constexpr char kUpsertContainer[] = R"sql(
INSERT INTO containers (id, region, pool, status, latency_ms, data, last_heartbeat_ms, generation,
                        lane_hash, slots, slot_map, attributes)
VALUES ($1, $2, $3, 'available', $4::bigint, $5, )sql" EDGEALLOC_PG_NOW_MS R"sql(,
        nextval('edgealloc_tokens'), $6::integer, $7::integer, repeat('0', $7::integer), $8)
ON CONFLICT (id) DO UPDATE SET
  latency_ms = excluded.latency_ms,
  data = excluded.data,
  attributes = COALESCE(excluded.attributes, containers.attributes),
  last_heartbeat_ms = GREATEST(containers.last_heartbeat_ms, excluded.last_heartbeat_ms),
  reported_ts_ms = 0,
  region = CASE WHEN containers.slots_used > 0 THEN containers.region ELSE excluded.region END,
  pool = CASE WHEN containers.slots_used > 0 THEN containers.pool ELSE excluded.pool END,
  slots = excluded.slots,
  slot_map = containers.slot_map ||
             repeat('0', greatest(excluded.slots - length(containers.slot_map), 0)),
  status = CASE WHEN containers.status = 'dead' THEN
                  CASE WHEN containers.drain_requested OR containers.drain_reported
                       THEN 'draining' ELSE 'available' END
                ELSE )sql" EDGEALLOC_PG_STATUS_HOLDING("containers.", "containers.slots_used",
                                                      "excluded.slots") R"sql( END
)sql";

inline constexpr auto kGetContainer =
    Sql("SELECT ", kContainerColumnList, " FROM container_rows WHERE id = $1");

inline constexpr char kContainerExists[] = "SELECT 1 FROM containers WHERE id = $1";

// An operator's drain and its end (kDrain, kUndrain of the SQLite engine).
inline constexpr char kDrain[] = R"sql(
UPDATE containers
SET status = CASE WHEN status = 'available' THEN 'draining' ELSE status END,
    drain_requested = true
WHERE id = $1
)sql";
inline constexpr char kUndrain[] = R"sql(
UPDATE containers
SET status = CASE WHEN status = 'draining' AND NOT drain_reported AND NOT dead_reported
                  THEN 'available' ELSE status END,
    drain_requested = false
WHERE id = $1
)sql";

inline constexpr char kRemoveUnpicked[] =
    "DELETE FROM containers WHERE id = $1 AND slots_used = 0";

// Pools as waiting claims see them (kProbePool of the SQLite engine), all
// in one statement, healthy judged on the database's clock.
//   $1 regions $2 pools (text arrays, one pool per index) $3 dead_after_ms
inline constexpr char kProbePools[] = R"sql(
SELECT EXISTS (SELECT 1 FROM containers c WHERE c.region = p.region AND c.pool = p.pool),
       EXISTS (SELECT 1 FROM containers c
               WHERE c.region = p.region AND c.pool = p.pool AND c.status = 'available'
                 AND c.last_heartbeat_ms >= )sql" EDGEALLOC_PG_NOW_MS R"sql( - $3::bigint)
FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS p(region, pool, n)
ORDER BY p.n
)sql";

// The mirror's read: the containers by region, pool and status (how many
// of them an operator drained, their slots and used slots summed), then the drained ids, from the partial
// index containers_drain_requested (the drained rows, never the fleet).
inline constexpr auto kCapacityCounts =
    Sql("SELECT ", kCapacityColumnList,
        " FROM containers GROUP BY region, pool, status ORDER BY region, pool, status");
inline constexpr char kDrainedIds[] = "SELECT id FROM containers WHERE drain_requested";

}  // namespace store::pgsql

#endif  // EDGEALLOC_STORE_POSTGRES_CONTAINER_SQL_H_
