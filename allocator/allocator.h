#ifndef EDGEALLOC_ALLOCATOR_ALLOCATOR_H_
#define EDGEALLOC_ALLOCATOR_ALLOCATOR_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "allocator/types.h"
#include "base/mutex.h"
#include "store/status.h"
#include "store/shard.h"
#include "store/shard_map.h"

namespace allocator {

struct AllocatorOptions {
  int candidates = 5;                     // --candidates K
  int64_t default_lease_ms = 60000;       // --lease-ms
  int64_t max_lease_ms = 3600000;         // --max-lease-ms
  int64_t dead_after_ms = 30000;          // --dead-after-ms: older heartbeat = not healthy
  int64_t max_sessions_per_tenant = -1;   // --max-sessions-per-tenant; -1: unlimited
  int reaper_interval_ms = 100;           // how often expired leases are swept
  int reaper_batch_rows = 256;            // rows one sweep transaction frees at most
};

// Fills buf[0, n) with bytes from the kernel's CSPRNG, getrandom(2), going
// on after a short read or EINTR. Returns Ok, or IOError naming the error if
// the kernel has none (ENOSYS) or refuses; never falls back to a weaker
// generator. Safe from any thread.
store::Status KernelRandomBytes(void* buf, size_t n);

// Counters, read from any thread (metrics, benches).
struct AllocatorStats {
  std::atomic<uint64_t> claims_ok{0}, claims_replayed{0}, claims_no_capacity{0},
      claims_quota{0}, claims_error{0}, releases{0}, renewals{0}, stale_tokens{0},
      lease_expiries{0};
};

// The Allocator owns the claim path (DESIGN.md): claim, release, renew and
// exact session reads, and the lease reaper. Each claim is one
// `WITH candidate_pool ... UPDATE ... RETURNING` statement run by the writer
// of the shard that owns the region; release and renew are compare-and-swap
// on (session_id, token). It is safe to call from any thread; results come
// back through callbacks on writer threads, after the commit. It does not own
// the shards, which must outlive it; stop the shards' writers before the
// Allocator is destroyed, since a queued job points back at it.
class Allocator {
 public:
  Allocator(std::vector<store::Shard*> shards, store::ShardMap map, AllocatorOptions options);
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;
  ~Allocator();

  // Starts and stops the lease reaper thread.
  void Start();
  void Stop();

  // Claims one container for `req`: its region, then each fallback region in
  // order, one atomic claim per region. Calls `done` with kOk (a new session),
  // kReplayed (the live session of the same tenant and idempotency key),
  // kNoCapacity, kQuotaExceeded, kOverloaded or kError.
  // REQUIRES: req.lease_ms is 0 or in [1, max_lease_ms]; fields validated.
  void Claim(ClaimRequest req, SessionCallback done);

  // Releases the session if `token` is its current one and its lease runs:
  // the container becomes available (draining if a drain was asked, dead if
  // it reported itself dead). kOk, kStaleToken, kNotFound (unknown, already
  // released, or its lease is over: the reaper frees it), kForbidden (another
  // tenant's), kOverloaded or kError. A kOk result carries the session id
  // only (the release writes without RETURNING; see sql::kRelease).
  void Release(const Caller& caller, std::string session_id, int64_t token, SessionCallback done);

  // Extends the lease to now + lease_ms (0: the default) if `token` is
  // current. kOk with the session, or as Release.
  void Renew(const Caller& caller, std::string session_id, int64_t token, int64_t lease_ms,
             SessionCallback done);

  // The session as it is committed now, read from SQLite (exact, not the
  // mirror), on the calling thread. kOk, kNotFound (also when its lease is
  // over), kForbidden or kError.
  SessionResult GetSession(const Caller& caller, std::string_view session_id);

  // Frees expired leases of every shard now, one bounded sweep each; returns
  // how many were freed. The reaper thread calls this; tests may too.
  int64_t ReapExpiredLeases();

  const AllocatorStats& stats() const { return stats_; }
  const AllocatorOptions& options() const { return options_; }

 private:
  struct ClaimAttempt;
  class ClaimJob;
  class SessionCasJob;
  void RunClaim(std::shared_ptr<ClaimAttempt> attempt, size_t region_index);
  // Answers a claim that failed before its job ran (storage trouble while
  // reading other shards, no random bytes), counting it an error.
  void FailClaim(ClaimAttempt& attempt, Outcome outcome, std::string message);
  enum class CasKind { kRelease, kRenew };
  // Release or renew: one compare-and-swap job on the session's shard.
  void RunSessionCas(CasKind kind, const Caller& caller, std::string session_id, int64_t token,
                     int64_t lease_ms, SessionCallback done);
  // A new session id for `shard` into *id: "s_", the shard in two hex digits,
  // 128 bits from KernelRandomBytes. Returns its error, and *id unset, if
  // there are no random bytes to be had.
  store::Status NewSessionId(int shard, std::string* id);
  // The shard that holds a session, from its id; -1 for an id we never made.
  int ShardOfSession(std::string_view session_id) const;
  void ReaperLoop();

  std::vector<store::Shard*> shards_;
  store::ShardMap map_;
  AllocatorOptions options_;
  AllocatorStats stats_;

  base::Mutex reaper_mu_;
  base::CondVar reaper_cv_;
  bool reaper_stop_ GUARDED_BY(reaper_mu_) = false;
  std::thread reaper_;
};

}  // namespace allocator

#endif  // EDGEALLOC_ALLOCATOR_ALLOCATOR_H_
