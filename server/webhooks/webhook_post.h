#ifndef EDGEALLOC_SERVER_WEBHOOKS_WEBHOOK_POST_H_
#define EDGEALLOC_SERVER_WEBHOOKS_WEBHOOK_POST_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/http_url.h"

namespace server {

// A webhook's URL: http:// or https:// (TLS, the peer verified against the
// system's CA store, which OpenSSL's SSL_CERT_FILE and SSL_CERT_DIR
// override), host, port (80 or 443 unless given) and target.
using WebhookUrl = base::HttpUrl;
// base::ParseHttpUrl with https:// allowed; the error never quotes the URL
// (its query may carry a token).
bool ParseWebhookUrl(std::string_view text, WebhookUrl* url, std::string* error);

struct WebhookPostOptions {
  int64_t connect_timeout_ms = 5000;   // resolve, connect and TLS handshake
  int64_t response_timeout_ms = 10000;  // send the batch, read the answer
  size_t max_answer_bytes = 64 * 1024;  // more is a failed delivery
};

// What came back: a status, or none and why.
struct WebhookAnswer {
  int status = 0;  // 0: none, see error
  std::string error;
  bool delivered() const { return status >= 200 && status < 300; }
};

// POSTs `body` (application/json) with `headers` on a new connection, closed
// after. Returns early, with no answer, once *cancel is true (checked every
// 100 ms): a stopping node does not wait out a hung receiver.
WebhookAnswer PostWebhook(const WebhookUrl& url,
                          const std::vector<std::pair<std::string, std::string>>& headers,
                          const std::string& body, const WebhookPostOptions& options,
                          const std::atomic<bool>* cancel);

}  // namespace server

#endif  // EDGEALLOC_SERVER_WEBHOOKS_WEBHOOK_POST_H_
