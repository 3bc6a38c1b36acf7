#ifndef EDGEALLOC_SERVER_HTTP_FRONT_RULES_H_
#define EDGEALLOC_SERVER_HTTP_FRONT_RULES_H_

// The rules a request's header must keep before anything else looks at it
// (docs/api.md "Requests"): what the router checks first (OpenModeRefusal,
// ContentTypeRefusal) and what the connection checks of every request
// (HostFieldProblem). Pure functions of the header, safe from any thread.

#include <optional>
#include <string>
#include <string_view>

#include "server/http/message.h"

namespace server {

// RFC 9112 §3.2: an HTTP/1.1 request without Host, or any request with more
// than one Host field line or an empty one, is 400. Returns what is wrong,
// or an empty string when the Host field is as it must be.
std::string HostFieldProblem(const Request& header);

// True if `host` (a Host field's value: a name or literal, with or without
// a port) names this machine's loopback: "localhost", an IPv4 literal in
// 127.0.0.0/8, or the IPv6 literal [::1].
bool IsLoopbackHost(std::string_view host);

// Without a keys file every caller is an admin, so the server must be sure
// the caller is a process of this machine and not a web page its operator's
// browser opened: a Host that is not a loopback name (DNS rebinding) is 403
// host_not_allowed; an Origin other than the server's own (the scheme http
// and the request's Host) or `Sec-Fetch-Site: cross-site` is 403
// cross_origin. Nullopt when the request may go on. Only for open mode.
std::optional<Response> OpenModeRefusal(const Request& header);

// True if the request has a body to read: a Content-Length above zero or a
// Transfer-Encoding.
bool HasBody(const Request& header);

// A request with a body whose Content-Type is not application/json (any
// parameters, such as charset, allowed) is 415 unsupported_media_type: a
// browser sends a cross-site form or a text/plain body without asking
// first, never an application/json one. Nullopt when the request may go on.
std::optional<Response> ContentTypeRefusal(const Request& header);

}  // namespace server

#endif  // EDGEALLOC_SERVER_HTTP_FRONT_RULES_H_
