#ifndef EDGEALLOC_STORE_SESSION_ID_H_
#define EDGEALLOC_STORE_SESSION_ID_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "store/status.h"

namespace store {

// Session ids, as every engine makes them: "s_", the wall clock's ms in
// twelve hex digits, the partition in two, then 128 bits from the kernel's
// CSPRNG in hex. The time keeps ids in the order they were made (the indexes
// on them append; lists in id order run oldest first); the partition tells a
// session call where to look without asking every one; the bits make the id
// a handle nobody guesses (a seeded PRNG gives its later outputs away from a
// few ids).
inline constexpr int kTimeDigits = 12;
inline constexpr size_t kRandomBytes = 16;
inline constexpr size_t kSessionIdLength = 2 + kTimeDigits + 2 + 2 * kRandomBytes;
// The ids of a binary before the time came first: "s_", partition, 128 bits.
inline constexpr size_t kOldSessionIdLength = 2 + 2 + 2 * kRandomBytes;
// A new id for partition `shard` into *id, or IOError (and *id untouched) if the kernel
// has no random bytes to give: never a weaker id instead.
Status NewSessionId(int shard, std::string* id);
// The partition of a session id we made (either layout), for `shards`
// partitions; -1 for any other string.
int ShardOfSessionId(std::string_view id, int shards);

}  // namespace store

#endif  // EDGEALLOC_STORE_SESSION_ID_H_
