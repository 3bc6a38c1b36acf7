#include "server/api/reply_bodies.h"

#include <cstdio>
#include <string_view>

#include "server/http/message.h"

namespace server {

std::string LimitsJson(const LimitsBody& l) {
  auto number = [](double v) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.3f", v);
    // "20.000" reads as 20 in JSON, but say it plainly.
    std::string s = text;
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
    return s;
  };
  std::string out = "{\"tenant\":" + JsonQuote(l.tenant) + ",\"max_sessions\":" +
                    (l.max_sessions == store::kUnlimited ? std::string("null")
                                                         : std::to_string(l.max_sessions)) +
                    ",\"sessions\":" + std::to_string(l.sessions);
  out += ",\"claims_per_s\":" + (l.claims_per_s ? number(*l.claims_per_s) : std::string("null"));
  out += ",\"claim_tokens\":" + (l.claims_per_s ? number(l.claim_tokens) : std::string("null"));
  out += ",\"max_waiters\":" + std::to_string(l.max_waiters);
  out += ",\"waiting\":" + std::to_string(l.waiting) + "}";
  return out;
}

std::string SessionJson(const store::Session& s) {
  std::string out;
  out.reserve(192 + s.data.size());
  out += "{\"session_id\":" + JsonQuote(s.session_id);
  out += ",\"container_id\":" + JsonQuote(s.container_id);
  out += ",\"region\":" + JsonQuote(s.region);
  out += ",\"pool\":" + JsonQuote(s.pool);
  out += ",\"tenant\":" + JsonQuote(s.tenant);
  out += ",\"token\":" + std::to_string(s.token);
  out += ",\"slot\":" + std::to_string(s.slot);
  out += ",\"lease_expires_at_ms\":" + std::to_string(s.lease_expires_at_ms);
  out += ",\"data\":";
  out += s.data.empty() ? "{}" : s.data;
  out += ",\"labels\":";
  out += s.labels.empty() ? "{}" : s.labels;
  out += "}";
  return out;
}

// {"<name>":[<items>],"next_cursor":<cursor or null>}
std::string ListJson(std::string_view name, std::string_view items,
                     const std::optional<std::string>& next_cursor) {
  std::string out;
  out.reserve(name.size() + items.size() + 64);
  out += "{\"";
  out += name;
  out += "\":[";
  out += items;
  out += "],\"next_cursor\":";
  out += next_cursor ? JsonQuote(*next_cursor) : std::string("null");
  out += "}";
  return out;
}

std::string EndedSessionJson(const store::EndedSession& e) {
  std::string out = SessionJson(e.session);
  out.pop_back();  // the session's closing brace
  out += ",\"end_reason\":" + JsonQuote(e.end.reason);
  out += ",\"ended_at_ms\":" + std::to_string(e.end.ended_at_ms) + "}";
  return out;
}

std::string ContainerJson(const store::ContainerInfo& c) {
  std::string out;
  out.reserve(192 + c.data.size());
  out += "{\"id\":" + JsonQuote(c.id);
  out += ",\"region\":" + JsonQuote(c.region);
  out += ",\"pool\":" + JsonQuote(c.pool);
  out += ",\"status\":" + JsonQuote(c.status);
  out += ",\"latency_ms\":" + std::to_string(c.latency_ms);
  out += ",\"last_heartbeat_ms\":" + std::to_string(c.last_heartbeat_ms);
  out += ",\"drain_requested\":";
  out += c.drain_requested ? "true" : "false";
  out += ",\"drain_reported\":";
  out += c.drain_reported ? "true" : "false";
  out += ",\"slots\":" + std::to_string(c.slots);
  out += ",\"slots_used\":" + std::to_string(c.slots_used);
  if (c.session_id) out += ",\"session_id\":" + JsonQuote(*c.session_id);
  out += ",\"data\":";
  out += c.data.empty() ? "{}" : c.data;
  out += ",\"attributes\":";
  out += c.attributes.empty() ? "{}" : c.attributes;
  out += "}";
  return out;
}

}  // namespace server
