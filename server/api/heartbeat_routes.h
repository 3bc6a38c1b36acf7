#ifndef EDGEALLOC_SERVER_API_HEARTBEAT_ROUTES_H_
#define EDGEALLOC_SERVER_API_HEARTBEAT_ROUTES_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "batcher/batcher.h"
#include "kvmirror/mirror.h"
#include "server/api/heartbeat_budget.h"
#include "server/api/reader_pool.h"
#include "server/api/request_bodies.h"
#include "store/storage.h"
#include "server/http/router.h"

namespace server {

struct HeartbeatRoutesOptions {
  int64_t max_clock_skew_ms = kDefaultMaxClockSkewMs;
  // While any of its writers is failing (WriterStats::failing), heartbeats
  // are refused 503: this node cannot reach its database, and the others'
  // sweeps would mark its containers dead whatever it accepted. May be null.
  const store::Storage* storage = nullptr;
  // When set, Batcher::Submit runs on a reader thread, replying on `io`:
  // with more than one partition it asks the storage each item's partition
  // (Storage::PartitionOf), which may read the database.
  ReaderPool* readers = nullptr;
  boost::asio::any_io_executor io;
  // Where the reply's `drain` list comes from: the ids under an operator's
  // drain as of the mirror's snapshot (a lookup in memory; nothing is read
  // from the database on a heartbeat). Null: the list is always empty.
  const kvmirror::Mirror* mirror = nullptr;
  // Each key's heartbeat items a second; null: none.
  HeartbeatKeyBudget* budget = nullptr;
};

// HeartbeatRoutes is the HTTP face of the batcher: POST /v1/heartbeats (roles
// admin and container). It validates, hands the request to the Batcher and
// answers 202 {"accepted": N, "drain": [ids], "unknown": [ids]} before
// anything is written (N: the items the request carried, one container's
// folded at parse; `drain`: the reported ids an operator drained, as of the
// capacity mirror's snapshot, in request order, each once; `unknown`: the
// reported ids the batcher knows have no container, SubmitResult); 429 rate_limited on its
// headers while its key is past its budget (HeartbeatKeyBudget, which the
// request's items are taken from once read); 400 for a body
// ParseHeartbeats refuses, or one that carries more reports once folded
// than its key's scope names containers (ReportsCapOf); 403 forbidden,
// nothing taken, if a container key scoped to some ids (auth.h) names any
// other id; 503 overloaded
// (Retry-After) if a queue is full, 503 unavailable while the server is not
// ready (starting or stopping) or while a writer of the storage cannot
// write (the container's agent then sends it to another node). Safe from
// every io thread. The batcher, `ready` and what the options point to must
// outlive it.
class HeartbeatRoutes {
 public:
  HeartbeatRoutes(batcher::Batcher* batcher, const std::atomic<bool>* ready,
                  HeartbeatRoutesOptions options = {});

  // Adds POST /v1/heartbeats to `router`.
  void AddRoutes(Router* router);

 private:
  void Post(RouteRequest req, Reply reply);
  // Reads the body into *items and *sent (the items it carried), takes them
  // from the key's budget, checks them against the key's scope, and folds
  // one container's (batcher::CoalesceReports): the refusal, or nullopt.
  std::optional<Response> Read(const RouteRequest& req, std::vector<batcher::Heartbeat>* items,
                               size_t* sent);

  batcher::Batcher* batcher_;
  const std::atomic<bool>* ready_;
  HeartbeatRoutesOptions options_;
};

}  // namespace server

#endif  // EDGEALLOC_SERVER_API_HEARTBEAT_ROUTES_H_
