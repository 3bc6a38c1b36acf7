#ifndef EDGEALLOC_SERVER_LISTEN_ADDRESS_H_
#define EDGEALLOC_SERVER_LISTEN_ADDRESS_H_

#include <cstdint>
#include <string>

// --listen's address, read: where the server binds, and whether that is
// this machine alone (without a keys file every caller is an admin, so the
// server refuses to serve anywhere else). A Host header is another matter:
// server/http/front_rules.h reads those, brackets and all.

namespace server {

// Splits "HOST:PORT" or "[V6]:PORT". Returns false with *error set if malformed.
bool SplitHostPort(const std::string& listen, std::string* host, uint16_t* port,
                   std::string* error);

// True for localhost, 127.0.0.0/8 and ::1.
bool IsLoopbackHost(const std::string& host);

}  // namespace server

#endif  // EDGEALLOC_SERVER_LISTEN_ADDRESS_H_
