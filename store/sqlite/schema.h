#ifndef EDGEALLOC_STORE_SQLITE_SCHEMA_H_
#define EDGEALLOC_STORE_SQLITE_SCHEMA_H_

#include "store/sqlite/db.h"
#include "store/status.h"

namespace store {

// The schema version this binary writes (PRAGMA user_version), and the oldest
// version of the binary that can still use a file written by this one (kept in
// the `meta` table as compatible_version, as in Chromium's MetaTable).
inline constexpr int kSchemaVersion = 18;
// 4: a binary before version 4 would insert rows below the token floor, so a
// re-registered id could repeat a fencing token. 5: a binary before version 5
// would claim without setting labels and end sessions without clearing them,
// so a session could show the labels of the container's previous one.
// (6 only adds and drops an index: a version 5 binary still reads and writes it.)
// 7: a binary before version 7 would end an operator's drain at a session's
// end or a `ready` report, and take drain_requested for the container's own.
// 8: a binary before version 8 would end sessions without setting
// end_reason, so the history would miss them or keep a stale reason.
// (9 only adds a table, node_claim_counts, that older binaries never read.
// 10 only adds died_at_ms, which older binaries neither set nor read: their
// heartbeats revive a dead container whatever they were accepted, as before,
// and a death they judge leaves an older died_at_ms, which lets more through,
// never less. 11 only adds attributes and their table: an older binary's
// registration leaves a container's attribute rows as they were, which the
// claim re-checks against the container's row.)
// 12: sessions moved out of the containers row into a table of their own
// (store/sqlite/schema.cc, version 12): a binary before it finds no session
// columns on a container. (13 only widens an index, containers_counts: a
// version 12 binary still reads and writes it. 14 only adds the event
// log, whose triggers are the file's: an older binary's writes write their
// events too. 15 only adds webhook_cursors, which older binaries never
// read.)
// 16: the event log's container.dead and .available fire on the columns a
// change of status writes beside it (store/sqlite/events_sql.h, version
// 16); a binary before it frees the last slot of a container that reported
// itself dead without died_at_ms, and that container.dead would be missing.
// 17: events.seq is the rowid, no longer AUTOINCREMENT, and the prune keeps
// the newest event (store/sqlite/events_sql.h, version 17); a binary before
// it could prune the log to nothing, and the next event would reuse a seq.
// 18: a selector walks only attribute rows marked open (store/sqlite/
// schema.cc, version 18), which every change of a container's status keeps;
// a binary before it would free a slot without marking its container open,
// and hide it from selectors.
inline constexpr int kCompatibleVersion = 18;

// Brings the database up to kSchemaVersion, one version a step, each step in
// its own write transaction together with its user_version bump, so a crash
// leaves the file at a whole version. Returns Ok when the file is current,
// InvalidArgument naming both versions for a file written by a newer binary
// that this one cannot read, or the error of the failing step.
// REQUIRES: db is writable and no transaction is open on it.
Status Migrate(Db* db);

// Brings an empty database to `version` only (for tests of the migration
// from an older version). REQUIRES: 1 <= version <= kSchemaVersion.
Status MigrateTo(Db* db, int version);

// The file's user_version, or an error.
Status SchemaVersion(Db* db, int* version);

}  // namespace store

#endif  // EDGEALLOC_STORE_SQLITE_SCHEMA_H_
