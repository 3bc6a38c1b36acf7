#ifndef EDGEALLOC_SERVER_AGENT_RETRY_DELAY_H_
#define EDGEALLOC_SERVER_AGENT_RETRY_DELAY_H_

#include <cstdint>
#include <optional>

namespace server {

// How long the agent waits before it tries again after `failures` failed
// requests in a row (1 for the first). The server's Retry-After, when given,
// is honoured, plus up to a quarter more (so that the agents a 503 sent away
// together do not return together). Else 250 ms doubling each failure, never
// longer than the heartbeat interval (a retry must not cost the container
// its liveness), less up to a fifth of it. `unit` in [0, 1) draws the jitter.
int64_t RetryDelayMs(int failures, std::optional<int64_t> retry_after_s, int64_t interval_ms,
                     double unit);

// A draw in [0, 1) for RetryDelayMs.
double JitterUnit();

}  // namespace server

#endif  // EDGEALLOC_SERVER_AGENT_RETRY_DELAY_H_
