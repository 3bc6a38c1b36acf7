#include "server/http/message.h"

#include <utility>

#include "base/json_string.h"

namespace server {

Response JsonResponse(int status, std::string body) {
  Response res{static_cast<http::status>(status), 11};
  res.set(http::field::content_type, "application/json");
  res.body() = std::move(body);
  return res;
}

Response ErrorResponse(ApiError error, std::string_view message, std::string_view more_fields) {
  std::string body = "{\"error\":{\"code\":" + JsonQuote(CodeOf(error)) + ",\"message\":" +
                     JsonQuote(message) + std::string(more_fields) + "}}";
  const int status = StatusOf(error);
  Response res = JsonResponse(status, std::move(body));
  if (status == 503) res.set(http::field::retry_after, "1");
  return res;
}

std::string JsonQuote(std::string_view s) {
  std::string out;
  base::AppendJsonString(s, &out);
  return out;
}

}  // namespace server
