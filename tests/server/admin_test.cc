#include "server/admin.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "allocator/registry.h"
#include "store/shard.h"
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

  store::ShardMap map(cfg.db, 2);
  std::vector<std::unique_ptr<store::Shard>> shards;
  REQUIRE(store::OpenShards(map, {}, {}, &shards).ok());
  std::vector<store::Shard*> raw;
  for (auto& s : shards) raw.push_back(s.get());
  allocator::Registry registry(raw, map);
  CHECK(registry.Get("b").outcome == allocator::Outcome::kOk);
  CHECK(registry.Get("b").container.status == "available");
  for (auto& s : shards) s->writer->Stop();
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
