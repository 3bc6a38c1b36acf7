#ifndef EDGEALLOC_STORE_POSTGRES_WEBHOOK_SQL_H_
#define EDGEALLOC_STORE_POSTGRES_WEBHOOK_SQL_H_

// Webhook delivery cursors on PostgreSQL (Storage::LeaseWebhook), as
// store/sqlite/webhook_sql.h, the lease timed by the database's clock so
// that nodes whose clocks differ agree when it lapsed.

#include "store/postgres/lifecycle_sql.h"  // EDGEALLOC_PG_NOW_MS

namespace store::pgsql {

// Schema version 15: one row a tenant, its cursor and its deliverer.
inline constexpr char kWebhookCursors[] = R"sql(
CREATE TABLE IF NOT EXISTS webhook_cursors (
  tenant         text PRIMARY KEY,
  cursor         text NOT NULL DEFAULT '',
  owner          text NOT NULL,
  lease_until_ms bigint NOT NULL
);
)sql";

// $1 tenant, $2 owner, $3 lease_ms: a row (its cursor) when owner holds the
// lease after it, none when another node's has not lapsed. The row lock
// of ON CONFLICT makes two nodes taking a lapsed lease at once take turns.
inline constexpr char kLeaseWebhook[] =
    "INSERT INTO webhook_cursors (tenant, owner, lease_until_ms) VALUES ($1, $2, "
    EDGEALLOC_PG_NOW_MS " + $3) "
    "ON CONFLICT (tenant) DO UPDATE SET owner = excluded.owner, "
    "lease_until_ms = excluded.lease_until_ms "
    "WHERE webhook_cursors.owner = excluded.owner OR webhook_cursors.lease_until_ms < "
    EDGEALLOC_PG_NOW_MS " RETURNING cursor";

// $1 tenant, $2 owner, $3 cursor, $4 lease_ms: a row if owner still held it.
inline constexpr char kAckWebhook[] =
    "UPDATE webhook_cursors SET cursor = $3, lease_until_ms = " EDGEALLOC_PG_NOW_MS
    " + $4 WHERE tenant = $1 AND owner = $2 RETURNING 1";

}  // namespace store::pgsql

#endif  // EDGEALLOC_STORE_POSTGRES_WEBHOOK_SQL_H_
