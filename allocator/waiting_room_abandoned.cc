// The WaitingRoom's (waiting_room.h) sessions of clients that went away: a
// session claimed for a waiter whose client left is released on the
// waiters' thread, retried with backoff while the storage fails, until its
// lease would have ended anyway; Stop tries what is left once more.

#include <algorithm>
#include <chrono>
#include <utility>

#include "allocator/waiting_room.h"
#include "base/clock.h"

namespace allocator {

using store::Outcome;

namespace {

// How long after its n-th failure (n >= 1) the release of an abandoned
// session is tried again: 100 ms, doubling, at most 2 s; while stopping,
// 50 ms (Stop waits kStopReleaseMs at most).
int64_t ReleaseRetryDelayMs(int failures, bool stopping) {
  if (stopping) return 50;
  return std::min<int64_t>(int64_t{50} << std::min(failures, 6), 2000);
}

}  // namespace

void WaitingRoom::AbandonLocked(const Waiter& w, const store::Session& session) {
  if (!w.req.idempotency_key.empty()) {
    // A retry of the key (through another connection or node, perhaps
    // answered already) replays this session: its client may hold it. It
    // ends by its lease or by that client's release, never here.
    stats_->abandoned_sessions_kept.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (stopped_) {
    // Nothing releases any more: it ends by its lease.
    stats_->abandoned_releases_failed.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // Nobody will read it: handed back on the waiters' thread (or by Stop),
  // not on this writer thread. The next in line may then find it.
  to_release_.push_back(PendingRelease{session, 0, 0, base::NowMs() + w.req.lease_ms});
  wake_ = true;
  wait_cv_.Signal();
  drain_cv_.SignalAll();
}

void WaitingRoom::TakeDueReleasesLocked(int64_t now, std::vector<PendingRelease>* due,
                                        int64_t* next_ms) {
  for (auto it = to_release_.begin(); it != to_release_.end();) {
    if (it->attempts > 0 && now >= it->give_up_ms) {
      // Failed until its lease ended: the reaper ends it now.
      stats_->abandoned_releases_failed.fetch_add(1, std::memory_order_relaxed);
      it = to_release_.erase(it);
    } else if (it->next_try_ms <= now) {
      due->push_back(std::move(*it));
      it = to_release_.erase(it);
    } else {
      *next_ms = std::min(*next_ms, it->next_try_ms);
      ++it;
    }
  }
  releases_in_flight_ += static_cast<int>(due->size());
}

void WaitingRoom::SubmitReleases(std::vector<PendingRelease> releases) {
  store::Caller admin;
  admin.admin = true;
  admin.abandoning = true;  // its end reason: abandoned
  for (auto& p : releases) {
    std::string id = p.session.session_id;
    const int64_t token = p.session.token;
    storage_->Release(admin, std::move(id), token,
                      [this, p = std::move(p)](store::SessionResult r) mutable {
                        OnAbandonedReleased(std::move(p), r.outcome);
                      });
  }
}

void WaitingRoom::OnAbandonedReleased(PendingRelease p, Outcome outcome) {
  base::MutexLock lock(&mu_);
  --releases_in_flight_;
  // The store down or busy: tried again later, until its lease would have
  // ended anyway (TakeDueReleasesLocked). Any other answer is final: ok,
  // or session_ended / not_found / stale_token (it ended meanwhile: its
  // lease ran out).
  if (outcome == Outcome::kError || outcome == Outcome::kOverloaded) {
    ++p.attempts;
    if (stopped_) {
      stats_->abandoned_releases_failed.fetch_add(1, std::memory_order_relaxed);
    } else {
      p.next_try_ms = base::NowMs() + ReleaseRetryDelayMs(p.attempts, wait_stop_);
      to_release_.push_back(std::move(p));
    }
  }
  // Woken here, under the lock: once Stop sees this release back it may
  // return and the Allocator go, so nothing after the lock may touch it.
  if (outcome == Outcome::kOk) stats_->sessions_abandoned.fetch_add(1, std::memory_order_relaxed);
  if (outcome == Outcome::kOk && any_waiters_.load()) {
    wake_ = true;
    wait_cv_.Signal();
  }
  drain_cv_.SignalAll();
}

void WaitingRoom::DrainAtStop() {
  const int64_t deadline = base::NowMs() + kStopReleaseMs;
  {
    // Whatever backs off is tried now: there is no later.
    base::MutexLock lock(&mu_);
    for (auto& p : to_release_) p.next_try_ms = 0;
  }
  for (;;) {
    std::vector<PendingRelease> due;
    {
      base::MutexLock lock(&mu_);
      for (;;) {
        const int64_t now = base::NowMs();
        int64_t next_ms = deadline;
        TakeDueReleasesLocked(now, &due, &next_ms);
        if (!due.empty()) break;
        // Waiting claims still with the storage (their answer may bring a
        // session to release), releases in flight or backing off.
        const bool pending = !to_release_.empty() || releases_in_flight_ > 0 ||
                             first_claims_in_flight_ > 0 || !waiters_.empty();
        if (!pending || now >= deadline) {
          // What is left ends by its lease.
          stats_->abandoned_releases_failed.fetch_add(to_release_.size(),
                                                      std::memory_order_relaxed);
          to_release_.clear();
          stopped_ = true;
          return;
        }
        drain_cv_.WaitFor(&mu_, std::chrono::milliseconds(std::max<int64_t>(
                                    1, std::min(next_ms, deadline) - now)));
      }
    }
    SubmitReleases(std::move(due));
  }
}

}  // namespace allocator
