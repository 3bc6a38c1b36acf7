#ifndef EDGEALLOC_STORE_SQLITE_SCHEMA_REWRITES_H_
#define EDGEALLOC_STORE_SQLITE_SCHEMA_REWRITES_H_

#include "store/sqlite/db.h"
#include "store/status.h"

// The steps of store/sqlite/schema.cc's migration that change a table's
// CREATE text where its rows' format stays as it is: SQLite's documented
// procedure (ALTER TABLE, "Making Other Kinds Of Table Schema Changes"),
// sqlite_schema edited with writable_schema on and schema_version bumped,
// in the migration's transaction, so no row is copied.

namespace store {

// Version 3: the containers' status CHECK written with OR instead of IN.
Status RewriteStatusCheck(Db* db);

// Version 17: events.seq without AUTOINCREMENT, its high-water mark kept.
Status DropEventsAutoincrement(Db* db);

}  // namespace store

#endif  // EDGEALLOC_STORE_SQLITE_SCHEMA_REWRITES_H_
