#include "server/io_watch.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <utility>

#include <boost/asio/steady_timer.hpp>

namespace server {

struct IoWatch::State {
  State(boost::asio::any_io_executor io, batcher::Hearing* h)
      : timer(std::move(io)),
        hearing(h),
        period(std::chrono::milliseconds(h->beat_period_ms())) {}
  boost::asio::steady_timer timer;
  batcher::Hearing* hearing;
  const std::chrono::milliseconds period;
  int source = -1;
  std::atomic<bool> stopped{false};
};

IoWatch::IoWatch(boost::asio::any_io_executor io, batcher::Hearing* hearing)
    : state_(std::make_shared<State>(std::move(io), hearing)) {}

IoWatch::~IoWatch() { Stop(); }

void IoWatch::Start() {
  if (state_->source >= 0) return;
  state_->source = state_->hearing->AddSource("the io loop");
  Arm(state_);
}

void IoWatch::Stop() {
  if (state_->source < 0 || state_->stopped.exchange(true)) return;
  // A handler that already passed its check may still Beat: a removed
  // source's beat changes nothing (Hearing::Beat).
  state_->hearing->RemoveSource(state_->source);
}

void IoWatch::Arm(const std::shared_ptr<State>& state) {
  state->timer.expires_after(state->period);
  state->timer.async_wait([state](const boost::system::error_code& ec) {
    if (ec || state->stopped.load()) return;
    state->hearing->Beat(state->source);
    Arm(state);
  });
}

}  // namespace server
