#include "batcher/hearing.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "base/clock.h"

namespace batcher {

const char* Hearing::CauseName(Cause cause) {
  switch (cause) {
    case Cause::kPause: return "pause";
    case Cause::kIoStall: return "io_stall";
    case Cause::kWriteFailing: return "write_failing";
    case Cause::kRefused: return "refused";
  }
  return "unknown";
}

Hearing::Hearing(int64_t gap_ms, std::function<void(const Span&)> on_span)
    : gap_ms_(std::max<int64_t>(gap_ms, 10)),
      on_span_(std::move(on_span)),
      hearing_since_ms_(base::SteadyNowMs()) {}

Hearing::~Hearing() { Stop(); }

void Hearing::Start() {
  if (watch_.joinable() || watch_stop_.stopped()) return;
  // A source from now on: until the watch runs it is not late.
  watch_source_ = AddSource("watch");
  watch_ = std::thread([this] { WatchLoop(); });
}

void Hearing::Stop() {
  watch_stop_.Stop();
  if (watch_.joinable()) watch_.join();
}

void Hearing::WatchLoop() {
  const auto period = std::chrono::milliseconds(beat_period_ms());
  while (!watch_stop_.WaitFor(period)) {
    Beat(watch_source_);
    PollHolds(period.count());
  }
}

void Hearing::AddHold(Cause cause, std::string name, std::function<int64_t()> last_deaf_ms) {
  base::MutexLock lock(&mu_);
  holds_.push_back(Hold{cause, std::move(name), std::move(last_deaf_ms)});
}

void Hearing::PollHolds(int64_t period_ms) {
  const int64_t now = base::SteadyNowMs();
  std::vector<std::pair<Span, int64_t>> ended;  // and when each ended
  {
    base::MutexLock lock(&mu_);
    for (Hold& h : holds_) {
      const int64_t last = h.last_deaf_ms();
      if (last > h.seen_ms) {
        if (h.span_start_ms == 0) h.span_start_ms = last;
        h.seen_ms = last;
      } else if (h.span_start_ms != 0 && now - h.seen_ms > period_ms) {
        // Heard again for a whole period: the span is over (a hold deaf for
        // a moment only is a span of 0 ms, still counted).
        ended.push_back({Span{h.cause, h.name, h.seen_ms - h.span_start_ms}, h.seen_ms});
        h.span_start_ms = 0;
      }
    }
  }
  for (const auto& [span, end] : ended) Record(span, end, now, /*restart=*/false);
}

int Hearing::AddSource(std::string name) {
  base::MutexLock lock(&mu_);
  const Source fresh{std::move(name), true, base::SteadyNowMs()};
  for (size_t i = 0; i < sources_.size(); ++i) {
    if (!sources_[i].live) {
      sources_[i] = fresh;
      return static_cast<int>(i);
    }
  }
  sources_.push_back(fresh);
  return static_cast<int>(sources_.size() - 1);
}

void Hearing::RemoveSource(int source) {
  base::MutexLock lock(&mu_);
  sources_[static_cast<size_t>(source)].live = false;
}

void Hearing::Beat(int source) {
  const int64_t now = base::SteadyNowMs();
  Span span{};
  {
    base::MutexLock lock(&mu_);
    Source& s = sources_[static_cast<size_t>(source)];
    const int64_t late = now - s.last_beat_ms;
    s.last_beat_ms = now;
    if (!s.live || late <= gap_ms_) return;
    span = Span{source == watch_source_ ? Cause::kPause : Cause::kIoStall, s.name, late};
  }
  Record(span, now, now, /*restart=*/true);
}

void Hearing::NoteDeaf(Cause cause, const std::string& source, int64_t deaf_ms) {
  const int64_t now = base::SteadyNowMs();
  Record(Span{cause, source, std::max<int64_t>(deaf_ms, 0)}, now, now, /*restart=*/true);
}

void Hearing::Record(const Span& span, int64_t end_ms, int64_t now_ms, bool restart) {
  {
    base::MutexLock lock(&mu_);
    if (restart) hearing_since_ms_ = std::max(hearing_since_ms_, now_ms);
    if (span.deaf_ms > 0) {
      ended_spans_.emplace_back(end_ms - span.deaf_ms, end_ms);
      // Kept by end; a span that ends before the last one's end (holds are
      // polled a period late) goes to its place.
      for (size_t i = ended_spans_.size() - 1;
           i > 0 && ended_spans_[i - 1].second > ended_spans_[i].second; --i) {
        std::swap(ended_spans_[i - 1], ended_spans_[i]);
      }
      while (ended_spans_.size() > kMaxSpans ||
             (!ended_spans_.empty() && ended_spans_.front().second < now_ms - kSpanMemoryMs)) {
        ended_spans_.pop_front();
      }
    }
  }
  const auto i = static_cast<size_t>(span.cause);
  spans_[i].fetch_add(1, std::memory_order_relaxed);
  deaf_ms_[i].fetch_add(static_cast<uint64_t>(span.deaf_ms), std::memory_order_relaxed);
  if (on_span_) on_span_(span);
}

int64_t Hearing::HearingForMs() const {
  const int64_t now = base::SteadyNowMs();
  base::MutexLock lock(&mu_);
  for (const Source& s : sources_) {
    if (s.live && now - s.last_beat_ms > gap_ms_) return 0;  // deaf right now
  }
  int64_t since = hearing_since_ms_;
  for (const Hold& h : holds_) since = std::max(since, h.last_deaf_ms());
  return std::max<int64_t>(now - since, 0);
}

int64_t Hearing::StartOfHearing(int64_t end_ms, int64_t hearing_ms) const {
  const int64_t now = base::SteadyNowMs();
  std::vector<std::pair<int64_t, int64_t>> deaf;
  {
    base::MutexLock lock(&mu_);
    deaf.assign(ended_spans_.begin(), ended_spans_.end());
    // The spans going on: a late source since its last beat, a hold the
    // watch has seen deaf since the span's start.
    for (const Source& s : sources_) {
      if (s.live && now - s.last_beat_ms > gap_ms_) deaf.emplace_back(s.last_beat_ms, now);
    }
    for (const Hold& h : holds_) {
      if (h.span_start_ms != 0) deaf.emplace_back(h.span_start_ms, h.last_deaf_ms());
    }
  }
  // The spans merged where they overlap, then walked back from end_ms.
  std::sort(deaf.begin(), deaf.end());
  std::vector<std::pair<int64_t, int64_t>> merged;
  for (const auto& span : deaf) {
    if (!merged.empty() && span.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, span.second);
    } else {
      merged.push_back(span);
    }
  }
  int64_t at = end_ms, left = hearing_ms;
  for (auto it = merged.rbegin(); it != merged.rend(); ++it) {
    const auto [start, end] = *it;
    if (start >= at) continue;  // after the walk's starting point
    const int64_t heard = at - std::min(end, at);
    if (heard >= left) return at - left;
    left -= heard;
    at = start;
  }
  return at - left;
}

uint64_t Hearing::spans(Cause cause) const {
  return spans_[static_cast<size_t>(cause)].load(std::memory_order_relaxed);
}

uint64_t Hearing::deaf_ms(Cause cause) const {
  return deaf_ms_[static_cast<size_t>(cause)].load(std::memory_order_relaxed);
}

}  // namespace batcher
