#include "server/capacity_flags.h"

#include "kvmirror/warm_buffer.h"
#include "server/cli_flags.h"

namespace server {

void AddMirrorFlags(CLI::App* serve, ServeConfig* s) {
  AddNumber(serve, "--mirror-refresh-ms", &s->mirror_refresh_ms, "capacity mirror refresh period",
            1, kBigFlagValue, "capacity mirror refresh period in ms");
  AddNumber(serve, "--history-interval-ms", &s->history_interval_ms,
            "capacity history (GET /v1/capacity/history, the dashboard's utilisation lines): one "
            "sample of every pool this often, the last 60 kept",
            100, 3600 * 1000, "capacity history sampling interval in ms");
  // At most a third of the window the fleet's sums count nodes in
  // (allocator::kFleetClaimWindowMs), so a live node never drops out of them.
  AddNumber(serve, "--claims-publish-ms", &s->claims_publish_ms,
            "this node's claim counts go to the database, and the fleet's are read back "
            "(GET /v1/capacity/claims, the dashboard's rates), this often",
            100, 10000, "claim counts publish period in ms");
  AddFlag(serve, "--warm-buffer", &s->warm_buffer,
          "free slots a pool should keep (GET /v1/pressure's recommended_buffer): N slots, or "
          "P% of its slots in use and free; POOL=N or REGION/POOL=N for one pool; repeatable, "
          "or comma-separated (default: 0)")
      ->delimiter(',')
      ->type_name("N|P%|[REGION/]POOL=N|P%")
      ->check(CLI::Validator([](std::string& v) { return kvmirror::WarmBuffers::Check(v); },
                             "", "WarmBuffer"));
}

}  // namespace server
