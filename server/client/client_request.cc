#include "server/client/client_request.h"

#include <ostream>

#include "server/client/http_client.h"

namespace server {

int ExitCodeOf(int status) {
  if (status >= 200 && status < 300) return 0;
  if (status == 409 || status == 410) return 3;
  if (status >= 400 && status < 500) return 4;
  return 5;
}

int RunClientRequest(const ClientOptions& options, const ClientRequest& request, std::ostream& out,
                     std::ostream& err) {
  HttpUrl url;
  std::string error;
  if (!ParseHttpUrl(options.server, &url, &error)) {
    err << "edgealloc: --server: " << error << "\n";
    return 2;
  }
  HttpCall call;
  call.method = request.method;
  call.target = request.target;
  call.body = request.body;
  call.bearer_key = options.key;
  call.timeout_ms = options.timeout_ms;
  const HttpReply reply = SendHttp(url, call);
  if (!reply.answered()) {
    err << "edgealloc: " << options.server << " did not answer: " << reply.error << "\n";
    return ExitCodeOf(0);
  }
  if (!reply.body.empty()) {
    out << reply.body;
    if (reply.body.back() != '\n') out << "\n";
  }
  return ExitCodeOf(reply.status);
}

}  // namespace server
