#ifndef EDGEALLOC_TESTS_STORE_HISTORY_COLUMNS_H_
#define EDGEALLOC_TESTS_STORE_HISTORY_COLUMNS_H_

// Holds an engine's session history to the session's description
// (store/row_columns.h kSessionColumns): its table has each column, and
// each trigger's insert copies each from the OLD row. Both engines' tests
// read their schema from the database (not from the source) and ask these.

#include <cctype>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "store/row_columns.h"

namespace testing {

// The described session columns that `table_columns` (names separated by
// blanks) lacks.
inline std::vector<std::string> SessionColumnsNotIn(const std::string& table_columns) {
  std::set<std::string> have;
  std::istringstream words(table_columns);
  for (std::string w; words >> w;) have.insert(w);
  std::vector<std::string> missing;
  for (const auto& c : store::kSessionColumns) {
    if (have.count(c.name) == 0) missing.push_back(c.name);
  }
  return missing;
}

namespace history_columns_internal {

inline std::string Trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return std::string(s);
}

// The items of the parenthesized list that opens at `open` (sql[open] is
// '('), split at its own commas (not those of a nested CASE or CAST).
inline std::vector<std::string> ListAt(std::string_view sql, size_t open) {
  std::vector<std::string> items;
  int depth = 0;
  size_t start = open + 1;
  for (size_t i = open; i < sql.size(); ++i) {
    if (sql[i] == '(') ++depth;
    if (sql[i] == ')' && --depth == 0) {
      items.push_back(Trimmed(sql.substr(start, i - start)));
      return items;
    }
    if (sql[i] == ',' && depth == 1) {
      items.push_back(Trimmed(sql.substr(start, i - start)));
      start = i + 1;
    }
  }
  return {};  // not closed
}

}  // namespace history_columns_internal

// The items of the select list that starts at `from` (after SELECT) and
// ends at the first " FROM " outside parentheses, split at its own commas.
inline std::vector<std::string> SelectListAt(std::string_view sql, size_t from) {
  std::vector<std::string> items;
  int depth = 0;
  size_t start = from;
  for (size_t i = from; i < sql.size(); ++i) {
    if (sql[i] == '(') ++depth;
    if (sql[i] == ')') --depth;
    const bool end = depth == 0 && sql.substr(i, 6) == " FROM " ;
    if (end || (sql[i] == ',' && depth == 0)) {
      items.push_back(history_columns_internal::Trimmed(sql.substr(start, i - start)));
      start = i + 1;
      if (end) return items;
    }
  }
  return {};
}

// What is wrong with the insert into session_history in `sql` (a trigger's
// text, or its function's): each described session column must be in its
// column list, copied at the same place of its VALUES or SELECT list from
// the row of that name (OLD.<column> of the container, or s.<column> of the
// session, in a trigger that copies the sessions of a container). Empty
// when nothing is.
inline std::vector<std::string> HistoryInsertProblems(std::string_view sql) {
  using history_columns_internal::ListAt;
  const size_t insert = sql.find("INTO session_history");
  if (insert == std::string_view::npos) return {"no INSERT INTO session_history"};
  const size_t columns_open = sql.find('(', insert);
  if (columns_open == std::string_view::npos) return {"no column list"};
  const size_t list_end = sql.find(')', columns_open);
  const size_t values = sql.find("VALUES", list_end);
  const size_t select = sql.find("SELECT", list_end);
  if (values == std::string_view::npos && select == std::string_view::npos) {
    return {"no VALUES or SELECT"};
  }
  const std::vector<std::string> columns = ListAt(sql, columns_open);
  const std::vector<std::string> copied =
      values < select ? ListAt(sql, sql.find('(', values)) : SelectListAt(sql, select + 6);
  std::vector<std::string> problems;
  if (columns.size() != copied.size()) problems.push_back("columns and VALUES differ in length");
  for (const auto& c : store::kSessionColumns) {
    size_t at = 0;
    while (at < columns.size() && columns[at] != c.name) ++at;
    if (at == columns.size()) {
      problems.push_back(std::string(c.name) + " is not in the insert's columns");
    } else if (at >= copied.size() || (copied[at] != "OLD." + std::string(c.name) &&
                                       copied[at] != "s." + std::string(c.name))) {
      problems.push_back(std::string(c.name) + " is not copied from OLD." + c.name + " or s." +
                         c.name);
    }
  }
  return problems;
}

}  // namespace testing

#endif  // EDGEALLOC_TESTS_STORE_HISTORY_COLUMNS_H_
