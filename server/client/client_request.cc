#include "server/client/client_request.h"

#include <ostream>
#include <string>

#include "server/client/http_client.h"

namespace server {

int ExitCodeOf(int status) {
  if (status >= 200 && status < 300) return 0;
  if (status == 409 || status == 410) return 3;
  if (status >= 400 && status < 500) return 4;
  return 5;
}

namespace {

// The text of the reply's first `"name":"..."` member (our server writes
// compact JSON, and these values need no escapes), or "".
std::string MemberText(const std::string& body, const std::string& name) {
  const std::string key = "\"" + name + "\":\"";
  const size_t at = body.find(key);
  if (at == std::string::npos) return "";
  const size_t end = body.find('"', at + key.size());
  return end == std::string::npos ? "" : body.substr(at + key.size(), end - at - key.size());
}

// A claim served away from its region says so on stderr (stdout stays the
// reply, for scripts).
void NoteServedBy(const std::string& body, std::ostream& err) {
  const std::string served_by = MemberText(body, "served_by");
  const std::string region = MemberText(body, "region");
  if (served_by == "backup") {
    err << "edgealloc: served by the backup region " << region
        << " (the claim's region is on its designated backup: its heartbeats lag, or it had "
           "nothing free)\n";
  } else if (served_by == "fallback") {
    err << "edgealloc: served by the fallback region " << region << "\n";
  }
}

}  // namespace

bool ServerUrlOf(const ClientOptions& options, HttpUrl* url, std::ostream& err) {
  std::string error;
  if (ParseHttpUrl(options.server, url, &error)) return true;
  err << "edgealloc: --server: " << error << "\n";
  return false;
}

int RunClientRequest(const ClientOptions& options, const ClientRequest& request, std::ostream& out,
                     std::ostream& err) {
  HttpUrl url;
  if (!ServerUrlOf(options, &url, err)) return 2;
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
    if (reply.status == 201) NoteServedBy(reply.body, err);
  }
  return ExitCodeOf(reply.status);
}

}  // namespace server
