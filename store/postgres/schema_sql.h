#ifndef EDGEALLOC_STORE_POSTGRES_SCHEMA_SQL_H_
#define EDGEALLOC_STORE_POSTGRES_SCHEMA_SQL_H_

// The PostgreSQL schema and its migration's statements (store/postgres/schema.cc).

#include "store/postgres/lifecycle_sql.h"
#include "store/row_columns.h"
#include "store/sql_text.h"

namespace store::pgsql {

// The sessions table's columns (schema version 13): one text for a new
// database (kSchema) and for the move out of containers (kMoveSessionsOut).
#define EDGEALLOC_PG_SESSIONS_TABLE                    \
  "(\n"                                                \
  "  session_id text COLLATE \"C\" PRIMARY KEY,\n"     \
  "  container_id text NOT NULL,\n"                    \
  "  slot integer NOT NULL,\n"                         \
  "  generation bigint NOT NULL,\n"                    \
  "  tenant text,\n"                                   \
  "  idempotency_key text,\n"                          \
  "  lease_expires_at_ms bigint NOT NULL,\n"           \
  "  claimed_at_ms bigint,\n"                          \
  "  labels text,\n"                                   \
  "  UNIQUE (container_id, slot))"

// The schema, version 2. Made by MigrateSchema (store/postgres/schema.cc) under an
// advisory lock, so nodes starting together do not race. Version 2 added
// lane_hash (LaneHash of the id, store/postgres/lane.h): a node's heartbeat
// partition of a container is lane_hash % its writers, so each partition's
// dead-container sweep covers exactly the containers its lane writes.
// Version 3 added labels (a session's, JSON text; in no index, so heartbeats
// stay HOT). Version 4 made lists cost a page, not the fleet
// (Storage::ListSessions): (tenant, session_id) replaces (tenant), so a
// tenant's list walks its own sessions in the list's order (the quota's
// count by tenant uses it as it used (tenant)); and the lists' byte order
// (COLLATE "C") has an index of its own on session_id and on id, so that a
// database whose default collation is not C walks an index too instead of
// sorting every row. Version 5 made an operator's drain hold (docs/api.md,
// Containers): drain_requested is the operator's alone, drain_reported the
// container's own `draining` report (kOldDrainsAreReported migrates the
// older drains), and containers_drain_requested holds the drained ids for
// the mirror. Version 6 keeps ended sessions (docs/api.md, "Ended
// sessions"): every statement that ends a session sets end_reason
// (lifecycle_sql.h, EDGEALLOC_PG_END_SESSION), and the trigger
// containers_session_ended, which fires only on an UPDATE that sets it (a
// claim, a renew or a heartbeat never does), keeps the session as it was in
// session_history, in the same transaction; its columns are named as the
// containers' (store/row_columns.h), and the trigger's function copies each
// of kSessionColumns (made from the description: this text runs at every
// migration, so a session column added to the table and the description is
// copied once the version is bumped); seq orders it by insertion, which is
// the order of ended_at_ms (an expired lease's: the lease's end), so the
// prune walks seq for both the window and the bound on rows, and a release
// writes one index besides seq's, session_id's. Version 7 added
// node_claim_counts (kNodeClaimCounts). Version 8 added died_at_ms, when
// the reaper judged a container dead (the database's clock), so that a
// heartbeat accepted before that and written after it revives nothing
// (store/report_counts_sql.h); NULL on the rows it finds, whose next `ready`
// revives them as before. Version 9 added db_clock_shifts (kDbClockShifts),
// version 10 node_tenant_limits (kNodeTenantLimits), version 11
// node_heard_until (kNodeHeardUntil), version 12 containers' attributes and
// their table (selector_sql.h, kContainerAttributes). Version 13 gave
// sessions a home of their own and containers slots, as
// store/sqlite/schema.cc's version 12 says (the why of each column is there):
// `sessions` (a row a live session, UNIQUE (container_id, slot)), slots,
// slots_used, slot_map and slot_taken on the container, the view
// session_rows (a session joined to its container: kSessionColumns), and the
// trigger that keeps every session of a container whose sessions all end at
// once (death, deletion) in session_history and deletes them;
// kMoveSessionsOut moves an older schema's sessions there, before this text
// runs. Version 14 added the event log and its triggers (events_sql.h,
// kEvents), version 15 webhook delivery cursors (webhook_sql.h,
// kWebhookCursors), version 16 a session event's at_ms from its row, and
// died_at_ms when the last session of a container that reported itself
// dead ends (as SQLite's version 16). A node of an older version refuses a
// newer schema.
inline constexpr int kSchemaVersion = 16;
inline constexpr auto kSchema = Sql(R"sql(
CREATE TABLE IF NOT EXISTS edgealloc_meta (key text PRIMARY KEY, value text NOT NULL);
CREATE SEQUENCE IF NOT EXISTS edgealloc_tokens;
CREATE TABLE IF NOT EXISTS containers (
  id text PRIMARY KEY,
  region text NOT NULL,
  pool text NOT NULL,
  status text NOT NULL CHECK (status IN ('available', 'picked', 'draining', 'dead')),
  latency_ms bigint NOT NULL DEFAULT 0,
  data text NOT NULL DEFAULT '{}',
  last_heartbeat_ms bigint NOT NULL DEFAULT 0,
  reported_ts_ms bigint NOT NULL DEFAULT 0,
  load double precision,
  generation bigint NOT NULL,
  drain_requested boolean NOT NULL DEFAULT false,
  dead_reported boolean NOT NULL DEFAULT false,
  slots integer NOT NULL DEFAULT 1 CHECK (slots >= 1),
  slots_used integer NOT NULL DEFAULT 0 CHECK (slots_used >= 0),
  slot_map text NOT NULL DEFAULT '0',
  slot_taken integer,
  CONSTRAINT containers_slot_state CHECK ((status = 'picked') = (slots_used >= slots)
                                           AND (status <> 'dead' OR slots_used = 0)
                                           AND length(slot_map) >= slots));
ALTER TABLE containers ADD COLUMN IF NOT EXISTS lane_hash integer NOT NULL DEFAULT 0;
ALTER TABLE containers ADD COLUMN IF NOT EXISTS drain_reported boolean NOT NULL DEFAULT false;
CREATE TABLE IF NOT EXISTS sessions )sql" EDGEALLOC_PG_SESSIONS_TABLE R"sql(;
CREATE UNIQUE INDEX IF NOT EXISTS sessions_idempotency ON sessions (tenant, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS sessions_tenant_session ON sessions (tenant, session_id);
CREATE INDEX IF NOT EXISTS sessions_lease ON sessions (lease_expires_at_ms);
-- Liveness (last_heartbeat_ms, reported_ts_ms, load) is in no index, so a
-- plain heartbeat is a HOT update.
CREATE INDEX IF NOT EXISTS containers_claimable ON containers (region, pool, latency_ms)
  WHERE status = 'available';
CREATE INDEX IF NOT EXISTS containers_packing ON containers (region, pool, slots_used, latency_ms)
  WHERE status = 'available';
CREATE INDEX IF NOT EXISTS containers_id_c ON containers (id COLLATE "C");
CREATE INDEX IF NOT EXISTS containers_dead_reported ON containers (id)
  WHERE dead_reported AND status <> 'dead';
CREATE INDEX IF NOT EXISTS containers_drain_requested ON containers (id) WHERE drain_requested;
ALTER TABLE containers ADD COLUMN IF NOT EXISTS end_reason text;
ALTER TABLE containers ADD COLUMN IF NOT EXISTS died_at_ms bigint;
CREATE TABLE IF NOT EXISTS session_history (
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  session_id text COLLATE "C" NOT NULL UNIQUE,
  id text NOT NULL,
  region text NOT NULL,
  pool text NOT NULL,
  generation bigint NOT NULL,
  lease_expires_at_ms bigint,
  data text,
  labels text,
  tenant text,
  end_reason text NOT NULL,
  ended_at_ms bigint NOT NULL);
ALTER TABLE session_history ADD COLUMN IF NOT EXISTS slot integer NOT NULL DEFAULT 0;
-- The view's c.* is expanded now: the attributes column (selector_sql.h's
-- kContainerAttributes, which runs after this text) must exist before it.
ALTER TABLE containers ADD COLUMN IF NOT EXISTS attributes text;
DROP VIEW IF EXISTS container_rows;
CREATE VIEW container_rows AS
SELECT c.*, (SELECT s.session_id FROM sessions s
                WHERE s.container_id = c.id AND c.slots = 1 AND c.slots_used = 1)
              AS session_id
FROM containers c;
DROP VIEW IF EXISTS session_rows;
CREATE VIEW session_rows AS
SELECT c.id, c.region, c.pool, s.generation, s.lease_expires_at_ms, c.data, s.labels, s.tenant,
       s.session_id, s.slot, s.idempotency_key, s.claimed_at_ms
FROM sessions s JOIN containers c ON c.id = s.container_id;
CREATE OR REPLACE FUNCTION edgealloc_keep_ended_sessions() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO session_history ()sql", kSessionColumnList, R"sql(, end_reason, ended_at_ms)
  SELECT OLD.id, OLD.region, OLD.pool, s.generation, s.lease_expires_at_ms, OLD.data, s.labels,
         s.tenant, s.session_id, s.slot,
         CASE WHEN TG_OP = 'DELETE' THEN 'container_deleted' ELSE NEW.end_reason END,
         CASE WHEN TG_OP = 'UPDATE' AND NEW.end_reason = 'expired' THEN s.lease_expires_at_ms
              ELSE )sql" EDGEALLOC_PG_NOW_MS R"sql( END
  FROM sessions s WHERE s.container_id = OLD.id
  ON CONFLICT (session_id) DO NOTHING;
  DELETE FROM sessions WHERE container_id = OLD.id;
  RETURN NULL;
END
$fn$;
DROP TRIGGER IF EXISTS containers_sessions_ended ON containers;
CREATE TRIGGER containers_sessions_ended AFTER UPDATE OF end_reason ON containers FOR EACH ROW
  WHEN (OLD.slots_used > 0 AND NEW.slots_used = 0)
  EXECUTE FUNCTION edgealloc_keep_ended_sessions();
DROP TRIGGER IF EXISTS containers_sessions_deleted ON containers;
CREATE TRIGGER containers_sessions_deleted AFTER DELETE ON containers FOR EACH ROW
  WHEN (OLD.slots_used > 0)
  EXECUTE FUNCTION edgealloc_keep_ended_sessions();
)sql");

// Migrating from before kSessionsVersion, before kSchema runs: the live
// sessions move from their containers' rows to `sessions` (slot 0 of a
// container of one slot), the containers gain their slots, and the session
// columns, their indexes and the triggers that read them go. Nothing else is
// read or changed: history rows stay (and read slot 0). Only where the
// containers still hold sessions: a database whose version was set back
// over the new shape (as tests do) is left to kSchema.
inline constexpr int kSessionsVersion = 13;
inline constexpr char kMoveSessionsOut[] = R"sql(
DO $move$ BEGIN
IF EXISTS (SELECT 1 FROM information_schema.columns
           WHERE table_schema = current_schema() AND table_name = 'containers'
             AND column_name = 'session_id') THEN
ALTER TABLE containers ADD COLUMN IF NOT EXISTS labels text;
CREATE TABLE sessions )sql" EDGEALLOC_PG_SESSIONS_TABLE R"sql(;
INSERT INTO sessions (session_id, container_id, slot, generation, tenant, idempotency_key,
                      lease_expires_at_ms, claimed_at_ms, labels)
SELECT session_id, id, 0, generation, tenant, idempotency_key, lease_expires_at_ms,
       claimed_at_ms, labels
FROM containers WHERE session_id IS NOT NULL;
ALTER TABLE containers ADD COLUMN slots integer NOT NULL DEFAULT 1 CHECK (slots >= 1),
  ADD COLUMN slots_used integer NOT NULL DEFAULT 0 CHECK (slots_used >= 0),
  ADD COLUMN slot_map text NOT NULL DEFAULT '0',
  ADD COLUMN slot_taken integer;
UPDATE containers SET slots_used = 1, slot_map = '1' WHERE session_id IS NOT NULL;
DROP TRIGGER IF EXISTS containers_session_ended ON containers;
DROP TRIGGER IF EXISTS containers_session_deleted ON containers;
DROP FUNCTION IF EXISTS edgealloc_keep_ended_session();
ALTER TABLE containers DROP COLUMN session_id, DROP COLUMN tenant, DROP COLUMN idempotency_key,
  DROP COLUMN lease_expires_at_ms, DROP COLUMN claimed_at_ms, DROP COLUMN labels;
ALTER TABLE containers ADD CONSTRAINT containers_slot_state
  CHECK ((status = 'picked') = (slots_used >= slots) AND (status <> 'dead' OR slots_used = 0)
         AND length(slot_map) >= slots);
END IF;
END $move$;
)sql";

// The claim counts each node publishes (Storage::PublishClaimCounts), so that
// a dashboard shows the fleet's claim rates and not one node's: one row a
// node and pool, all of a node's stamped by each publish (with the
// database's clock); silent nodes' rows are pruned by the publishes.
inline constexpr char kNodeClaimCounts[] = R"sql(
CREATE TABLE IF NOT EXISTS node_claim_counts (
  node_id text NOT NULL,
  region text NOT NULL,
  pool text NOT NULL,
  ok bigint NOT NULL,
  no_capacity bigint NOT NULL,
  updated_ms bigint NOT NULL,
  PRIMARY KEY (node_id, region, pool))
)sql";

// The fleet's record of the steps of the database's clock shifted for
// (store/postgres/db_clock.h): one row, how many shifts and their sum. A
// node claims a shift by a compare-and-set of `shifts` in the transaction
// that moves the stored instants, so that a step every node sees is
// shifted for once.
inline constexpr char kDbClockShifts[] = R"sql(
CREATE TABLE IF NOT EXISTS db_clock_shifts (
  only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  shifts bigint NOT NULL,
  shifted_ms bigint NOT NULL);
INSERT INTO db_clock_shifts (only_row, shifts, shifted_ms) VALUES (true, 0, 0)
ON CONFLICT (only_row) DO NOTHING
)sql";

// The tenants' limits each node applies (Storage::PublishTenantLimits), so
// that nodes whose keys files disagree on a tenant say so: one row a node
// and tenant ("" for the tenants its file does not name), stamped with the
// database's clock; silent nodes' rows are pruned by the publishes.
inline constexpr char kNodeTenantLimits[] = R"sql(
CREATE TABLE IF NOT EXISTS node_tenant_limits (
  node_id text NOT NULL,
  tenant text NOT NULL,
  digest text NOT NULL,
  updated_ms bigint NOT NULL,
  PRIMARY KEY (node_id, tenant))
)sql";

// Until when each node has stored every heartbeat it accepted, a lane
// (partition) each (Storage::PublishHeardUntil): heard_until_ms and
// updated_ms on the database's clock. A dead-container sweep judges no
// silence past the least heard_until_ms of the nodes that published within
// its dead_after_ms, less that dead_after_ms (sweep_sql.h); `lanes` is the
// publisher's count of partitions, so that a node with another count is
// held by all its lanes. Silent nodes' rows are pruned by the publishes.
inline constexpr char kNodeHeardUntil[] = R"sql(
CREATE TABLE IF NOT EXISTS node_heard_until (
  node_id text NOT NULL,
  lane integer NOT NULL,
  lanes integer NOT NULL,
  heard_until_ms bigint NOT NULL,
  updated_ms bigint NOT NULL,
  PRIMARY KEY (node_id, lane))
)sql";

// Migrating from before kDrainReportedVersion: a drain an older node took
// cannot be told operator from self (both set the same status, and
// drain_requested on a picked row), so it becomes the container's own, and
// behaves as before: a `ready` report ends it.
inline constexpr int kDrainReportedVersion = 5;
inline constexpr char kOldDrainsAreReported[] = R"sql(
UPDATE containers SET drain_reported = true, drain_requested = false
WHERE status = 'draining' OR drain_requested
)sql";

// Version 1 to 2: the ids whose lane_hash is still to be set, and setting
// them ($1 ids, $2 their LaneHash).
inline constexpr char kIdsToHash[] = "SELECT id FROM containers";
inline constexpr char kSetLaneHashes[] = R"sql(
UPDATE containers c SET lane_hash = u.h
FROM unnest($1::text[], $2::integer[]) AS u(id, h) WHERE c.id = u.id
)sql";

// Whether the schema exists (non-NULL), without touching it.
inline constexpr char kMetaExists[] = "SELECT to_regclass('edgealloc_meta')::text";
inline constexpr char kGetSchemaVersion[] =
    "SELECT value FROM edgealloc_meta WHERE key = 'schema_version'";
inline constexpr char kSetSchemaVersion[] =
    "INSERT INTO edgealloc_meta (key, value) VALUES ('schema_version', $1) "
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value";

}  // namespace store::pgsql

#undef EDGEALLOC_PG_SESSIONS_TABLE

#endif  // EDGEALLOC_STORE_POSTGRES_SCHEMA_SQL_H_
