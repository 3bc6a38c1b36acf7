// The threads of the WaitingRoom (waiting_room.h). The waiters' thread, each
// round, answers the waiters out of time or gone (and those whose claim the
// storage holds past their time and kWaitAnswerGraceMs), releases the
// abandoned sessions due and hands the waiting pools to the prober; it never
// waits on the storage. The prober reads them in one read and lets the next
// in line of each pool that has a container to take claim, one claim a pool.

#include <algorithm>
#include <chrono>
#include <iterator>
#include <map>
#include <set>
#include <utility>

#include "allocator/claim_messages.h"
#include "allocator/waiting_room.h"
#include "base/clock.h"

namespace allocator {

using store::Outcome;

void WaitingRoom::Loop() {
  for (;;) {
    Round round;
    {
      base::MutexLock lock(&mu_);
      if (!wait_stop_ && !wake_) SleepLocked();
      const bool woken = wake_;
      wake_ = false;
      round.stop = wait_stop_;
      SortOutLocked(&round);
      if (!round.stop) HandToProberLocked(std::move(round.probes), woken);
    }
    AnswerRound(&round);
    SubmitReleases(std::move(round.releases));
    if (round.stop) return;
  }
}

void WaitingRoom::HandToProberLocked(std::vector<store::PoolProbe> probes, bool woken) {
  if (probes.empty()) return;
  if (probing_) {
    reprobe_ = reprobe_ || woken;
    return;
  }
  probing_ = true;
  to_probe_ = std::move(probes);
  probe_cv_.Signal();
}

void WaitingRoom::ProbeLoop() {
  for (;;) {
    std::vector<store::PoolProbe> probes;
    {
      base::MutexLock lock(&mu_);
      while (!wait_stop_ && !probing_) probe_cv_.Wait(&mu_);
      if (wait_stop_) {
        probing_ = false;
        return;
      }
      probes = std::move(to_probe_);
      to_probe_.clear();
    }
    ProbeAndTry(std::move(probes));
    base::MutexLock lock(&mu_);
    probing_ = false;
    if (reprobe_) {
      // Woken while it read (a release, an expiry): read again at once.
      reprobe_ = false;
      wake_ = true;
      wait_cv_.Signal();
    }
  }
}

void WaitingRoom::SleepLocked() {
  // At most until the next failed release is due again.
  int64_t wait_ms = options_->wait_retry_ms;
  const int64_t before = base::NowMs();
  for (const auto& p : to_release_) {
    wait_ms = std::min(wait_ms, std::max<int64_t>(0, p.next_try_ms - before));
  }
  if (wait_ms > 0) wait_cv_.WaitFor(&mu_, std::chrono::milliseconds(wait_ms));
}

void WaitingRoom::SortOutLocked(Round* round) {
  const bool stop = round->stop;
  const int64_t now = base::NowMs();
  int64_t next_ms = now;  // unused here: the sleep of the next round looks again
  TakeDueReleasesLocked(now, &round->releases, &next_ms);
  TakeStalledLocked(now, stop, stop ? &round->stopped_in_flight : &round->stalled);
  std::vector<WaiterPtr> leaving;
  for (const auto& [arrival, w] : arrivals_) {
    std::vector<WaiterPtr>* out = nullptr;
    if (w->in_flight) {
      continue;  // its claim's callback takes it out (TakeStalledLocked answers it)
    } else if (stop) {
      out = &round->stopping;
    } else if (Abandoned(*w)) {
      out = &round->gone;
    } else if (w->probe_only && !w->probed && now < w->deadline_ms + kWaitAnswerGraceMs) {
      continue;  // answered once its pools were read, or the grace is over
    } else if (now >= w->deadline_ms) {
      out = &round->timed_out;
      w->retry_after_s = RetryAfterLocked(*w, now);
    } else {
      continue;
    }
    out->push_back(w);
    leaving.push_back(w);
  }
  for (const auto& w : leaving) RemoveLocked(w);
  any_waiters_.store(!waiters_.empty());
  turns_.PruneBefore(now);
  if (stop) return;
  // Every waiting pool with no claim for it in flight: new waiters are
  // probed for being registered at all, every queue for a container its
  // next in line could take.
  for (const auto& [key, queue] : waiters_) {
    if (std::none_of(queue.begin(), queue.end(), [](const WaiterPtr& w) { return w->in_flight; })) {
      round->probes.push_back({key.first, key.second});
    }
  }
}

void WaitingRoom::TakeStalledLocked(int64_t now, bool stop, std::vector<WaiterPtr>* out) {
  auto take_if_overdue = [&](const WaiterPtr& w) {
    if (w->answered || (!stop && now < w->deadline_ms + kWaitAnswerGraceMs)) return;
    w->answered = true;
    out->push_back(w);
  };
  // A waiter in flight stays in its queues until its claim answers: its
  // pools claim nothing more meanwhile, and it counts against the bounds.
  for (const auto& [arrival, w] : arrivals_) {
    if (w->in_flight) take_if_overdue(w);
  }
  for (const auto& w : first_attempts_) take_if_overdue(w);
}

void WaitingRoom::AnswerRound(Round* round) {
  for (const auto& w : round->stalled) AnswerInFlight(w, /*stopping=*/false);
  for (const auto& w : round->stopped_in_flight) AnswerInFlight(w, /*stopping=*/true);
  for (const auto& w : round->timed_out) {
    if (!w->probe_only) stats_->waits_timed_out.fetch_add(1, std::memory_order_relaxed);
    AnswerWaiter(w, Outcome::kNoCapacity, "");
  }
  for (const auto& w : round->gone) {
    stats_->waits_abandoned.fetch_add(1, std::memory_order_relaxed);
    AnswerWaiter(w, Outcome::kNoCapacity, "");
  }
  for (const auto& w : round->stopping) AnswerWaiter(w, Outcome::kNoCapacity, "");
}

void WaitingRoom::ProbeAndTry(std::vector<store::PoolProbe> probes) {
  // One read for every waiting pool, off the write path. A failed probe
  // leaves the waiters as they are and lets the first in line of each
  // pool claim, as if every pool could serve: correct, only dearer.
  stats_->wait_probes.fetch_add(1, std::memory_order_relaxed);
  const bool probed = storage_->ProbePools(&probes).ok();
  if (!probed) stats_->wait_probes_failed.fetch_add(1, std::memory_order_relaxed);
  std::vector<WaiterPtr> unregistered, to_try;
  {
    base::MutexLock lock(&mu_);
    PickLocked(probes, probed, &unregistered, &to_try);
  }
  for (const auto& w : unregistered) AnswerUnregistered(w);
  for (const auto& w : to_try) {
    storage_->Claim(backups_->Routed(w->req),
                    [this, w](store::SessionResult r) { OnWaiterClaimed(w, std::move(r)); });
  }
}

void WaitingRoom::TakeUnregisteredLocked(const std::vector<store::PoolProbe>& probes,
                                         bool probed, std::vector<WaiterPtr>* unregistered) {
  std::map<PoolKey, const store::PoolProbe*> seen;
  for (const auto& p : probes) seen.emplace(PoolKey(p.region, p.pool), &p);
  std::vector<WaiterPtr> leaving;
  for (const auto& [arrival, w] : arrivals_) {
    if (w->in_flight || w->probed) continue;
    if (!probed) {
      w->probed = true;  // not known to be unregistered: it waits
      continue;
    }
    bool all_probed = true, registered = false;
    for (const auto& key : w->pools) {
      auto it = seen.find(key);
      if (it == seen.end()) {
        all_probed = false;  // its pool had a claim in flight: the next round
      } else {
        registered = registered || it->second->registered;
      }
    }
    if (!all_probed) continue;
    if (registered) {
      w->probed = true;
    } else {
      leaving.push_back(w);
    }
  }
  for (const auto& w : leaving) {
    unregistered->push_back(w);
    RemoveLocked(w);
  }
}

WaitingRoom::WaiterPtr WaitingRoom::NextInLineLocked(const PoolKey& pool,
                                                     const std::deque<WaiterPtr>& queue) const {
  // The queue is in arrival order: the first waiter of the tenant whose last
  // turn is the oldest, the earliest arrival among tenants never served.
  WaiterPtr next;
  uint64_t oldest = UINT64_MAX;
  for (const auto& w : queue) {
    if (w->probe_only) continue;  // it never claims
    const uint64_t turn = turns_.LastTurn(pool, w->req.caller.tenant);
    if (turn < oldest) {
      next = w;
      oldest = turn;
      if (turn == 0) break;
    }
  }
  return next;
}

int64_t WaitingRoom::AheadOfLocked(const Waiter& w, const PoolKey& pool) const {
  auto it = waiters_.find(pool);
  if (it == waiters_.end()) return 0;
  const std::string& tenant = w.req.caller.tenant;
  std::map<std::string, int64_t> others;  // each other tenant's waiters in the queue
  int64_t own_before = 0;
  bool found = false;
  for (const auto& q : it->second) {
    if (q.get() == &w) {
      found = true;
    } else if (q->req.caller.tenant != tenant) {
      ++others[q->req.caller.tenant];
    } else if (!found) {
      ++own_before;
    }
  }
  int64_t ahead = own_before;
  for (const auto& [other, count] : others) ahead += std::min(count, own_before + 1);
  return ahead;
}

int64_t WaitingRoom::RetryAfterLocked(const Waiter& w, int64_t now_ms) const {
  int64_t best = PoolTurns::kMaxRetryAfterS;
  for (const auto& pool : w.pools) {
    best = std::min(best, PoolTurns::RetryAfterS(AheadOfLocked(w, pool),
                                                 turns_.ServesPerSecond(pool, now_ms),
                                                 now_ms - w.started_ms));
  }
  return best;
}

void WaitingRoom::PickLocked(const std::vector<store::PoolProbe>& probes, bool probed,
                             std::vector<WaiterPtr>* unregistered,
                             std::vector<WaiterPtr>* to_try) {
  TakeUnregisteredLocked(probes, probed, unregistered);
  any_waiters_.store(!waiters_.empty());
  if (wait_stop_) return;
  // Each pool probed (none in flight when it was) that may serve names its
  // next in line; the earliest arrivals claim first, one claim a pool: a
  // waiter claiming makes every pool it names busy for this round. A failed
  // probe lets every pool's next in line claim: correct, only dearer.
  std::set<PoolKey> busy;
  for (const auto& [arrival, w] : arrivals_) {
    if (w->in_flight) busy.insert(w->pools.begin(), w->pools.end());
  }
  std::vector<std::pair<uint64_t, PoolKey>> candidates;
  for (const auto& p : probes) {
    PoolKey key(p.region, p.pool);
    auto it = waiters_.find(key);
    if (it == waiters_.end() || busy.contains(key) || (probed && !p.claimable)) continue;
    if (WaiterPtr next = NextInLineLocked(key, it->second)) {
      candidates.emplace_back(next->arrival, key);
    }
  }
  std::sort(candidates.begin(), candidates.end());
  for (const auto& [arrival, key] : candidates) {
    if (busy.contains(key)) continue;
    WaiterPtr w = NextInLineLocked(key, waiters_.at(key));
    if (w == nullptr || w->in_flight) continue;
    w->in_flight = true;
    for (const auto& pool : w->pools) turns_.Take(pool, w->req.caller.tenant);
    busy.insert(w->pools.begin(), w->pools.end());
    to_try->push_back(w);
  }
}

void WaitingRoom::AnswerInFlight(const WaiterPtr& w, bool stopping) {
  // Not no_capacity: the claim may yet take a container, and a client told
  // "none" would be told wrong. Unknown, as a claim whose answer was lost.
  if (!stopping) stats_->waits_stalled.fetch_add(1, std::memory_order_relaxed);
  store::SessionResult r;
  r.outcome = Outcome::kError;
  claims_->Finish(ContextOf(w->req), &r);
  r.message = InFlightClaimMessage(stopping, base::NowMs() - w->started_ms,
                                   !w->req.idempotency_key.empty());
  w->done(std::move(r));
}

void WaitingRoom::AnswerUnregistered(const WaiterPtr& w) {
  if (!w->probe_only) stats_->waits_unregistered.fetch_add(1, std::memory_order_relaxed);
  store::SessionResult r;
  r.outcome = Outcome::kUnknownPool;
  claims_->Finish(ContextOf(w->req), &r);
  const std::vector<std::string> region_pools =
      directory_->pools_of ? directory_->pools_of(w->req.region) : std::vector<std::string>{};
  r.message = UnknownPoolMessage(w->req.region, w->req.pool, !w->req.fallback_regions.empty(),
                                 region_pools);
  w->done(std::move(r));
}

}  // namespace allocator
