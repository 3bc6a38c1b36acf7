#ifndef EDGEALLOC_STORE_SQLITE_RELEASE_H_
#define EDGEALLOC_STORE_SQLITE_RELEASE_H_

#include <cstdint>
#include <string>

#include "store/sqlite/db.h"
#include "store/status.h"
#include "store/types.h"

namespace store {

// A release, run by the writer inside its group's transaction: the
// compare-and-swap on (session_id, token) of sql::kRelease (which deletes
// the session's row), its slot given back (sql::kFreeSlot), and the
// session's history row (sql::kKeepEndedSession).
// *released: whether the compare-and-swap ended the session (it is then in
// session_history too); if not, nothing was written and the caller explains
// why. The three writes are one job without a savepoint: if the slot or
// the history row cannot be written after the release was, this returns HalfWritten
// (store/status.h), which fails the whole group, so that neither write is
// committed without the other.
Status ReleaseInTransaction(Db* db, const Caller& caller, const std::string& session_id,
                            int64_t token, int64_t now_ms, bool* released);

// The lease reaper's sweep (in a transaction of its own): at most `limit`
// sessions whose lease ended by now_ms, oldest first, each ended as a
// release ends one (its slot freed, its history row kept, reason
// `expired`, ended at its lease's end). *ended: how many.
Status EndExpiredSessions(Db* db, int64_t now_ms, int64_t limit, int64_t* ended);

// Binds ?1 .. ?4 of a session's compare-and-swap (sql::kRelease, sql::kRenew):
// the session, the token, the caller's tenant (NULL for an admin, who may
// touch any tenant's) and now.
void BindSessionCas(Statement* cas, const std::string& session_id, int64_t token,
                    const Caller& caller, int64_t now_ms);

}  // namespace store

#endif  // EDGEALLOC_STORE_SQLITE_RELEASE_H_
