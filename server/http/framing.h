#ifndef EDGEALLOC_SERVER_HTTP_FRAMING_H_
#define EDGEALLOC_SERVER_HTTP_FRAMING_H_

// Internal to server/http/.

#include <string>

#include "server/http/message.h"

namespace server {

enum class Framing { kOk, kBad, kUnsupported };

// RFC 9112 §6.1, §6.3 on a request's Transfer-Encoding fields (all of them,
// in order, as one list): kBad (400) for a last coding that is not chunked,
// chunked named twice, or one with a Content-Length; kUnsupported (501) for
// any other coding before chunked. *why says what is wrong.
Framing CheckTransferEncoding(const Request& req, std::string* why);

}  // namespace server

#endif  // EDGEALLOC_SERVER_HTTP_FRAMING_H_
