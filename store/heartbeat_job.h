#ifndef EDGEALLOC_STORE_HEARTBEAT_JOB_H_
#define EDGEALLOC_STORE_HEARTBEAT_JOB_H_

#include <cstddef>
#include <exception>
#include <future>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "store/status.h"
#include "store/types.h"

namespace store {

// The statements a heartbeat row is written by, in every engine (their
// why: store/sqlite/heartbeat_sql.h): the plain one (liveness, and a report
// of the state the row already has), the report one (a state change), and
// the stale one (liveness alone: an older report, or no such container).
enum class HeartbeatStatement { kPlain, kReport, kStale };

// A batch of heartbeat rows as one job of an engine's writer (`WriterJob`:
// its job interface, whose Done(Status) this answers). The caller waits for
// Done (WriteHeartbeatBatch), so the pointers outlive the job.
template <typename WriterJob>
class HeartbeatJob : public WriterJob {
 public:
  HeartbeatJob(const std::vector<HeartbeatRow>* rows, HeartbeatWriteResult* result,
               std::promise<Status>* done)
      : rows_(rows), result_(result), done_(done) {}
  void Done(Status status) override { done_->set_value(std::move(status)); }

 protected:
  // Writes row i through `run(statement, &changed)`, which runs one
  // statement for the row: plain first (unless `skip_plain`: the row is
  // known to fail its test), a state it did not find held through the
  // report one, then liveness alone; and counts the outcome.
  template <typename Run>
  Status WriteRow(size_t i, bool skip_plain, Run run) {
    const HeartbeatRow& row = (*rows_)[i];
    bool changed = false;
    if (!skip_plain) RETURN_IF_ERROR(run(HeartbeatStatement::kPlain, &changed));
    if (!changed && row.state != ReportedState::kNone) {
      RETURN_IF_ERROR(run(HeartbeatStatement::kReport, &changed));
    }
    if (changed) {
      ++result_->written;
      return Status::Ok();
    }
    RETURN_IF_ERROR(run(HeartbeatStatement::kStale, &changed));
    if (changed) {
      ++result_->written;
      ++result_->stale;
    } else {
      result_->unknown.push_back(i);
    }
    return Status::Ok();
  }

  const std::vector<HeartbeatRow>* rows_;
  HeartbeatWriteResult* result_;
  std::promise<Status>* done_;
};

// Hands `rows` to a writer as one Job (a HeartbeatJob) through
// `submit(std::unique_ptr<Job>)`, false if the writer refused it, and waits
// for the durable outcome; `refused()` is the answer to a refusal. Runs on a
// heartbeat lane's thread: what is thrown before the writer took the job
// (bad_alloc making it) fails the batch, which the lane retries, instead of
// ending the process. Once taken, the writer answers it, whatever throws.
template <typename Job, typename Submit, typename Refused>
Status WriteHeartbeatBatch(const std::vector<HeartbeatRow>& rows, HeartbeatWriteResult* result,
                           Submit submit, Refused refused) {
  std::promise<Status> done;
  std::future<Status> outcome = done.get_future();
  try {
    if (!submit(std::make_unique<Job>(&rows, result, &done))) return refused();
  } catch (const std::exception& e) {
    return Status::IOError(std::string("a heartbeat batch could not be queued: ") + e.what());
  }
  return outcome.get();
}

}  // namespace store

#endif  // EDGEALLOC_STORE_HEARTBEAT_JOB_H_
