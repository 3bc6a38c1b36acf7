#include "server/webhooks/webhook_deliverer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "server/api/event_bodies.h"
#include "server/webhooks/webhook_signature.h"

namespace server {

struct WebhookDeliverer::Worker {
  std::string tenant;
  WebhookTarget target;
  std::atomic<bool> stop{false};
  std::mutex mu;  // for Sleep's cv
  std::condition_variable cv;
  // at_ms of the oldest event read and not yet delivered; 0: none.
  std::atomic<int64_t> oldest_pending_at_ms{0};
  std::thread thread;
};

// One worker's place: the lease and the cursor it holds.
struct WebhookDeliverer::Delivery {
  bool held = false;
  int64_t leased_at_ms = 0;  // steady clock
  store::EventCursor cursor;
  int64_t backoff_ms = 0;
  // The batch that failed, sent again as it was (same events, same
  // webhook-id) until answered 2xx.
  std::optional<store::EventPage> failed;
};

WebhookDeliverer::WebhookDeliverer(store::Storage* storage, WebhookDelivererOptions options)
    : storage_(storage), options_(std::move(options)) {
  stats_.lag_ms = [this] {
    std::lock_guard<std::mutex> lock(mu_);
    int64_t oldest = 0;
    for (const auto& entry : workers_) {
      const int64_t at = entry.second->oldest_pending_at_ms.load();
      if (at != 0 && (oldest == 0 || at < oldest)) oldest = at;
    }
    return oldest == 0 ? int64_t{0} : std::max<int64_t>(0, base::NowMs() - oldest);
  };
}

WebhookDeliverer::~WebhookDeliverer() { Stop(); }

void WebhookDeliverer::Start() { supervisor_ = std::thread([this] { Supervise(); }); }

void WebhookDeliverer::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !supervisor_.joinable()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (supervisor_.joinable()) supervisor_.join();
  for (auto& entry : workers_) {
    entry.second->stop.store(true);
    entry.second->cv.notify_all();
  }
  storage_->commit_signal()->Notify();  // wakes the idle ones
  for (auto& entry : workers_) entry.second->thread.join();
  std::lock_guard<std::mutex> lock(mu_);
  workers_.clear();
}

void WebhookDeliverer::Warn(const std::string& message) {
  if (options_.warn) options_.warn("webhooks: " + message);
}

void WebhookDeliverer::Supervise() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    lock.unlock();
    Reconcile();
    lock.lock();
    cv_.wait_for(lock, std::chrono::seconds(1), [this] { return stopping_; });
  }
}

// Starts a worker for each tenant the targets name, and stops those whose
// tenant is gone or whose target changed (a new one starts next time).
void WebhookDeliverer::Reconcile() {
  const std::map<std::string, WebhookTarget> targets = options_.targets();
  std::vector<std::unique_ptr<Worker>> gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = workers_.begin(); it != workers_.end();) {
      auto t = targets.find(it->first);
      if (t != targets.end() && t->second == it->second->target) {
        ++it;
        continue;
      }
      gone.push_back(std::move(it->second));
      it = workers_.erase(it);
    }
  }
  for (auto& w : gone) {
    w->stop.store(true);
    w->cv.notify_all();
  }
  if (!gone.empty()) storage_->commit_signal()->Notify();
  for (auto& w : gone) w->thread.join();
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [tenant, target] : targets) {
    if (workers_.count(tenant) != 0 || stopping_) continue;
    auto w = std::make_unique<Worker>();
    w->tenant = tenant;
    w->target = target;
    Worker* raw = w.get();
    w->thread = std::thread([this, raw] { Deliver(raw); });
    workers_[tenant] = std::move(w);
  }
}

void WebhookDeliverer::Sleep(Worker* w, int64_t ms) {
  std::unique_lock<std::mutex> lock(w->mu);
  w->cv.wait_for(lock, std::chrono::milliseconds(ms), [w] { return w->stop.load(); });
}

// True if this node holds the tenant's lease, renewed when a third of it
// has passed; on taking it, the cursor is the database's.
bool WebhookDeliverer::KeepLease(Worker* w, Delivery* d) {
  const int64_t now = base::SteadyNowMs();
  if (d->held && now - d->leased_at_ms < options_.lease_ms / 3) return true;
  bool held = false;
  std::string text;
  const store::Status s =
      storage_->LeaseWebhook(w->tenant, options_.node_id, options_.lease_ms, &held, &text);
  if (!s.ok()) {
    Warn("tenant " + w->tenant + ": cannot take the delivery lease: " + s.ToString());
    d->held = false;
    return false;
  }
  if (held && !d->held) {
    d->failed.reset();
    const int streams = storage_->event_streams();
    if (!store::EventCursor::Parse(text, streams, &d->cursor)) {
      Warn("tenant " + w->tenant + ": the stored cursor does not fit " + std::to_string(streams) +
           " event streams; delivering from the start");
      store::EventCursor::Parse("", streams, &d->cursor);
    }
  }
  d->held = held;
  if (held) d->leased_at_ms = now;
  return held;
}

// POSTs the page's events; true if the receiver answered 2xx.
bool WebhookDeliverer::SendBatch(Worker* w, Delivery* d, const store::EventPage& page) {
  std::string key, error;
  if (!ReadWebhookSecret(w->target.secret_file, &key, &error)) {
    Warn("tenant " + w->tenant + ": " + error);
    stats_.unanswered.fetch_add(1);
    return false;
  }
  WebhookUrl url;
  if (!ParseWebhookUrl(w->target.url, &url, &error)) {
    Warn("tenant " + w->tenant + ": " + error);
    stats_.unanswered.fetch_add(1);
    return false;
  }
  const std::string body = EventPageResponse(page, storage_->event_streams()).body();
  // The same batch keeps its id through retries (and restarts, while the
  // batch is the same), so a receiver can drop a repeat.
  std::string id = "msg_" + d->cursor.ToString() + "_" + page.next.ToString();
  std::replace(id.begin(), id.end(), '.', '-');
  const int64_t timestamp_s = base::NowMs() / 1000;
  const std::vector<std::pair<std::string, std::string>> headers = {
      {"webhook-id", id},
      {"webhook-timestamp", std::to_string(timestamp_s)},
      {"webhook-signature", SignWebhook(key, id, timestamp_s, body)}};
  const WebhookAnswer answer = PostWebhook(url, headers, body, options_.post, &w->stop);
  if (answer.delivered()) {
    stats_.delivered.fetch_add(1);
    return true;
  }
  if (w->stop.load()) return false;
  (answer.status != 0 ? stats_.rejected : stats_.unanswered).fetch_add(1);
  Warn("tenant " + w->tenant + ": delivery failed (" +
       (answer.status != 0 ? "answered " + std::to_string(answer.status) : answer.error) +
       "); retrying in " + std::to_string(d->backoff_ms) + " ms");
  return false;
}

void WebhookDeliverer::Deliver(Worker* w) {
  Delivery d;
  d.backoff_ms = options_.backoff_first_ms;
  store::CommitSignal* signal = storage_->commit_signal();
  while (!w->stop.load()) {
    if (!KeepLease(w, &d)) {
      w->oldest_pending_at_ms.store(0);  // another node's to deliver
      Sleep(w, std::min<int64_t>(options_.lease_ms / 3, 1000));
      continue;
    }
    const uint64_t seen = signal->commits();
    store::EventQuery query;
    query.tenant = w->tenant;
    query.limit = options_.batch_size;
    store::EventPage page;
    const store::Status s =
        d.failed ? store::Status::Ok() : storage_->ReadEvents(query, d.cursor, &page);
    if (d.failed) page = *d.failed;
    if (!s.ok()) {
      Warn("tenant " + w->tenant + ": cannot read events: " + s.ToString());
      Sleep(w, 1000);
      continue;
    }
    if (page.expired) {
      stats_.gaps.fetch_add(1);
      Warn("tenant " + w->tenant + ": events were pruned before they were delivered "
           "(--event-retention-ms); delivering from the oldest kept");
      d.cursor = page.oldest;
      continue;
    }
    if (page.events.empty()) {
      // Go on past other tenants' rows at once (the cursor is stored with
      // the next batch's), and wait only at the log's end.
      const bool skipped_ahead = page.SkippedAhead(d.cursor);
      d.cursor = page.next;
      if (skipped_ahead) continue;
      w->oldest_pending_at_ms.store(0);
      signal->WaitAfter(seen, std::chrono::steady_clock::now() + std::chrono::seconds(1));
      continue;
    }
    w->oldest_pending_at_ms.store(std::max<int64_t>(1, page.events.front().at_ms));
    if (!SendBatch(w, &d, page)) {
      d.failed = page;
      Sleep(w, d.backoff_ms);
      d.backoff_ms = std::min(d.backoff_ms * 2, options_.backoff_cap_ms);
      continue;
    }
    d.backoff_ms = options_.backoff_first_ms;
    d.failed.reset();
    bool held = false;
    const store::Status acked =
        storage_->AckWebhook(w->tenant, options_.node_id, page.next.ToString(), options_.lease_ms,
                             &held);
    if (!acked.ok()) Warn("tenant " + w->tenant + ": cannot store the cursor: " + acked.ToString());
    // Not stored: the batch goes again (at least once); lost: the new owner's.
    if (acked.ok() && held) {
      d.cursor = page.next;
      d.leased_at_ms = base::SteadyNowMs();
    } else {
      d.held = false;
    }
  }
  // A stopping node lets its lease lapse now, so that the next node (or
  // this one restarted) resumes at once, not a lease later.
  bool held = false;
  if (d.held) {
    (void)storage_->AckWebhook(w->tenant, options_.node_id, d.cursor.ToString(), 0, &held);
  }
}

}  // namespace server
