#include "store/row_columns.h"

#include <catch2/catch.hpp>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "store/sql_text.h"

namespace {

// A row of cells by column index, as an engine's accessor shows them; an
// absent cell is NULL.
struct FakeCells {
  std::map<int, std::string> cells;
  bool IsNull(int col) const { return cells.count(col) == 0; }
  std::string_view Text(int col) const { return cells.at(col); }
  int64_t Int64(int col) const { return std::stoll(cells.at(col)); }
  bool Bool(int col) const { return cells.at(col) == "1"; }
};

}  // namespace

TEST_CASE("row columns: the statements' column lists come from the descriptions, in order") {
  CHECK(std::string(store::kSessionColumnList) ==
        "id, region, pool, generation, lease_expires_at_ms, data, labels, tenant, session_id");
  CHECK(std::string(store::kContainerColumnList) ==
        "id, region, pool, status, latency_ms, last_heartbeat_ms, generation, drain_requested, "
        "data, session_id");
  CHECK(std::string(store::kSessionNullList) ==
        "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL");
  CHECK(store::kSessionColumnCount == 9);
  CHECK(store::kSessionKeyColumn == 8);
  CHECK(store::kContainerKeyColumn == 0);
  constexpr auto statement = store::Sql("SELECT ", store::kCapacityColumnList, " FROM t");
  CHECK(std::string(statement) == "SELECT region, pool, status, count(*) FROM t");
  CHECK(std::string(statement.c_str()).size() == statement.size());
}

TEST_CASE("row columns: ReadRow fills each field from its column, NULLs as described") {
  FakeCells cells;
  cells.cells = {{0, "c1"}, {1, "weur"}, {2, "chrome"}, {3, "7"}, {4, "5000"},
                 {5, "{\"a\":1}"}, {8, "s-1"}};  // labels and tenant NULL
  store::Session s;
  store::ReadRow(store::kSessionColumns, cells, &s);
  CHECK(s.container_id == "c1");
  CHECK(s.region == "weur");
  CHECK(s.pool == "chrome");
  CHECK(s.token == 7);
  CHECK(s.lease_expires_at_ms == 5000);
  CHECK(s.data == "{\"a\":1}");
  CHECK(s.labels == "{}");
  CHECK(s.tenant.empty());
  CHECK(s.session_id == "s-1");

  FakeCells container;
  container.cells = {{0, "c1"}, {1, "weur"}, {2, "chrome"}, {3, "picked"}, {4, "12"},
                     {5, "99"}, {6, "3"}, {7, "1"}, {8, "{}"}};  // session_id NULL
  store::ContainerInfo c;
  c.session_id = "stale";
  store::ReadRow(store::kContainerColumns, container, &c);
  CHECK(c.status == "picked");
  CHECK(c.latency_ms == 12);
  CHECK(c.last_heartbeat_ms == 99);
  CHECK(c.generation == 3);
  CHECK(c.drain_requested);
  CHECK_FALSE(c.session_id.has_value());
}
