#ifndef EDGEALLOC_SERVER_AGENT_COMMAND_H_
#define EDGEALLOC_SERVER_AGENT_COMMAND_H_

#include <CLI/CLI.hpp>

#include <string>

#include "server/agent/agent_config.h"

namespace server {

// The agent's flags read as words, made values by FinishAgent.
struct AgentWords {
  std::string log_level = "info";
  std::string log_format = "text";
  int64_t latency_ms = -1;  // -1: not given
  int64_t slots = -1;       // -1: not given
};

// `edgealloc agent` and its flags (docs/agent.md), filling *a and *words.
CLI::App* AddAgentCommand(CLI::App* app, AgentConfig* a, AgentWords* words);

// After parsing: the words made values and the checks across flags. "" if
// the agent may run, else the usage error.
std::string FinishAgent(const AgentWords& words, AgentConfig* a);

}  // namespace server

#endif  // EDGEALLOC_SERVER_AGENT_COMMAND_H_
