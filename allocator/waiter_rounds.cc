// The waiters' thread of the WaitingRoom (waiting_room.h): each round it
// answers the waiters out of time or gone, releases the abandoned sessions
// due, probes the waiting pools in one read and lets the first in line of
// each pool that may serve it claim again.

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
      wake_ = false;
      round.stop = wait_stop_;
      SortOutLocked(&round);
    }
    AnswerRound(&round);
    SubmitReleases(std::move(round.releases));
    if (round.stop) return;
    if (!round.probes.empty()) ProbeAndTry(std::move(round.probes));
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
  std::set<PoolKey> to_probe;
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    auto& queue = it->second;
    for (auto q = queue.begin(); q != queue.end();) {
      const WaiterPtr& w = *q;
      std::vector<WaiterPtr>* out = nullptr;
      if (w->in_flight) {
        out = nullptr;  // answered by its claim's callback
      } else if (stop) {
        out = &round->stopping;
      } else if (Abandoned(*w)) {
        out = &round->gone;
      } else if (now >= w->deadline_ms) {
        out = &round->timed_out;
      }
      if (out == nullptr) {
        // New ones are probed for being registered at all.
        if (!w->in_flight && !w->probed) to_probe.insert(w->pools.begin(), w->pools.end());
        ++q;
        continue;
      }
      out->push_back(w);
      UncountLocked(*w);
      q = queue.erase(q);
    }
    // The first in line is probed for a container it could take.
    if (!stop && !queue.empty() && !queue.front()->in_flight) {
      to_probe.insert(queue.front()->pools.begin(), queue.front()->pools.end());
    }
    it = queue.empty() ? waiters_.erase(it) : std::next(it);
  }
  any_waiters_.store(!waiters_.empty());
  for (const auto& [region, pool] : to_probe) round->probes.push_back({region, pool});
}

void WaitingRoom::AnswerRound(Round* round) {
  for (const auto& w : round->timed_out) {
    stats_->waits_timed_out.fetch_add(1, std::memory_order_relaxed);
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
    storage_->Claim(w->req,
                    [this, w](store::SessionResult r) { OnWaiterClaimed(w, std::move(r)); });
  }
}

void WaitingRoom::PickLocked(const std::vector<store::PoolProbe>& probes, bool probed,
                             std::vector<WaiterPtr>* unregistered,
                             std::vector<WaiterPtr>* to_try) {
  std::map<PoolKey, const store::PoolProbe*> seen;
  for (const auto& p : probes) seen.emplace(PoolKey(p.region, p.pool), &p);
  auto all_probed = [&](const Waiter& w) {
    for (const auto& key : w.pools) {
      if (!seen.contains(key)) return false;  // queued since: the next round
    }
    return true;
  };
  auto any_of = [&](const Waiter& w, bool store::PoolProbe::*field) {
    for (const auto& key : w.pools) {
      auto it = seen.find(key);
      if (it != seen.end() && it->second->*field) return true;
    }
    return false;
  };
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    auto& queue = it->second;
    for (auto q = queue.begin(); q != queue.end();) {
      const WaiterPtr& w = *q;
      if (w->in_flight || w->probed || !probed || !all_probed(*w)) {
        if (!probed) w->probed = true;
        ++q;
        continue;
      }
      if (!any_of(*w, &store::PoolProbe::registered)) {
        unregistered->push_back(w);
        UncountLocked(*w);
        q = queue.erase(q);
        continue;
      }
      w->probed = true;
      ++q;
    }
    if (!wait_stop_ && !queue.empty() && !queue.front()->in_flight &&
        (!probed || any_of(*queue.front(), &store::PoolProbe::claimable))) {
      queue.front()->in_flight = true;
      to_try->push_back(queue.front());
    }
    it = queue.empty() ? waiters_.erase(it) : std::next(it);
  }
  any_waiters_.store(!waiters_.empty());
}

void WaitingRoom::AnswerUnregistered(const WaiterPtr& w) {
  stats_->waits_unregistered.fetch_add(1, std::memory_order_relaxed);
  store::SessionResult r;
  r.outcome = Outcome::kNoCapacity;
  claims_->Finish(ContextOf(w->req), &r);
  r.message = NotRegisteredMessage(w->req.region, w->req.pool, !w->req.fallback_regions.empty());
  w->done(std::move(r));
}

}  // namespace allocator
