#ifndef EDGEALLOC_STORE_SQLITE_ROWS_H_
#define EDGEALLOC_STORE_SQLITE_ROWS_H_

#include "store/sqlite/db.h"
#include "store/types.h"

namespace store {

// Reads a session row, columns 0..5 in lifecycle_sql.h's order (id, region,
// pool, generation, lease_expires_at_ms, data), into *s; the session id is
// not among them and is left as it is.
void ReadSessionRow(const Statement& q, Session* s);
// Binds `value`, or NULL when it is empty (a filter that matches anything).
void BindOrNull(Statement* q, int index, const std::string& value);

// Reads a kGetContainer row into *c.
void ReadContainerRow(const Statement& q, ContainerInfo* c);

}  // namespace store

#endif  // EDGEALLOC_STORE_SQLITE_ROWS_H_
