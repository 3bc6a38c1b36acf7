// RegionBackups' parts alone: the backup pairs and their cycle check, the
// hysteresis of a region's switch, the order a claim's regions are tried in
// and the served_by of the region that served it.

#include "allocator/region_backups.h"

#include <catch2/catch.hpp>
#include <map>
#include <string>

namespace {

using allocator::AddBackupRegion;
using allocator::BackupCycle;
using allocator::BackupMap;
using allocator::LagHysteresis;
using allocator::RegionBackups;
using allocator::ServedBy;

BackupMap Map(std::initializer_list<const char*> pairs) {
  BackupMap map;
  for (const char* pair : pairs) REQUIRE(AddBackupRegion(pair, &map).empty());
  return map;
}

}  // namespace

TEST_CASE("backup regions: REGION=BACKUP pairs, each region one backup") {
  BackupMap map;
  CHECK(AddBackupRegion("weur=eeur", &map).empty());
  CHECK(AddBackupRegion("weur=eeur", &map).empty());  // the same again: no harm
  CHECK(map == BackupMap{{"weur", "eeur"}});
  CHECK(AddBackupRegion("weur=wnam", &map) == "region weur is given two backups, eeur and wnam");
  CHECK(AddBackupRegion("weur", &map).find("not REGION=BACKUP") != std::string::npos);
  CHECK(AddBackupRegion("=eeur", &map).find("not REGION=BACKUP") != std::string::npos);
  CHECK(AddBackupRegion("a=b=c", &map).find("not REGION=BACKUP") != std::string::npos);
  CHECK(AddBackupRegion("a=a", &map) == "region a cannot be its own backup");
}

TEST_CASE("backup regions: a cycle of backups is found, a chain is not one") {
  CHECK(BackupCycle({}).empty());
  CHECK(BackupCycle(Map({"a=b", "b=c", "c=d"})).empty());
  CHECK(BackupCycle(Map({"a=b", "c=b"})).empty());
  CHECK(BackupCycle(Map({"a=b", "b=a"})) == "a -> b -> a");
  CHECK(BackupCycle(Map({"a=b", "b=c", "c=a"})) == "a -> b -> c -> a");
  // A chain into a cycle: the cycle is named from one of its own regions.
  CHECK(BackupCycle(Map({"x=a", "a=b", "b=a"})) == "a -> b -> a");
}

TEST_CASE("lag hysteresis: on past the bound, home only after the bound's time at most half") {
  LagHysteresis h(1000);
  CHECK_FALSE(h.Update(1000, 0));  // at the bound: not past it
  CHECK(h.Update(1001, 10));
  CHECK(h.since_ms() == 10);
  // Under the bound but above half: still on the backup, however long.
  CHECK(h.Update(900, 20));
  CHECK(h.Update(600, 5000));
  // At most half: calm from 5100; a sample above half starts it again.
  CHECK(h.Update(500, 5100));
  CHECK(h.Update(100, 6000));
  CHECK(h.Update(501, 6050));
  CHECK(h.Update(0, 6100));
  CHECK(h.Update(0, 7099));
  CHECK_FALSE(h.Update(0, 7100));  // 1000 ms calm
  CHECK(h.since_ms() == 0);
  // Flapping about the bound switches once, not at each crossing.
  int switches = 0;
  bool was = false;
  for (int i = 0; i < 100; ++i) {
    const bool now = h.Update(i % 2 == 0 ? 1200 : 800, 8000 + i * 10);
    switches += now && !was ? 1 : 0;
    was = now;
  }
  CHECK(switches == 1);
}

TEST_CASE("backup regions: a claim tries its region, its fallbacks, then its backup, and a "
          "region past the bound is replaced by its backup") {
  RegionBackups backups(Map({"weur=eeur", "eeur=enam"}), 100);
  std::map<std::string, int64_t> lag;
  backups.SetLag([&lag](const std::string& region) { return lag[region]; });
  store::ClaimRequest req;
  req.region = "weur";
  req.fallback_regions = {"wnam"};
  backups.AddBackup(&req);
  CHECK(req.fallback_regions == std::vector<std::string>{"wnam", "eeur"});
  backups.AddBackup(&req);  // named already: not twice
  CHECK(req.fallback_regions.size() == 2);

  store::ClaimRequest routed = backups.Routed(req);
  CHECK(routed.region == "weur");
  CHECK(routed.fallback_regions == std::vector<std::string>{"wnam", "eeur"});

  lag["weur"] = 101;
  routed = backups.Routed(req);
  CHECK(routed.region == "eeur");  // the backup first, weur not at all
  CHECK(routed.fallback_regions == std::vector<std::string>{"wnam"});

  lag["eeur"] = 500;  // the backup lags too: its own backup
  routed = backups.Routed(req);
  CHECK(routed.region == "enam");
  CHECK(routed.fallback_regions == std::vector<std::string>{"wnam"});

  CHECK(backups.ServedByOf("weur", "weur") == ServedBy::kHome);
  CHECK(backups.ServedByOf("weur", "eeur") == ServedBy::kBackup);
  CHECK(backups.ServedByOf("weur", "enam") == ServedBy::kBackup);
  CHECK(backups.ServedByOf("weur", "wnam") == ServedBy::kFallback);
  CHECK(backups.ServedByOf("wnam", "eeur") == ServedBy::kFallback);
}
