#ifndef EDGEALLOC_STORE_SQLITE_EVENTS_SQL_H_
#define EDGEALLOC_STORE_SQLITE_EVENTS_SQL_H_

// The event log of a SQLite file (store/events.h): the table, the triggers
// that write it, and its read and prune. A step of store/sqlite/schema.cc's
// migration (version 14), in a file of its own for its length.

// events.seq's column as version 14 wrote it, without its AUTOINCREMENT
// (version 17 rewrites the one into the other: schema_rewrites.cc).
#define EDGEALLOC_SQLITE_EVENTS_SEQ "seq          INTEGER PRIMARY KEY"
// This node's now in ms, as the history's trigger writes it.
#define EDGEALLOC_SQLITE_NOW_MS "CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)"
// One event row: the columns every trigger below fills.
#define EDGEALLOC_SQLITE_EVENT_INSERT                                                       \
  "INSERT INTO events (at_ms, type, container_id, session_id, tenant, token, slot, region, " \
  "pool, end_reason) "

// A container's event, from the row ROW (NEW or OLD): no session's columns.
#define EDGEALLOC_SQLITE_CONTAINER_EVENT(TYPE, ROW)                                    \
  EDGEALLOC_SQLITE_EVENT_INSERT "\n  VALUES (" EDGEALLOC_SQLITE_NOW_MS ", " TYPE ", " ROW \
  ".id, NULL, NULL,\n          NULL, NULL, " ROW ".region, " ROW ".pool, NULL);"

// A session's event from its row in sessions (NEW), its region and pool
// from its container's.
#define EDGEALLOC_SQLITE_SESSION_EVENT(TYPE)                                              \
  EDGEALLOC_SQLITE_EVENT_INSERT "\n  SELECT " EDGEALLOC_SQLITE_NOW_MS ", " TYPE            \
  ", NEW.container_id,\n         NEW.session_id, NEW.tenant, NEW.generation, NEW.slot, " \
  "c.region, c.pool, NULL\n  FROM containers c WHERE c.id = NEW.container_id;"

// The two drain events, made after the status trigger (SQLite fires the
// newest first: drained and undrained come before the available or draining
// status they bring); version 16 makes them again after its status trigger.
#define EDGEALLOC_SQLITE_DRAIN_TRIGGERS                                                      \
  "CREATE TRIGGER events_container_draining AFTER UPDATE OF drain_reported ON containers\n" \
  "WHEN NEW.drain_reported AND NOT OLD.drain_reported\n"                                   \
  "BEGIN\n" EDGEALLOC_SQLITE_EVENT_INSERT                                                   \
  "VALUES (" EDGEALLOC_SQLITE_NOW_MS ", 'container.draining', NEW.id, NULL, NULL,\n"        \
  "        NULL, NULL, NEW.region, NEW.pool, NULL);\n"                                      \
  "END;\n"                                                                                  \
  "CREATE TRIGGER events_container_drain AFTER UPDATE OF drain_requested ON containers\n"  \
  "WHEN NEW.drain_requested <> OLD.drain_requested\n"                                      \
  "BEGIN\n" EDGEALLOC_SQLITE_EVENT_INSERT                                                   \
  "VALUES (" EDGEALLOC_SQLITE_NOW_MS ",\n"                                                  \
  "        CASE WHEN NEW.drain_requested THEN 'container.drained' "                         \
  "ELSE 'container.undrained' END,\n"                                                      \
  "        NEW.id, NULL, NULL, NULL, NULL, NEW.region, NEW.pool, NULL);\n"                  \
  "END;\n"

namespace store {

// Version 13: events. Triggers write them, so every statement of every
// path (claims, releases, sweeps, heartbeats, an operator's CLI) writes its
// events in its own transaction, and a statement or transaction undone
// takes them with it. One writer a file, so seq grows in commit order, and
// is never reused (version 17: the newest row is never pruned). event_floor
// is the highest seq pruned: a reader after a seq below it was too slow
// (410 events_expired). Which change is which event:
//   session.claimed     a row inserted into sessions
//   session.renewed     a session's lease moved alone (a clock step's shift
//                       moves claimed_at_ms with it, and is no renew)
//   session.ended       a row inserted into session_history, every end
//   container.registered a row inserted into containers
//   container.available status became available from draining or dead
//                       (a slot freed is its session.ended)
//   container.draining  the container reported itself draining
//   container.drained   an operator drained it; .undrained, ended that
//   container.dead      status became dead
//   container.deleted   the row deleted
// A container's death or deletion ends its sessions first: the triggers
// that keep them in the history are made again last (kSessionsEndedTriggers,
// after this text), and SQLite fires the
// newest trigger first (PostgreSQL fires by name: containers_ before
// events_), so session.ended comes before container.dead or .deleted.
// Each status test is written with OR, never IN (version 3 says why).
inline constexpr char kSchemaV14[] = R"sql(
CREATE TABLE events (
  )sql" EDGEALLOC_SQLITE_EVENTS_SEQ R"sql( AUTOINCREMENT,
  at_ms        INTEGER NOT NULL,
  type         TEXT NOT NULL,
  container_id TEXT,
  session_id   TEXT,
  tenant       TEXT,
  token        INTEGER,
  slot         INTEGER,
  region       TEXT,
  pool         TEXT,
  end_reason   TEXT
);
CREATE INDEX events_tenant ON events (tenant, seq) WHERE tenant IS NOT NULL;
CREATE TABLE event_floor (only_row INTEGER PRIMARY KEY CHECK (only_row = 1),
                          seq INTEGER NOT NULL);
INSERT INTO event_floor (only_row, seq) VALUES (1, 0);
CREATE TRIGGER events_session_claimed AFTER INSERT ON sessions
BEGIN
  )sql" EDGEALLOC_SQLITE_SESSION_EVENT("'session.claimed'") R"sql(
END;
CREATE TRIGGER events_session_renewed AFTER UPDATE OF lease_expires_at_ms ON sessions
WHEN NEW.lease_expires_at_ms <> OLD.lease_expires_at_ms
 AND NEW.claimed_at_ms IS OLD.claimed_at_ms
BEGIN
  )sql" EDGEALLOC_SQLITE_SESSION_EVENT("'session.renewed'") R"sql(
END;
CREATE TRIGGER events_session_ended AFTER INSERT ON session_history
BEGIN
  )sql" EDGEALLOC_SQLITE_EVENT_INSERT R"sql(
  VALUES ()sql" EDGEALLOC_SQLITE_NOW_MS R"sql(, 'session.ended', NEW.id, NEW.session_id,
          NEW.tenant, NEW.generation, NEW.slot, NEW.region, NEW.pool, NEW.end_reason);
END;
CREATE TRIGGER events_container_registered AFTER INSERT ON containers
BEGIN
  )sql" EDGEALLOC_SQLITE_CONTAINER_EVENT("'container.registered'", "NEW") R"sql(
END;
CREATE TRIGGER events_container_deleted AFTER DELETE ON containers
BEGIN
  )sql" EDGEALLOC_SQLITE_CONTAINER_EVENT("'container.deleted'", "OLD") R"sql(
END;
CREATE TRIGGER events_container_status AFTER UPDATE OF status ON containers
WHEN (NEW.status = 'dead' AND OLD.status <> 'dead')
  OR (NEW.status = 'available' AND (OLD.status = 'draining' OR OLD.status = 'dead'))
BEGIN
  )sql" EDGEALLOC_SQLITE_CONTAINER_EVENT("'container.' || NEW.status", "NEW") R"sql(
END;
)sql" EDGEALLOC_SQLITE_DRAIN_TRIGGERS R"sql(
DROP TRIGGER containers_sessions_ended;
DROP TRIGGER containers_sessions_deleted;
)sql";

// Version 16: the event triggers out of the cycle's way. SQLite gives a
// statement a statement journal (a copy of every page it touches, each run)
// when it writes through a trigger and may abort halfway: a constraint
// checked with ABORT, or any SQL function call (julianday, substr, instr,
// RANDOM: a function may fail). Under version 14 every claim and release
// paid four of them, the event log's whole cost (docs/performance.md):
//  - session.claimed and session.ended take at_ms from their row
//    (claimed_at_ms; ended_at_ms, the lease's end for an expiry) instead of
//    julianday('now'), and their statements insert OR FAIL;
//  - container.dead and .available fire on the columns that every statement
//    making such a change writes (a report's drain_reported, an operator's
//    drain_requested, a death's died_at_ms, a registration's slots), not on
//    status, which a claim and a freed slot write with functions. A freed
//    slot never makes either change: the last slot of a container that
//    reported itself dead is kFreeLastSlotOfDead's, which sets died_at_ms.
// The drain triggers, then the triggers that keep ended sessions, are made
// again after it, so that every trigger fires in version 14's order.
// events_tenant goes: a tenant's read walks seq and keeps its own rows
// (EventQuery::Keeps, at most EventExamineBound rows a page), instead of
// every session event writing an index entry.
inline constexpr char kSchemaV16[] = R"sql(
DROP INDEX events_tenant;
DROP TRIGGER events_session_claimed;
CREATE TRIGGER events_session_claimed AFTER INSERT ON sessions
BEGIN
  )sql" EDGEALLOC_SQLITE_EVENT_INSERT R"sql(
  SELECT NEW.claimed_at_ms, 'session.claimed', NEW.container_id, NEW.session_id, NEW.tenant,
         NEW.generation, NEW.slot, c.region, c.pool, NULL
  FROM containers c WHERE c.id = NEW.container_id;
END;
DROP TRIGGER events_session_ended;
CREATE TRIGGER events_session_ended AFTER INSERT ON session_history
BEGIN
  )sql" EDGEALLOC_SQLITE_EVENT_INSERT R"sql(
  VALUES (NEW.ended_at_ms, 'session.ended', NEW.id, NEW.session_id, NEW.tenant, NEW.generation,
          NEW.slot, NEW.region, NEW.pool, NEW.end_reason);
END;
DROP TRIGGER events_container_status;
CREATE TRIGGER events_container_status
AFTER UPDATE OF drain_reported, drain_requested, died_at_ms, slots ON containers
WHEN (NEW.status = 'dead' AND OLD.status <> 'dead')
  OR (NEW.status = 'available' AND (OLD.status = 'draining' OR OLD.status = 'dead'))
BEGIN
  )sql" EDGEALLOC_SQLITE_CONTAINER_EVENT("'container.' || NEW.status", "NEW") R"sql(
END;
DROP TRIGGER events_container_draining;
DROP TRIGGER events_container_drain;
)sql" EDGEALLOC_SQLITE_DRAIN_TRIGGERS R"sql(
DROP TRIGGER containers_sessions_ended;
DROP TRIGGER containers_sessions_deleted;
)sql";

// Version 17 (store/sqlite/schema_rewrites.cc, DropEventsAutoincrement):
// seq a plain rowid. AUTOINCREMENT kept the highest seq ever given in
// sqlite_sequence, which every statement whose triggers insert an event
// read and rewrote: one more table in every claim and release, one more
// page in their commits (docs/performance.md has what dropping it bought).
// The prune keeps the newest row instead (kPruneEvents).

namespace sql {

// The columns a read returns, Event's order (sqlite_storage_events.cc).
#define EDGEALLOC_SQLITE_EVENT_COLUMNS \
  "seq, at_ms, type, container_id, session_id, tenant, token, slot, region, pool, end_reason"

// The pruned end, read in the same read transaction as the page.
inline constexpr char kEventFloor[] = "SELECT seq FROM event_floor WHERE only_row = 1";
// At most ?2 events after ?1, the primary key's range (a tenant's and a
// type's are kept from them: EventQuery::Keeps).
inline constexpr char kReadEvents[] = "SELECT " EDGEALLOC_SQLITE_EVENT_COLUMNS
                                      " FROM events WHERE seq > ?1 ORDER BY seq LIMIT ?2";

// Anything older than ?1 to prune? The first row of the primary key, if it
// is not also the last (the newest is kept, below). Each end read alone.
inline constexpr char kAnyEventsToPrune[] =
    "SELECT 1 WHERE (SELECT at_ms FROM events ORDER BY seq LIMIT 1) < ?1 "
    "AND (SELECT seq FROM events ORDER BY seq LIMIT 1) < "
    "(SELECT seq FROM events ORDER BY seq DESC LIMIT 1)";
// Of the ?2 oldest events, those up to the newest older than ?1: a prefix,
// so the floor says exactly what is gone (a row out of time order, after a
// clock step, goes with its neighbours). Never the newest row: seq is the
// rowid, one above the highest row's (version 17), so a log pruned to
// nothing would give its next event a seq that readers have already passed.
inline constexpr char kPruneEvents[] = R"sql(
DELETE FROM events
WHERE seq <= (SELECT max(seq) FROM (SELECT seq, at_ms FROM events ORDER BY seq LIMIT ?2)
              WHERE at_ms < ?1)
  AND seq < (SELECT seq FROM events ORDER BY seq DESC LIMIT 1)
RETURNING seq
)sql";
inline constexpr char kRaiseEventFloor[] =
    "UPDATE event_floor SET seq = MAX(seq, ?1) WHERE only_row = 1";

}  // namespace sql
}  // namespace store

#undef EDGEALLOC_SQLITE_DRAIN_TRIGGERS
#undef EDGEALLOC_SQLITE_CONTAINER_EVENT
#undef EDGEALLOC_SQLITE_SESSION_EVENT
#undef EDGEALLOC_SQLITE_EVENT_INSERT

#endif  // EDGEALLOC_STORE_SQLITE_EVENTS_SQL_H_
