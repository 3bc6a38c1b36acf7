#ifndef EDGEALLOC_STORE_POSTGRES_SCHEMA_H_
#define EDGEALLOC_STORE_POSTGRES_SCHEMA_H_

#include "store/postgres/pg.h"
#include "store/status.h"

namespace store {

// Creates or migrates the schema (store/postgres/schema_sql.h), one node at
// a time, and only when the database's version is behind: DDL takes ACCESS
// EXCLUSIVE on `containers` even when it has nothing to do, and waiting for
// it behind any long transaction (a pg_dump, an operator's open psql) would
// queue every statement of every node behind this one. A migration that
// cannot have its locks within a bound gives up and tries again, so the rest
// of the fleet is never held for longer than that. InvalidArgument for a
// schema newer than this binary knows; Busy when the locks never came.
Status MigrateSchema(PgConn* conn);

}  // namespace store

#endif  // EDGEALLOC_STORE_POSTGRES_SCHEMA_H_
