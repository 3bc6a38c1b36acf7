#ifndef EDGEALLOC_SERVER_AGENT_AGENT_CONFIG_H_
#define EDGEALLOC_SERVER_AGENT_AGENT_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>

#include "server/http/log.h"

namespace server {

// What `edgealloc agent` is told (docs/agent.md has every flag).
struct AgentConfig {
  std::string server = "http://127.0.0.1:8080";
  std::string key;  // --key or EDGEALLOC_KEY: a container or admin key
  std::string id;   // the container this agent speaks for
  // --register: registered (POST /v1/containers, an admin key) before the
  // first heartbeat.
  bool register_container = false;
  std::string region;
  std::string pool = "default";
  std::optional<int64_t> latency_ms;
  std::string data;  // a JSON object, or empty
  std::optional<int64_t> slots;  // sessions it holds at once; nullopt: the server's default
  std::string attributes;        // a JSON object of strings, or empty
  // Well under the server's --dead-after-ms (30000 by default), so that a
  // lost heartbeat or two never makes the container dead.
  int64_t interval_ms = 5000;
  std::string health_url;  // 2xx: ready
  std::string health_cmd;  // exit 0: ready
  int64_t health_timeout_ms = 2000;
  std::string on_drain;  // run once when an operator drains the container
  int64_t drain_timeout_ms = 30000;  // at SIGTERM, the longest wait for release
  LogOptions log;
};

}  // namespace server

#endif  // EDGEALLOC_SERVER_AGENT_AGENT_CONFIG_H_
