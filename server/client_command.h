#ifndef EDGEALLOC_SERVER_CLIENT_COMMAND_H_
#define EDGEALLOC_SERVER_CLIENT_COMMAND_H_

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

#include "server/client/client_request.h"
#include "server/client/events_watch.h"

namespace server {

// What a client subcommand was asked, made into its request after parsing.
struct ClientCommand {
  ClientOptions options;
  // Makes the request from the parsed flags; "" or a usage error.
  std::function<std::string(ClientRequest*)> make;
  ClientRequest request;
  // `edgealloc events watch`: a long-running follow instead of one request.
  bool watch_events = false;
  EventsWatch watch;
};

// `edgealloc sessions claim|get|renew|release|list` and `edgealloc
// containers list|get|drain|undrain`: one API request each, its JSON reply
// printed, the exit code from its status (ExitCodeOf). docs/api.md "Client
// commands" lists them. *c is filled by whichever is called.
void AddClientCommands(CLI::App* app, ClientCommand* c);

}  // namespace server

#endif  // EDGEALLOC_SERVER_CLIENT_COMMAND_H_
