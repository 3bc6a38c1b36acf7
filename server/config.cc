#include "server/config.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <ostream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/build_info.h"
#include "server/agent_command.h"
#include "server/backup_region_flags.h"
#include "server/capacity_flags.h"
#include "server/cli_flags.h"
#include "server/client_command.h"
#include "server/api/reader_pool.h"
#include "server/config_file.h"
#include "server/usage_hints.h"
#include "store/storage.h"

namespace server {
namespace {

constexpr int kMaxPgWriters = 64;
constexpr int kMaxThreads = 1024;
constexpr int kMaxReaderThreads = 256;

constexpr int64_t kBig = kBigFlagValue;

// The serve flags read as words, turned into ServeConfig's values after
// parsing (FinishServe).
struct WordFlags {
  std::string sync = "full";
  std::string log_level = "info";
  std::string log_format = "text";
  std::string placement = "fittest";
};

// Where the API is served, and by how many threads.
void AddServingFlags(CLI::App* serve, ServeConfig* s) {
  AddFlag(serve, "--db", &s->db,
          "SQLite database file, or a PostgreSQL URI (postgresql://...); created and migrated")
      ->capture_default_str();
  AddFlag(serve, "--listen", &s->listen, "HOST:PORT to serve on")->capture_default_str();
  AddFlag(serve, "--keys", &s->keys_file,
          "bearer keys file, 'key role [tenant]' a line ('key container [ids]', ids an exact id "
          "or a prefix ending in '*'); without it only loopback is allowed")
      ->check(CLI::ExistingFile);
  AddFlag(serve, "--cursor-secret-file", &s->cursor_secret_file,
          "file of at least 32 bytes that list cursors are signed with; nodes given the same "
          "file accept each other's cursors (default: a random key of this process: a cursor "
          "works only on the node, and in the run, that made it)");
  AddNumber(serve, "--threads", &s->threads,
            "HTTP io threads (default: the number of cores less one, at least 1)", 1, kMaxThreads,
            "HTTP io threads")
      ->default_str("");  // the machine's cores decide it: the help says how
  AddNumber(serve, "--reader-threads", &s->reader_threads,
            "threads for the database reads of the API (a session, a list, limits, a container), "
            "kept off the HTTP io threads; one tenant's reads run on at most half of them at once; "
            "each may have " +
                std::to_string(kReaderQueuePerThread) +
                " reads waiting, more are 503 overloaded, and one tenant's reads may fill a "
                "quarter of that",
            1, kMaxReaderThreads, "reader threads");
}

// The database files or connections, and how commits are made durable.
void AddStorageFlags(CLI::App* serve, ServeConfig* s, WordFlags* words) {
  AddNumber(serve, "--shards", &s->shards, "database files the pool is split over, by region", 1,
            kMaxShards, "database files the pool is split over");
  AddNumber(serve, "--pg-writers", &s->pg_writers,
            "PostgreSQL: writer connections of this node; heartbeats are spread over them by "
            "container, sessions go through the first",
            1, kMaxPgWriters, "PostgreSQL writer connections");
  AddWord(serve, "--sync", &words->sync,
          "SQLite synchronous for the claim path: full (fsync each commit before it is answered) "
          "or normal (no fsync per commit: a power loss can roll back answered claims, releases "
          "and registrations, and with them fencing tokens, which may then be handed out again)",
          {"full", "normal"});
}

// Leases, and the claims that may wait for a container.
void AddSessionFlags(CLI::App* serve, ServeConfig* s) {
  AddNumber(serve, "--lease-ms", &s->default_lease_ms, "session lease when a claim names none", 1,
            kBig, "default session lease in ms");
  AddNumber(serve, "--max-lease-ms", &s->max_lease_ms, "longest lease a claim or renew may ask for",
            1, kBig, "longest session lease in ms");
  AddNumber(serve, "--max-claim-waiters", &s->max_claim_waiters,
            "claims that may wait (wait_ms) for one pool at once; more are 503 overloaded", 1,
            1000000, "claims waiting a pool");
  AddNumber(serve, "--max-claim-waiters-per-tenant", &s->max_claim_waiters_per_tenant,
            "claims one tenant may have waiting (wait_ms) at once, every pool; a tenant's "
            "max_waiters in the keys file wins; more are 503 overloaded",
            0, 1000000, "claims waiting for one tenant");
  AddNumber(serve, "--max-claim-waiters-total", &s->max_claim_waiters_total,
            "claims that may wait (wait_ms) at once on this node, every tenant and pool; more are "
            "503 overloaded",
            0, 10000000, "claims waiting in all");
  AddNumber(serve, "--session-history-ms", &s->session_history_ms,
            "how long after a session ends its GET, renew and release answer 410 session_ended "
            "with its end_reason (then 404)",
            0, kBig, "session history in ms");
  AddNumber(serve, "--event-retention-ms", &s->event_retention_ms,
            "how long the event log keeps an event (GET /v1/events); a cursor older is 410 "
            "events_expired",
            0, kBig, "event retention in ms");
  AddNumber(serve, "--webhook-lease-ms", &s->webhook_lease_ms,
            "a node delivering a tenant's webhooks holds that tenant for this long, renewed as "
            "it delivers: another node takes a dead one's tenants after it",
            1000, kBig, "webhook lease in ms");
  AddNumber(serve, "--webhook-timeout-ms", &s->webhook_timeout_ms,
            "a webhook receiver that has not answered a batch this long after it was sent has "
            "failed it (retried)",
            100, 600000, "webhook answer timeout in ms");
  AddNumber(serve, "--webhook-backoff-cap-ms", &s->webhook_backoff_cap_ms,
            "a failed webhook batch is retried after 250 ms, doubling up to this", 250, kBig,
            "webhook retry backoff cap in ms");
  AddNumber(serve, "--session-history-max-rows", &s->session_history_max_rows,
            "ended sessions kept at most (the oldest are pruned first)", 0, kBig,
            "ended sessions kept");
  AddNumber(serve, "--history-prune-rows-per-s", &s->history_prune_rows_per_s,
            "ended sessions pruned a second at most (each SQLite shard; PostgreSQL's one "
            "history), every 100 ms; keep it above the sustained claim rate, or the history "
            "outgrows --session-history-max-rows",
            1, 100000000, "ended sessions pruned a second");
}

// Silence, and the batches heartbeats are written in.
void AddHeartbeatFlags(CLI::App* serve, ServeConfig* s) {
  AddNumber(serve, "--dead-after-ms", &s->dead_after_ms,
            "a container without a heartbeat this long is dead (counted in time this node "
            "could hear: see --deaf-gap-ms)",
            1, kBig,
            "heartbeat timeout in ms");
  AddNumber(serve, "--deaf-gap-ms", &s->deaf_gap_ms,
            "this node could not hear (a pause, a stalled io loop) when a beat of its watch is "
            "this late; no container is judged silent before --dead-after-ms of hearing again "
            "(0: min(1000, dead-after-ms / 3))",
            0, kBig, "deafness gap in ms");
  AddNumber(serve, "--mass-silence-percent", &s->mass_silence_percent,
            "more than this percentage of a pool's live containers (at least 3), or of the "
            "fleet's, silent at once is a mass silence: not handed out, but their sessions end "
            "only after --mass-silence-grace-ms",
            1, 100, "mass silence percentage");
  AddNumber(serve, "--mass-silence-grace-ms", &s->mass_silence_grace_ms,
            "in a mass silence, a held container's session ends after this much silence "
            "(at least --dead-after-ms)",
            1, kBig, "mass silence grace in ms");
  AddNumber(serve, "--batch-max", &s->batch_max, "heartbeats written in one transaction at most", 1,
            100000, "heartbeat batch size");
  AddNumber(serve, "--batch-wait-ms", &s->batch_wait_ms, "longest wait to fill a heartbeat batch",
            0, 60000, "heartbeat batch wait in ms");
  AddNumber(serve, "--queue-capacity", &s->queue_capacity, "heartbeats queued before 503", 1,
            100000000, "heartbeat queue capacity");
  AddNumber(serve, "--heartbeat-items-per-key-per-s", &s->heartbeat_items_per_key_per_s,
            "heartbeat items a key may send a second on this node (a token bucket of as many); "
            "past it, 429 rate_limited with Retry-After, on the request's headers (0: no budget)",
            0, 100000000, "heartbeat items a key may send a second");
}

// Bounds on what a tenant or a request may ask.
void AddLimitFlags(CLI::App* serve, ServeConfig* s, WordFlags* words) {
  // No default shown: inside, unlimited is a number nobody should read.
  AddFlag(serve, "--max-sessions-per-tenant", &s->max_sessions_per_tenant,
          "concurrent sessions a tenant may hold (default: unlimited; 0 = unlimited)")
      ->check(InRange(0, kBig, "sessions a tenant may hold, 0 for unlimited"));
  AddNumber(serve, "--max-body-bytes", &s->max_body_bytes, "request body limit in bytes", 1,
            int64_t{1} << 30, "request body limit in bytes");
  AddNumber(serve, "--request-deadline-ms", &s->request_deadline_ms,
            "a request still unanswered this long after it was read (a claim's wait_ms more) is "
            "answered 503 unavailable with Retry-After: its answer from the database was lost or "
            "is stuck; longer than the database's own timeouts",
            100, 3600 * 1000, "request deadline in ms");
  AddNumber(serve, "--candidates", &s->candidates,
            "size of the candidate pool a claim picks from at random", 1, 1000,
            "claim candidate pool size");
  AddWord(serve, "--placement", &words->placement,
          "how a claim that says none chooses among the containers that fit: fittest (the "
          "--candidates lowest-latency, one at random), packed (the most used slots first: fill "
          "one before opening another) or distributed (the fewest used slots first)",
          {"fittest", "packed", "distributed"});
  AddNumber(serve, "--max-clock-skew-ms", &s->max_clock_skew_ms,
            "a heartbeat whose ts_ms is more than this ahead of the server's clock (on "
            "PostgreSQL, the database's) is refused (400 invalid_field)",
            0, kBig, "largest clock skew of a heartbeat's ts_ms in ms");
}

// The log, and the demo fleet.
void AddLogAndDemoFlags(CLI::App* serve, ServeConfig* s, WordFlags* words) {
  AddWord(serve, "--log-level", &words->log_level, "least level logged: debug, info, warn or error",
          {"debug", "info", "warn", "error"});
  AddWord(serve, "--log-format", &words->log_format,
          "text (one human line a record) or json (one JSON object a line)", {"text", "json"});
  serve
      ->add_flag("--access-log", s->log.access_log,
                 "log a line per request answered: method, path (no query), status, bytes, "
                 "duration and request id; never a key")
      ->envname("EDGEALLOC_ACCESS_LOG");
  serve->add_flag("--demo", s->demo, "register a small demo fleet and keep it alive")
      ->envname("EDGEALLOC_DEMO");
}

// --config FILE names a TOML file of serve settings (config_file.h reads it;
// ArgsWithConfigFile applies it). The option is declared on the top app and
// on serve, so that both `edgealloc --config F serve` and `edgealloc serve
// --config F` parse and serve --help shows it; EDGEALLOC_CONFIG names the
// file when no flag does.
void AddConfigFlag(CLI::App* app, CLI::App* serve, std::string* path) {
  const std::string help =
      "TOML file of serve settings, keys named as the long flags, under [serve] (see "
      "packaging/edgealloc.toml); a flag wins over EDGEALLOC_* variables, which win over "
      "the file";
  app->add_option("--config", *path, help)->type_name("FILE");
  serve->add_option("--config", *path, help)->type_name("FILE")->envname("EDGEALLOC_CONFIG");
}

CLI::App* AddServeCommand(CLI::App* app, ServeConfig* s, WordFlags* words,
                          std::string* config_path) {
  CLI::App* serve = app->add_subcommand(
      "serve",
      "Serve the HTTP API (docs/api.md; OpenAPI 3.1 in docs/openapi.json, also served at GET "
      "/openapi.json). Every option may also come from its EDGEALLOC_* variable or from "
      "--config FILE (TOML, under [serve]: packaging/edgealloc.toml); a flag wins over the "
      "variable, the variable over the file, the file over the default.");
  AddConfigFlag(app, serve, config_path);
  AddServingFlags(serve, s);
  AddStorageFlags(serve, s, words);
  AddSessionFlags(serve, s);
  AddHeartbeatFlags(serve, s);
  AddMirrorFlags(serve, s);
  AddBackupRegionFlags(serve, s);
  AddLimitFlags(serve, s, words);
  AddLogAndDemoFlags(serve, s, words);
  return serve;
}

// Parses; false with cmd->exit_code set if the command ends here (help,
// version, a usage error said on `err`).
bool ParseOrExit(CLI::App* app, std::vector<std::string> args, std::ostream& out,
                 std::ostream& err, Command* cmd) {
  const std::vector<std::string> given = args;
  try {
    std::reverse(args.begin(), args.end());  // CLI11 takes a vector last argument first
    app->parse(args);
    return true;
  } catch (const CLI::Success& e) {  // --help, --help-all, --version
    cmd->exit_code = app->exit(e, out, err);
  } catch (const CLI::ExtrasError& e) {
    app->exit(e, out, err);
    err << Suggestions(app, e);
    cmd->exit_code = 2;
  } catch (const CLI::RequiredError& e) {
    app->exit(e, out, err);
    err << SubcommandHint(app, given);
    cmd->exit_code = 2;
  } catch (const CLI::ParseError& e) {
    app->exit(e, out, err);
    cmd->exit_code = 2;
  }
  return false;
}

// The serve settings that are not taken as given: the words made values,
// and the checks across flags. "" if they may serve, else the usage error.
std::string FinishServe(const WordFlags& words, ServeConfig* s) {
  s->sync = words.sync == "normal" ? store::Sync::kNormal : store::Sync::kFull;
  ParseLogLevel(words.log_level, &s->log.level);  // IsMember checked it
  s->log.format = words.log_format == "json" ? LogFormat::kJson : LogFormat::kText;
  store::ParsePlacement(words.placement, &s->placement);  // IsMember checked it
  std::string error;
  if (!SplitHostPort(s->listen, &s->host, &s->port, &error)) return "--listen: " + error;
  // "0 = unlimited" on the command line; one spelling of unlimited inside.
  if (s->max_sessions_per_tenant == 0) s->max_sessions_per_tenant = store::kUnlimited;
  if (s->default_lease_ms > s->max_lease_ms) {
    return "--lease-ms (" + std::to_string(s->default_lease_ms) +
           ") is longer than --max-lease-ms (" + std::to_string(s->max_lease_ms) + ")";
  }
  if (std::string backups = FinishBackupRegions(s); !backups.empty()) return backups;
  if (s->keys_file.empty() && !IsLoopbackHost(s->host)) {
    return "refusing to listen on " + s->listen +
           " without keys: anyone who can reach it could claim and remove containers. "
           "Give --keys FILE (lines of 'key role [tenant]'), or listen on 127.0.0.1.";
  }
  return "";
}

}  // namespace

Command ParseCommandLine(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  Command cmd;
  // One core is left to the shard writers: on 2 cores, 2 io threads beside
  // the writer cost 15-20% more CPU a claim than 1 (bench/RESULTS.md), and
  // the /healthz ceiling was no higher.
  const unsigned cores = std::thread::hardware_concurrency();
  cmd.serve.threads = cores <= 2 ? 1 : static_cast<int>(cores) - 1;

  CLI::App app{"edgealloc: hands out exclusive containers (browsers, sandboxes) from a fleet, its state in SQLite (embedded) or PostgreSQL (several nodes)."};
  app.name("edgealloc");
  app.require_subcommand(1);
  app.set_version_flag("--version",
                       std::string("edgealloc ") + base::kVersion + " (commit " + base::kCommit +
                           ", SQLite " + store::SqliteLibraryVersion() + ", libpq " +
                           store::LibpqLibraryVersion() + ")");
  WordFlags words;
  std::string config_path;  // read by ArgsWithConfigFile before parsing
  CLI::App* serve = AddServeCommand(&app, &cmd.serve, &words, &config_path);
  CLI::App* reg = AddRegisterCommand(&app, &cmd.reg);
  AgentWords agent_words;
  CLI::App* agent = AddAgentCommand(&app, &cmd.agent, &agent_words);
  AddClientCommands(&app, &cmd.client);
  std::vector<std::string> args;
  if (!ArgsWithConfigFile(serve, argc, argv, err, &args)) {
    cmd.exit_code = 2;
    return cmd;
  }
  if (!ParseOrExit(&app, std::move(args), out, err, &cmd)) return cmd;

  if (*reg) {
    cmd.kind = Command::Kind::kRegister;
    return cmd;
  }
  if (cmd.client.make) {  // a client subcommand ran its callback
    const std::string usage = cmd.client.make(&cmd.client.request);
    if (!usage.empty()) {
      err << "edgealloc: " << usage << "\n";
      cmd.exit_code = 2;
      return cmd;
    }
    cmd.kind = Command::Kind::kClient;
    return cmd;
  }
  const std::string usage =
      *agent ? FinishAgent(agent_words, &cmd.agent) : FinishServe(words, &cmd.serve);
  if (!usage.empty()) {
    err << "edgealloc: " << usage << "\n";
    cmd.exit_code = 2;
    return cmd;
  }
  cmd.kind = *agent ? Command::Kind::kAgent : Command::Kind::kServe;
  return cmd;
}

}  // namespace server
