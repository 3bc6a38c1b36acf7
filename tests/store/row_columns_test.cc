#include "store/row_columns.h"

#include <catch2/catch.hpp>
#include <iterator>
#include <map>
#include <string>
#include <string_view>

#include "store/sql_text.h"

namespace {

// A row's cells by column name, as an engine's accessor shows them by index;
// a cell not given is NULL. Written by name, so that a column added to a
// description changes nothing here.
template <typename Row, size_t N>
class FakeCells {
 public:
  FakeCells(const store::Column<Row> (&columns)[N], std::map<std::string, std::string> cells) {
    for (size_t i = 0; i < N; ++i) {
      auto it = cells.find(columns[i].name);
      if (it != cells.end()) cells_[static_cast<int>(i)] = it->second;
    }
  }
  bool IsNull(int col) const { return cells_.count(col) == 0; }
  // Both arms a view: `? "" : cells_.at(col)` made a std::string temporary
  // and returned a view of it (clang's -Wreturn-stack-address).
  std::string_view Text(int col) const {
    return IsNull(col) ? std::string_view() : std::string_view(cells_.at(col));
  }
  int64_t Int64(int col) const { return IsNull(col) ? 0 : std::stoll(cells_.at(col)); }
  bool Bool(int col) const { return !IsNull(col) && cells_.at(col) == "1"; }

 private:
  std::map<int, std::string> cells_;
};

template <typename Row, size_t N>
std::string Joined(const store::Column<Row> (&columns)[N], bool nulls) {
  std::string out;
  for (const auto& c : columns)
    out += (out.empty() ? "" : ", ") + std::string(nulls ? "NULL" : c.name);
  return out;
}

}  // namespace

TEST_CASE("row columns: the statements' column lists are the descriptions' names, in order") {
  CHECK(std::string(store::kSessionColumnList) == Joined(store::kSessionColumns, false));
  CHECK(std::string(store::kContainerColumnList) == Joined(store::kContainerColumns, false));
  CHECK(std::string(store::kCapacityColumnList) == Joined(store::kCapacityColumns, false));
  CHECK(std::string(store::kSessionNullList) == Joined(store::kSessionColumns, true));
  CHECK(std::string(store::kContainerNullList) == Joined(store::kContainerColumns, true));
  std::string old_row;
  for (const auto& c : store::kSessionColumns) {
    old_row += (old_row.empty() ? "OLD." : ", OLD.") + std::string(c.name);
  }
  CHECK(std::string(store::kSessionOldList) == old_row);
  CHECK(std::string(store::Params<'?', 1, 11>()) == "?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11");
  CHECK(std::string(store::Params<'$', 9, 3>()) == "$9, $10, $11");
  CHECK(std::string(store::Params<'?', 100, 1>()) == "?100");
  CHECK(store::kSessionColumnCount == static_cast<int>(std::size(store::kSessionColumns)));
  CHECK(std::string(store::kSessionColumns[store::kSessionKeyColumn].name) == "session_id");
  CHECK(std::string(store::kContainerColumns[store::kContainerKeyColumn].name) == "id");
  constexpr auto statement = store::Sql("SELECT ", store::kCapacityColumnList, " FROM t");
  CHECK(std::string(statement) ==
        "SELECT region, pool, status, count(*), count(CASE WHEN drain_requested THEN 1 END), "
        "sum(slots), sum(slots_used) FROM t");
  CHECK(std::string(statement.c_str()).size() == statement.size());
}

TEST_CASE("row columns: ReadRow fills each field from its column, NULLs as described") {
  const FakeCells session_cells(store::kSessionColumns,
                                {{"id", "c1"},
                                 {"region", "weur"},
                                 {"pool", "chrome"},
                                 {"generation", "7"},
                                 {"lease_expires_at_ms", "5000"},
                                 {"data", "{\"a\":1}"},
                                 {"session_id", "s-1"}});  // labels and tenant NULL
  store::Session s;
  store::ReadRow(store::kSessionColumns, session_cells, &s);
  CHECK(s.container_id == "c1");
  CHECK(s.region == "weur");
  CHECK(s.pool == "chrome");
  CHECK(s.token == 7);
  CHECK(s.lease_expires_at_ms == 5000);
  CHECK(s.data == "{\"a\":1}");
  CHECK(s.labels == "{}");
  CHECK(s.tenant.empty());
  CHECK(s.session_id == "s-1");

  const FakeCells container_cells(store::kContainerColumns,
                                  {{"id", "c1"},
                                   {"status", "picked"},
                                   {"latency_ms", "12"},
                                   {"last_heartbeat_ms", "99"},
                                   {"generation", "3"},
                                   {"drain_requested", "1"},
                                   {"drain_reported", "0"}});  // session_id NULL
  store::ContainerInfo c;
  c.session_id = "stale";
  store::ReadRow(store::kContainerColumns, container_cells, &c);
  CHECK(c.id == "c1");
  CHECK(c.status == "picked");
  CHECK(c.latency_ms == 12);
  CHECK(c.last_heartbeat_ms == 99);
  CHECK(c.generation == 3);
  CHECK(c.drain_requested);
  CHECK_FALSE(c.drain_reported);
  CHECK_FALSE(c.session_id.has_value());
}
