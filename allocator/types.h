#ifndef EDGEALLOC_ALLOCATOR_TYPES_H_
#define EDGEALLOC_ALLOCATOR_TYPES_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace allocator {

// What came of an operation. Expected outcomes (no capacity, a stale token,
// a reached quota) are values here, not errors; server/ maps each to its
// HTTP status in one table.
enum class Outcome {
  kOk,
  kReplayed,       // an idempotent retry: the session that already exists
  kNoCapacity,     // no healthy available container fits
  kQuotaExceeded,  // the tenant holds its maximum of sessions
  kStaleToken,     // the session exists, the fencing token is not its current one
  kNotFound,       // no such session or container (or the session's lease is over)
  kForbidden,      // the session belongs to another tenant
  kConflict,       // contradicts the current state (e.g. removing a picked container)
  kOverloaded,     // the shard's write queue is full; nothing was done
  kError,          // storage failed; message says how
};

const char* OutcomeName(Outcome outcome);

// Who asks. An admin sees and touches every session; anyone else only the
// sessions of its own tenant.
struct Caller {
  std::string tenant = "default";
  bool admin = false;
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
};

struct SessionResult {
  Outcome outcome = Outcome::kError;
  Session session;      // set for kOk and kReplayed
  std::string message;  // for people: why, when not kOk
};

struct ClaimRequest {
  Caller caller;
  std::string region;
  std::string pool = "default";
  std::vector<std::string> fallback_regions;
  int64_t lease_ms = 0;         // 0: the server's default lease
  std::string idempotency_key;  // empty: none
};

// One container to register or update.
struct ContainerSpec {
  std::string id;
  std::string region;
  std::string pool = "default";
  int64_t latency_ms = 0;
  std::string data = "{}";  // JSON object text
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
  bool drain_requested = false;
  std::string data;
  std::optional<std::string> session_id;
};

struct ContainerResult {
  Outcome outcome = Outcome::kError;
  ContainerInfo container;  // for kOk from Get
  int64_t count = 0;        // containers written, for Register
  std::string message;
};

// Results are handed to callbacks on a writer thread, after the commit:
// a callback must only hand them on (post to an io executor, set a promise).
using SessionCallback = std::function<void(SessionResult)>;
using ContainerCallback = std::function<void(ContainerResult)>;

}  // namespace allocator

#endif  // EDGEALLOC_ALLOCATOR_TYPES_H_
