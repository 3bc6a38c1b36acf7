#include "server/api/event_waiters.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace server {
namespace {

// The longest the thread sleeps between passes with waiters: how late past
// its deadline an idle waiter may be answered. Commits wake it at once.
constexpr auto kMaxIdleWait = std::chrono::milliseconds(250);

}  // namespace

EventWaiters::EventWaiters(store::Storage* storage, size_t max_total, size_t max_per_tenant)
    : storage_(storage), max_total_(max_total), max_per_tenant_(max_per_tenant) {
  thread_ = std::thread([this] { Loop(); });
}

EventWaiters::~EventWaiters() { Stop(); }

bool EventWaiters::Wait(Waiter w) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || total_ >= max_total_) return false;
    std::deque<Waiter>& mine = by_tenant_[w.tenant];
    if (mine.size() >= max_per_tenant_) return false;
    mine.push_back(std::move(w));
    ++total_;
  }
  // A commit between the waiter's first read and now must not be missed:
  // the next pass reads it again.
  storage_->commit_signal()->Notify();
  return true;
}

void EventWaiters::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  storage_->commit_signal()->Notify();
  if (thread_.joinable()) thread_.join();
}

size_t EventWaiters::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return total_;
}

void EventWaiters::Loop() {
  store::CommitSignal* signal = storage_->commit_signal();
  for (;;) {
    const uint64_t seen = signal->commits();
    bool stopping = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping = stopping_;
    }
    const bool moved = Pass(stopping);
    if (stopping) return;
    if (!moved) signal->WaitAfter(seen, std::chrono::steady_clock::now() + kMaxIdleWait);
  }
}

bool EventWaiters::Pass(bool stopping) {
  // Take every waiter out, tenants interleaved (one of each a turn).
  std::vector<Waiter> turns;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (bool any = true; any;) {
      any = false;
      for (auto& [tenant, queue] : by_tenant_) {
        if (queue.empty()) continue;
        turns.push_back(std::move(queue.front()));
        queue.pop_front();
        any = true;
      }
    }
    by_tenant_.clear();
    total_ = 0;
  }
  std::vector<Waiter> still;
  bool moved = false;
  for (Waiter& w : turns) {
    if (!Serve(w, stopping, &moved)) still.push_back(std::move(w));
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (Waiter& w : still) {
    by_tenant_[w.tenant].push_back(std::move(w));
    ++total_;
  }
  return moved;
}

bool EventWaiters::Serve(Waiter& w, bool stopping, bool* moved) {
  if (w.gone && w.gone()) return true;
  store::EventPage page;
  const store::Status s = storage_->ReadEvents(w.query, w.after, &page);
  if (!s.ok()) {
    w.failed(s);
    return true;
  }
  const bool timed_out = std::chrono::steady_clock::now() >= w.deadline;
  if (page.events.empty() && !page.expired && !timed_out && !stopping) {
    if (page.SkippedAhead(w.after)) *moved = true;
    w.after = page.next;  // past what the filters skipped
    return false;
  }
  w.answer(page, w.after);
  return true;
}

}  // namespace server
