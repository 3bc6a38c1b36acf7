#ifndef EDGEALLOC_STORE_POSTGRES_PG_VALUES_H_
#define EDGEALLOC_STORE_POSTGRES_PG_VALUES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct pg_result;

namespace store {

// What goes to PostgreSQL and comes back, as text: a statement's parameters
// and the rows it returned. PgConn (pg.h) sends and receives them.

// One parameter of a statement, sent as text; nullopt is SQL NULL.
using PgParam = std::optional<std::string>;

// The rows a statement returned, freed with it. Columns are read as text
// (the statements ask for text results). Owned by one thread at a time.
class PgResult {
 public:
  PgResult() = default;
  explicit PgResult(pg_result* r);
  PgResult(PgResult&&) noexcept;
  PgResult& operator=(PgResult&&) noexcept;
  PgResult(const PgResult&) = delete;
  PgResult& operator=(const PgResult&) = delete;
  ~PgResult();

  int rows() const;
  // Rows an INSERT, UPDATE or DELETE changed.
  int64_t changed() const;
  bool IsNull(int row, int col) const;
  std::string_view Text(int row, int col) const;
  std::string String(int row, int col) const { return std::string(Text(row, col)); }
  int64_t Int64(int row, int col) const;

 private:
  pg_result* r_ = nullptr;
};

// The text of an int64, for a parameter.
inline PgParam P(int64_t v) { return std::to_string(v); }
inline PgParam P(std::string_view v) { return std::string(v); }
inline PgParam P(const char* v) { return std::string(v); }
PgParam P(double v);
// A text[]-style array literal of `items` (NULL elements for nullopt), for
// one parameter that carries a whole batch (unnest).
PgParam ArrayParam(const std::vector<PgParam>& items);
inline PgParam Null() { return std::nullopt; }
// `v`, or NULL when it is empty (a filter that matches anything).
inline PgParam OrNull(const std::string& v) { return v.empty() ? Null() : P(v); }
// ArrayParam of texts (none NULL): the keys or ids of a batch.
PgParam TextArrayParam(const std::vector<std::string>& items);

}  // namespace store

#endif  // EDGEALLOC_STORE_POSTGRES_PG_VALUES_H_
