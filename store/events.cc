#include "store/events.h"

#include <charconv>
#include <cstddef>
#include <utility>

namespace store {

bool IsEventType(std::string_view type) {
  for (const char* known : kEventTypes) {
    if (type == known) return true;
  }
  return false;
}

std::string EventCursor::ToString() const {
  std::string out;
  for (size_t i = 0; i < seqs.size(); ++i) {
    if (i > 0) out += '.';
    out += std::to_string(seqs[i]);
  }
  return out;
}

bool EventCursor::Parse(std::string_view text, int streams, EventCursor* out) {
  out->seqs.assign(static_cast<size_t>(streams), 0);
  if (text.empty()) return true;
  std::vector<int64_t> seqs;
  size_t start = 0;
  for (;;) {
    const size_t dot = text.find('.', start);
    const std::string_view part =
        text.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    int64_t seq = 0;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), seq);
    if (part.empty() || ec != std::errc() || end != part.data() + part.size() || seq < 0) {
      return false;
    }
    seqs.push_back(seq);
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  // One seq for several streams is the start of each only when it is 0 (a
  // seq of one file means nothing in another).
  if (seqs.size() == 1 && streams > 1) return seqs[0] == 0;
  if (seqs.size() != static_cast<size_t>(streams)) return false;
  out->seqs = std::move(seqs);
  return true;
}

void MergeEventStreams(std::vector<std::vector<Event>> streams, const EventCursor& after,
                       const std::vector<int64_t>& examined, int limit, EventPage* page) {
  page->events.clear();
  page->next = after;
  std::vector<size_t> taken(streams.size(), 0);
  while (static_cast<int>(page->events.size()) < limit) {
    int best = -1;
    for (size_t s = 0; s < streams.size(); ++s) {
      if (taken[s] == streams[s].size()) continue;
      if (best < 0 ||
          streams[s][taken[s]].at_ms < streams[static_cast<size_t>(best)][taken[static_cast<size_t>(best)]].at_ms) {
        best = static_cast<int>(s);
      }
    }
    if (best < 0) break;
    const auto b = static_cast<size_t>(best);
    page->next.seqs[b] = streams[b][taken[b]].seq;
    page->events.push_back(std::move(streams[b][taken[b]]));
    ++taken[b];
  }
  for (size_t s = 0; s < streams.size(); ++s) {
    if (taken[s] == streams[s].size() && examined[s] > page->next.seqs[s]) {
      page->next.seqs[s] = examined[s];
    }
  }
}

}  // namespace store
