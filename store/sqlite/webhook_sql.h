#ifndef EDGEALLOC_STORE_SQLITE_WEBHOOK_SQL_H_
#define EDGEALLOC_STORE_SQLITE_WEBHOOK_SQL_H_

// Webhook delivery cursors of a SQLite file (Storage::LeaseWebhook): a step
// of store/sqlite/schema.cc's migration, in a file of its own. Kept in
// shard 0's file (the cursor names a seq of every shard).

namespace store {
namespace sql {

// One row a tenant: the cursor after the last batch its receiver
// acknowledged, and which node delivers it until when.
inline constexpr char kWebhookCursorsSchema[] = R"sql(
CREATE TABLE webhook_cursors (
  tenant         TEXT PRIMARY KEY,
  cursor         TEXT NOT NULL DEFAULT '',
  owner          TEXT NOT NULL,
  lease_until_ms INTEGER NOT NULL
) WITHOUT ROWID;
)sql";

// ?1 tenant, ?2 owner, ?3 now_ms, ?4 lease_ms: a row (its cursor) when
// owner holds the lease after it, none when another node's has not lapsed.
inline constexpr char kLeaseWebhook[] = R"sql(
INSERT INTO webhook_cursors (tenant, owner, lease_until_ms) VALUES (?1, ?2, ?3 + ?4)
ON CONFLICT (tenant) DO UPDATE SET owner = excluded.owner,
                                   lease_until_ms = excluded.lease_until_ms
  WHERE webhook_cursors.owner = excluded.owner OR webhook_cursors.lease_until_ms < ?3
RETURNING cursor
)sql";

// ?1 tenant, ?2 owner, ?3 cursor, ?4 now_ms, ?5 lease_ms: a row if owner
// still held the lease (and moved the cursor).
inline constexpr char kAckWebhook[] = R"sql(
UPDATE webhook_cursors SET cursor = ?3, lease_until_ms = ?4 + ?5
WHERE tenant = ?1 AND owner = ?2
RETURNING 1
)sql";

}  // namespace sql
}  // namespace store

#endif  // EDGEALLOC_STORE_SQLITE_WEBHOOK_SQL_H_
