#include "server/admin.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "store/storage.h"
#include "tests/support/temp_dir.h"

namespace server {
namespace {

TEST_CASE("admin: register reads a file and writes its containers") {
  testing::TempDir dir;
  std::ofstream(dir.File("fleet.json"))
      << R"({"containers":[{"id":"a","region":"weur"},{"id":"b","region":"eeur"}]})";
  RegisterConfig cfg;
  cfg.db = dir.File("alloc.db");
  cfg.shards = 2;
  cfg.file = dir.File("fleet.json");
  std::istringstream in;
  std::ostringstream out, err;
  REQUIRE(RunRegister(cfg, in, out, err) == 0);
  CHECK(out.str() == "registered 2\n");

  store::StorageOptions options;
  options.db = cfg.db;
  options.shards = 2;
  std::unique_ptr<store::Storage> storage;
  REQUIRE(store::OpenStorage(options, &storage).ok());
  CHECK(storage->GetContainer("b").outcome == store::Outcome::kOk);
  CHECK(storage->GetContainer("b").container.status == "available");
}

TEST_CASE("admin: register from stdin refuses a bad body with exit code 2") {
  testing::TempDir dir;
  RegisterConfig cfg;
  cfg.db = dir.File("alloc.db");
  cfg.file = "-";
  std::istringstream in(R"({"containers":[{"region":"x"}]})");
  std::ostringstream out, err;
  CHECK(RunRegister(cfg, in, out, err) == 2);
  CHECK(err.str().find("containers[0].id") != std::string::npos);
  cfg.file = dir.File("missing.json");
  CHECK(RunRegister(cfg, in, out, err) == 2);
}

}  // namespace
}  // namespace server
