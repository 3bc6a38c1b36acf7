#ifndef EDGEALLOC_STORE_SQLITE_ROWS_H_
#define EDGEALLOC_STORE_SQLITE_ROWS_H_

#include <string>
#include <string_view>

#include "store/sqlite/db.h"
#include "store/types.h"

namespace store {

// Reads a session row, columns 0..5 in lifecycle_sql.h's order (id, region,
// pool, generation, lease_expires_at_ms, data), into *s; the session id is
// not among them and is left as it is.
void ReadSessionRow(const Statement& q, Session* s);

// Reads a kGetContainer row into *c.
void ReadContainerRow(const Statement& q, ContainerInfo* c);

// Session ids: "s_", the shard in two hex digits, 128 bits from the kernel's
// CSPRNG in hex. The shard tells a session call where to look without asking
// every file; the bits make the id a handle nobody guesses (a seeded PRNG
// gives its later outputs away from a few ids).
inline constexpr size_t kSessionIdLength = 2 + 2 + 32;
// A new id for `shard` into *id, or IOError (and *id untouched) if the kernel
// has no random bytes to give: never a weaker id instead.
Status NewSessionId(int shard, std::string* id);
// The shard of a session id we made, for a layout of `shards` shards; -1 for
// any other string.
int ShardOfSessionId(std::string_view id, int shards);

}  // namespace store

#endif  // EDGEALLOC_STORE_SQLITE_ROWS_H_
