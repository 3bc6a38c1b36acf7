#ifndef EDGEALLOC_STORE_SQLITE_SHARD_H_
#define EDGEALLOC_STORE_SQLITE_SHARD_H_

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/idle_stack.h"
#include "store/sqlite/claim_selector.h"
#include "store/sqlite/db.h"
#include "store/sqlite/shard_map.h"
#include "store/status.h"
#include "store/sqlite/writer.h"

namespace store {

// A ReadPool hands out read-only connections of one file for exact reads (a
// session's own state) that must not queue behind the writer. In WAL mode a
// reader never blocks the writer nor waits for it. Safe from any thread.
class ReadPool {
 public:
  ReadPool(std::string path, DbOptions options);
  // Runs `fn` on a pooled read-only connection, opening one if none is free.
  // Returns fn's Status, or the open error.
  Status With(const std::function<Status(Db*)>& fn);

 private:
  std::string path_;
  DbOptions options_;
  base::IdleStack<Db> free_;
};

// A Shard is one database file with its one Writer and its readers.
struct Shard {
  int index = 0;
  std::string path;
  std::unique_ptr<Writer> writer;
  std::unique_ptr<ReadPool> reads;
  // Which selector term drives a claim's walk here (its writer's only).
  DrivingCounts driving_counts;
};

// Opens every shard of `map`: creates and migrates each file, checks that it
// was made for this layout ("i/N" in meta; a file of another layout is
// refused with InvalidArgument, since its regions would be looked for in the
// wrong file), and starts its writer. Returns the first error; *out is set
// only on success.
Status OpenShards(const ShardMap& map, const DbOptions& options, WriterOptions writer_options,
                  std::vector<std::unique_ptr<Shard>>* out);

// Opens one writable, migrated connection of shard `i` (for tools and tests
// that write without a Writer, e.g. the admin CLI). Same checks as OpenShards.
Status OpenShardDb(const ShardMap& map, int i, const DbOptions& options, std::unique_ptr<Db>* out);

}  // namespace store

#endif  // EDGEALLOC_STORE_SQLITE_SHARD_H_
