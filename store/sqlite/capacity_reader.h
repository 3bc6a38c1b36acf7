#ifndef EDGEALLOC_STORE_SQLITE_CAPACITY_READER_H_
#define EDGEALLOC_STORE_SQLITE_CAPACITY_READER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "store/sqlite/db.h"
#include "store/storage.h"

namespace store {

// The capacity counts of one SQLite file (CapacityReader's contract), read
// on a read-only connection of its own, opened at the first Read and again
// after an error. Two statements a read in one read transaction: the counts,
// answered from the covering index containers_counts without touching the
// table, and the drained ids, from the partial index that holds only them;
// the transaction ends as soon as their last row is read, so none stays open
// between reads to hold the WAL back from checkpointing. PRAGMA data_version
// tells an unchanged file.
class SqliteCapacityReader : public CapacityReader {
 public:
  SqliteCapacityReader(std::string path, int busy_timeout_ms);
  Status Read(CapacityRead* read, bool* unchanged) override;
  std::string name() const override { return path_; }

 private:
  Status ReadOpen(CapacityRead* read, bool* unchanged);
  Status ReadRows(CapacityRead* read);

  const std::string path_;
  const int busy_timeout_ms_;
  std::unique_ptr<Db> db_;
  // data_version when the last successful read began; -1: none to compare.
  int64_t data_version_ = -1;
};

}  // namespace store

#endif  // EDGEALLOC_STORE_SQLITE_CAPACITY_READER_H_
