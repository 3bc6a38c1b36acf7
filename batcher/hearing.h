#ifndef EDGEALLOC_BATCHER_HEARING_H_
#define EDGEALLOC_BATCHER_HEARING_H_

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "base/stop_signal.h"

namespace batcher {

// Deafness is not death. A time during which this server could not hear its
// containers (the process paused, an event loop stalled, the store could not
// be written, heartbeats refused for want of it) is not silence of the
// containers: after it, a container is judged silent only once the server
// has heard again for dead_after_ms (docs/design.md, "Deafness is not death").
//
// Hearing keeps since when the server has heard without a break, on the
// steady clock (base::SteadyNowMs), so that a step of the wall clock neither makes deafness nor
// hides it. It learns of deafness three ways:
//  - a gap: a source that beats on a period (its own watch thread, each io
//    loop of the server) beat more than gap_ms late. The server could not
//    run then: a SIGSTOP, a frozen VM, a starved or blocked event loop. A
//    source late right now counts as deaf now, so a sweep that runs the
//    moment a pause ends (before the late beat is seen) is held too.
//  - a hold: a condition asked when it was last deaf (a heartbeat lane whose
//    writes fail, a store the node cannot reach, requests refused for want
//    of room), which the watch polls to log and count its spans.
//  - a report: NoteDeaf, a span someone else measured.
// Safe from any thread.
class Hearing {
 public:
  enum class Cause { kPause, kIoStall, kWriteFailing, kRefused };
  static constexpr int kCauses = 4;
  // "pause", "io_stall", "write_failing", "refused": the metric's label.
  static const char* CauseName(Cause cause);

  // A span of deafness that ended (or, for a refusal, happened): what the
  // server logs.
  struct Span {
    Cause cause;
    std::string source;  // the late source, or who reported it
    int64_t deaf_ms;     // how long the server could not hear
  };

  // gap_ms: a beat later than this is deafness (clamped to >= 10).
  // on_span: called on the thread that noticed a span (never under a lock).
  explicit Hearing(int64_t gap_ms, std::function<void(const Span&)> on_span = {});
  Hearing(const Hearing&) = delete;
  Hearing& operator=(const Hearing&) = delete;
  ~Hearing();  // Stop()s

  // Starts the watch thread, the source that beats every watch period and
  // so finds a pause of the whole process (before Start, no pause is seen).
  // Idempotent.
  void Start();
  void Stop();

  // A source expected to Beat at least every gap_ms from now on (its first
  // beat is now); returns its handle for Beat and RemoveSource.
  int AddSource(std::string name);
  void RemoveSource(int source);
  // The source ran now. A beat later than gap_ms ends a span of deafness
  // (kPause for the watch, kIoStall for any other source).
  void Beat(int source);

  // A condition under which the server is deaf: last_deaf_ms() returns the
  // steady ms of the last moment it was deaf (now while it is; 0 if never).
  // Asked by HearingForMs and by the watch every period, from any thread;
  // it must be cheap and must not call back into this Hearing.
  void AddHold(Cause cause, std::string name, std::function<int64_t()> last_deaf_ms);

  // The server could not hear for `deaf_ms` up to now (from `source`): the
  // hearing starts again now.
  void NoteDeaf(Cause cause, const std::string& source, int64_t deaf_ms);

  // How long, in ms, the server has heard without a break up to now: 0 while
  // a source is late (deaf right now).
  int64_t HearingForMs() const;

  // The steady instant from which [that instant, end_ms] holds hearing_ms
  // of hearing: end_ms - hearing_ms, earlier by every span of deafness in
  // between (those ended within kSpanMemoryMs, and those going on). A
  // container's silence is measured so: a report refused while the server
  // could not hear is no silence of the container's.
  int64_t StartOfHearing(int64_t end_ms, int64_t hearing_ms) const;
  // How long spans of deafness are remembered, and at most how many.
  static constexpr int64_t kSpanMemoryMs = 3600 * 1000;
  static constexpr size_t kMaxSpans = 4096;

  // Spans of deafness noticed, and the ms they lasted, by cause (/metrics).
  uint64_t spans(Cause cause) const;
  uint64_t deaf_ms(Cause cause) const;
  int64_t gap_ms() const { return gap_ms_; }
  // How often a source should beat: a quarter of the gap, so a pause of
  // gap_ms is seen whatever the phase, never busier than every 5 ms and at
  // least every 250 ms. The watch beats so, and the server's io watch too.
  int64_t beat_period_ms() const { return std::clamp<int64_t>(gap_ms_ / 4, 5, 250); }


 private:
  struct Source {
    std::string name;
    bool live = false;
    int64_t last_beat_ms = 0;
  };
  struct Hold {
    Cause cause;
    std::string name;
    std::function<int64_t()> last_deaf_ms;
    // The watch's view: the last deaf moment it saw, and the start of the
    // span it is in (0: none).
    int64_t seen_ms = 0;
    int64_t span_start_ms = 0;
  };
  void WatchLoop();
  // Ends the spans of holds that have heard for a whole watch period.
  void PollHolds(int64_t period_ms);
  // Counts a span that ended at end_ms, keeps it for StartOfHearing and
  // hands it to on_span_; restarts the hearing (at now_ms) if `restart`.
  void Record(const Span& span, int64_t end_ms, int64_t now_ms, bool restart);

  const int64_t gap_ms_;
  const std::function<void(const Span&)> on_span_;
  mutable base::Mutex mu_;
  std::vector<Source> sources_ GUARDED_BY(mu_);
  // The steady ms since which the server has heard without a break.
  int64_t hearing_since_ms_ GUARDED_BY(mu_);
  std::vector<Hold> holds_ GUARDED_BY(mu_);
  // The spans of deafness that ended, [start, end] in steady ms, by end.
  std::deque<std::pair<int64_t, int64_t>> ended_spans_ GUARDED_BY(mu_);
  std::array<std::atomic<uint64_t>, kCauses> spans_{};
  std::array<std::atomic<uint64_t>, kCauses> deaf_ms_{};

  std::atomic<int> watch_source_{-1};
  base::StopSignal watch_stop_;
  std::thread watch_;
};

}  // namespace batcher

#endif  // EDGEALLOC_BATCHER_HEARING_H_
