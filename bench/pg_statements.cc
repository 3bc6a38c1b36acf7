// Writes the PostgreSQL engine's claim and release statements, as the server
// sends them, into DIR/pg_claim.sql and DIR/pg_release.sql: bench/postgres.sh
// runs them through pgbench, so that its ceiling is always the product's
// statements, never a copy that drifts from them. The build runs it (target
// pg_bench_sql, a dependency of http_load).
//
//   pg_statements DIR

#include <cstdio>
#include <fstream>
#include <string>

#include "store/postgres/session_sql.h"

namespace {

bool Write(const std::string& path, const char* text) {
  std::ofstream out(path);
  out << text;
  out.close();
  if (!out) std::fprintf(stderr, "pg_statements: cannot write %s\n", path.c_str());
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: pg_statements DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  const bool ok = Write(dir + "/pg_claim.sql", store::pgsql::kClaimFittest) &&
                  Write(dir + "/pg_release.sql", store::pgsql::kRelease);
  return ok ? 0 : 1;
}
