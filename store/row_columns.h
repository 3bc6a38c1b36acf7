#ifndef EDGEALLOC_STORE_ROW_COLUMNS_H_
#define EDGEALLOC_STORE_ROW_COLUMNS_H_

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>

#include "store/sql_text.h"
#include "store/types.h"

namespace store {

// A session row and a container row, described once: the columns of the
// containers table a statement returns for a Session or a ContainerInfo, in
// order, and the field each fills. Every engine makes its statements' column
// lists from these (SessionColumnList, ContainerColumnList) and reads their
// rows with ReadRow through a thin accessor of its own (store/sqlite/rows.h,
// store/postgres/rows.h). A column added here is added to every statement
// that reads the row; the rest of what a column takes (the schemas, the
// history's triggers, the API's replies) is the recipe of
// docs/architecture.md, and a test holds each of those to this description.

// One column: its name in the containers table, its name in the API's JSON
// replies, and the one field it fills.
template <typename Row>
struct Column {
  const char* name = "";
  // The field's key in the reply that shows the row (server/api/reply_bodies.h,
  // docs/openapi.json's schema of the row); "" for a column no reply shows.
  // Never left out in kSessionColumns and kContainerColumns (static_assert).
  const char* json = nullptr;
  std::string Row::*text = nullptr;  // a text; NULL reads as if_null
  const char* if_null = "";
  int64_t Row::*number = nullptr;                    // an integer
  bool Row::*flag = nullptr;                         // a boolean
  std::optional<std::string> Row::*maybe = nullptr;  // a text, or nothing for NULL
};

// A live session: the container it holds, and the session's own columns.
inline constexpr Column<Session> kSessionColumns[] = {
    {.name = "id", .json = "container_id", .text = &Session::container_id},
    {.name = "region", .json = "region", .text = &Session::region},
    {.name = "pool", .json = "pool", .text = &Session::pool},
    {.name = "generation", .json = "token", .number = &Session::token},
    {.name = "lease_expires_at_ms",
     .json = "lease_expires_at_ms",
     .number = &Session::lease_expires_at_ms},
    {.name = "data", .json = "data", .text = &Session::data},
    {.name = "labels", .json = "labels", .text = &Session::labels, .if_null = "{}"},
    {.name = "tenant", .json = "tenant", .text = &Session::tenant},
    {.name = "session_id", .json = "session_id", .text = &Session::session_id},
    {.name = "slot", .json = "slot", .number = &Session::slot},
};

// A container as GET /v1/containers/{id} shows it.
inline constexpr Column<ContainerInfo> kContainerColumns[] = {
    {.name = "id", .json = "id", .text = &ContainerInfo::id},
    {.name = "region", .json = "region", .text = &ContainerInfo::region},
    {.name = "pool", .json = "pool", .text = &ContainerInfo::pool},
    {.name = "status", .json = "status", .text = &ContainerInfo::status},
    {.name = "latency_ms", .json = "latency_ms", .number = &ContainerInfo::latency_ms},
    {.name = "last_heartbeat_ms",
     .json = "last_heartbeat_ms",
     .number = &ContainerInfo::last_heartbeat_ms},
    // The container's fencing generation: a reply shows it only as its
    // session's token.
    {.name = "generation", .json = "", .number = &ContainerInfo::generation},
    {.name = "drain_requested", .json = "drain_requested", .flag = &ContainerInfo::drain_requested},
    {.name = "drain_reported", .json = "drain_reported", .flag = &ContainerInfo::drain_reported},
    {.name = "data", .json = "data", .text = &ContainerInfo::data},
    // The holder's session, for a container of one slot that holds one (a
    // container of several shows slots_used; its sessions are in the
    // session list); a reply leaves it out when NULL. Read through the view
    // container_rows (both schemas), which takes it from the sessions table.
    {.name = "session_id", .json = "session_id", .maybe = &ContainerInfo::session_id},
    {.name = "slots", .json = "slots", .number = &ContainerInfo::slots},
    {.name = "slots_used", .json = "slots_used", .number = &ContainerInfo::slots_used},
    // What a claim's selector matches (NULL, as in rows from before it: none).
    {.name = "attributes",
     .json = "attributes",
     .text = &ContainerInfo::attributes,
     .if_null = "{}"},
};

// One line of the capacity counts (CapacityReader): a GROUP BY's row, which
// no reply shows as it is (no JSON names).
inline constexpr Column<CapacityCount> kCapacityColumns[] = {
    {.name = "region", .text = &CapacityCount::region},
    {.name = "pool", .text = &CapacityCount::pool},
    {.name = "status", .text = &CapacityCount::status},
    {.name = "count(*)", .number = &CapacityCount::count},
    {.name = "count(CASE WHEN drain_requested THEN 1 END)", .number = &CapacityCount::drained},
    {.name = "sum(slots)", .number = &CapacityCount::slots},
    {.name = "sum(slots_used)", .number = &CapacityCount::slots_used},
};

// How many columns a row has: a statement's own columns after the row start
// at this index.
inline constexpr int kSessionColumnCount = static_cast<int>(std::size(kSessionColumns));
inline constexpr int kContainerColumnCount = static_cast<int>(std::size(kContainerColumns));

// The index of the column `name` in `columns` (-1: none).
template <typename Row, size_t N>
constexpr int ColumnIndex(const Column<Row> (&columns)[N], std::string_view name) {
  for (size_t i = 0; i < N; ++i) {
    if (name == columns[i].name) return static_cast<int>(i);
  }
  return -1;
}

// Whether each column fills exactly one field.
template <typename Row, size_t N>
constexpr bool EachFillsOneField(const Column<Row> (&columns)[N]) {
  for (const Column<Row>& c : columns) {
    const int fields =
        (c.text != nullptr) + (c.number != nullptr) + (c.flag != nullptr) + (c.maybe != nullptr);
    if (fields != 1) return false;
  }
  return true;
}
static_assert(EachFillsOneField(kSessionColumns));
static_assert(EachFillsOneField(kContainerColumns));
static_assert(EachFillsOneField(kCapacityColumns));

// Whether each column says its JSON name, or "" for none.
template <typename Row, size_t N>
constexpr bool EachNamesItsJson(const Column<Row> (&columns)[N]) {
  for (const Column<Row>& c : columns) {
    if (c.json == nullptr) return false;
  }
  return true;
}
static_assert(EachNamesItsJson(kSessionColumns), "say each session column's JSON name");
static_assert(EachNamesItsJson(kContainerColumns), "say each container column's JSON name");

// The key a list pages by (Storage::ListSessions, ListContainers).
inline constexpr int kSessionKeyColumn = ColumnIndex(kSessionColumns, "session_id");
inline constexpr int kContainerKeyColumn = ColumnIndex(kContainerColumns, "id");

namespace row_columns_internal {

// What a list says of each column.
enum class Item { kName, kNull, kOldName };

template <const auto& kColumns, Item kItem>
constexpr size_t ItemSize(size_t i) {
  const std::string_view name(kColumns[i].name);
  switch (kItem) {
    case Item::kName:
      return name.size();
    case Item::kNull:
      return 4;
    case Item::kOldName:
      return 4 + name.size();
  }
  return 0;
}

// `kItem` for each column, separated by ", ": a column's name, NULL, or
// the name as a trigger's OLD row has it.
template <const auto& kColumns, Item kItem>
constexpr auto List() {
  constexpr size_t length = [] {
    size_t n = 0;
    for (size_t i = 0; i < std::size(kColumns); ++i) {
      n += (i > 0 ? 2 : 0) + ItemSize<kColumns, kItem>(i);
    }
    return n;
  }();
  SqlText<length + 1> out;
  size_t at = 0;
  auto append = [&](std::string_view piece) {
    for (char c : piece) out.text[at++] = c;
  };
  for (size_t i = 0; i < std::size(kColumns); ++i) {
    if (i > 0) append(", ");
    if (kItem == Item::kNull) append("NULL");
    if (kItem == Item::kOldName) append("OLD.");
    if (kItem != Item::kNull) append(kColumns[i].name);
  }
  return out;
}

}  // namespace row_columns_internal

// "id, region, ...": the row's columns for a SELECT or RETURNING, in order.
inline constexpr auto kSessionColumnList =
    row_columns_internal::List<kSessionColumns, row_columns_internal::Item::kName>();
inline constexpr auto kContainerColumnList =
    row_columns_internal::List<kContainerColumns, row_columns_internal::Item::kName>();
inline constexpr auto kCapacityColumnList =
    row_columns_internal::List<kCapacityColumns, row_columns_internal::Item::kName>();
// "NULL, NULL, ...": as many NULLs as the row has columns (a UNION's row
// that carries no row).
inline constexpr auto kSessionNullList =
    row_columns_internal::List<kSessionColumns, row_columns_internal::Item::kNull>();
inline constexpr auto kContainerNullList =
    row_columns_internal::List<kContainerColumns, row_columns_internal::Item::kNull>();
// "OLD.id, OLD.region, ...": the session as a trigger's OLD row holds it
// (the session history's triggers copy it so).
inline constexpr auto kSessionOldList =
    row_columns_internal::List<kSessionColumns, row_columns_internal::Item::kOldName>();

// The bytes of a row's texts (its text columns' values, NULL as the row
// reads it; numbers and flags count nothing): how big a list measures a row
// (store/list_page.h). Never more than the row's JSON in a reply, which holds
// each text with quotes, escapes and its key besides.
template <typename Row, size_t N>
size_t RowTextBytes(const Column<Row> (&columns)[N], const Row& row) {
  size_t bytes = 0;
  for (const Column<Row>& c : columns) {
    if (c.text != nullptr) bytes += (row.*c.text).size();
    if (c.maybe != nullptr && (row.*c.maybe).has_value()) bytes += (row.*c.maybe)->size();
  }
  return bytes;
}

namespace row_columns_internal {

// RowTextBytes as an SQL expression over the row's columns (PostgreSQL's
// octet_length: bytes, as the engine hands the texts over in UTF-8):
// "coalesce(octet_length(id), 0) + ...", a NULL counting its if_null.
inline constexpr std::string_view kBytesHead = "coalesce(octet_length(";
// Its tail's size: "), ", the if_null's size (one digit), ")".
inline constexpr std::string_view kBytesTail = "), 0)";

template <const auto& kColumns>
constexpr auto TextBytesSql() {
  constexpr size_t length = [] {
    size_t n = 0;
    for (size_t i = 0; i < std::size(kColumns); ++i) {
      if (kColumns[i].text == nullptr && kColumns[i].maybe == nullptr) continue;
      n += (n > 0 ? 3 : 0) + kBytesHead.size() + std::string_view(kColumns[i].name).size() +
           kBytesTail.size();
    }
    return n;
  }();
  SqlText<length + 1> out;
  size_t at = 0;
  auto append = [&](std::string_view piece) {
    for (char c : piece) out.text[at++] = c;
  };
  for (size_t i = 0; i < std::size(kColumns); ++i) {
    if (kColumns[i].text == nullptr && kColumns[i].maybe == nullptr) continue;
    const size_t if_null =
        kColumns[i].text != nullptr ? std::string_view(kColumns[i].if_null).size() : 0;
    if (if_null > 9) throw "an if_null of more than 9 bytes";  // one digit below
    if (at > 0) append(" + ");
    append(kBytesHead);
    append(kColumns[i].name);
    append("), ");
    out.text[at++] = static_cast<char>('0' + if_null);
    append(")");
  }
  return out;
}

}  // namespace row_columns_internal

// RowTextBytes of a session row or a container row, in SQL.
inline constexpr auto kSessionTextBytesSql = row_columns_internal::TextBytesSql<kSessionColumns>();
inline constexpr auto kContainerTextBytesSql =
    row_columns_internal::TextBytesSql<kContainerColumns>();

// Fills *row from a statement's row whose first columns are `columns`, in
// order. `cells` is an engine's accessor of the row: IsNull(i), Text(i),
// Int64(i) and Bool(i) of column i.
template <typename Row, size_t N, typename Cells>
void ReadRow(const Column<Row> (&columns)[N], const Cells& cells, Row* row) {
  for (size_t i = 0; i < N; ++i) {
    const Column<Row>& c = columns[i];
    const int at = static_cast<int>(i);
    if (c.number != nullptr) {
      row->*c.number = cells.Int64(at);
    } else if (c.flag != nullptr) {
      row->*c.flag = cells.Bool(at);
    } else if (c.maybe != nullptr) {
      if (cells.IsNull(at)) {
        (row->*c.maybe).reset();
      } else {
        row->*c.maybe = std::string(cells.Text(at));
      }
    } else {
      row->*c.text = cells.IsNull(at) ? std::string(c.if_null) : std::string(cells.Text(at));
    }
  }
}

}  // namespace store

#endif  // EDGEALLOC_STORE_ROW_COLUMNS_H_
