#ifndef EDGEALLOC_SERVER_SERVICE_OPTIONS_H_
#define EDGEALLOC_SERVER_SERVICE_OPTIONS_H_

#include <cstdint>
#include <string>

#include "allocator/allocator.h"
#include "batcher/batcher.h"
#include "server/config.h"
#include "server/webhooks/webhook_deliverer.h"
#include "store/status.h"
#include "store/storage.h"

namespace server {

// What the Service (service.h) tells each of its parts, from the serve
// config: every flag that a part reads goes through here, and every line a
// part hands back for the operator goes to the log from here.

store::StorageOptions StorageOptionsOf(const ServeConfig& config);
batcher::BatcherOptions BatcherOptionsOf(const ServeConfig& config);
// With a new node id each call (NewNodeId).
allocator::AllocatorOptions AllocatorOptionsOf(const ServeConfig& config);
// The lease, timeout and backoff; the Service adds the node, the targets and
// the warnings.
WebhookDelivererOptions WebhookOptionsOf(const ServeConfig& config);

// One line a span of deafness, e.g. "edgealloc: hearing: could not hear for
// 5.2 s (pause: the watch beat 5.2 s late); no container is judged silent
// before 3.0 s of hearing again".
std::string DescribeDeafness(const batcher::Hearing::Span& span, int64_t dead_after_ms);

// This process's name among the nodes on its database (the fleet's claim
// counts, allocator/fleet_claims.h): the host, for people, and random bits,
// so that two nodes never share one, nor a restarted node its old one (whose
// counts then leave the fleet's sums after kFleetClaimWindowMs).
std::string NewNodeId();

// Session ids are bearer-like handles drawn from getrandom(2): without it the
// server does not start, rather than hand out guessable ids.
store::Status RequireKernelRandom();

}  // namespace server

#endif  // EDGEALLOC_SERVER_SERVICE_OPTIONS_H_
