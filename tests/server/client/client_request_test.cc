#include "server/client/client_request.h"

#include <catch2/catch.hpp>

#include <sstream>

namespace server {
namespace {

TEST_CASE("client commands: the exit code says what a script should do with the status") {
  CHECK(ExitCodeOf(200) == 0);
  CHECK(ExitCodeOf(201) == 0);
  CHECK(ExitCodeOf(204) == 0);
  CHECK(ExitCodeOf(409) == 3);  // a stale token: the session moved on
  CHECK(ExitCodeOf(410) == 3);  // the session ended
  CHECK(ExitCodeOf(400) == 4);
  CHECK(ExitCodeOf(404) == 4);
  CHECK(ExitCodeOf(429) == 4);
  CHECK(ExitCodeOf(503) == 5);
  CHECK(ExitCodeOf(0) == 5);  // no answer: retry later
}

TEST_CASE("client commands: a --server that is not http:// is a usage error") {
  std::ostringstream out, err;
  ClientOptions options;
  options.server = "https://example.org";
  CHECK(RunClientRequest(options, {"GET", "/healthz", ""}, out, err) == 2);
  CHECK_THAT(err.str(), Catch::Contains("--server"));
  CHECK(out.str().empty());
}

}  // namespace
}  // namespace server
