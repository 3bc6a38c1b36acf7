#include "server/http/log.h"

#include <cstdio>
#include <string>

namespace server {

void LogLine(std::string_view line) {
  std::string out(line);
  out.push_back('\n');
  std::fwrite(out.data(), 1, out.size(), stderr);
  std::fflush(stderr);
}

}  // namespace server
