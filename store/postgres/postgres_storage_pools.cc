// PostgresStorage: what waiting claims ask of pools (Storage::ProbePools):
// one statement on a reader connection, never the write path.
#include <string>
#include <vector>

#include "store/postgres/container_sql.h"
#include "store/postgres/pg.h"
#include "store/postgres/postgres_storage.h"

namespace store {

Status PostgresStorage::ProbePools(std::vector<PoolProbe>* pools) {
  if (pools->empty()) return Status::Ok();
  std::vector<std::string> regions, names;
  regions.reserve(pools->size());
  names.reserve(pools->size());
  for (const PoolProbe& p : *pools) {
    regions.push_back(p.region);
    names.push_back(p.pool);
  }
  return WithReader([&](PgConn* conn) {
    PgResult r;
    RETURN_IF_ERROR(conn->Run(pgsql::kProbePools,
                              {TextArrayParam(regions), TextArrayParam(names),
                               P(policy_.dead_after_ms)},
                              &r));
    if (r.rows() != static_cast<int>(pools->size())) {
      return Status::IOError("probing pools: " + std::to_string(r.rows()) + " rows for " +
                           std::to_string(pools->size()) + " pools");
    }
    for (int i = 0; i < r.rows(); ++i) {
      (*pools)[static_cast<size_t>(i)].registered = r.Text(i, 0) == "t";
      (*pools)[static_cast<size_t>(i)].claimable = r.Text(i, 1) == "t";
    }
    return Status::Ok();
  });
}

}  // namespace store
