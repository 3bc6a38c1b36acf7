#ifndef EDGEALLOC_SERVER_AGENT_AGENT_H_
#define EDGEALLOC_SERVER_AGENT_AGENT_H_

#include "server/agent/agent_config.h"

namespace server {

// `edgealloc agent`: a container's sidecar (docs/agent.md). Registers the
// container if asked, heartbeats every cfg.interval_ms with the state its
// health check gives, runs cfg.on_drain when an operator drains it, and at
// SIGTERM or SIGINT reports `draining` and returns once the container is not
// picked or cfg.drain_timeout_ms has passed. Returns the exit code: 0 after
// a signal, 2 if the registration is refused (a wrong key or body).
// Blocks SIGTERM and SIGINT in the calling thread: call it from main.
int RunAgent(const AgentConfig& cfg);

}  // namespace server

#endif  // EDGEALLOC_SERVER_AGENT_AGENT_H_
