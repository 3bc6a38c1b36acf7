#ifndef EDGEALLOC_SERVER_CLIENT_CLIENT_REQUEST_H_
#define EDGEALLOC_SERVER_CLIENT_CLIENT_REQUEST_H_

#include <cstdint>
#include <iosfwd>
#include <string>

#include "base/http_url.h"

namespace server {

// Where a client subcommand (`edgealloc sessions ...`, `edgealloc containers
// ...`) sends its one request, and with which key.
struct ClientOptions {
  std::string server = "http://127.0.0.1:8080";
  std::string key;             // --key or EDGEALLOC_KEY; empty: no Authorization
  int64_t timeout_ms = 60000;  // a claim may wait (wait_ms) up to a minute
};

// One request of the API.
struct ClientRequest {
  std::string method;
  std::string target;  // path and query, "/v1/sessions/s_1"
  std::string body;    // JSON, or empty
};

// The exit code of a reply's status, for scripts: 0 for 2xx; 3 for 409 and
// 410 (the session moved on: a stale token, or ended); 4 for any other 4xx
// (the request is wrong, or not allowed); 5 for 5xx and for no answer at all
// (retry later).
int ExitCodeOf(int status);

// `options.server` as a URL; false, saying so on `err` (the caller exits
// 2, a usage error), if it is not http://HOST[:PORT][/PATH].
bool ServerUrlOf(const ClientOptions& options, base::HttpUrl* url, std::ostream& err);

// Sends `request` to `options.server`, prints the reply's body on `out` (a
// 204 prints nothing; a claim's 201 served by a fallback or backup region
// says which on `err` too), says on `err` what went wrong when nothing answered,
// and returns ExitCodeOf its status.
int RunClientRequest(const ClientOptions& options, const ClientRequest& request, std::ostream& out,
                     std::ostream& err);

}  // namespace server

#endif  // EDGEALLOC_SERVER_CLIENT_CLIENT_REQUEST_H_
