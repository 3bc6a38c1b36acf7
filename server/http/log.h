#ifndef EDGEALLOC_SERVER_HTTP_LOG_H_
#define EDGEALLOC_SERVER_HTTP_LOG_H_

#include <string_view>

namespace server {

// Writes one line to stderr in one call, so lines of threads do not mix.
// Safe from any thread. Never pass keys or request bodies.
void LogLine(std::string_view line);

}  // namespace server

#endif  // EDGEALLOC_SERVER_HTTP_LOG_H_
