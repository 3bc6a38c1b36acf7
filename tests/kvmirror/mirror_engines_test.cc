// The Mirror over each storage engine's capacity readers
// (tests/support/engines.h).
#include "kvmirror/mirror.h"

#include <catch2/catch.hpp>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/engines.h"

TEST_CASE("mirror engines: the snapshot counts what the storage holds") {
  testing::Engine e(GENERATE(as<std::string>{}, "sqlite", "postgres"));
  std::vector<store::ContainerSpec> specs = {{"a", "weur", "chrome", 0, "{}"},
                                             {"b", "weur", "chrome", 0, "{}"},
                                             {"c", "wnam", "chrome", 0, "{}"}};
  std::promise<store::ContainerResult> p;
  auto f = p.get_future();
  e->Register(specs, [&p](store::ContainerResult r) { p.set_value(std::move(r)); });
  REQUIRE(f.get().outcome == store::Outcome::kOk);

  std::vector<std::unique_ptr<store::CapacityReader>> readers;
  for (int i = 0; i < e->partitions(); ++i) {
    readers.push_back(e->NewCapacityReader(i, kvmirror::kReaderBusyTimeoutMs));
  }
  kvmirror::Mirror mirror(std::move(readers), 1000);
  REQUIRE(mirror.RefreshNow().ok());
  auto snap = mirror.Current();
  REQUIRE(snap->Find("weur", "chrome") != nullptr);
  CHECK(snap->Find("weur", "chrome")->available == 2);
  CHECK(snap->Find("wnam", "chrome")->available == 1);
  CHECK(snap->totals().available == 3);
}
