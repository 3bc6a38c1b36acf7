#include "store/postgres/pg_values.h"

#include <libpq-fe.h>

#include <cstdio>
#include <cstdlib>
#include <utility>

namespace store {

PgParam P(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return std::string(buf);
}

PgParam ArrayParam(const std::vector<PgParam>& items) {
  std::string out = "{";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out.push_back(',');
    if (!items[i]) {
      out += "NULL";
      continue;
    }
    out.push_back('"');
    for (char c : *items[i]) {
      if (c == '"' || c == '\\') out.push_back('\\');
      out.push_back(c);
    }
    out.push_back('"');
  }
  out.push_back('}');
  return out;
}

PgParam TextArrayParam(const std::vector<std::string>& items) {
  std::vector<PgParam> params;
  params.reserve(items.size());
  for (const std::string& item : items) params.push_back(P(item));
  return ArrayParam(params);
}

PgResult::PgResult(pg_result* r) : r_(r) {}
PgResult::PgResult(PgResult&& o) noexcept : r_(std::exchange(o.r_, nullptr)) {}
PgResult& PgResult::operator=(PgResult&& o) noexcept {
  if (this != &o) {
    if (r_ != nullptr) PQclear(r_);
    r_ = std::exchange(o.r_, nullptr);
  }
  return *this;
}
PgResult::~PgResult() {
  if (r_ != nullptr) PQclear(r_);
}
int PgResult::rows() const { return r_ == nullptr ? 0 : PQntuples(r_); }
int64_t PgResult::changed() const {
  const char* n = r_ == nullptr ? "" : PQcmdTuples(r_);
  return *n == '\0' ? 0 : std::strtoll(n, nullptr, 10);
}
bool PgResult::IsNull(int row, int col) const { return PQgetisnull(r_, row, col) != 0; }
std::string_view PgResult::Text(int row, int col) const {
  return std::string_view(PQgetvalue(r_, row, col), static_cast<size_t>(PQgetlength(r_, row, col)));
}
int64_t PgResult::Int64(int row, int col) const {
  return std::strtoll(PQgetvalue(r_, row, col), nullptr, 10);
}

}  // namespace store
