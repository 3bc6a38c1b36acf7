#ifndef EDGEALLOC_SERVER_API_ERRORS_H_
#define EDGEALLOC_SERVER_API_ERRORS_H_

#include "allocator/types.h"

namespace server {

// An HTTP status and the API.md error code that goes with it.
struct HttpStatus {
  int status;
  const char* code;  // empty for a success
};

// The one table from an allocator Outcome to its HTTP status and error code
// (API.md). kOk and kReplayed map to 200 with an empty code; each route picks
// its own success status. kError (storage failed, e.g. the write lock of
// another process held too long) is 503 `unavailable` with Retry-After, since
// API.md allows no 5xx but 503.
HttpStatus HttpStatusOf(allocator::Outcome outcome);

}  // namespace server

#endif  // EDGEALLOC_SERVER_API_ERRORS_H_
