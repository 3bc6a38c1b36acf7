#ifndef EDGEALLOC_SERVER_API_SESSION_ROUTES_H_
#define EDGEALLOC_SERVER_API_SESSION_ROUTES_H_

#include <boost/asio/any_io_executor.hpp>

#include <cstdint>

#include "allocator/allocator.h"
#include "base/histogram.h"
#include "server/api/claim_rate_limiter.h"
#include "server/api/cursor_key.h"
#include "server/api/reader_pool.h"
#include "server/http/auth.h"
#include "server/http/router.h"
#include "store/types.h"

namespace server {

struct SessionRoutesOptions {
  int64_t max_lease_ms = store::kDefaultMaxLeaseMs;
  // Where POST /v1/sessions records how long each claim took, from the parsed
  // request to its reply being ready (edgealloc_claim_duration_seconds).
  // Claims refused before the allocator (400) are not observed. May be null;
  // must outlive the SessionRoutes.
  base::LatencyHistogram* claim_latency = nullptr;
  // Where the blocking reads (GET /v1/sessions/{id}, GET /v1/sessions, GET
  // /v1/limits) run, off the io threads. Required; must outlive the
  // SessionRoutes.
  ReaderPool* readers = nullptr;
  // Claims are submitted from a reader thread too (CallOffIo): set when the
  // storage reads before it submits one (SQLite with --shards > 1: the
  // idempotency key and the tenant's sessions in every shard file).
  bool claims_off_io = false;
  // The keys, for a tenant's own limits in GET /v1/limits (an admin naming
  // a tenant). May be null (open mode); must outlive the SessionRoutes.
  const KeyStore* keys = nullptr;
  // The tenants' claims_per_s buckets: a claim past its tenant's rate is 429
  // rate_limited before it reaches the allocator. May be null (no rates);
  // must outlive the SessionRoutes.
  ClaimRateLimiter* rate_limiter = nullptr;
  // Signs the list's cursors. Required; must outlive the SessionRoutes.
  const CursorKey* cursor_key = nullptr;
};

// SessionRoutes are the HTTP face of the allocator, the session routes of
// docs/api.md (tenant or admin keys):
//   POST   /v1/sessions             claim
//   GET    /v1/sessions             list (a tenant's own; an admin's all)
//   GET    /v1/sessions/{id}        read
//   POST   /v1/sessions/{id}/renew  renew
//   DELETE /v1/sessions/{id}        release (?token=N)
//   GET    /v1/limits               a tenant's limits and their use
// Safe from every io thread. Results that come back on a store writer thread
// are posted to `io` before any JSON is made, so writer threads only hand
// results on. The reads run on options.readers (ReaderPool), never on an io
// thread, and reply through `io` too; 503 overloaded at once when its queue
// is full. The allocator must outlive it.
class SessionRoutes {
 public:
  SessionRoutes(allocator::Allocator* allocator, boost::asio::any_io_executor io,
                SessionRoutesOptions options);

  // Adds the session routes to `router`.
  void AddRoutes(Router* router);

 private:
  void Claim(RouteRequest req, Reply reply);
  void GetSession(RouteRequest req, Reply reply);
  void ListSessions(RouteRequest req, Reply reply);
  void Renew(RouteRequest req, Reply reply);
  void Limits(RouteRequest req, Reply reply);
  void Release(RouteRequest req, Reply reply);

  allocator::Allocator* allocator_;
  boost::asio::any_io_executor io_;
  SessionRoutesOptions options_;
};

// The caller the allocator sees for an authenticated principal.
store::Caller CallerOf(const Principal& who);

}  // namespace server

#endif  // EDGEALLOC_SERVER_API_SESSION_ROUTES_H_
