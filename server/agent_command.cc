#include "server/agent_command.h"

#include <nlohmann/json.hpp>

#include "server/client/http_client.h"
#include "server/cli_flags.h"
#include "store/types.h"

namespace server {
namespace {

void AddReportFlags(CLI::App* agent, AgentConfig* a) {
  AddFlag(agent, "--server", &a->server, "the edgealloc server, http://HOST:PORT")
      ->capture_default_str();
  // No default shown, and never echoed: it is a secret.
  AddFlag(agent, "--key", &a->key,
          "bearer key: a container key naming this id, or an admin key (needed for --register, "
          "and to see at SIGTERM whether the container is still picked)");
  AddFlag(agent, "--id", &a->id, "the container's id")->required();
  AddNumber(agent, "--interval-ms", &a->interval_ms,
            "a heartbeat this often; keep it well under the server's --dead-after-ms (a third "
            "or less), so that a lost heartbeat or two never makes the container dead",
            100, kBigFlagValue, "heartbeat interval in ms");
}

void AddRegisterFlags(CLI::App* agent, AgentConfig* a, AgentWords* words) {
  agent
      ->add_flag("--register", a->register_container,
                 "register the container (POST /v1/containers, an admin key) before the first "
                 "heartbeat; needs --region")
      ->envname("EDGEALLOC_REGISTER");
  AddFlag(agent, "--region", &a->region, "region, for --register");
  AddFlag(agent, "--pool", &a->pool, "pool, for --register")->capture_default_str();
  AddFlag(agent, "--latency-ms", &words->latency_ms, "latency_ms, for --register")
      ->check(InRange(0, kBigFlagValue, "the container's latency in ms"));
  AddFlag(agent, "--data", &a->data,
          "a JSON object handed to whoever claims the container, for --register");
  AddFlag(agent, "--slots", &words->slots,
          "sessions the container holds at once, for --register (the server's default: 1)")
      ->check(InRange(store::kMinSlots, store::kMaxSlots, "the container's slots"));
  AddFlag(agent, "--attributes", &a->attributes,
          "a JSON object of strings that claims' selectors match, for --register");
}

void AddHealthFlags(CLI::App* agent, AgentConfig* a) {
  CLI::Option* url = AddFlag(agent, "--health-url", &a->health_url,
                             "ready while GET URL answers 2xx, else reported draining");
  CLI::Option* cmd = AddFlag(agent, "--health-cmd", &a->health_cmd,
                             "ready while /bin/sh -c CMD exits 0, else reported draining");
  url->excludes(cmd);
  AddNumber(agent, "--health-timeout-ms", &a->health_timeout_ms,
            "a health check taking longer fails (a command is killed)", 1, 3600 * 1000,
            "health check timeout in ms");
  AddFlag(agent, "--on-drain", &a->on_drain,
          "run by /bin/sh -c once when the heartbeat reply says an operator drained the container");
  AddNumber(agent, "--drain-timeout-ms", &a->drain_timeout_ms,
            "at SIGTERM or SIGINT, the longest wait for the container to be not picked", 0,
            kBigFlagValue, "drain timeout in ms");
}

}  // namespace

CLI::App* AddAgentCommand(CLI::App* app, AgentConfig* a, AgentWords* words) {
  CLI::App* agent = app->add_subcommand(
      "agent",
      "A container's sidecar (docs/agent.md): registers it if asked, heartbeats with the state "
      "its health check gives, runs --on-drain when an operator drains it, and at SIGTERM "
      "reports draining and exits once it is not picked. Every option may also come from its "
      "EDGEALLOC_* variable (--key: EDGEALLOC_KEY).");
  AddReportFlags(agent, a);
  AddRegisterFlags(agent, a, words);
  AddHealthFlags(agent, a);
  AddWord(agent, "--log-level", &words->log_level, "least level logged",
          {"debug", "info", "warn", "error"});
  AddWord(agent, "--log-format", &words->log_format, "text or json", {"text", "json"});
  return agent;
}

std::string FinishAgent(const AgentWords& words, AgentConfig* a) {
  ParseLogLevel(words.log_level, &a->log.level);  // IsMember checked it
  a->log.format = words.log_format == "json" ? LogFormat::kJson : LogFormat::kText;
  if (words.latency_ms >= 0) a->latency_ms = words.latency_ms;
  if (words.slots >= 0) a->slots = words.slots;
  HttpUrl url;
  std::string error;
  if (!ParseHttpUrl(a->server, &url, &error)) return "--server: " + error;
  if (!a->health_url.empty() && !ParseHttpUrl(a->health_url, &url, &error)) {
    return "--health-url: " + error;
  }
  if (a->register_container && a->region.empty()) return "--register needs --region";
  if (!a->data.empty() && !nlohmann::json::parse(a->data, nullptr, false).is_object()) {
    return "--data: '" + a->data + "' is not a JSON object";
  }
  if (!a->attributes.empty()) {
    const nlohmann::json attributes = nlohmann::json::parse(a->attributes, nullptr, false);
    bool strings = attributes.is_object();
    for (const auto& value : attributes) strings = strings && value.is_string();
    if (!strings) return "--attributes: '" + a->attributes + "' is not a JSON object of strings";
  }
  return "";
}

}  // namespace server
