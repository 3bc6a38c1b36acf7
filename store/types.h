#ifndef EDGEALLOC_STORE_TYPES_H_
#define EDGEALLOC_STORE_TYPES_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "store/status.h"

namespace store {

// The vocabulary of the storage seam (store/storage.h): plain values that
// the parts above it (allocator/, batcher/, kvmirror/, server/) and every
// engine below it share. Nothing here knows an engine.

// A limit that is not set (a tenant quota, for one).
inline constexpr int64_t kUnlimited = -1;

// What came of an operation. Expected outcomes (no capacity, a stale token,
// a reached quota) are values here, not errors; server/ maps each to its
// HTTP status in one table.
enum class Outcome {
  kOk,
  kReplayed,       // an idempotent retry: the session that already exists
  kNoCapacity,     // no healthy available container fits
  kUnknownPool,    // no container of the pool is registered in any region the claim names
  kQuotaExceeded,  // the tenant holds its maximum of sessions
  kStaleToken,     // the session exists, the fencing token is not its current one
  kNotFound,       // no such session or container (or the session's lease is over)
  kForbidden,      // the session belongs to another tenant
  kSessionEnded,   // the session ended within the history window: SessionResult::end says how
  kConflict,       // contradicts the current state (e.g. removing a picked container)
  kNoMatch,        // the claim's selector matches no registered container of its pool
  kOverloaded,     // the shard's write queue is full; nothing was done
  kError,          // storage failed; message says how
};

const char* OutcomeName(Outcome outcome);

// The outcome of a storage error: kOverloaded for Busy (a full write queue,
// a lock held too long: retry), kError for anything else.
Outcome OutcomeOfError(const Status& s);

// Who asks. An admin sees and touches every session; anyone else only the
// sessions of its own tenant.
// A tenant's own limits, from its line of the keys file (`max_sessions=`,
// `claims_per_s=`, `max_waiters=`); kUnset takes the server-wide default.
struct TenantLimits {
  static constexpr int64_t kUnset = -2;
  int64_t max_sessions = kUnset;  // live sessions at once (kUnlimited: none)
  int64_t max_waiters = kUnset;   // claims waiting at once (wait_ms)
  double claims_per_s = 0;        // new claims a second on one node; 0: no limit
};

struct Caller {
  std::string tenant = "default";
  bool admin = false;
  TenantLimits limits;
  // Set by the allocator alone, when it releases the session it claimed for
  // a waiting client that went away: the session's end reason is
  // "abandoned", not "released".
  bool abandoning = false;
};

// A live session, as the claim reply and GET show it. `data` is the
// container's data as JSON object text, handed through unparsed.
struct Session {
  std::string session_id;
  std::string container_id;
  std::string region;
  std::string pool;
  int64_t token = 0;  // the container's generation: grows on every claim of it
  int64_t lease_expires_at_ms = 0;
  std::string data;
  std::string labels = "{}";  // the claim's labels, a JSON object's text
  std::string tenant;         // whose session it is (its claimer's tenant)
  int64_t slot = 0;           // which of its container's slots it holds (0 to slots - 1)
};

// How a session ended, as its history row keeps it for the history window
// (--session-history-ms). `reason` is one of kEndReasons.
struct SessionEnd {
  std::string reason;
  int64_t ended_at_ms = 0;
};

// Every end_reason, as the API and the statements spell them: released
// (by its tenant), released_by_admin (by an admin key of another tenant),
// expired (its lease ran out; ended_at_ms is the lease's end), container_dead
// (its container went silent or reported itself dead), container_deleted
// (its container's row was deleted), abandoned (claimed for a waiting
// client that went away, and released by the allocator).
inline constexpr const char* kEndReasons[] = {"released",       "released_by_admin",
                                              "expired",        "container_dead",
                                              "container_deleted", "abandoned"};

struct SessionResult {
  Outcome outcome = Outcome::kError;
  Session session;      // set for kOk and kReplayed; for kSessionEnded, as it was
  std::string message;  // for people: why, when not kOk
  SessionEnd end;       // set for kSessionEnded
  // kOverloaded by a bound on waiting claims (the Allocator's own words,
  // naming the bound, for the client), not by the storage (whose text may
  // name the database's host: for the log only).
  bool waiter_bound = false;
  // kNoCapacity after waiting: when a retry may succeed, from the pool's
  // recent pace and the claim's place (whole seconds; 0: the default 1 s).
  int64_t retry_after_s = 0;
  // A claim's session (kOk, kReplayed): which of its regions served it,
  // "home", "fallback" or "backup" (set by the Allocator); else empty.
  std::string served_by{};
};

// An ended session as the history keeps it (Storage::ListEndedSessions).
struct EndedSession {
  Session session;
  SessionEnd end;
};

// How a claim chooses among the containers that fit (API 1.3 `placement`):
// kFittest, among the K lowest-latency ones at random; kPacked, the one with
// the most used slots (fill one before opening another); kDistributed, the
// one with the fewest. kDefault: the server's --placement.
enum class Placement { kDefault, kFittest, kPacked, kDistributed };
// "fittest", "packed" or "distributed"; kDefault reads "fittest".
const char* PlacementName(Placement placement);
// The placement a name spells; false if it spells none.
bool ParsePlacement(std::string_view name, Placement* placement);

// The slots a container may have (API 1.3 `slots`), a session a slot.
inline constexpr int64_t kMinSlots = 1;
inline constexpr int64_t kMaxSlots = 1024;

// One key of a claim's selector (API 1.3 `selector`): the container's
// attribute `key` must have one of `values` (one value: exactly it).
struct SelectorTerm {
  std::string key;
  std::vector<std::string> values;
};

struct ClaimRequest {
  Caller caller;
  std::string region;
  std::string pool = "default";
  std::vector<std::string> fallback_regions;
  int64_t lease_ms = 0;         // 0: the server's default lease (the Allocator fills it in)
  std::string idempotency_key;  // empty: none
  std::string labels;           // a JSON object's text (validated); empty: none
  // How long the Allocator may wait for a container when none fits (API
  // 1.1 `wait_ms`); storage engines ignore it. 0: answer at once.
  int64_t wait_ms = 0;
  // Which free slot the claim takes (API 1.3 `placement`); kDefault: the
  // server's --placement.
  Placement placement = Placement::kDefault;
  // Only containers whose attributes match every term are candidates, in
  // key order (validated); empty: any container.
  std::vector<SelectorTerm> selector;
};

// Which sessions a list shows; an empty field matches any. label_key set:
// only sessions with that label and value.
struct SessionFilter {
  std::string tenant, region, pool;
  std::string label_key, label_value;
  // Not a filter: where a page ends by size. The storage stops reading rows
  // at the one that brings the page's rows to this many bytes of text
  // (store/list_page.h, ListRowBytes), and the next page starts after it.
  // 0: pages end by count alone.
  size_t page_budget_bytes = 0;
};

// Which containers a list shows; an empty field matches any.
struct ContainerFilter {
  std::string region, pool, status;
  // attribute_key set: only containers with that attribute and value.
  std::string attribute_key, attribute_value;
  size_t page_budget_bytes = 0;  // as SessionFilter's
};

// One container to register or update.
struct ContainerSpec {
  std::string id;
  std::string region;
  std::string pool = "default";
  int64_t latency_ms = 0;
  std::string data = "{}";  // JSON object text
  int64_t slots = 1;         // sessions it holds at once (kMinSlots to kMaxSlots)
  // Its attributes, a JSON object of strings (validated; keys sorted);
  // nullopt keeps what is stored (a new container: none).
  std::optional<std::string> attributes = std::nullopt;
};

// A container as GET /v1/containers/{id} shows it.
struct ContainerInfo {
  std::string id;
  std::string region;
  std::string pool;
  std::string status;  // available | picked | draining | dead
  int64_t latency_ms = 0;
  int64_t last_heartbeat_ms = 0;
  int64_t generation = 0;
  // An operator's drain (POST /v1/containers/{id}/drain): held until undrain
  // or delete, whatever the container reports.
  bool drain_requested = false;
  // The container's own `draining` report, until it reports `ready`.
  bool drain_reported = false;
  std::string data;
  // The holder's session, for a container of one slot that is picked.
  std::optional<std::string> session_id;
  int64_t slots = 1;       // sessions it may hold at once
  int64_t slots_used = 0;  // sessions it holds (more than slots after slots was lowered)
  std::string attributes = "{}";  // a JSON object of strings' text
};

struct ContainerResult {
  Outcome outcome = Outcome::kError;
  ContainerInfo container;  // for kOk from Get
  int64_t count = 0;        // containers written, for Register
  std::string message;
};

// The state a container reports about itself in a heartbeat; kNone for a
// plain heartbeat, which only says "alive" and never changes its status.
enum class ReportedState { kNone, kReady, kDraining, kDead };
// "ready", "draining" or "dead", as the API and the statements spell them;
// null for kNone.
const char* ReportedStateName(ReportedState state);

// One container's heartbeats of a batch, folded into one row (batcher/).
struct HeartbeatRow {
  std::string container_id;
  // This node's clock when it accepted the newest of the row's heartbeats:
  // the liveness stamp, and what decides whether the row comes too late for
  // a container judged dead meanwhile (store/report_counts_sql.h). SQLite
  // stores it as is (one node, one clock); PostgreSQL first maps it onto the
  // database's clock, the fleet's, with the offset the node measured.
  int64_t accepted_ms = 0;
  std::optional<int64_t> ts_ms;   // the container's clock: orders its reports only
  std::optional<double> load;
  ReportedState state = ReportedState::kNone;
  // The writer does not know the container's region: the write is to name
  // it (HeartbeatWriteResult::regions).
  bool learn_region = false;
};

// What writing a batch of heartbeat rows did.
struct HeartbeatWriteResult {
  uint64_t written = 0;         // rows whose liveness was written
  uint64_t stale = 0;           // of them, reports older than the stored one
  std::vector<size_t> unknown;  // indexes of rows whose container is not there
  // Indexes of rows not written because another transaction held their
  // container's row (PostgreSQL: an operator's open transaction, another
  // node's claim at that instant): the engine keeps them and writes them
  // with a later batch of the partition, or before its next silence sweep.
  std::vector<size_t> skipped;
  // (row index, region) of the rows whose container the write found and
  // whose region it names: at least those with learn_region (PostgreSQL
  // names every one: its write reads them anyway), a container's once.
  std::vector<std::pair<size_t, std::string>> regions;
};

// A container a sweep marked dead, and why: what the reaper logs and counts.
struct DeadContainer {
  std::string id, region, pool;
  int64_t silent_ms = 0;  // since its last stored heartbeat, at the sweep
  bool reported = false;  // it reported itself dead; else it fell silent
};

// What one sweep of silent or dead-reported containers did.
struct SilenceSweep {
  int64_t held_dead = 0;       // held containers that became dead, their sessions ended
  int64_t sessions_ended = 0;  // the sessions they held (several a container of several slots)
  int64_t marked_dead = 0;     // free (available or draining) containers that became dead
  // Every container of the two counts, held ones first (at most the sweep's
  // max_rows: read back from the sweep's own statements, never a scan).
  std::vector<DeadContainer> dead;
};

// A silence cutoff (SweepSilentContainers) before every stored heartbeat:
// no container is silent (the server has not heard long enough to judge).
inline constexpr int64_t kNothingSilent = 0;

// Containers of one pool silent at a cutoff (Storage::CountSilent).
struct PoolSilence {
  std::string region, pool;
  int64_t silent = 0;
};

// Pools under a mass silence (batcher/): most of them went silent at once,
// more likely the server's or the network's fault than the containers'. A
// held container of these pools is dead, and its session ended, only once
// its stored heartbeat is older than cutoff_ms (a longer grace); their free
// containers are dead as any other (a claim would not take them anyway).
struct HeldPools {
  std::vector<std::pair<std::string, std::string>> pools;  // (region, pool)
  int64_t cutoff_ms = kNothingSilent;
};

// A pool as a waiting claim sees it (Storage::ProbePools).
struct PoolProbe {
  std::string region, pool;
  bool registered = false;  // a container of it exists, whatever its state
  bool claimable = false;   // one is available and healthy: a claim may find it
};

// Claims of one region's pool that ended ok (a session) or no_capacity: a
// node's since it started (Storage::PublishClaimCounts), or the sum of the
// nodes' (Storage::ReadFleetClaimCounts). A publisher may use an empty
// region and pool for its totals over every pool.
struct PoolClaimTally {
  std::string region, pool;
  int64_t ok = 0;
  int64_t no_capacity = 0;
};

// A tenant's limits as one node applies them (Storage::PublishTenantLimits):
// a canonical text of its effective limits (the keys file's, else the
// server's defaults), equal on two nodes exactly when they enforce the same
// limits. tenant "": what the node applies to tenants its keys file does not
// name. Never a key.
struct TenantLimitsDigest {
  std::string node_id;  // empty in what a node publishes: its own
  std::string tenant;
  std::string digest;
};

// The fleet's claim counts: the sums over the nodes that published within
// the window, by region and pool, and how many nodes that is.
struct FleetClaimCounts {
  std::vector<PoolClaimTally> pools;  // in region, pool order
  int64_t nodes = 0;
};

// One line of the capacity counts: containers of a region and pool in a status.
struct CapacityCount {
  std::string region;
  std::string pool;
  std::string status;  // available | picked | draining | dead
  int64_t count = 0;
  int64_t drained = 0;  // of them, under an operator's drain (drain_requested)
  int64_t slots = 0;       // their slots, summed
  int64_t slots_used = 0;  // their sessions (may pass slots where slots were lowered)
};

// What a CapacityReader reads of a partition: its counts, and the ids of its
// containers under an operator's drain (the heartbeat reply names them).
struct CapacityRead {
  std::vector<CapacityCount> counts;
  std::vector<std::string> drained_ids;
};

// How durable a commit is. kFull: on disk when acknowledged. kNormal: the
// engine may lose the newest commits at a power loss (never corrupt the
// store), and with them fencing tokens it handed out.
enum class Sync { kFull, kNormal };

// Defaults that several parts and the server's flags share, written once.
inline constexpr int64_t kDefaultLeaseMs = 60000;       // a claim or renew that names none
inline constexpr int64_t kDefaultMaxLeaseMs = 3600000;  // the longest lease one may ask for
inline constexpr int64_t kDefaultDeadAfterMs = 30000;   // silent longer: dead

// Which claims may be made, fixed when the storage opens.
struct ClaimPolicy {
  int candidates = 5;                         // K: the pool a claim picks from at random
  int64_t dead_after_ms = kDefaultDeadAfterMs;  // an older heartbeat: not healthy
  int64_t max_sessions_per_tenant = kUnlimited;
  Placement placement = Placement::kFittest;  // a claim's that says none
};

// A SessionResult or ContainerResult that is not kOk, with its message.
template <typename Result>
Result Failed(Outcome outcome, std::string message) {
  Result r;
  r.outcome = outcome;
  r.message = std::move(message);
  return r;
}

// Results are handed to callbacks on a writer thread, after the commit:
// a callback must only hand them on (post to an io executor, set a promise).
using SessionCallback = std::function<void(SessionResult)>;
using ContainerCallback = std::function<void(ContainerResult)>;

}  // namespace store

#endif  // EDGEALLOC_STORE_TYPES_H_
