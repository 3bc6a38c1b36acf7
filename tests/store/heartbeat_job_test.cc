#include "store/heartbeat_job.h"

#include <catch2/catch.hpp>
#include <memory>
#include <new>
#include <vector>

namespace {

// A writer job interface of no engine: WriteHeartbeatBatch asks only Done.
class AnyJob {
 public:
  virtual ~AnyJob() = default;
  virtual void Done(store::Status status) = 0;
};

}  // namespace

// WriteHeartbeatBatch runs on a heartbeat lane's thread, where an exception
// would end the process: one thrown while the batch is handed to the writer
// (bad_alloc) fails the batch instead, and the lane retries it.
TEST_CASE("heartbeat job: a batch that cannot be queued for a throw fails, and nothing ends") {
  const std::vector<store::HeartbeatRow> rows(3);
  store::HeartbeatWriteResult result;
  bool refused = false;
  const store::Status s = store::WriteHeartbeatBatch<store::HeartbeatJob<AnyJob>>(
      rows, &result,
      [](std::unique_ptr<store::HeartbeatJob<AnyJob>>) -> bool { throw std::bad_alloc(); },
      [&] {
        refused = true;
        return store::Status::Busy("refused");
      });
  CHECK(s.IsIOError());
  CHECK_THAT(s.message(), Catch::Contains("could not be queued"));
  CHECK_FALSE(refused);
}
