#ifndef EDGEALLOC_STORE_POSTGRES_EVENTS_SQL_H_
#define EDGEALLOC_STORE_POSTGRES_EVENTS_SQL_H_

// The event log on PostgreSQL (store/events.h): the table, the triggers that
// write it, the commit order of its seq, and its read and prune.

#include "store/postgres/lifecycle_sql.h"

// The advisory lock that orders event-writing commits: the two-int form,
// whose keys never meet the one-bigint keys of kLockTenant and the schema's.
#define EDGEALLOC_PG_EVENTS_LOCK "pg_advisory_xact_lock(1702260339, 1)"
// The channel a commit that wrote events notifies (PgEventListener).
#define EDGEALLOC_PG_EVENTS_CHANNEL "edgealloc_events"

namespace store::pgsql {

// Schema version 14. The same triggers as store/sqlite/events_sql.h (its
// comment says which change is which event), written by one function that
// the trigger's argument steers. Since version 16 a session's claim and end
// take at_ms from the row (claimed_at_ms; ended_at_ms, an expiry's lease
// end), and the index events_tenant is gone (a tenant's read keeps its own
// rows of the seq range), as on SQLite (why there: its version 16).
//
// Commit order. A sequence's values are drawn when a row is inserted, long
// before its transaction commits, so with several writers (a node's, and
// every node's) a reader could read seq 11, committed, while seq 10 is yet
// to commit, and never come back for it. So a row's seq is drawn again at
// commit: the deferred trigger events_commit_order runs as its transaction
// commits, takes EDGEALLOC_PG_EVENTS_LOCK (held until the transaction is
// over, which is after its rows are visible), and only then draws the
// row's final seq. Two transactions that wrote events thus draw their final
// seqs in the order they become visible, and a snapshot that sees one seq
// sees every smaller one. The lock is held only for the commit of a
// transaction that wrote events (a heartbeat that changed nothing of
// interest never takes it). The seq a row is inserted with is only a
// placeholder, unique, never seen by a reader.
inline constexpr char kEvents[] = R"sql(
CREATE SEQUENCE IF NOT EXISTS edgealloc_event_seq;
CREATE TABLE IF NOT EXISTS events (
  seq bigint PRIMARY KEY DEFAULT nextval('edgealloc_event_seq'),
  at_ms bigint NOT NULL,
  type text NOT NULL,
  container_id text,
  session_id text,
  tenant text,
  token bigint,
  slot integer,
  region text,
  pool text,
  end_reason text);
DROP INDEX IF EXISTS events_tenant;
CREATE TABLE IF NOT EXISTS event_floor (only_row boolean PRIMARY KEY CHECK (only_row),
                                        seq bigint NOT NULL);
INSERT INTO event_floor (only_row, seq) VALUES (true, 0) ON CONFLICT DO NOTHING;
CREATE OR REPLACE FUNCTION edgealloc_write_event() RETURNS trigger
LANGUAGE plpgsql AS $fn$
DECLARE
  kind text := TG_ARGV[0];
BEGIN
  IF TG_TABLE_NAME = 'sessions' THEN
    INSERT INTO events (at_ms, type, container_id, session_id, tenant, token, slot, region, pool)
    SELECT CASE kind WHEN 'session.claimed' THEN COALESCE(NEW.claimed_at_ms, )sql" EDGEALLOC_PG_NOW_MS R"sql()
                     ELSE )sql" EDGEALLOC_PG_NOW_MS R"sql( END,
           kind, NEW.container_id, NEW.session_id, NEW.tenant,
           NEW.generation, NEW.slot, c.region, c.pool
    FROM containers c WHERE c.id = NEW.container_id;
  ELSIF TG_TABLE_NAME = 'session_history' THEN
    INSERT INTO events (at_ms, type, container_id, session_id, tenant, token, slot, region, pool,
                        end_reason)
    VALUES (NEW.ended_at_ms, kind, NEW.id, NEW.session_id, NEW.tenant,
            NEW.generation, NEW.slot, NEW.region, NEW.pool, NEW.end_reason);
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO events (at_ms, type, container_id, region, pool)
    VALUES ()sql" EDGEALLOC_PG_NOW_MS R"sql(, kind, OLD.id, OLD.region, OLD.pool);
  ELSE
    INSERT INTO events (at_ms, type, container_id, region, pool)
    VALUES ()sql" EDGEALLOC_PG_NOW_MS R"sql(,
            CASE kind WHEN 'status' THEN 'container.' || NEW.status
                      WHEN 'drain' THEN CASE WHEN NEW.drain_requested THEN 'container.drained'
                                             ELSE 'container.undrained' END
                      ELSE kind END,
            NEW.id, NEW.region, NEW.pool);
  END IF;
  RETURN NULL;
END
$fn$;
DROP TRIGGER IF EXISTS events_session_claimed ON sessions;
CREATE TRIGGER events_session_claimed AFTER INSERT ON sessions FOR EACH ROW
  EXECUTE FUNCTION edgealloc_write_event('session.claimed');
DROP TRIGGER IF EXISTS events_session_renewed ON sessions;
CREATE TRIGGER events_session_renewed AFTER UPDATE OF lease_expires_at_ms ON sessions FOR EACH ROW
  WHEN (NEW.lease_expires_at_ms <> OLD.lease_expires_at_ms
        AND NEW.claimed_at_ms IS NOT DISTINCT FROM OLD.claimed_at_ms)
  EXECUTE FUNCTION edgealloc_write_event('session.renewed');
DROP TRIGGER IF EXISTS events_session_ended ON session_history;
CREATE TRIGGER events_session_ended AFTER INSERT ON session_history FOR EACH ROW
  EXECUTE FUNCTION edgealloc_write_event('session.ended');
DROP TRIGGER IF EXISTS events_container_registered ON containers;
CREATE TRIGGER events_container_registered AFTER INSERT ON containers FOR EACH ROW
  EXECUTE FUNCTION edgealloc_write_event('container.registered');
DROP TRIGGER IF EXISTS events_container_deleted ON containers;
CREATE TRIGGER events_container_deleted AFTER DELETE ON containers FOR EACH ROW
  EXECUTE FUNCTION edgealloc_write_event('container.deleted');
DROP TRIGGER IF EXISTS events_container_status ON containers;
CREATE TRIGGER events_container_status AFTER UPDATE OF status ON containers FOR EACH ROW
  WHEN ((NEW.status = 'dead' AND OLD.status <> 'dead')
        OR (NEW.status = 'available' AND OLD.status IN ('draining', 'dead')))
  EXECUTE FUNCTION edgealloc_write_event('status');
DROP TRIGGER IF EXISTS events_container_draining ON containers;
CREATE TRIGGER events_container_draining AFTER UPDATE OF drain_reported ON containers FOR EACH ROW
  WHEN (NEW.drain_reported AND NOT OLD.drain_reported)
  EXECUTE FUNCTION edgealloc_write_event('container.draining');
DROP TRIGGER IF EXISTS events_container_drain ON containers;
CREATE TRIGGER events_container_drain AFTER UPDATE OF drain_requested ON containers FOR EACH ROW
  WHEN (NEW.drain_requested <> OLD.drain_requested)
  EXECUTE FUNCTION edgealloc_write_event('drain');
CREATE OR REPLACE FUNCTION edgealloc_event_commit_order() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
  PERFORM )sql" EDGEALLOC_PG_EVENTS_LOCK R"sql(;
  UPDATE events SET seq = nextval('edgealloc_event_seq') WHERE seq = NEW.seq;
  PERFORM pg_notify(')sql" EDGEALLOC_PG_EVENTS_CHANNEL R"sql(', '');
  RETURN NULL;
END
$fn$;
DROP TRIGGER IF EXISTS events_commit_order ON events;
CREATE CONSTRAINT TRIGGER events_commit_order AFTER INSERT ON events
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
  EXECUTE FUNCTION edgealloc_event_commit_order();
)sql";

#define EDGEALLOC_PG_EVENT_COLUMNS \
  "seq, at_ms, type, container_id, session_id, tenant, token, slot, region, pool, end_reason"

// A page: the pruned end, then at most $2 events after $1 (a tenant's and
// a type's kept from them: EventQuery::Keeps), in one snapshot
// (PostgresStorage::ReadEvents).
inline constexpr char kEventFloor[] = "SELECT seq FROM event_floor";
inline constexpr char kReadEvents[] =
    "SELECT " EDGEALLOC_PG_EVENT_COLUMNS " FROM events WHERE seq > $1 ORDER BY seq LIMIT $2";

// Of the $2 oldest events, those up to the newest older than $1 ms (a
// prefix, as SQLite's kPruneEvents), and the floor raised past them, in
// one statement.
inline constexpr char kPruneEvents[] = R"sql(
WITH oldest AS (SELECT seq, at_ms FROM events ORDER BY seq LIMIT $2),
     gone AS (DELETE FROM events
              WHERE seq <= (SELECT max(seq) FROM oldest
                            WHERE at_ms < )sql" EDGEALLOC_PG_NOW_MS R"sql( - $1)
              RETURNING seq),
     raised AS (UPDATE event_floor SET seq = GREATEST(event_floor.seq, (SELECT max(seq) FROM gone))
                WHERE EXISTS (SELECT 1 FROM gone) RETURNING 1)
SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM raised)
)sql";

}  // namespace store::pgsql

#endif  // EDGEALLOC_STORE_POSTGRES_EVENTS_SQL_H_
