#ifndef EDGEALLOC_SERVER_CONFIG_H_
#define EDGEALLOC_SERVER_CONFIG_H_

#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "server/agent/agent_config.h"
#include "server/client_command.h"
#include "server/http/log.h"
#include "server/listen_address.h"
#include "store/types.h"

namespace server {

// Everything `edgealloc serve` is told, by flag or environment (docs/api.md
// "Running"). A plain value; ParseCommandLine fills and validates it.
struct ServeConfig {
  std::string db = "edgealloc.db";
  std::string listen = "127.0.0.1:8080";
  std::string host = "127.0.0.1";  // from listen
  uint16_t port = 8080;            // from listen; 0 picks a free port (tests)
  std::string keys_file;           // empty: open mode, loopback only
  // Signs list cursors; empty: a random key of this process.
  std::string cursor_secret_file;
  int threads = 1;                 // default: hardware cores less one, at least 1
  int reader_threads = 4;          // threads for the routes' blocking database reads
  int shards = 1;
  int pg_writers = 4;
  LogOptions log;  // --log-level, --log-format, --access-log
  store::Sync sync = store::Sync::kFull;
  int64_t default_lease_ms = store::kDefaultLeaseMs;  // --lease-ms: a claim or renew that names none
  int64_t max_lease_ms = store::kDefaultMaxLeaseMs;
  int max_claim_waiters = 1000;    // claims waiting (wait_ms) for one pool at once
  int64_t max_claim_waiters_per_tenant = 1000;  // one tenant's, unless its keys line says
  int64_t max_claim_waiters_total = 10000;      // every tenant's together
  int64_t session_history_ms = 86400000;
  int64_t event_retention_ms = 3600000;          // GET /v1/events reads back this far
  int64_t webhook_lease_ms = 30000;         // a dead node's webhook deliveries move after this
  int64_t webhook_timeout_ms = 10000;       // a receiver's answer to a batch, at most
  int64_t webhook_backoff_cap_ms = 30000;   // retries of a failed batch, at most this apart
  int64_t session_history_max_rows = 1000000;    // ended sessions kept at most
  int64_t history_prune_rows_per_s = 100000;     // ended sessions pruned a second at most
  int64_t dead_after_ms = store::kDefaultDeadAfterMs;
  int64_t deaf_gap_ms = 0;         // a beat this late is deafness; 0: min(1000, dead_after / 3)
  int64_t mass_silence_percent = 50;        // more of a pool silent at once: a mass silence
  int64_t mass_silence_grace_ms = 300000;   // a mass silence's sessions end after this silence
  int batch_max = 100;             // heartbeat rows a transaction (batcher)
  int64_t batch_wait_ms = 10;      // longest a heartbeat waits for a batch
  int64_t queue_capacity = 100000; // heartbeats queued a shard before 503
  // Heartbeat items a key may send a second on this node; 0: no budget.
  int64_t heartbeat_items_per_key_per_s = 20000;
  int64_t mirror_refresh_ms = 1000;  // capacity mirror refresh period
  int64_t history_interval_ms = 10000;  // a capacity history sample this often
  int64_t claims_publish_ms = 3000;     // the fleet's claim counts, published and read this often
  // --warm-buffer: "N", "P%", "POOL=N|P%" or "REGION/POOL=N|P%" (kvmirror::WarmBuffers).
  std::vector<std::string> warm_buffer;
  int64_t max_sessions_per_tenant = store::kUnlimited;  // the flag's 0 is kUnlimited too
  int64_t max_body_bytes = 1 << 20;
  // A request not answered this long after it was read (more by a claim's
  // wait_ms) is answered 503 unavailable in its handler's place.
  int64_t request_deadline_ms = 30000;
  int candidates = 5;
  store::Placement placement = store::Placement::kFittest;  // --placement
  int64_t max_clock_skew_ms = 60000;  // a heartbeat's ts_ms at most this far ahead
  // --backup-region REGION=BACKUP as given, and the map FinishServe makes of
  // them (region -> its backup, no cycle); --max-heartbeat-lag-ms.
  std::vector<std::string> backup_region_pairs;
  std::map<std::string, std::string> backup_regions;
  int64_t max_heartbeat_lag_ms = 2000;
  bool demo = false;
};

// What `edgealloc register` is told.
struct RegisterConfig {
  std::string db = "edgealloc.db";
  int shards = 1;
  std::string file;  // "-": stdin
};

struct Command {
  enum class Kind { kServe, kRegister, kAgent, kClient, kExit };
  Kind kind = Kind::kExit;
  int exit_code = 0;  // for kExit: 0 (--help), 2 (usage error)
  ServeConfig serve;
  RegisterConfig reg;
  AgentConfig agent;
  ClientCommand client;
};

// Parses `edgealloc serve|register|agent|sessions|containers [options]`, flags first, then
// EDGEALLOC_* environment variables, then the --config file (config_file.h,
// serve only), then defaults. Help goes to `out`; a usage error
// goes to `err` in words a newcomer understands and gives kExit with code 2.
// Also refuses, as a usage error, to serve without --keys on an address that
// is not loopback.
Command ParseCommandLine(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace server

#endif  // EDGEALLOC_SERVER_CONFIG_H_
