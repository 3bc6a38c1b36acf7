#include "store/sqlite/schema.h"

#include <cassert>
#include <cstdint>
#include <string>

#include "store/sqlite/events_sql.h"
#include "store/sqlite/schema_rewrites.h"
#include "store/sqlite/webhook_sql.h"
#include "store/sqlite/sessions_schema_sql.h"

namespace store {
namespace {

// Version 1: the pool. One row a container, and the session on it lives in the
// same row: there is no second copy of "who holds what". generation is the
// fencing token; it only ever grows.
constexpr char kSchemaV1[] = R"sql(
CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE containers (
  id                  TEXT PRIMARY KEY,
  region              TEXT NOT NULL,
  pool                TEXT NOT NULL,
  status              TEXT NOT NULL
                      CHECK (status IN ('available', 'picked', 'draining', 'dead')),
  latency_ms          INTEGER NOT NULL DEFAULT 0,
  data                TEXT NOT NULL DEFAULT '{}',
  last_heartbeat_ms   INTEGER NOT NULL,
  generation          INTEGER NOT NULL DEFAULT 0,
  drain_requested     INTEGER NOT NULL DEFAULT 0,
  session_id          TEXT,
  tenant              TEXT,
  idempotency_key     TEXT,
  lease_expires_at_ms INTEGER,
  claimed_at_ms       INTEGER,
  CHECK ((status = 'picked') = (session_id IS NOT NULL))
);
-- The claim walks this index: the cheapest available containers of one
-- region and pool, in latency order. Partial, so it holds only what can be claimed.
CREATE INDEX containers_claimable ON containers (region, pool, latency_ms)
  WHERE status = 'available';
CREATE UNIQUE INDEX containers_session ON containers (session_id)
  WHERE session_id IS NOT NULL;
-- One live session per tenant and idempotency key, enforced by SQLite itself,
-- so a duplicate can never become a second session.
CREATE UNIQUE INDEX containers_idempotency ON containers (tenant, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
CREATE INDEX containers_tenant ON containers (tenant) WHERE session_id IS NOT NULL;
CREATE INDEX containers_lease ON containers (lease_expires_at_ms) WHERE session_id IS NOT NULL;
)sql";

// Version 2: what heartbeats need. reported_ts_ms is the container's own clock
// of its newest report, which only orders that container's reports; load is
// its last reported load; dead_reported marks a picked container that said
// it is dead, for the reaper to end its session (a batched write never moves
// a container out of picked itself). The heartbeat index finds the silent ones.
constexpr char kSchemaV2[] = R"sql(
ALTER TABLE containers ADD COLUMN reported_ts_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE containers ADD COLUMN load REAL NOT NULL DEFAULT 0;
ALTER TABLE containers ADD COLUMN dead_reported INTEGER NOT NULL DEFAULT 0;
CREATE INDEX containers_heartbeat ON containers (last_heartbeat_ms) WHERE status <> 'dead';
CREATE INDEX containers_counts ON containers (region, pool, status);
CREATE INDEX containers_dead_reported ON containers (id) WHERE dead_reported = 1;
)sql";

// Version 3 and version 17 rewrite a table's text in place:
// store/sqlite/schema_rewrites.h.

// Version 4: fencing tokens never repeat for an id (docs/api.md "Version 1.1 additions"). A row's
// generation only grows while the row lives; token_floor remembers the
// highest generation of every row deleted since, by a trigger, so that a
// delete from any program (even the sqlite3 shell) raises it. A new row starts
// at the floor (store/sqlite/lifecycle_sql.h kUpsertContainer), above any token its id
// had before, in this file or, through the registry, in another shard's.
constexpr char kSchemaV4[] = R"sql(
CREATE TABLE token_floor (
  only_row   INTEGER PRIMARY KEY CHECK (only_row = 1),
  generation INTEGER NOT NULL
);
INSERT INTO token_floor (only_row, generation) VALUES (1, 0);
CREATE TRIGGER containers_token_floor AFTER DELETE ON containers
BEGIN
  UPDATE token_floor SET generation = MAX(generation, OLD.generation) WHERE only_row = 1;
END;
)sql";

// Version 5: a session's labels (API 1.1 claim `labels`), a JSON object's
// text, set by the claim and cleared when the session ends. In no index: the
// label filter of a session list reads it from the rows the list walks.
constexpr char kSchemaV5[] = R"sql(
ALTER TABLE containers ADD COLUMN labels TEXT;
)sql";

// Version 6: a tenant's session list reads that tenant's sessions only
// (Storage::ListSessions). The list walks sessions in session id order; with
// only (tenant) indexed, SQLite walked every tenant's sessions by session id
// and dropped the others, so a tenant with none paid for the whole fleet.
// (tenant, session_id) gives it that tenant's sessions in that order, and
// serves the quota's count by tenant as (tenant) did, so it replaces it: a
// claim and a release still write one tenant index. A version 5 binary uses
// such a file unchanged (its statements name no index).
constexpr char kSchemaV6[] = R"sql(
CREATE INDEX containers_tenant_session ON containers (tenant, session_id)
  WHERE session_id IS NOT NULL;
DROP INDEX containers_tenant;
)sql";

// Version 7: an operator's drain holds (docs/api.md, Containers).
// drain_requested becomes the operator's drain alone, kept until undrain or
// delete (no report, registration, session end or death clears it), and
// drain_reported is the container's own `draining` report, until its
// `ready`. A drain taken by an older binary cannot be told operator from
// self (both set the same status, and drain_requested on a picked row), so
// it is migrated as the container's own: it behaves as before, a `ready`
// report ends it. containers_counts gains drain_requested, so that the
// mirror counts drained containers from the index alone (kCapacityCounts),
// and containers_drain_requested holds the drained ids, so that the
// mirror's read of them costs the drained rows, never the fleet.
constexpr char kSchemaV7[] = R"sql(
ALTER TABLE containers ADD COLUMN drain_reported INTEGER NOT NULL DEFAULT 0;
UPDATE containers SET drain_reported = 1, drain_requested = 0
  WHERE status = 'draining' OR drain_requested = 1;
DROP INDEX containers_counts;
CREATE INDEX containers_counts ON containers (region, pool, status, drain_requested);
CREATE INDEX containers_drain_requested ON containers (id) WHERE drain_requested = 1;
)sql";

// Version 8: ended sessions say why (docs/api.md, "Ended sessions"). Every
// statement that ends a session sets end_reason (store/sqlite/lifecycle_sql.h,
// EDGEALLOC_SQL_END_SESSION), and the trigger keeps the session as it was in
// session_history, in the same statement. Written as `UPDATE OF end_reason`,
// so a statement that does not set end_reason (a claim, a renew, a
// heartbeat) has no trigger compiled into it and pays nothing. session_history's
// columns are named as the containers' (store/row_columns.h kSessionColumns,
// id the container's), so its rows read as sessions. Every release writes
// this table, so it has one index only, session_id's (whose ids begin with
// their time, store/session_id.h, so it appends too); seq orders it by
// insertion, which is the order of ended_at_ms (an expired lease's end comes
// before its reaping), so the prune walks seq for both the window and the
// bound on rows (store/sqlite/history_sql.h), and no index on ended_at_ms
// adds a third tree to every release's writes. A deleted row that held a session (nothing
// in edgealloc deletes one) is kept too.
constexpr char kSchemaV8[] = R"sql(
ALTER TABLE containers ADD COLUMN end_reason TEXT;
CREATE TABLE session_history (
  seq                 INTEGER PRIMARY KEY,
  session_id          TEXT NOT NULL UNIQUE,
  id                  TEXT NOT NULL,
  region              TEXT NOT NULL,
  pool                TEXT NOT NULL,
  generation          INTEGER NOT NULL,
  lease_expires_at_ms INTEGER,
  data                TEXT,
  labels              TEXT,
  tenant              TEXT,
  end_reason          TEXT NOT NULL,
  ended_at_ms         INTEGER NOT NULL
);
CREATE TRIGGER containers_session_ended AFTER UPDATE OF end_reason ON containers
WHEN OLD.session_id IS NOT NULL AND NEW.session_id IS NULL
BEGIN
  INSERT OR REPLACE INTO session_history (session_id, id, region, pool, generation,
      lease_expires_at_ms, data, labels, tenant, end_reason, ended_at_ms)
  VALUES (OLD.session_id, OLD.id, OLD.region, OLD.pool, OLD.generation,
      OLD.lease_expires_at_ms, OLD.data, OLD.labels, OLD.tenant, NEW.end_reason,
      CASE WHEN NEW.end_reason = 'expired' THEN OLD.lease_expires_at_ms
           ELSE CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) END);
END;
CREATE TRIGGER containers_session_deleted AFTER DELETE ON containers
WHEN OLD.session_id IS NOT NULL
BEGIN
  INSERT OR REPLACE INTO session_history (session_id, id, region, pool, generation,
      lease_expires_at_ms, data, labels, tenant, end_reason, ended_at_ms)
  VALUES (OLD.session_id, OLD.id, OLD.region, OLD.pool, OLD.generation,
      OLD.lease_expires_at_ms, OLD.data, OLD.labels, OLD.tenant, 'container_deleted',
      CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER));
END;
)sql";

// Version 9: the claim counts each node publishes (Storage::PublishClaimCounts),
// so that a dashboard shows the fleet's claim rates and not one node's. One
// row a node and pool, all of a node's stamped by each publish; silent
// nodes' rows are pruned by the publishes. A version 7 binary never reads it.
constexpr char kSchemaV9[] = R"sql(
CREATE TABLE node_claim_counts (
  node_id     TEXT NOT NULL,
  region      TEXT NOT NULL,
  pool        TEXT NOT NULL,
  ok          INTEGER NOT NULL,
  no_capacity INTEGER NOT NULL,
  updated_ms  INTEGER NOT NULL,
  PRIMARY KEY (node_id, region, pool)
);
)sql";

// Version 10: when the reaper judged a container dead (died_at_ms, this
// node's clock), so that a heartbeat accepted before that and written after
// it revives nothing (store/report_counts_sql.h). NULL on every row a
// migration finds: a container dead before it comes back with any `ready`,
// as before.
constexpr char kSchemaV10[] = R"sql(
ALTER TABLE containers ADD COLUMN died_at_ms INTEGER;
)sql";

// Version 11: a container's attributes (API 1.3 registration `attributes`),
// a JSON object of strings in `attributes` as shown, and one row a key in
// container_attributes, which a claim's selector walks (store/sqlite/
// selector_sql.h): container_attributes_claim leads with region, pool, key
// and value and ends with the container's latency, so a selector of one
// value finds the K fastest matching containers of a pool by an index walk
// in latency order, never a scan of the pool. region, pool and latency_ms
// are copies of the container's, rewritten by each registration (kCopyAttributes);
// the claim re-checks region and pool on the container's own row, so a
// copy an older binary left stale (it registers without rewriting them)
// can hide a container from a selector, never make a wrong one match. A
// container's rows go with it (the trigger, whatever program deletes it).
// Rows written before this version have no attributes: NULL, shown as {}.
constexpr char kSchemaV11[] = R"sql(
ALTER TABLE containers ADD COLUMN attributes TEXT;
CREATE TABLE container_attributes (
  container_id TEXT NOT NULL,
  key          TEXT NOT NULL,
  value        TEXT NOT NULL,
  region       TEXT NOT NULL,
  pool         TEXT NOT NULL,
  latency_ms   INTEGER NOT NULL,
  PRIMARY KEY (container_id, key)
) WITHOUT ROWID;
CREATE INDEX container_attributes_claim
  ON container_attributes (region, pool, key, value, latency_ms);
CREATE TRIGGER containers_attributes_deleted AFTER DELETE ON containers
BEGIN
  DELETE FROM container_attributes WHERE container_id = OLD.id;
END;
)sql";

Status RunThen(Db* db, const char* first, const char* then) {
  RETURN_IF_ERROR(db->Exec(first));
  return db->Exec(then);
}

// Version 13: /v1/capacity counts slots beside containers (docs/api.md,
// "Slots"). containers_counts gains slots and slots_used, so that the
// mirror sums them from the index alone, as it counts (kCapacityCounts):
// read from the table, a 1,000,000-container shard's count took 1.5 s of
// CPU where the index's took 0.11 s. A version 12 binary reads and writes
// such a file unchanged (an index, wider).
constexpr char kSchemaV13[] = R"sql(
DROP INDEX containers_counts;
CREATE INDEX containers_counts
  ON containers (region, pool, status, drain_requested, slots, slots_used);
)sql";

// Version 18: `open` on every attribute row, 1 whenever its container is
// available (a claim could take a slot of it now), and
// container_attributes_open, the claim index of the open rows only: a
// selector's walk passes only open containers, where it passed every held
// and drained one of the driving term first (docs/performance.md,
// "Selectors"). A partial index, so that a row's flip is one index write and
// container_attributes_claim (the no_match read's) is untouched; `open` is
// its last column only so that the walk reads the index alone (SQLite
// reads a partial index's WHERE column from the table otherwise). A trigger
// cannot keep it: the claim and the freed slot write status in statements
// that call functions, and a trigger would give each a statement journal
// (version 16). So every statement that may make a container available, or
// that drains or kills one, is followed by kSyncAttributesOpen
// (store/sqlite/selector_sql.h); a selector's claim closes the container
// whose last slot it took (kCloseAttributes). A claim without a selector
// leaves its container's rows open, which costs it nothing: the next
// selector walk to pass them closes them.
constexpr char kSchemaV18[] = R"sql(
ALTER TABLE container_attributes ADD COLUMN open INTEGER NOT NULL DEFAULT 0;
UPDATE container_attributes SET open = 1
WHERE (SELECT status FROM containers c WHERE c.id = container_id) = 'available';
CREATE INDEX container_attributes_open
  ON container_attributes (region, pool, key, value, latency_ms, open) WHERE open = 1;
)sql";

Status RunStep(Db* db, int to_version) {
  switch (to_version) {
    case 1: return db->Exec(kSchemaV1);
    case 2: return db->Exec(kSchemaV2);
    case 3: return RewriteStatusCheck(db);
    case 4: return db->Exec(kSchemaV4);
    case 5: return db->Exec(kSchemaV5);
    case 6: return db->Exec(kSchemaV6);
    case 7: return db->Exec(kSchemaV7);
    case 8: return db->Exec(kSchemaV8);
    case 9: return db->Exec(kSchemaV9);
    case 10: return db->Exec(kSchemaV10);
    case 11: return db->Exec(kSchemaV11);
    case 12: return RunThen(db, kSchemaV12, kSessionsEndedTriggers);
    case 13: return db->Exec(kSchemaV13);
    case 14: return RunThen(db, kSchemaV14, kSessionsEndedTriggers);
    // Webhook delivery cursors (store/sqlite/webhook_sql.h).
    case 15: return db->Exec(sql::kWebhookCursorsSchema);
    case 16: return RunThen(db, kSchemaV16, kSessionsEndedTriggers);
    case 17: return DropEventsAutoincrement(db);
    case 18: return db->Exec(kSchemaV18);
  }
  return Status::InvalidArgument("no migration step to version " + std::to_string(to_version));
}
static_assert(kSchemaVersion == 18, "add the new version's case to RunStep");


// The compatible_version a file of `version` records (schema.h says why
// each): its own version up to 8, 8 until 12, 12 until 16, then each its own.
int CompatibleAt(int version) {
  static_assert(kCompatibleVersion == 18, "say from which version the new one holds");
  if (version >= 16) return version;
  if (version >= 12) return 12;
  return version < 8 ? version : 8;
}

Status ReadCompatibleVersion(Db* db, int* version) {
  *version = 0;
  Status s;
  StatementRef has_meta;
  RETURN_IF_ERROR(db->Cached(
      "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'meta'", &has_meta));
  bool row = false;
  s = has_meta->Step(&row);
  if (!s.ok() || !row || has_meta->ColumnInt64(0) == 0) return s;
  StatementRef get;
  RETURN_IF_ERROR(db->Cached("SELECT value FROM meta WHERE key = 'compatible_version'", &get));
  s = get->Step(&row);
  if (s.ok() && row) *version = std::stoi(get->ColumnString(0));
  return s;
}

}  // namespace

Status SchemaVersion(Db* db, int* version) {
  Status s;
  StatementRef q;
  RETURN_IF_ERROR(db->Cached("PRAGMA user_version", &q));
  bool row = false;
  s = q->Step(&row);
  *version = row ? static_cast<int>(q->ColumnInt64(0)) : 0;
  return s;
}

Status MigrateTo(Db* db, int target) {
  assert(target >= 1 && target <= kSchemaVersion);
  for (;;) {
    Transaction txn(db);
    RETURN_IF_ERROR(txn.Begin());
    // Read the version inside the write transaction: two processes migrating
    // the same file at once must not both run a step.
    int version = 0;
    RETURN_IF_ERROR(SchemaVersion(db, &version));
    if (version > kSchemaVersion) {
      int compatible = 0;
      RETURN_IF_ERROR(ReadCompatibleVersion(db, &compatible));
      if (compatible > kSchemaVersion) {
        return Status::InvalidArgument(
            db->path() + " has schema version " + std::to_string(version) +
            " (needs a binary of version " + std::to_string(compatible) +
            " or newer); this binary knows version " + std::to_string(kSchemaVersion));
      }
      return Status::Ok();  // newer, but declared readable by us
    }
    if (version >= target) return Status::Ok();
    RETURN_IF_ERROR(RunStep(db, version + 1));
    RETURN_IF_ERROR(db->Exec("PRAGMA user_version = " + std::to_string(version + 1)));
    RETURN_IF_ERROR(db->Exec("INSERT INTO meta (key, value) VALUES ('compatible_version', '" +
                 std::to_string(CompatibleAt(version + 1)) +
                 "') ON CONFLICT (key) DO UPDATE SET value = excluded.value"));
    RETURN_IF_ERROR(txn.Commit());
  }
}

Status Migrate(Db* db) { return MigrateTo(db, kSchemaVersion); }

}  // namespace store
