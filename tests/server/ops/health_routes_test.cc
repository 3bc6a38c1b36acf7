#include "server/ops/health_routes.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <memory>
#include <string>

#include "tests/server/service_fixture.h"
#include "tests/server/storage_double.h"

namespace server {
namespace {

using fixture::LiveService;
using fixture::StorageDouble;
using nlohmann::json;
using testing::HttpReply;

TEST_CASE("readyz: 503 not_ready while any writer cannot write, 200 again once it can") {
  StorageDouble* storage = nullptr;
  LiveService t({}, "", [&storage](std::unique_ptr<store::Storage> real) {
    auto d = std::make_unique<StorageDouble>(std::move(real));
    storage = d.get();
    return std::unique_ptr<store::Storage>(std::move(d));
  });
  testing::HttpClient c = t.Client();
  CHECK(c.Get("/readyz").status == 200);
  storage->SetFailing(storage->partitions() - 1, true);
  HttpReply r = c.Get("/readyz");
  CHECK(r.status == 503);  // before the fix: 200 while the database was unreachable
  CHECK(r.ErrorCode() == "not_ready");
  CHECK(r.Header("retry-after") == "1");
  CHECK(json::parse(r.body)["error"]["message"].get<std::string>().find("cannot be written") !=
        std::string::npos);
  CHECK(c.Get("/healthz").status == 200);  // the process still serves
  storage->SetFailing(storage->partitions() - 1, false);
  CHECK(c.Get("/readyz").status == 200);
}

}  // namespace
}  // namespace server
