#include "server/service_options.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <string>

#include "base/random.h"
#include "server/http/log.h"

namespace server {

store::StorageOptions StorageOptionsOf(const ServeConfig& config) {
  store::StorageOptions options;
  options.program = "edgealloc serve";
  options.warn = [](const std::string& message) { LogWarn("edgealloc: " + message); };
  options.db = config.db;
  options.shards = config.shards;
  options.pg_writers = config.pg_writers;
  options.sync = config.sync;
  options.policy.candidates = config.candidates;
  options.policy.placement = config.placement;
  options.policy.dead_after_ms = config.dead_after_ms;
  options.policy.max_sessions_per_tenant = config.max_sessions_per_tenant;
  return options;
}

std::string DescribeDeafness(const batcher::Hearing::Span& span, int64_t dead_after_ms) {
  char line[512];
  const char* why = "";
  switch (span.cause) {
    case batcher::Hearing::Cause::kPause: why = "the process did not run: "; break;
    case batcher::Hearing::Cause::kIoStall: why = "the io loop was late: "; break;
    case batcher::Hearing::Cause::kWriteFailing: why = "heartbeats could not be written: "; break;
    case batcher::Hearing::Cause::kRefused: why = "heartbeats were refused: "; break;
  }
  std::snprintf(line, sizeof line,
                "edgealloc: hearing: could not hear for %.1f s (%s, %s%s); no container is "
                "judged silent before %.1f s of hearing again",
                static_cast<double>(span.deaf_ms) / 1e3, batcher::Hearing::CauseName(span.cause),
                why, span.source.c_str(), static_cast<double>(dead_after_ms) / 1e3);
  return line;
}

batcher::BatcherOptions BatcherOptionsOf(const ServeConfig& config) {
  batcher::BatcherOptions options;
  options.batch_max = config.batch_max;
  options.batch_wait_ms =
      static_cast<int>(std::min<int64_t>(config.batch_wait_ms, std::numeric_limits<int>::max()));
  options.queue_capacity = config.queue_capacity;
  options.dead_after_ms = config.dead_after_ms;
  options.deaf_gap_ms = config.deaf_gap_ms;
  options.mass_silence_fraction = static_cast<double>(config.mass_silence_percent) / 100.0;
  options.mass_silence_grace_ms = config.mass_silence_grace_ms;
  options.on_mass_silence = [](const std::string& line) { LogWarn("edgealloc: " + line); };
  // Deafness is news an operator must see too: the reaper held its sweeps.
  options.on_deaf = [dead_after_ms = config.dead_after_ms](const batcher::Hearing::Span& span) {
    LogWarn(DescribeDeafness(span, dead_after_ms));
  };
  // A container's death is news an operator must see (docs/heartbeats-capacity-metrics.md).
  options.on_deaths = [](const std::string& line) { LogWarn("edgealloc: " + line); };
  return options;
}

std::string NewNodeId() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') std::snprintf(host, sizeof(host), "node");
  unsigned char bits[4] = {};
  std::string error;
  (void)base::KernelRandomBytes(bits, sizeof(bits), &error);  // checked at start
  char suffix[16];
  std::snprintf(suffix, sizeof(suffix), "/%02x%02x%02x%02x", bits[0], bits[1], bits[2], bits[3]);
  return host + std::string(suffix);
}

allocator::AllocatorOptions AllocatorOptionsOf(const ServeConfig& config) {
  allocator::AllocatorOptions options;
  options.node_id = NewNodeId();
  options.claims_publish_ms = config.claims_publish_ms;
  options.default_lease_ms = config.default_lease_ms;
  options.max_lease_ms = config.max_lease_ms;
  options.max_waiters_per_pool = config.max_claim_waiters;
  options.max_waiters_per_tenant = config.max_claim_waiters_per_tenant;
  options.max_waiters_total = config.max_claim_waiters_total;
  options.session_history_ms = config.session_history_ms;
  options.session_history_max_rows = config.session_history_max_rows;
  options.event_retention_ms = config.event_retention_ms;
  options.history_prune_rows_per_s = config.history_prune_rows_per_s;
  options.backup_regions = config.backup_regions;
  options.max_heartbeat_lag_ms = config.max_heartbeat_lag_ms;
  return options;
}

WebhookDelivererOptions WebhookOptionsOf(const ServeConfig& config) {
  WebhookDelivererOptions options;
  options.lease_ms = config.webhook_lease_ms;
  options.backoff_cap_ms = config.webhook_backoff_cap_ms;
  options.post.response_timeout_ms = config.webhook_timeout_ms;
  return options;
}

store::Status RequireKernelRandom() {
  unsigned char probe[16];
  std::string error;
  if (!base::KernelRandomBytes(probe, sizeof(probe), &error)) {
    return store::Status::IOError("refusing to start: " + error);
  }
  return store::Status::Ok();
}

}  // namespace server
