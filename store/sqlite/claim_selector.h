#ifndef EDGEALLOC_STORE_SQLITE_CLAIM_SELECTOR_H_
#define EDGEALLOC_STORE_SQLITE_CLAIM_SELECTOR_H_

#include <string>
#include <vector>

#include "store/sqlite/db.h"
#include "store/status.h"
#include "store/types.h"

namespace store {

// The SQLite claim's selector (store/sqlite/selector_sql.h): which claim
// statement a request runs, its selector's parameters, and the read that
// tells no_match from no_capacity.

// The claim statement (store/sqlite/claim_sql.h) of the request's placement
// (`server`'s when it names none), for its selector's driving term if any.
const char* ClaimStatement(const ClaimRequest& req, Placement server);

// Binds ?12 to ?14 of a claim statement to `selector`; nothing when empty.
void BindSelector(Statement* q, const std::vector<SelectorTerm>& selector);

// *any: some container of the region and pool, whatever its status,
// matches `selector`. REQUIRES: !selector.empty().
Status AnySelectorMatch(Db* db, const std::string& region, const std::string& pool,
                        const std::vector<SelectorTerm>& selector, bool* any);

// After a claim's job in one shard ended in *outcome: whether the next
// shard's regions are tried (no_capacity or no_match there, and more_shards).
// A selector matched in one shard (*selector_matched, kept across them) is
// no_capacity in the end, never no_match.
bool TryNextShard(Outcome* outcome, bool more_shards, bool* selector_matched);

}  // namespace store

#endif  // EDGEALLOC_STORE_SQLITE_CLAIM_SELECTOR_H_
