#ifndef EDGEALLOC_TESTS_SUPPORT_BROKEN_READS_H_
#define EDGEALLOC_TESTS_SUPPORT_BROKEN_READS_H_

#include <memory>
#include <string>

#include "store/sqlite/shard.h"

namespace testing {

// A shard whose reads fail (its read pool opens `missing`, a file that is
// not there) while its writer is the real one, borrowed from `real` for the
// object's life: for the lookups that must treat a failed read as storage
// trouble, never as an unknown id.
struct BrokenReads {
  BrokenReads(store::Shard* real, const std::string& missing,
              const store::DbOptions& options = {})
      : real_(real) {
    shard.index = real->index;
    shard.path = real->path;
    shard.writer = std::move(real->writer);
    shard.reads = std::make_unique<store::ReadPool>(missing, options);
  }
  BrokenReads(const BrokenReads&) = delete;
  BrokenReads& operator=(const BrokenReads&) = delete;
  ~BrokenReads() { real_->writer = std::move(shard.writer); }

  store::Shard shard;

 private:
  store::Shard* real_;
};

}  // namespace testing

#endif  // EDGEALLOC_TESTS_SUPPORT_BROKEN_READS_H_
