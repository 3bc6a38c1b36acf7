#ifndef EDGEALLOC_STORE_SQLITE_CLAIM_SELECTOR_H_
#define EDGEALLOC_STORE_SQLITE_CLAIM_SELECTOR_H_

#include <cstdint>
#include <functional>
#include <map>
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
// (`server`'s when it names none), and of its selector's shape if any (how
// many terms, which of them have one value, with the term at `driving`
// driving the walk): a text kept for the process, the same address for the
// same shape.
const char* ClaimStatement(const ClaimRequest& req, Placement server, size_t driving);

// The open-rows form of a selector's fittest claim: the K fittest of the
// driving term's open attribute rows that match every other term are its
// candidates on their word, and only the one it picks is checked against
// its container (region, pool, available, heard from), where
// ClaimStatement's checks each of the K, two lookups each. An open row may
// be wrong for a while: a claim without a selector leaves its container's
// rows open (store/sqlite/schema.cc, version 18), and a container unheard
// of stays available. nullptr where there is none: no selector, or a
// placement that orders by the container's own columns.
const char* OpenRowsClaimStatement(const ClaimRequest& req, Placement server, size_t driving);

// Runs a claim in one region: OpenRowsClaimStatement's where there is one,
// then, if that took nothing (its pick was not claimable, or nothing was:
// no candidate, the quota, the key), ClaimStatement's, which checks every
// candidate and names the open rows it passed (Took::passed). The first
// never takes what the second would refuse; the second is what a claim
// that finds nothing costs, and what keeps a wrong open row from failing
// a claim. `bind` binds ?1 to ?7 (claim_sql.h); *claimed: a slot was taken,
// db->took() says which; *rechecked: the second ran after the first.
Status RunClaimStatements(Db* db, const ClaimRequest& req, Placement server, size_t driving,
                          const std::function<void(Statement*)>& bind, bool* claimed,
                          bool* rechecked);

// Binds a claim statement's selector parameters (?12, ?13: the term at
// `driving`; two a term from ?15: the others in order) to `selector`;
// nothing when empty.
void BindSelector(Statement* q, const std::vector<SelectorTerm>& selector, size_t driving);

// Which term of a selector drives a claim's walk in one shard file: the one
// whose values have the fewest open attribute rows (a walk of fewer rows to
// find K that match every term: in the bench's pool, 20% more claims a
// second than the term store::DrivingTerm picks, docs/performance.md), else
// DrivingTerm's. Counts are read from the file capped (kCountCap) and kept
// for a second: a stale count only costs speed. One a shard, used on its
// writer thread only; a claim reads at most kReadsAClaim counts, so a
// selector of many made-up values costs the writer a bounded time.
class DrivingCounts {
 public:
  static constexpr int64_t kCountCap = 1024;
  static constexpr int64_t kKeptMs = 1000;
  static constexpr int kReadsAClaim = 4;
  static constexpr size_t kMaxKept = 4096;

  // *driving: the index in `selector` of the term that drives a claim in
  // `region` and `pool` of `db`'s file at `now_ms`. REQUIRES: !selector.empty().
  Status Choose(Db* db, const std::string& region, const std::string& pool,
                const std::vector<SelectorTerm>& selector, int64_t now_ms, size_t* driving);

 private:
  struct Count {
    int64_t rows = 0;
    int64_t read_at_ms = 0;
  };
  std::map<std::string, Count> counts_;  // region, pool, key, value: each ended by '\0'
};

// *any: some container of the region and pool, whatever its status,
// matches `selector`. REQUIRES: !selector.empty().
Status AnySelectorMatch(Db* db, const std::string& region, const std::string& pool,
                        const std::vector<SelectorTerm>& selector, bool* any);

// After a statement that may have changed container `id`'s status (a
// report, a drain or undrain, a death): its attribute rows' `open` made
// right (selector_sql.h, kSyncAttributesOpen), in the same transaction.
Status SyncAttributesOpen(Db* db, const std::string& id);

// After a claim's job in one shard ended in *outcome: whether the next
// shard's regions are tried (no_capacity or no_match there, and more_shards).
// A selector matched in one shard (*selector_matched, kept across them) is
// no_capacity in the end, never no_match.
bool TryNextShard(Outcome* outcome, bool more_shards, bool* selector_matched);

}  // namespace store

#endif  // EDGEALLOC_STORE_SQLITE_CLAIM_SELECTOR_H_
