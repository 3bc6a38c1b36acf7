#ifndef EDGEALLOC_STORE_POSTGRES_CAPACITY_READER_H_
#define EDGEALLOC_STORE_POSTGRES_CAPACITY_READER_H_

#include <memory>
#include <string>
#include <vector>

#include "store/postgres/pg.h"
#include "store/storage.h"

namespace store {

// The capacity counts of the database, and its drained ids, read on a
// connection of its own by partition 0's reader (one GROUP BY and one walk
// of the drained rows' index a refresh a node, in one snapshot); the other
// partitions' readers read nothing, so the mirror's sum is the database's.
class PgCapacityReader : public CapacityReader {
 public:
  PgCapacityReader(std::string uri, int busy_timeout_ms, bool counts_all,
                   std::shared_ptr<PgFence> fence)
      : uri_(std::move(uri)),
        busy_timeout_ms_(busy_timeout_ms),
        counts_all_(counts_all),
        fence_(std::move(fence)) {}
  Status Read(CapacityRead* read, bool* unchanged) override;
  std::string name() const override { return "PostgreSQL"; }

 private:
  const std::string uri_;
  const int busy_timeout_ms_;
  const bool counts_all_;
  const std::shared_ptr<PgFence> fence_;
  std::unique_ptr<PgConn> conn_;
};

}  // namespace store

#endif  // EDGEALLOC_STORE_POSTGRES_CAPACITY_READER_H_
