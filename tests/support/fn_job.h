#ifndef EDGEALLOC_TESTS_SUPPORT_FN_JOB_H_
#define EDGEALLOC_TESTS_SUPPORT_FN_JOB_H_

#include <functional>
#include <utility>

#include "store/sqlite/writer.h"

namespace testing {

// A store::WriteJob made of two functions, for tests of the Writer.
class FnJob : public store::WriteJob {
 public:
  FnJob(std::function<store::Status(store::Db*)> apply, std::function<void(store::Status)> done,
        bool solo = false, bool savepoint = true)
      : apply_(std::move(apply)), done_(std::move(done)), solo_(solo), savepoint_(savepoint) {}
  store::Status Apply(store::Db* db) override { return apply_(db); }
  void Done(store::Status status) override { done_(std::move(status)); }
  bool solo() const override { return solo_; }
  bool needs_savepoint() const override { return savepoint_; }

 private:
  std::function<store::Status(store::Db*)> apply_;
  std::function<void(store::Status)> done_;
  bool solo_;
  bool savepoint_;
};

}  // namespace testing

#endif  // EDGEALLOC_TESTS_SUPPORT_FN_JOB_H_
