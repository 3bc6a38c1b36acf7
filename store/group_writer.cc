#include "store/group_writer.h"

#include <chrono>

namespace store {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

GroupWriterBase::GroupWriterBase(std::string name, GroupWriterOptions options)
    : name_(std::move(name)), options_(options) {}

GroupWriterBase::~GroupWriterBase() = default;

void GroupWriterBase::Start() {
  accepting_ = true;
  if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
}

void GroupWriterBase::Stop() {
  accepting_ = false;
  // A Submit that saw accepting_ before it flipped finishes its enqueue
  // before the writer is told to stop, so no accepted job is stranded.
  while (submitting_.load() != 0) std::this_thread::yield();
  if (!stop_.load() && options_.stop_timeout_ms >= 0) {
    stop_deadline_ns_ = NowNs() + options_.stop_timeout_ms * 1000000;
  }
  stop_ = true;
  if (!thread_.joinable()) return;
  Wake();  // an idle writer now
  thread_.join();
}

bool GroupWriterBase::Admit() {
  submitting_.fetch_add(1);
  // Reserve the slot first and give it back on refusal, so that concurrent
  // Submits cannot together pass the bound.
  bool ok = false;
  if (accepting_.load() && !down()) {
    ok = stats_.queued.fetch_add(1, std::memory_order_relaxed) < options_.max_queued_jobs;
    if (!ok) stats_.queued.fetch_sub(1, std::memory_order_relaxed);
  }
  if (!ok) {
    stats_.refused.fetch_add(1, std::memory_order_relaxed);
    submitting_.fetch_sub(1);
  }
  return ok;
}

Status GroupWriterBase::Refusal(const std::string& queue) const {
  if (down()) return Status::IOError("unavailable: this node cannot reach its database now; retry");
  return Status::Busy(queue + " is full or stopping; retry shortly");
}

bool GroupWriterBase::PastStopDeadline() const {
  return stop_.load() && options_.stop_timeout_ms >= 0 && NowNs() >= stop_deadline_ns_.load();
}

void GroupWriterBase::Finish(GroupJob* job, Status status) {
  (status.ok() ? stats_.jobs_ok : stats_.jobs_failed).fetch_add(1, std::memory_order_relaxed);
  try {
    job->Done(std::move(status));
  } catch (...) {
    // The outcome is decided and durable; a Done that throws has lost only
    // its own reply. The other jobs still get theirs, and the writer goes on.
    stats_.done_exceptions.fetch_add(1, std::memory_order_relaxed);
  }
  delete job;
}

}  // namespace store
