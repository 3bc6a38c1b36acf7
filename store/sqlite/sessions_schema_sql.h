#ifndef EDGEALLOC_STORE_SQLITE_SESSIONS_SCHEMA_SQL_H_
#define EDGEALLOC_STORE_SQLITE_SESSIONS_SCHEMA_SQL_H_

// A step of store/sqlite/schema.cc's migration, in a file of its own for
// its length.

namespace store {

// Version 12: sessions get a home of their own, and a container holds up to
// `slots` of them (docs/api.md, "Slots"). A session is a row of `sessions`:
// its container, the slot it holds (UNIQUE (container_id, slot): two live
// sessions on one slot are refused by SQLite itself), its token and its own
// columns. The container row keeps what a claim decides on, so that the
// pick, slot included, is one UPDATE of one row: slots, slots_used, and
// slot_map, a text of '0' (free) and '1' (used), one character a slot,
// whose first '0' is the slot a claim takes; slot_taken is that slot, for
// the claim's RETURNING (whose row is the row after the update).
// generation stays the container's: a claim of any slot bumps it, so tokens
// grow per container across its slots. status reads as the API's: picked
// when every slot is used (the CHECK), available while one is free (and no
// drain or death report stops claims), draining or dead as before; dead
// holds no session. session_rows joins a session to its container: the row
// store/row_columns.h kSessionColumns describes; container_rows is a
// container with the session of its one slot (kContainerColumns). Ending every session of a
// container (its death, its deletion) stays one statement on the container
// row: setting end_reason and slots_used = 0 makes containers_sessions_ended
// keep them in session_history and delete them. One session ending alone
// (release, expiry) is written by store/sqlite/release.cc. SQLite cannot drop
// a column in a CHECK or an index, so containers is rebuilt (SQLite's
// documented procedure: a new table, the rows copied, the old one dropped,
// the new one renamed), every index and trigger made again (version 11's
// attributes column and its trigger too). Each held
// container becomes a container of one slot whose slot 0 is its session.
inline constexpr char kSchemaV12[] = R"sql(
DROP TRIGGER containers_token_floor;
DROP TRIGGER containers_session_ended;
DROP TRIGGER containers_session_deleted;
CREATE TABLE sessions (
  session_id          TEXT PRIMARY KEY,
  container_id        TEXT NOT NULL,
  slot                INTEGER NOT NULL,
  generation          INTEGER NOT NULL,
  tenant              TEXT,
  idempotency_key     TEXT,
  lease_expires_at_ms INTEGER NOT NULL,
  claimed_at_ms       INTEGER,
  labels              TEXT,
  UNIQUE (container_id, slot)
);
INSERT INTO sessions (session_id, container_id, slot, generation, tenant, idempotency_key,
                      lease_expires_at_ms, claimed_at_ms, labels)
SELECT session_id, id, 0, generation, tenant, idempotency_key, lease_expires_at_ms,
       claimed_at_ms, labels
FROM containers WHERE session_id IS NOT NULL;
CREATE UNIQUE INDEX sessions_idempotency ON sessions (tenant, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
CREATE INDEX sessions_tenant_session ON sessions (tenant, session_id);
CREATE INDEX sessions_lease ON sessions (lease_expires_at_ms);
CREATE TABLE containers_v12 (
  id                TEXT PRIMARY KEY,
  region            TEXT NOT NULL,
  pool              TEXT NOT NULL,
  status            TEXT NOT NULL
                    CHECK (status = 'available' OR status = 'picked' OR status = 'draining' OR
                           status = 'dead'),
  latency_ms        INTEGER NOT NULL DEFAULT 0,
  data              TEXT NOT NULL DEFAULT '{}',
  last_heartbeat_ms INTEGER NOT NULL,
  generation        INTEGER NOT NULL DEFAULT 0,
  drain_requested   INTEGER NOT NULL DEFAULT 0,
  reported_ts_ms    INTEGER NOT NULL DEFAULT 0,
  load              REAL NOT NULL DEFAULT 0,
  dead_reported     INTEGER NOT NULL DEFAULT 0,
  drain_reported    INTEGER NOT NULL DEFAULT 0,
  end_reason        TEXT,
  died_at_ms        INTEGER,
  slots             INTEGER NOT NULL DEFAULT 1 CHECK (slots >= 1),
  slots_used        INTEGER NOT NULL DEFAULT 0 CHECK (slots_used >= 0),
  slot_map          TEXT NOT NULL DEFAULT '0',
  slot_taken        INTEGER,
  attributes        TEXT,
  CHECK ((status = 'picked') = (slots_used >= slots)),
  CHECK (status <> 'dead' OR slots_used = 0),
  CHECK (length(slot_map) >= slots)
);
INSERT INTO containers_v12 (id, region, pool, status, latency_ms, data, last_heartbeat_ms,
    generation, drain_requested, reported_ts_ms, load, dead_reported, drain_reported,
    end_reason, died_at_ms, slots, slots_used, slot_map, attributes)
SELECT id, region, pool, status, latency_ms, data, last_heartbeat_ms, generation,
       drain_requested, reported_ts_ms, load, dead_reported, drain_reported, end_reason,
       died_at_ms, 1, session_id IS NOT NULL,
       CASE WHEN session_id IS NOT NULL THEN '1' ELSE '0' END, attributes
FROM containers;
DROP TABLE containers;
ALTER TABLE containers_v12 RENAME TO containers;
CREATE INDEX containers_claimable ON containers (region, pool, latency_ms)
  WHERE status = 'available';
CREATE INDEX containers_packing ON containers (region, pool, slots_used, latency_ms)
  WHERE status = 'available';
CREATE INDEX containers_heartbeat ON containers (last_heartbeat_ms) WHERE status <> 'dead';
CREATE INDEX containers_counts ON containers (region, pool, status, drain_requested);
CREATE INDEX containers_dead_reported ON containers (id) WHERE dead_reported = 1;
CREATE INDEX containers_drain_requested ON containers (id) WHERE drain_requested = 1;
CREATE TRIGGER containers_token_floor AFTER DELETE ON containers
BEGIN
  UPDATE token_floor SET generation = MAX(generation, OLD.generation) WHERE only_row = 1;
END;
CREATE TRIGGER containers_attributes_deleted AFTER DELETE ON containers
BEGIN
  DELETE FROM container_attributes WHERE container_id = OLD.id;
END;
ALTER TABLE session_history ADD COLUMN slot INTEGER NOT NULL DEFAULT 0;
CREATE VIEW container_rows AS
SELECT c.*, (SELECT s.session_id FROM sessions s
                WHERE s.container_id = c.id AND c.slots = 1 AND c.slots_used = 1)
              AS session_id
FROM containers c;
CREATE VIEW session_rows AS
SELECT c.id AS id, c.region AS region, c.pool AS pool, s.generation AS generation,
       s.lease_expires_at_ms AS lease_expires_at_ms, c.data AS data, s.labels AS labels,
       s.tenant AS tenant, s.session_id AS session_id, s.slot AS slot,
       s.idempotency_key AS idempotency_key, s.claimed_at_ms AS claimed_at_ms
FROM sessions s JOIN containers c ON c.id = s.container_id;
)sql";

// The triggers that keep the sessions of a container whose sessions all
// end at once in session_history: run after kSchemaV12 by its step, and made
// again by version 14's, so that they fire before the event triggers
// (SQLite fires the newest first).
inline constexpr char kSessionsEndedTriggers[] = R"sql(
CREATE TRIGGER containers_sessions_ended AFTER UPDATE OF end_reason ON containers
WHEN OLD.slots_used > 0 AND NEW.slots_used = 0
BEGIN
  INSERT OR REPLACE INTO session_history (session_id, id, region, pool, generation,
      lease_expires_at_ms, data, labels, tenant, slot, end_reason, ended_at_ms)
  SELECT s.session_id, OLD.id, OLD.region, OLD.pool, s.generation, s.lease_expires_at_ms,
         OLD.data, s.labels, s.tenant, s.slot, NEW.end_reason,
         CASE WHEN NEW.end_reason = 'expired' THEN s.lease_expires_at_ms
              ELSE CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) END
  FROM sessions s WHERE s.container_id = OLD.id;
  DELETE FROM sessions WHERE container_id = OLD.id;
END;
CREATE TRIGGER containers_sessions_deleted AFTER DELETE ON containers
WHEN OLD.slots_used > 0
BEGIN
  INSERT OR REPLACE INTO session_history (session_id, id, region, pool, generation,
      lease_expires_at_ms, data, labels, tenant, slot, end_reason, ended_at_ms)
  SELECT s.session_id, OLD.id, OLD.region, OLD.pool, s.generation, s.lease_expires_at_ms,
         OLD.data, s.labels, s.tenant, s.slot, 'container_deleted',
         CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)
  FROM sessions s WHERE s.container_id = OLD.id;
  DELETE FROM sessions WHERE container_id = OLD.id;
END;
)sql";

}  // namespace store

#endif  // EDGEALLOC_STORE_SQLITE_SESSIONS_SCHEMA_SQL_H_
