#include "server/client_command.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <vector>

#include "server/cli_flags.h"
#include "server/client/http_client.h"

namespace server {
namespace {

using nlohmann::json;

// The flags of every client subcommand: where and as whom.
void AddServerFlags(CLI::App* cmd, ClientOptions* o) {
  cmd->add_option("--server", o->server, "the edgealloc server, http://HOST:PORT")
      ->envname("EDGEALLOC_SERVER")
      ->capture_default_str();
  // Never echoed: it is a secret.
  cmd->add_option("--key", o->key, "bearer key (tenant, admin or container)")
      ->envname("EDGEALLOC_KEY");
}

// "?a=1&b=x" from the pairs whose value is not empty, values encoded.
std::string Query(const std::vector<std::pair<std::string, std::string>>& pairs) {
  std::string q;
  for (const auto& [name, value] : pairs) {
    if (value.empty()) continue;
    q += (q.empty() ? "?" : "&") + name + "=" + PathSegment(value);
  }
  return q;
}

// The help of a list command's filter flag, with the values it takes.
std::string FilterHelp(const std::string& name) {
  if (name == "region") return "only this region";
  if (name == "pool") return "only this pool";
  if (name == "label") return "KEY:VALUE, only sessions with this label";
  if (name == "tenant") return "only this tenant's (an admin key; a tenant key sees its own)";
  if (name == "state") return "live (the default: not ended) or ended (newest first)";
  if (name == "status") return "only this status: available, picked, draining or dead";
  if (name == "attribute") return "KEY=VALUE, only containers with this attribute";
  if (name == "limit") return "items a page, 1 to 1000 (default 100)";
  if (name == "cursor") return "the next_cursor of the page before";
  return name;
}

// A subcommand of `parent` whose request `make` builds from flags that the
// caller adds to the returned App.
CLI::App* Verb(CLI::App* parent, ClientCommand* c, const std::string& name,
               const std::string& help, std::function<std::string(ClientRequest*)> make) {
  CLI::App* cmd = parent->add_subcommand(name, help);
  // Each verb its own copy: CLI11 applies every verb's EDGEALLOC_SERVER and
  // EDGEALLOC_KEY, and with one shared variable another verb's environment
  // value overwrote the flag typed to this one.
  auto options = std::make_shared<ClientOptions>(c->options);
  AddServerFlags(cmd, options.get());
  cmd->callback([c, options, make = std::move(make)] {
    c->options = *options;
    c->make = make;
  });
  return cmd;
}

struct ClaimFlags {
  std::string region, pool, idempotency_key, placement;
  int64_t lease_ms = 0, wait_ms = 0;
  std::vector<std::string> labels, fallback_regions, selector;
};

// --selector KEY=VALUE or KEY=V1,V2 (one of them), repeatable (a key given
// again adds its values) into the claim's `selector`.
std::string SelectorJson(const std::vector<std::string>& terms, json* out) {
  *out = json::object();
  for (const std::string& term : terms) {
    const size_t eq = term.find('=');
    if (eq == std::string::npos || eq == 0) {
      return "--selector: '" + term + "' is not KEY=VALUE or KEY=V1,V2";
    }
    json& values = (*out)[term.substr(0, eq)];
    if (values.is_null()) values = json::array();
    const std::string list = term.substr(eq + 1);
    for (size_t start = 0;;) {
      const size_t comma = list.find(',', start);
      values.push_back(list.substr(start, comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return "";
}

std::string ClaimBody(const ClaimFlags& f, std::string* body) {
  json j = {{"region", f.region}};
  if (!f.pool.empty()) j["pool"] = f.pool;
  if (f.lease_ms > 0) j["lease_ms"] = f.lease_ms;
  if (f.wait_ms > 0) j["wait_ms"] = f.wait_ms;
  if (!f.idempotency_key.empty()) j["idempotency_key"] = f.idempotency_key;
  if (!f.placement.empty()) j["placement"] = f.placement;
  if (!f.fallback_regions.empty()) j["fallback_regions"] = f.fallback_regions;
  if (!f.labels.empty()) {
    json labels = json::object();
    for (const std::string& kv : f.labels) {
      const size_t eq = kv.find('=');
      if (eq == std::string::npos) return "--label: '" + kv + "' is not KEY=VALUE";
      labels[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    j["labels"] = labels;
  }
  if (!f.selector.empty()) {
    json selector;
    if (std::string bad = SelectorJson(f.selector, &selector); !bad.empty()) return bad;
    j["selector"] = selector;
  }
  *body = j.dump();
  return "";
}

void AddSessionCommands(CLI::App* app, ClientCommand* c) {
  CLI::App* sessions = app->add_subcommand(
      "sessions", "Claim, read, renew, release and list sessions on a running server.");
  sessions->require_subcommand(1);

  auto claim = std::make_shared<ClaimFlags>();
  CLI::App* cmd = Verb(sessions, c, "claim", "claim a container (POST /v1/sessions)",
                       [claim](ClientRequest* r) {
                         *r = {"POST", "/v1/sessions", ""};
                         return ClaimBody(*claim, &r->body);
                       });
  cmd->add_option("--region", claim->region, "region")->required();
  cmd->add_option("--pool", claim->pool, "pool (the server's default: default)");
  cmd->add_option("--lease-ms", claim->lease_ms, "lease (the server's default: --lease-ms)");
  cmd->add_option("--wait-ms", claim->wait_ms, "wait this long for a container to free up");
  cmd->add_option("--idempotency-key", claim->idempotency_key,
                  "the same key returns the same session when a claim is retried");
  cmd->add_option("--label", claim->labels, "KEY=VALUE, stored with the session (repeat)");
  cmd->add_option("--fallback-region", claim->fallback_regions, "tried in order (repeat)");
  cmd->add_option("--placement", claim->placement,
                  "fittest, packed (fill a container before opening another) or distributed "
                  "(the server's default: --placement)")
      ->check(CLI::IsMember({"fittest", "packed", "distributed"}));
  cmd->add_option("--selector", claim->selector,
                  "KEY=VALUE or KEY=V1,V2 (one of them): only containers with that attribute "
                  "(repeat: every key must match)");

  auto id = std::make_shared<std::string>();
  auto token = std::make_shared<int64_t>(0);
  auto lease = std::make_shared<int64_t>(0);
  cmd = Verb(sessions, c, "get", "a session (GET /v1/sessions/ID)", [id](ClientRequest* r) {
    *r = {"GET", "/v1/sessions/" + PathSegment(*id), ""};
    return std::string();
  });
  cmd->add_option("id", *id, "session id")->required();
  cmd = Verb(sessions, c, "renew", "extend a lease (POST /v1/sessions/ID/renew)",
             [id, token, lease](ClientRequest* r) {
               json body = {{"token", *token}};
               if (*lease > 0) body["lease_ms"] = *lease;
               *r = {"POST", "/v1/sessions/" + PathSegment(*id) + "/renew", body.dump()};
               return std::string();
             });
  cmd->add_option("id", *id, "session id")->required();
  cmd->add_option("--token", *token, "the session's fencing token")->required();
  cmd->add_option("--lease-ms", *lease, "the new lease (the server's default: --lease-ms)");
  cmd = Verb(sessions, c, "release", "end a session (DELETE /v1/sessions/ID?token=N)",
             [id, token](ClientRequest* r) {
               *r = {"DELETE",
                     "/v1/sessions/" + PathSegment(*id) + "?token=" + std::to_string(*token), ""};
               return std::string();
             });
  cmd->add_option("id", *id, "session id")->required();
  cmd->add_option("--token", *token, "the session's fencing token")->required();

  auto filters = std::make_shared<std::vector<std::pair<std::string, std::string>>>(
      std::vector<std::pair<std::string, std::string>>{
          {"region", ""}, {"pool", ""}, {"label", ""}, {"tenant", ""}, {"state", ""},
          {"limit", ""}, {"cursor", ""}});
  cmd = Verb(sessions, c, "list", "one page of sessions (GET /v1/sessions)",
             [filters](ClientRequest* r) {
               *r = {"GET", "/v1/sessions" + Query(*filters), ""};
               return std::string();
             });
  for (auto& [name, value] : *filters) {
    CLI::Option* option = cmd->add_option("--" + name, value, FilterHelp(name));
    if (name == "state") option->check(CLI::IsMember({"live", "ended"}));
  }
}

void AddContainerCommands(CLI::App* app, ClientCommand* c) {
  CLI::App* containers = app->add_subcommand(
      "containers", "List, read, drain and undrain containers on a running server (admin key).");
  containers->require_subcommand(1);
  auto filters = std::make_shared<std::vector<std::pair<std::string, std::string>>>(
      std::vector<std::pair<std::string, std::string>>{
          {"region", ""}, {"pool", ""}, {"status", ""}, {"attribute", ""}, {"limit", ""},
          {"cursor", ""}});
  CLI::App* cmd = Verb(containers, c, "list", "one page of containers (GET /v1/containers)",
                       [filters](ClientRequest* r) {
                         // KEY=VALUE on the command line, KEY:VALUE in the query.
                         auto query = *filters;
                         for (auto& [name, value] : query) {
                           if (name != "attribute" || value.empty()) continue;
                           const size_t eq = value.find('=');
                           if (eq == std::string::npos) {
                             return "--attribute: '" + value + "' is not KEY=VALUE";
                           }
                           value[eq] = ':';
                         }
                         *r = {"GET", "/v1/containers" + Query(query), ""};
                         return std::string();
                       });
  for (auto& [name, value] : *filters) cmd->add_option("--" + name, value, FilterHelp(name));

  auto id = std::make_shared<std::string>();
  struct ContainerVerb {
    const char* name;
    const char* method;
    const char* suffix;  // after /v1/containers/ID
    const char* help;
  };
  for (const ContainerVerb& verb : {
           ContainerVerb{"get", "GET", "", "a container (GET /v1/containers/ID)"},
           ContainerVerb{"drain", "POST", "/drain",
                         "an operator's drain: never claimed again until undrained"},
           ContainerVerb{"undrain", "POST", "/undrain", "end an operator's drain"}}) {
    cmd = Verb(containers, c, verb.name, verb.help, [id, verb](ClientRequest* r) {
      *r = {verb.method, "/v1/containers/" + PathSegment(*id) + verb.suffix, ""};
      return std::string();
    });
    cmd->add_option("id", *id, "container id")->required();
  }
}

// `edgealloc pressure --region R [--pool P]`: one pool's pressure.
void AddPressureCommand(CLI::App* app, ClientCommand* c) {
  auto where = std::make_shared<std::vector<std::pair<std::string, std::string>>>(
      std::vector<std::pair<std::string, std::string>>{{"region", ""}, {"pool", ""}});
  CLI::App* cmd = Verb(app, c, "pressure",
                       "One pool's counts, slots, waiting claims, claim rates and the containers "
                       "to add to keep its warm buffer (GET /v1/pressure; a tenant, admin or "
                       "metrics key). Exit 4 for a pool nobody registered.",
                       [where](ClientRequest* r) {
                         *r = {"GET", "/v1/pressure" + Query(*where), ""};
                         return std::string();
                       });
  cmd->add_option("--region", (*where)[0].second, "region")->required();
  cmd->add_option("--pool", (*where)[1].second, "pool (the server's default: default)");
}

void AddEventsCommand(CLI::App* app, ClientCommand* c) {
  CLI::App* events = app->add_subcommand(
      "events", "Follow the events of a running server (a tenant key: its own sessions').");
  events->require_subcommand(1);
  auto watch = std::make_shared<EventsWatch>();
  CLI::App* cmd = Verb(events, c, "watch",
                       "print each event as one line of JSON as it commits, resuming after a "
                       "dropped connection (GET /v1/events)",
                       [c, watch](ClientRequest* r) {
                         c->watch_events = true;
                         c->watch = *watch;
                         *r = {"GET", "/v1/events", ""};
                         return std::string();
                       });
  cmd->add_option("--after", watch->after, "the seq (cursor) to start after; default the oldest");
  cmd->add_option("--type", watch->type, "only events of this type (session.ended, ...)");
  cmd->add_option("--max-events", watch->max_events, "stop after this many (default: never)");
}

}  // namespace

void AddClientCommands(CLI::App* app, ClientCommand* c) {
  AddSessionCommands(app, c);
  AddContainerCommands(app, c);
  AddPressureCommand(app, c);
  AddEventsCommand(app, c);
}

}  // namespace server
