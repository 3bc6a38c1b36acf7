#ifndef EDGEALLOC_STORE_GROUP_WRITER_IMPL_H_
#define EDGEALLOC_STORE_GROUP_WRITER_IMPL_H_

// The members of GroupWriter<Job> (store/group_writer.h). Included only by
// the file that instantiates the core for a job type (each engine's writer:
// `template class GroupWriter<WriteJob>;`), so the queue's header stays out
// of everyone else's.

#include <chrono>
#include <exception>

#include "concurrentqueue/blockingconcurrentqueue.h"
#include "store/group_writer.h"

namespace store {

// Lock-free for submitters: a Submit is one enqueue, and the writer takes a
// whole group in one dequeue. A null entry only wakes the writer (Stop).
template <typename Job>
struct GroupWriter<Job>::Queue {
  moodycamel::BlockingConcurrentQueue<Job*> q;
};

template <typename Job>
GroupWriter<Job>::GroupWriter(std::string name, GroupWriterOptions options)
    : GroupWriterBase(std::move(name), options), queue_(new Queue) {}

template <typename Job>
GroupWriter<Job>::~GroupWriter() = default;

template <typename Job>
void GroupWriter<Job>::Wake() {
  queue_->q.enqueue(nullptr);
}

template <typename Job>
bool GroupWriter<Job>::Submit(std::unique_ptr<Job>&& job) {
  if (!Admit()) return false;
  queue_->q.enqueue(job.get());
  job.release();  // the writer's now
  Admitted();
  return true;
}

template <typename Job>
void GroupWriter<Job>::Loop() {
  std::vector<Job*> bulk(static_cast<size_t>(options().max_group_jobs));
  auto last_active = std::chrono::steady_clock::now();
  for (;;) {
    size_t n = 0;
    if (stopping()) {
      // stop_ is set only after the last Submit finished: empty is done.
      n = queue_->q.try_dequeue_bulk(bulk.data(), bulk.size());
      if (n == 0) return;
    } else if (probe_interval_ms() < 0) {
      n = queue_->q.wait_dequeue_bulk(bulk.data(), bulk.size());
    } else {
      const auto due = last_active + std::chrono::milliseconds(probe_interval_ms());
      const auto now = std::chrono::steady_clock::now();
      if (now >= due) {
        (void)Catching("the idle probe", [this] {
          Probe();
          return Status::Ok();
        });
        last_active = std::chrono::steady_clock::now();
        continue;
      }
      n = queue_->q.wait_dequeue_bulk_timed(bulk.data(), bulk.size(), due - now);
      if (n == 0) continue;
    }
    RunBulk(bulk.data(), n);
    last_active = std::chrono::steady_clock::now();
  }
}

template <typename Job>
void GroupWriter<Job>::RunBulk(Job** jobs, size_t n) {
  size_t m = 0;  // Stop's wake-up entries out
  for (size_t i = 0; i < n; ++i) {
    if (jobs[i] != nullptr) jobs[m++] = jobs[i];
  }
  stats_.queued.fetch_sub(static_cast<int64_t>(m), std::memory_order_relaxed);
  // Consecutive ordinary jobs share one transaction; a solo job gets its own.
  size_t start = 0;
  while (start < m) {
    if (PastStopDeadline()) {
      return DropQueued({jobs + start, m - start},
                        Status::IOError("unavailable: the server is stopping and the database "
                                        "could not be written in time; not written"),
                        /*at_stop=*/true);
    }
    size_t end = start + 1;
    if (!jobs[start]->solo()) {
      while (end < m && !jobs[end]->solo()) ++end;
    }
    const bool drop = RunGroup({jobs + start, end - start});
    start = end;
    if (drop) {
      return DropQueued({jobs + start, m - start},
                        Status::IOError("unavailable: the database cannot be reached from this "
                                        "node; not written"),
                        /*at_stop=*/false);
    }
  }
}

template <typename Job>
void GroupWriter<Job>::DropQueued(std::span<Job*> in_hand, const Status& status,
                                  bool at_stop) {
  size_t dropped = in_hand.size();
  for (Job* job : in_hand) Finish(job, status);
  Job* job = nullptr;
  while (queue_->q.try_dequeue(job)) {
    if (job == nullptr) continue;
    stats_.queued.fetch_sub(1, std::memory_order_relaxed);
    ++dropped;
    Finish(job, status);
  }
  if (at_stop) stats_.dropped_at_stop.fetch_add(dropped, std::memory_order_relaxed);
}

// Turns an exception from Apply into a failed Status: an exception escaping
// the writer thread would end the process with accepted work (queued
// heartbeats, claims waiting for their reply) unanswered.
template <typename Job>
Status GroupWriter<Job>::ApplyCatching(Job* job, size_t index, bool* threw) {
  Status s;
  *threw = false;
  try {
    s = Apply(job, index);
  } catch (const std::exception& e) {
    *threw = true;
    s = Status::IOError(std::string("a write job threw: ") + e.what());
  } catch (...) {
    *threw = true;
    s = Status::IOError("a write job threw");
  }
  AfterApply(&s);
  return s;
}

// Runs the group's jobs inside its open transaction. `savepoints`: each job
// (that needs one) under one of its own, so a failing job is undone alone and
// the rest go on; without, the first failing job stops the run and sets
// *again. Returns a transaction-level error (the group fails whole), else Ok
// with each job's outcome in outcomes_.
template <typename Job>
Status GroupWriter<Job>::RunJobs(std::span<Job*> group, bool savepoints, bool* again) {
  *again = false;
  outcomes_.assign(group.size(), Status::Ok());
  for (size_t i = 0; i < group.size(); ++i) {
    const bool savepoint = savepoints && group[i]->needs_savepoint();
    // Without its savepoint the job cannot be undone alone; nothing of it ran.
    if (savepoint) RETURN_IF_ERROR(Savepoint());
    bool threw = false;
    Status s = ApplyCatching(group[i], i, &threw);
    // The jobs before this one are gone with the transaction, and the ones
    // after must not run outside one: the whole group fails.
    if (TransactionLost(s)) return s.ok() ? Status::IOError("unavailable: transaction lost") : s;
    if (savepoint) {
      // If the savepoint cannot be ended, the job's changes may still be in
      // the transaction: committing could write what this job is told failed.
      RETURN_IF_ERROR(EndSavepoint(/*undo=*/!s.ok()));
    } else if (!s.ok()) {
      if (!savepoints) {
        *again = true;
        return Status::Ok();
      }
      // A job without a savepoint writes with one statement, which undid
      // itself if it failed; but one that threw may have thrown after its
      // statement, and one HalfWritten says it failed after a write: neither
      // can be undone alone, so the whole group fails.
      if (threw || IsHalfWritten(s)) return s;
    }
    outcomes_[i] = std::move(s);
  }
  return Status::Ok();
}

template <typename Job>
template <typename Fn>
Status GroupWriter<Job>::Catching(const char* what, Fn fn, bool* threw) {
  if (threw != nullptr) *threw = false;
  std::string why;
  try {
    return fn();
  } catch (const std::exception& e) {
    why = e.what();
  } catch (...) {
    why = "not a std::exception";
  }
  // Out of the catch block: AfterThrow may throw too, which nothing here
  // could then catch.
  if (threw != nullptr) *threw = true;
  stats_.writer_exceptions.fetch_add(1, std::memory_order_relaxed);
  try {
    AfterThrow();
  } catch (...) {
  }
  return Status::IOError(std::string(what) + " threw: " + why);
}

template <typename Job>
Status GroupWriter<Job>::BeginAndRun(std::span<Job*>* group) {
  bool again = false;
  Status s = Begin(group, Run::kFirst, &again);
  if (s.ok() && !again) s = RunJobs(*group, first_run_savepoints(), &again);
  if (s.ok() && again) {
    stats_.groups_rerun.fetch_add(1, std::memory_order_relaxed);
    s = Rollback();
    if (s.ok()) s = Begin(group, Run::kAgain, &again);
    if (s.ok()) s = RunJobs(*group, /*savepoints=*/true, &again);
  }
  if (!s.ok() && lock_timed_out()) {
    // A lock (or a row) another transaction kept past the lock timeout
    // fails only the jobs that needed it.
    stats_.groups_rerun.fetch_add(1, std::memory_order_relaxed);
    s = Rollback();
    if (s.ok()) s = Begin(group, Run::kWithoutWaiting, &again);
    if (s.ok()) s = RunJobs(*group, /*savepoints=*/true, &again);
  }
  return s;
}

template <typename Job>
bool GroupWriter<Job>::RunGroup(std::span<Job*> group) {
  const auto t0 = std::chrono::steady_clock::now();
  // An exception escaping the writer thread would end the process with
  // every accepted job unanswered: one from the engine fails this group.
  Status s = Catching("the writer (beginning or running a group)",
                      [&] { return BeginAndRun(&group); });
  if (s.ok()) {
    bool threw = false;
    s = Catching("COMMIT", [this] { return Commit(); }, &threw);
    // It may have thrown after the COMMIT went out.
    if (threw) s = Status::IOError(std::string(kCommitOutcomeUnknown) + s.message());
  } else {
    (void)Catching("ROLLBACK", [this] { return Rollback(); });
  }
  if (!s.ok()) {
    stats_.transactions_lost.fetch_add(1, std::memory_order_relaxed);
    for (Job* job : group) Finish(job, s);
    return GroupLost(s);
  }
  stats_.failing.store(0, std::memory_order_relaxed);
  stats_.transactions.fetch_add(1, std::memory_order_relaxed);
  stats_.commit_micros_total.fetch_add(
      static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
              .count()),
      std::memory_order_relaxed);
  if (CommitSignal* signal = commit_signal_.load(std::memory_order_acquire)) signal->Notify();
  // Done only now: no reply leaves before its commit has returned.
  for (size_t i = 0; i < group.size(); ++i) Finish(group[i], std::move(outcomes_[i]));
  return false;
}

}  // namespace store

#endif  // EDGEALLOC_STORE_GROUP_WRITER_IMPL_H_
